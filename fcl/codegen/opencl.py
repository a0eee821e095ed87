"""Kernel IR -> OpenCL C source.

Consumes a `plan.Plan`; produces one OpenCL C translation unit holding
every kernel of the plan, each taking only the buffers and scalars its
launches pass (`plan.Launch.uses`).  Target spelling lives in `OpenCLRenderer`'s
attributes; expressions print with C precedence.  Integer arithmetic wraps
(through unsigned arithmetic, never signed overflow), division and remainder
by zero give 0 instead of undefined behaviour (a run-time check records them where
the lowering made one: kir.checked_divisor),
shift counts are masked, `FP_CONTRACT` is off, and float min/max follow the
evaluator's `b < a ? b : a`.  A printer only: how elements map to work-items
is decided by the `map_hw` pass, so this module never sees a parallel loop.
"""
from __future__ import annotations

from fcl.base.errors import CompilerBug
from fcl.base.hw import C_STORAGE, SKEW_SHIFT
from fcl.base.operators import OPERATORS
from fcl.codegen import kir as K
from fcl.codegen import plan as P

PRELUDE = """\
#pragma OPENCL FP_CONTRACT OFF
{fp64}
/* FCL integer semantics: 32-bit wrap-around, truncating division (x/0 = 0 here; the
   program's run-time check of the divisor reports it), shift counts masked to 5 bits. */
static inline int fcl_add(int a, int b) {{ return (int)((uint)a + (uint)b); }}
static inline int fcl_sub(int a, int b) {{ return (int)((uint)a - (uint)b); }}
static inline int fcl_mul(int a, int b) {{ return (int)((uint)a * (uint)b); }}
static inline int fcl_neg(int a) {{ return (int)(0u - (uint)a); }}
static inline int fcl_div(int a, int b) {{ return b == 0 ? 0 : (b == -1 ? fcl_neg(a) : a / b); }}
static inline int fcl_mod(int a, int b) {{ return (b == 0 || b == -1) ? 0 : a % b; }}
static inline int fcl_shl(int a, int b) {{ return (int)((uint)a << (b & 31)); }}
static inline int fcl_shr(int a, int b) {{ return a >> (b & 31); }}
static inline int fcl_abs(int a) {{ return a < 0 ? fcl_neg(a) : a; }}
/* local memory layout: element i of a skewed buffer lives at i + i/32 (no bank conflicts) */
static inline int fcl_skew(int i) {{ return i + (i >> {skew_shift}); }}
"""

FADD = """\
/* float += as an atomic (OpenCL 1.2 has none): compare-and-swap of the float's bits, again
   until no other work-item changed it in between; the first guess is 0.0f (a plain read
   would race with the others' swaps) */
static inline void fcl_fadd_{space}(volatile __{space} float* p, float v) {{
  int seen = 0, was;
  do {{ was = seen; seen = atomic_cmpxchg((volatile __{space} int*)p, was, as_int(as_float(was) + v)); }}
  while (seen != was);
}}
"""

FAIL = """\
/* a run-time check that failed (see kir.record_failure): set the site's bit in err[0]; the
   first failure also stores its site and values */
static inline void fcl_fail(__global int* err, int site, int a, int b, int c, int d) {
  if (atomic_or(&err[0], 1 << min(site, %d)) == 0) { err[1] = site; err[2] = a; err[3] = b; err[4] = c; err[5] = d; }
}
""" % K.BOUNDS_BIT_CAP

CHECK = """\
/* a bounds-checked index (fclc --no-bounds-checks leaves them out): outside [0, n) it
   records a failure with the index and length, and the index becomes 0, so the read stays
   inside the buffer */
static inline int fcl_check(int i, int n, __global int* err, int site) {
  if (i >= 0 && i < n) return i;
  fcl_fail(err, site, i, n, 0, 0);
  return 0;
}
"""

# the devices that are not PoCL, as the OpenCL C preprocessor tells them apart: GPUs, and Intel's
# CPU runtime and Oclgrind (SPIR, not x86)
NOT_POCL = "defined(__NV_CL_C_VERSION) || defined(__AMD__) || (defined(__SPIR__) && !defined(__x86_64__))"

ONE_PART = """\
/* A grid loop over parts whose launch gives each work-group one part at most (a launch in
   slices, the unvirtualise pass) is an `if` on a GPU: NVIDIA's compiler hoists out of a loop
   everything a part computes from the work-item's id and keeps it in registers across the
   whole part (a scan's chunk of 4096: 80 registers for 32).  On a CPU it stays a loop, as
   PoCL's barrier handling needs (it ran some barriers under a uniform `if` wrongly); Intel's
   CPU runtime and Oclgrind (SPIR, not x86) take the `if`, which Oclgrind checks. */
#if %s
#define FCL_ONE_PART 1
#else
#define FCL_ONE_PART 0
#endif
""" % NOT_POCL

OWN_LOOP = """\
/* PoCL puts a barrier at the top of every innermost loop of a kernel with barriers whose
   trip count it finds the same for all work-items, to run their iterations in lock step
   (ImplicitLoopBarriers); a kernel with many such loops and branches between them then
   takes its compiler exponential time (random-tester seed 150601: a kernel of 25 folds
   after a barrier never built).  A loop without barriers is a work-item's own: its bound
   has FCL_OWN_LOOP added, 0 on every work-item, which PoCL cannot tell is the same for all
   (not where it starts at a work-item's id, or is unrolled).  On the devices FCL_ONE_PART
   tells apart from PoCL it is the literal 0: Intel's CPU compiler gave a wrong result with
   the varying form (whilesAfterBarrier in tests/programs/fuzz_regressions.fcl). */
#if %s
#define FCL_OWN_LOOP 0
#else
#define FCL_OWN_LOOP (lid >> 30)
#endif
""" % NOT_POCL

# a scalar's bits as ints and back, and two ints as one long and back: how `scanConcat` passes
# values between work-groups, a flag and a word in each 64-bit atomic
BIT_CASTS = {"as_int": "as_int({})", "as_float": "as_float({})", "lo_bits": "as_int2({}).s0",
             "hi_bits": "as_int2({}).s1", "as_double": "as_double((int2)({}, {}))",
             "pack": "((long)({}) << 32 | (long)(uint)({}))", "hi_word": "(int)(({}) >> 32)",
             "lo_word": "(int)({})"}

MINMAX = "static inline {t} fcl_min_{t}({t} a, {t} b) {{ return b < a ? b : a; }}\n" \
         "static inline {t} fcl_max_{t}({t} a, {t} b) {{ return a < b ? b : a; }}\n"

# C precedence levels (higher binds tighter); a trip count in a loop header
# (`i < n`, `n - 1`) is printed with parentheses unless it binds like `*` or tighter.
BOUND = 12
PREFIX = 14          # `!x`, `-x`, `(int)x`
PREC = {name: op.c_precedence for name, op in OPERATORS.items()}
C_OPS = {name: op.c for name, op in OPERATORS.items()}
INT_HELPERS = {"add": "fcl_add", "sub": "fcl_sub", "mul": "fcl_mul", "div": "fcl_div",
               "mod": "fcl_mod", "shl": "fcl_shl", "shr": "fcl_shr"}
CONVERSIONS = {"i2d": "(double)({})", "f2d": "(double)({})", "d2i": "convert_int_sat_rtz({})",
               "f2i": "convert_int_sat_rtz({})", "i2f": "convert_float_rte({})",
               "d2f": "convert_float_rte({})", "b2i": "(({}) ? 1 : 0)"}
# operands that C compilers want parenthesised although precedence makes them right
# (clang -Wshift-op-parentheses, -Wbitwise-op-parentheses, -Wlogical-op-parentheses):
# `a + b >> 6`, `a & b | c`, `a && b || c` print as `(a + b) >> 6`, ...
OPERAND_PREC = {"shl": PREC["add"] + 1, "shr": PREC["add"] + 1, "bor": PREC["band"] + 1,
                "bxor": PREC["band"] + 1, "or": PREC["and"] + 1}


def _per_item(e: K.Expr) -> bool:
    """Whether e names a work-item's or a warp's id (a loop that starts there is not the
    same for all work-items, as PoCL sees it)."""
    return any(isinstance(x, K.HwId) and x.name in ("lid", "lane", "wid", "global_id") for x in K.walk_expr(e))


class OpenCLRenderer:
    """Target spelling of OpenCL C 1.2."""

    global_kw = "__global"
    local_kw = "__local"
    private_kw = "__private"
    kernel_kw = "__kernel"
    barrier = "barrier(CLK_LOCAL_MEM_FENCE);"
    # the work-item functions return size_t; FCL's ids and sizes are ints, so every use
    # converts (an id minus 7 is negative, never a huge unsigned value)
    local_id = "(int)get_local_id(0)"
    group_id = "(int)get_group_id(0)"
    num_groups = "(int)get_num_groups(0)"
    global_id = "(int)get_global_id(0)"
    global_size = "(int)get_global_size(0)"

    @property
    def hw_ids(self) -> dict:
        """Spelling of the hardware ids that are not variables of the kernel's prologue."""
        return {"global_id": self.global_id, "global_size": self.global_size,
                "group_id": self.group_id, "num_groups": self.num_groups}

    def __init__(self, prog: P.Plan):
        self.prog = prog
        self.bs = prog.block_size
        self.ws = prog.warp_size
        self.buffers = {b.name: b for b in prog.buffers}
        for k in prog.kernels:
            for b in k.locals_ + k.privates:
                self.buffers[b.name] = b
        self.ptr_types: dict[str, str] = {}
        self.vectors: dict[tuple, str] = {}       # the components of a vector load -> its name
        self.ptr_spaces: dict[str, str] = {}
        self.barriers = False                     # whether the kernel being rendered has barriers

    # ------------------------------------------------------------ program

    def render(self) -> str:
        parts = [self.prelude()]
        for k in self.prog.kernels:
            parts.append(self.kernel(k))
        return "\n".join(parts)

    def prelude(self) -> str:
        text = self.source_text_all()
        fp64 = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable" if "double" in text else ""
        if "atom_" in text:
            fp64 += "\n#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable"
        out = PRELUDE.format(fp64=fp64, skew_shift=SKEW_SHIFT)
        for t in ("int", "float", "double"):
            if f"fcl_min_{t}" in text or f"fcl_max_{t}" in text:
                out += MINMAX.format(t=t)
        if "FCL_ONE_PART" in text:
            out += ONE_PART
        if "FCL_OWN_LOOP" in text:
            out += OWN_LOOP
        if "fcl_check(" in text or "fcl_fail(" in text:
            out += FAIL
        if "fcl_check(" in text:
            out += CHECK
        for space in ("global", "local"):
            if f"fcl_fadd_{space}(" in text:
                out += FADD.format(space=space)
        return out

    def source_text_all(self) -> str:
        # Render bodies first (cheaply) to learn which helpers are needed.
        if not hasattr(self, "_bodies"):
            self._bodies = {k.name: self.kernel_body(k) for k in self.prog.kernels}
        types = {b.ty for b in self.buffers.values()} | {p.ty for p in self.prog.params}
        return "\n".join(self._bodies.values()) + " ".join(types)

    def kernel(self, k: K.Kernel) -> str:
        params = self.kernel_params(k)
        body = self._bodies[k.name]
        # every launch uses work-groups of #BlockSize work-items: the device compiler may rely on it
        size = f"__attribute__((reqd_work_group_size({self.prog.block_size}, 1, 1)))\n"
        head = f"{self.kernel_kw} {size}void {kernel_symbol(k.name)}(\n    " + ",\n    ".join(params) + ")\n{\n"
        return head + body + "}\n"

    def kernel_params(self, k: K.Kernel) -> list[str]:
        out = []
        written = {s.buf for s in K.walk_stmts(k.body) if isinstance(s, (K.Store, K.VStore, K.Atomic))}
        uses = self.prog.uses_of(k.name)
        params = {p.name: p for p in self.prog.params}
        for b in (self.buffers[name] for name in uses.buffers):
            qual = "const " if b.role == "input" else ""
            restrict = " restrict" if b.role == "input" or (b.name not in written and b.role != "bounds") else ""
            out.append(f"{self.global_kw} {qual}{C_STORAGE[b.ty]}*{restrict} {b.name}  /* {self.describe(b)} */")
        for p in (params[name] for name in uses.params):
            out.append(f"const {'int' if p.ty == 'bool' else p.ty} {p.name}")
        for b in k.locals_:
            if self.static_size(b) is None:      # (a size of 0 is static too)
                out.append(f"{self.local_kw} {C_STORAGE[b.ty]}* {b.name}  /* {self.describe(b)}; size set by the host */")
        return out

    def describe(self, b: K.Buffer) -> str:
        per = f" per {b.per}" if b.per else ""
        skew = ", skewed layout" if b.layout == "skew32" else ""
        return f"{b.origin}: {b.space}, {K.format_expr(b.size)} x {b.ty}{per}{skew}"

    def static_size(self, b: K.Buffer) -> int | None:
        """Elements of a local/private buffer when known at compile time, else None."""
        if not isinstance(b.size, K.Const):
            return None
        return K.footprint(b, b.size.value * K.copies(b, self.bs, self.ws))

    def kernel_body(self, k: K.Kernel) -> str:
        lines = [
            f"  const int lid = {self.local_id};",
            f"  const int wid = lid / {self.ws};",
            f"  const int lane = lid % {self.ws};",
        ]
        vectors = {s.buf for s in K.walk_stmts(k.body) if isinstance(s, (K.VLoad, K.VStore))}
        for b in k.locals_:
            n = self.static_size(b)
            if n is not None:
                aligned = " __attribute__((aligned(16)))" if b.name in vectors else ""
                lines.append(f"  {self.local_kw} {C_STORAGE[b.ty]} {b.name}[{max(n, 1)}]{aligned};  /* {self.describe(b)} */")
        for b in k.privates:
            lines.append(f"  {C_STORAGE[b.ty]} {b.name}[{max(b.size.value, 1)}];  /* {self.describe(b)} */")
        self.barriers = K.contains_barrier(k.body)
        lines.extend(self.stmts(k.body, 1))
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------ statements

    def stmts(self, stmts, depth: int) -> list[str]:
        out = []
        for s in stmts:
            out.extend(self.stmt(s, depth))
        return out

    def stmt(self, s: K.Stmt, d: int) -> list[str]:
        pad = "  " * d
        if isinstance(s, K.Let):
            return [f"{pad}const {self.ctype(s.expr.ty)} {s.var} = {self.expr(s.expr)};"]
        if isinstance(s, K.DeclVar):
            return [f"{pad}{self.ctype(s.init.ty)} {s.var} = {self.expr(s.init)};"]
        if isinstance(s, K.Assign):
            return [f"{pad}{s.var} = {self.expr(s.expr)};"]
        if isinstance(s, K.Store):
            return [f"{pad}{s.buf}[{self.expr(s.index)}] = {self.store_value(s)};"]
        if isinstance(s, K.VLoad):
            return self.vload(s, pad)
        if isinstance(s, K.VStore):
            return self.vstore(s, pad)
        if isinstance(s, K.Fail):
            values = [self.expr(v) for v in s.values] + ["0"] * (K.CHECK_VALUES - len(s.values))
            return [f"{pad}fcl_fail({s.buf}, {s.site}, {', '.join(values)});"]
        if isinstance(s, K.Atomic) and s.op == "fadd":
            space = self.buffers[s.buf].space
            return [f"{pad}fcl_fadd_{space}(&{s.buf}[{self.expr(s.index)}], {self.expr(s.value)});"]
        if isinstance(s, K.Atomic):
            ty = self.buffers[s.buf].ty
            old = f"const {ty} {s.var} = " if s.var else ""
            fn = "atom" if ty == "long" else "atomic"
            return [f"{pad}{old}{fn}_{s.op}(&{s.buf}[{self.expr(s.index)}], {self.expr(s.value)});"]
        if isinstance(s, K.Barrier):
            why = f"  /* {s.why} */" if s.why else ""
            return [f"{pad}{self.barrier}{why}"]
        if isinstance(s, K.Comment):
            return [f"{pad}/* {s.text} */"]
        if isinstance(s, K.If):
            return self.if_(s, d)
        if isinstance(s, K.For):
            return self.for_(s, d)
        if isinstance(s, K.Loop):
            head = self.stmts(s.head, d + 1)
            body = self.stmts(s.body, d + 1)
            return [f"{pad}for (;;) {{", *head, f"{pad}  if (!({self.expr(s.cond)})) break;", *body, f"{pad}}}"]
        if isinstance(s, K.DeclPtr):
            self.ptr_types[s.var] = s.ty
            self.ptr_spaces[s.var] = s.space
            space = self.local_kw if s.space == "local" else self.private_kw
            return [f"{pad}{space} {C_STORAGE[s.ty]}* {s.var} = {s.init};"]
        if isinstance(s, K.SwapPtr):
            t = C_STORAGE[self.ptr_types[s.a]]
            space = self.local_kw if self.ptr_spaces[s.a] == "local" else self.private_kw
            return [f"{pad}{{ {space} {t}* tmp = {s.a}; {s.a} = {s.b}; {s.b} = tmp; }}"]
        raise CompilerBug(f"cannot render {type(s).__name__} (the map_hw pass has not run?)")

    def vload(self, s: K.VLoad, pad: str) -> list[str]:
        """A vector load through a cast pointer (the buffer is a whole allocation, so the
        vector is aligned and the device loads it in one access), then its components (a
        bool's: its byte, not 0)."""
        vec = f"{C_STORAGE[s.ty]}{len(s.vars)}"
        out = [f"{pad}const {vec} {s.var} = (({self.space_kw(s.buf)} const {vec}*){s.buf})[{self.expr(s.index)}];"]
        if s.ty == "bool":
            return out + [f"{pad}const bool {name} = {s.var}.s{k:x} != 0;" for k, name in enumerate(s.vars)]
        self.vectors[s.vars] = s.var
        return out + [f"{pad}const {s.ty} {name} = {s.var}.s{k:x};" for k, name in enumerate(s.vars)]

    def vstore(self, s: K.VStore, pad: str) -> list[str]:
        vec = f"{C_STORAGE[s.values[0].ty]}{len(s.values)}"
        names = tuple(v.name if isinstance(v, K.Var) else None for v in s.values)
        parts = [f"({self.expr(v)}) ? 1 : 0" if v.ty == "bool" else self.expr(v) for v in s.values]
        value = self.vectors.get(names) or f"({vec})({', '.join(parts)})"
        return [f"{pad}(({self.space_kw(s.buf)} {vec}*){s.buf})[{self.expr(s.index)}] = {value};"]

    def space_kw(self, buf: str) -> str:
        """The address space of a buffer that vector accesses reach: global, or local (a
        static local buffer, declared 16-byte aligned where it has them)."""
        return self.local_kw if self.buffers[buf].space == "local" else self.global_kw

    def store_value(self, s: K.Store) -> str:
        value = self.expr(s.value)
        return f"({value}) ? 1 : 0" if s.value.ty == "bool" else value

    def if_(self, s: K.If, d: int) -> list[str]:
        pad = "  " * d
        out = [f"{pad}if ({self.expr(s.cond)}) {{", *self.stmts(s.then, d + 1)]
        if s.else_:
            out += [f"{pad}}} else {{", *self.stmts(s.else_, d + 1)]
        return out + [f"{pad}}}"]

    def loop(self, header: str, body, d: int) -> list[str]:
        pad = "  " * d
        return [f"{pad}for ({header}) {{", *self.stmts(body, d + 1), f"{pad}}}"]

    def for_(self, s: K.For, d: int) -> list[str]:
        v = s.var
        step = f"{v}++" if K.is_const(s.step, 1) else f"{v} += {self.expr(s.step, BOUND)}"
        stop = self.expr(s.stop, BOUND)
        if self.barriers and not (s.once or s.unroll or _per_item(s.start) or K.contains_barrier(s.body)):
            stop += " + FCL_OWN_LOOP"       # (see OWN_LOOP)
        header = f"int {v} = {self.expr(s.start)}; {v} < {stop}; {step}"
        if s.once:          # FCL_ONE_PART (see ONE_PART): an `if`, else the loop
            start = self.expr(s.start)
            loop = self.loop(header, s.body, d)
            return ["#if FCL_ONE_PART", f"{'  ' * d}if ({start} < {stop}) {{ const int {v} = {start};",
                    "#else", loop[0], "#endif", *loop[1:]]
        return ([f"{'  ' * d}#pragma unroll"] if s.unroll else []) + self.loop(header, s.body, d)

    # ------------------------------------------------------------ expressions

    def ctype(self, ty: str) -> str:
        return ty

    def expr(self, e: K.Expr, prec: int = 0) -> str:
        text, p = self._expr(e)
        return f"({text})" if p < prec else text

    def _expr(self, e: K.Expr) -> tuple[str, int]:
        atom = 100
        if isinstance(e, K.Const):
            return self.const(e), atom
        if isinstance(e, K.Var):
            return e.name, atom
        if isinstance(e, K.HwId):
            text = self.hw_ids.get(e.name, e.name)
            return text, (PREFIX if text.startswith("(int)") else atom)
        if isinstance(e, K.Load):
            text = f"{e.buf}[{self.expr(e.index)}]"
            return (f"({text} != 0)", atom) if e.ty == "bool" else (text, atom)
        if isinstance(e, K.Select):
            return f"{self.expr(e.cond, 3)} ? {self.expr(e.a, 3)} : {self.expr(e.b, 2)}", 2
        if isinstance(e, K.Un):
            if e.op == "not":
                return f"!{self.expr(e.a, PREFIX)}", PREFIX
            if e.ty == "int":
                return f"fcl_neg({self.expr(e.a)})", atom
            return f"-{self.expr(e.a, PREFIX)}", PREFIX
        if isinstance(e, K.Call):
            return self.call(e), atom
        if isinstance(e, K.Checked):
            return f"fcl_check({self.expr(e.index)}, {self.expr(e.length)}, {e.buf}, {e.site})", atom
        if isinstance(e, K.Bin):
            return self.binary(e)
        raise CompilerBug(f"cannot render expression {type(e).__name__}")

    def binary(self, e: K.Bin) -> tuple[str, int]:
        proven = e.op in K.GENERAL_OP
        plain_shift = e.op == "shr" and isinstance(e.b, K.Const) and 0 <= e.b.value < 32
        if proven or plain_shift:          # a pass proved C's own operator right here
            op = K.GENERAL_OP.get(e.op, e.op)
            p = PREC[op]
            q = OPERAND_PREC.get(op, p)
            return f"{self.expr(e.a, q)} {C_OPS[op]} {self.expr(e.b, max(q, p + 1))}", p
        if e.a.ty == "int" and e.op in INT_HELPERS:
            if e.op in ("div", "mod") and isinstance(e.b, K.Const) and e.b.value not in (0, -1):
                p = PREC[e.op]
                return f"{self.expr(e.a, p)} {C_OPS[e.op]} {self.expr(e.b, p + 1)}", p
            return f"{INT_HELPERS[e.op]}({self.expr(e.a)}, {self.expr(e.b)})", 100
        if e.op in ("eq", "ne") and e.a.ty == "bool":
            p = PREC[e.op]
            return f"(bool){self.expr(e.a, PREFIX)} {C_OPS[e.op]} (bool){self.expr(e.b, PREFIX)}", p
        p = PREC[e.op]
        q = OPERAND_PREC.get(e.op, p)
        return f"{self.expr(e.a, q)} {C_OPS[e.op]} {self.expr(e.b, max(q, p + 1))}", p

    def call(self, e: K.Call) -> str:
        args = [self.expr(a) for a in e.args]
        if e.fn in CONVERSIONS:
            return CONVERSIONS[e.fn].format(args[0])
        if e.fn == "max" and e.ty == "int" and (clamp := _min_inside_max(e)) is not None:
            return self.expr(clamp)
        if e.fn in ("min", "max"):
            return f"fcl_{e.fn}_{e.ty}({args[0]}, {args[1]})"
        if e.fn == "skew":
            return f"fcl_skew({args[0]})"
        if e.fn in BIT_CASTS:
            return BIT_CASTS[e.fn].format(*args)
        if e.fn == "abs":
            return f"fcl_abs({args[0]})" if e.ty == "int" else f"fabs({args[0]})"
        return f"{e.fn}({', '.join(args)})"

    def const(self, e: K.Const) -> str:
        v = e.value
        if e.ty == "bool":
            return "true" if v else "false"
        if e.ty == "long":
            return f"{v}L"
        if e.ty == "int":
            return "(-2147483647 - 1)" if v == -2147483648 else (f"({v})" if v < 0 else str(v))
        return float_literal(float(v), e.ty)


# Names an entry point cannot keep as its kernel's C name: C and OpenCL C keywords
# and types, and OpenCL built-in functions (those that are not caught by the
# prefixes in kernel_symbol).
RESERVED = frozenset("""
auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef
union unsigned void volatile while bool true false half uchar ushort uint ulong size_t
ptrdiff_t intptr_t uintptr_t event_t sampler_t image1d_t image2d_t image3d_t kernel global
local private constant read_only write_only read_write main typeof complex imaginary
acos acosh acospi asin asinh asinpi atan atan2 atanh atanpi atan2pi cbrt ceil copysign cos
cosh cospi erfc erf exp exp2 exp10 expm1 fabs fdim floor fma fmax fmin fmod fract frexp
hypot ilogb ldexp lgamma lgamma_r log log2 log10 log1p logb mad maxmag minmag modf nan
nextafter pow pown powr remainder remquo rint rootn round rsqrt sin sincos sinh sinpi sqrt
tan tanh tanpi tgamma trunc abs abs_diff add_sat hadd rhadd clamp clz ctz mad_hi mad_sat max
min mul_hi rotate sub_sat upsample popcount mad24 mul24 degrees mix radians step smoothstep
sign cross dot distance length normalize fast_distance fast_length fast_normalize isequal
isnotequal isgreater isgreaterequal isless islessequal islessgreater isfinite isinf isnan
isnormal isordered isunordered signbit any all bitselect select barrier mem_fence
read_mem_fence write_mem_fence wait_group_events prefetch printf shuffle shuffle2 vec_step
""".split())
SCALAR_TYPE_NAMES = ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float",
                     "double", "half", "bool")
RESERVED_PREFIXES = ("fcl_", "get_", "atomic_", "atom_", "convert_", "as_", "vload", "vstore",
                     "async_", "read_image", "write_image", "native_", "half_", "__", "cl_", "CL_")


def _min_inside_max(e: K.Call) -> K.Expr | None:
    """max(c, min(x, y)) for a constant c as min(max(x, c), max(y, c)), the same int (max
    distributes over min).  NVIDIA's ptxas (driver 580.159.04, H200, at -O1 and above) took
    max(0, min(x, 2)) == 2 for true at x = 1, so a concat part of the wrong length went
    unreported (tests/programs/runtime_errors.fcl, warpParts); the other order it gets right."""
    c, inner = e.args if isinstance(e.args[0], K.Const) else e.args[::-1]
    if not (isinstance(c, K.Const) and isinstance(inner, K.Call) and inner.fn == "min"):
        return None
    x, y = inner.args
    return K.call("min", (K.call("max", (x, c), "int"), K.call("max", (y, c), "int")), "int")


def kernel_symbol(name: str) -> str:
    """The C name of the kernel for FCL name `name` (plans and messages keep `name`).
    A name that is a plain C identifier and no keyword, type or built-in stays as it
    is; any other is spelt `fcl_k_` + the name with `_` doubled and `'` as `_q`."""
    import re
    plain = re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name) is not None
    base = re.sub(r"(_k\d+)$", "", name)
    vector = re.fullmatch(r"(%s)(2|3|4|8|16)?" % "|".join(SCALAR_TYPE_NAMES), base) is not None
    if plain and base not in RESERVED and not vector and not base.startswith(RESERVED_PREFIXES):
        return name
    return "fcl_k_" + "".join("__" if c == "_" else "_q" if c == "'" else c for c in name)


def float_literal(v: float, ty: str) -> str:
    import math

    import numpy as np
    if math.isnan(v):
        return "NAN" if ty == "float" else "(double)NAN"
    if math.isinf(v):
        text = "INFINITY" if ty == "float" else "(double)INFINITY"
        return text if v > 0 else f"(-{text})"
    if ty == "float":
        text = np.format_float_positional(np.float32(v), unique=True, trim="0") if abs(v) < 1e16 and (v == 0 or abs(v) > 1e-6) \
            else repr(float(np.float32(v)))
        text = text if any(c in text for c in ".e") else text + ".0"
        return f"({text}f)" if v < 0 else f"{text}f"
    text = repr(v)
    text = text if any(c in text for c in ".e") else text + ".0"
    return f"({text})" if v < 0 else text


def render(prog: P.Plan) -> str:
    """The OpenCL C source of every kernel of plan `prog`."""
    return OpenCLRenderer(prog).render()
