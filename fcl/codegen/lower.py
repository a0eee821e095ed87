"""Typed AST -> kernel IR, by partial evaluation (a staged interpreter).

Consumes the declarations of a checked program (prelude first), their typed
core (fcl.types.node_types: the checker's types, read through an `Inst` carried in
the environment, never guessed), the name of an entry point and the concrete
types of its arguments; produces a `plan.Plan` (the host program and its
kernels).  The program is run at compile time over symbolic values:

* `SScalar`: a kernel-IR expression;
* `SPull`: a length expression and an index function (Python closure), so
  `generate`, `mapPull`, `zipWith`, `halve`... fuse into index arithmetic;
* `SPush`: a level, a length and an iteration scheme: given a context and a
  writer it emits the loops that write every element (Obsidian style);
* `SPair`, `SFun`, `SLevelFun`: compile-time only, they vanish.

Only `force`, `while` and the final result allocate memory.  Code is emitted
into a `Ctx`, which knows the level of the hardware unit that runs it
(thread 0, warp 1, block 2, grid 3).  A grid-level `force` ends the current
kernel.  What this pass does not do: optimise (passes on the IR may), or
support a data-dependent `while` at grid or warp level (a clear CompileError).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from fcl.base.errors import CompileError, CompilerBug, FCLError, Span
from fcl.base.hw import STORAGE_DTYPES
from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.syntax import ast as A
from fcl.types import node_types as C
from fcl.types import terms as T
from fcl.types.terms import format_type

THREAD, WARP, BLOCK, GRID = 0, 1, 2, 3
LEVEL_NAMES = K.LEVELS
PRIVATE_MAX = 64          # thread-level forces up to this many elements live in registers
UNROLL_MAX = 16           # constant foldl/while trip counts up to this are unrolled
SHARE_MIN = 12            # scalar expressions of this many nodes or more are named before being copied
WHILE_UNROLL_MAX = 64     # a while whose condition is known at compile time unrolls this far


# ---------------------------------------------------------------- symbolic values

class SVal:
    pass


@dataclass
class SScalar(SVal):
    e: K.Expr


@dataclass
class SPair(SVal):
    a: SVal
    b: SVal


@dataclass
class SPull(SVal):
    n: K.Expr
    at: Callable          # (ctx, index expr) -> SVal


@dataclass
class SPush(SVal):
    level: int
    n: K.Expr
    run: Callable         # (ctx, writer) -> None;  writer: (ctx, index expr, SScalar) -> None
    span: Span | None = None


@dataclass
class SFun(SVal):
    f: Callable           # (ctx, SVal) -> SVal
    name: str = ""


@dataclass
class SLevelFun(SVal):
    f: Callable           # (ctx, int level) -> SVal


@dataclass
class SLevel(SVal):
    level: int


# ---------------------------------------------------------------- building kernels

@dataclass
class BufRec:
    """A buffer being built; its element type comes from the typed core (or is the
    fixed type of a buffer of the compiler's own: flags, guards, carried scalars)."""
    name: str
    space: str
    size: K.Expr
    origin: str
    span: Span | None
    role: str
    per: str = ""
    ty: str = ""


HOST_CALLS = ("min", "max", "b2i", "abs")    # calls kir.eval_host can compute in a size


def _float_arithmetic(e: K.Expr) -> bool:
    """Arithmetic on doubles or floats, which the host's evaluators of sizes (kir.eval_host,
    pymodule.py_expr) do not compute: only int arithmetic and comparisons are host code."""
    if isinstance(e, K.Bin):
        return e.op not in K.COMPARISONS and e.a.ty in ("double", "float")
    if isinstance(e, (K.Un, K.Call)):
        return e.ty in ("double", "float")
    return False


class Builder:
    """Fresh names, buffers and the kernels of one entry point."""

    def __init__(self, hw: dict[str, int], dry: bool = False, checks: bool = True):
        # dry: a probe whose code is thrown away, only `_host_final_length`'s (it runs a
        # while's condition and step over lengths alone, to give the host the final length)
        self.hw = hw
        self.dry = dry
        self.checks = checks                    # bounds-check every `index` (see `checked_index`)
        self.counter = 0
        self.globals: list[BufRec] = []
        self.kernels: list[tuple[list, list, list]] = []   # (stmts, locals, privates)
        self.host: list = []                # host statements; launches as PendingLaunch
        self.top: list = []
        self.locals: list[BufRec] = []
        self.privates: list[BufRec] = []
        self.span: Span | None = None
        self.bufs: dict[str, BufRec] = {}
        self.params: set[str] = set()
        self.host_vars: list[K.Param] = []
        self.guard: BufRec | None = None        # see _guarded_loop
        self.guarded: list[str] = []
        self.bounds: BufRec | None = None       # see checked_index
        self.sites: list[P.Site] = []
        self.length_spans: dict[str, Span | None] = {}  # host length variable -> its while/power
        self.parent: Builder | None = None      # a dry probe whose expressions the real plan keeps

    def checked_index(self, i: K.Expr, n: K.Expr) -> K.Expr:
        """`i` as the index of an `index` at the current span into an array of length n:
        a `K.Checked` (a site of its own, recording a failure in the plan's bounds buffer)
        unless checks are off; the `bounds` pass removes those the range analysis proves."""
        root = self.parent or self
        if not root.checks or isinstance(K.checked(i, n, "", -1), K.Const):
            return i
        return K.checked(i, n, *self.check_site("index"))

    def check_site(self, kind: str, span: Span | None = None) -> tuple[str, int]:
        """(the plan's bounds buffer, a new site) for a run-time check of `kind` (see
        plan.failure_message) at `span` (by default the current one); ("", -1) in a probe
        whose code is thrown away."""
        root = self.parent or self
        if root.dry:
            return "", -1
        if root.bounds is None:         # (named without the counter: other names stay as they were)
            root.bounds = BufRec("bounds", "global", K.cint(K.BOUNDS_WORDS), "device run-time checks", None,
                                 "bounds", ty="int")
            root.bufs[root.bounds.name] = root.bounds
            root.globals.append(root.bounds)
            root.host.append(P.Alloc(root.bounds.name))
        root.sites.append(P.Site(kind, span or self.span))
        return root.bounds.name, len(root.sites) - 1

    def checked_divisor(self, a: K.Expr, b: K.Expr, op: str, span: Span | None) -> K.Expr:
        """The divisor `b` of the int `a / b` or `a % b` at `span`: the evaluator reports a
        zero divisor, so where b is not a nonzero constant it is `b` where nonzero and else a
        failed check that records the dividend (and gives 0: fcl_div and fcl_mod are total)."""
        if isinstance(b, K.Const) and b.value != 0:
            return b
        return K.checked_divisor(b, a, *self.check_site(op, span))

    def host_computable(self, e: K.Expr) -> bool:
        """True when the host can compute `e` from the arguments (sizes stay so)."""
        return (e.names <= self.params
                and not any(isinstance(x, (K.Load, K.HwId)) or (isinstance(x, K.Call) and x.fn not in HOST_CALLS)
                            or _float_arithmetic(x) for x in K.walk_expr(e)))

    def host_scalar(self, e: K.Expr) -> K.Var:
        """A host variable set to the host-computable int `e` before the next launch
        and passed to the kernels that use it (a shared size or scalar is computed
        once, not copied into every use)."""
        name = self.fresh("hs")
        self.params.add(name)
        if not self.dry:
            self.host.append(P.SetVar(name, e, size=False))
            self.host_vars.append(K.Param(name, "int"))
        return K.Var("int", name)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def buffer(self, space: str, size: K.Expr, origin: str, role: str, per: str = "", prefix: str = "",
               ty: str = "") -> BufRec:
        rec = BufRec(self.fresh(prefix or {"global": "g", "local": "l", "private": "p"}[space]),
                     space, size, origin, self.span, role, per, ty)
        self.bufs[rec.name] = rec
        if not self.dry:
            {"global": self.globals, "local": self.locals, "private": self.privates}[space].append(rec)
            if space == "global" and role not in ("input", "alias"):
                self.host.append(P.Alloc(rec.name))
        return rec

    def split_kernel(self):
        """End the current kernel here (a grid-level force needs a kernel boundary)."""
        if self.dry or not self.top:
            return
        self.close_kernel()

    def finish(self):
        """Close the last kernel (a program always has at least one)."""
        if self.top or not self.kernels:
            self.close_kernel()

    def close_kernel(self):
        self.host.append(PendingLaunch(len(self.kernels)))
        self.kernels.append((self.top, self.locals, self.privates))
        self.top, self.locals, self.privates = [], [], []


@dataclass(frozen=True)
class PendingLaunch:
    """A launch of kernel number `index`, resolved to a `plan.Launch` when the kernels are named."""
    index: int


@dataclass
class ElemLoop:
    """The per-element work of a block-level push array: `var` is the element index;
    `varying` the names whose value differs between the block's work-items; a
    block- or warp-level force inside it makes it `collective` (every work-item
    then runs the same number of rounds, see `push_scheme`)."""
    level: int
    var: str
    varying: set
    collective: bool = False

    def reads_varying(self, e: K.Expr, warp_uniform: bool = False) -> list[str]:
        """The varying names `e` reads (the warp id counts only unless `warp_uniform`:
        a warp-level array's place in local memory depends on it, its values must not)."""
        ids = (K.Hw.LID, K.Hw.LANE, K.Hw.GLOBAL_ID) + (() if warp_uniform else (K.Hw.WID,))
        names = [x.name for x in K.walk_expr(e) if isinstance(x, K.Var) and x.name in self.varying]
        if any(isinstance(x, K.HwId) and x.name in ids for x in K.walk_expr(e)):
            names.append("the work-item's id")
        return names


class Ctx:
    """Where code is emitted, and the level of the unit that runs it; inside the
    per-element work of a block-level push, the element loop and the conditions and
    loop counts on the way (`guards`)."""

    def __init__(self, b: Builder, level: int, stmts: list | None, top: bool = False):
        self.b = b
        self.level = level
        self._stmts = stmts
        self.top = top
        self.elem: ElemLoop | None = None
        self.guards: tuple = ()

    @property
    def stmts(self) -> list:
        return self.b.top if self.top else self._stmts

    def emit(self, s: K.Stmt):
        if self.elem is not None:
            self._track(s)
        self.stmts.append(s)

    def _track(self, s: K.Stmt):
        """Names defined from varying values vary; loop-carried variables are taken to vary."""
        e = self.elem
        if isinstance(s, K.Let) and e.reads_varying(s.expr):
            e.varying.add(s.var)
        elif isinstance(s, K.DeclVar):
            e.varying.add(s.var)
        elif isinstance(s, K.Assign) and e.reads_varying(s.expr):
            e.varying.add(s.var)
        elif isinstance(s, K.SeqFor) and e.reads_varying(s.count):
            e.varying.add(s.var)

    def sub(self, level: int | None = None, guard: K.Expr | None = None) -> "Ctx":
        """A nested context (loop or branch body) with its own statement list; `guard`
        is the condition or loop count that decides whether and how often it runs."""
        c = Ctx(self.b, self.level if level is None else level, [])
        c.elem = self.elem
        c.guards = self.guards + ((guard,) if guard is not None and self.elem is not None else ())
        return c

    def bind(self, e: K.Expr, prefix: str = "t") -> K.Expr:
        """Name a non-trivial expression once (never at a kernel's top level)."""
        if self.top or isinstance(e, (K.Const, K.Var, K.HwId)) or self.b.host_computable(e):
            return e
        name = self.b.fresh(prefix)
        self.emit(K.Let(name, e))
        return K.Var(e.ty, name)

    def share(self, v: SVal, eager: bool = False) -> SVal:
        """Name the large scalar expressions in a value that is about to be copied (a
        function's argument, a let's value), so each copy is a variable, not the whole
        expression again (nested lets and maps would otherwise grow the code
        exponentially).  Unlike `bind`, also at a kernel's top: a name used after a
        kernel boundary is carried across it (`carry_scalars`).  `eager`: the value of a
        `let` or an element of an array literal, which the evaluator computes where it is
        written, so its run-time checks (an `index`, a divisor) are made here, used or not."""
        if isinstance(v, SPair):
            return SPair(self.share(v.a, eager), self.share(v.b, eager))
        if not isinstance(v, SScalar) or isinstance(v.e, (K.Const, K.Var, K.HwId)):
            return v
        checks = v.e.kinds & K.kind_bits(K.Checked)
        if sum(1 for _ in K.walk_expr(v.e)) < SHARE_MIN and not (eager and checks):
            return v
        # stays host-computable (it may be a size); but the host computes its variables before
        # each launch, whatever the kernel's branches and loops do, so a bounds-checked index
        # (an error when out of range) goes there only from a kernel's top, which always runs
        if self.b.host_computable(v.e) and v.e.ty == "int":
            if self.top or not checks:
                return SScalar(self.b.host_scalar(v.e))
            hoisted = K.hoist_checks(v.e)
            if hoisted is not None:     # the host computes it; here the kernel makes its checks
                plain, checks = hoisted
                for failed, check in (c for c in checks if c[1].site >= 0):
                    self.emit(K.If(failed, (K.Fail(check.buf, check.site, (check.index,)),)))
                return SScalar(self.b.host_scalar(plain))
        name = self.b.fresh("sh")
        self.emit(K.Let(name, v.e))
        return SScalar(K.Var(v.e.ty, name))

    def error(self, message: str, notes=None) -> CompileError:
        return CompileError(message, self.b.span, notes)


def origin_of(span: Span | None, what: str) -> str:
    if span is None:
        return what
    return f"{what} at {span.source.name}:{span.line}"


# ---------------------------------------------------------------- the interpreter

class Lowerer:
    """Runs declarations over symbolic values."""

    def __init__(self, decls, hw: dict[str, int], core: C.TypedCore):
        self.core = core
        self.decls: dict[str, list[tuple[int, A.Val]]] = {}
        vals = [d for d in decls if isinstance(d, A.Val)]
        for k, d in enumerate(vals):
            self.decls.setdefault(d.name, []).append((k, d))
        self.end = len(vals)
        self.hw = hw
        self.prims = primitives()
        self.hw_read: set[str] = set()      # hardware parameters the program reads

    # -- expressions

    def ev(self, ctx: Ctx, env: dict, e: A.Expr) -> SVal:
        method = getattr(self, "ev_" + type(e).__name__)
        return method(ctx, env, e)

    def ev_IntLit(self, ctx, env, e):
        return SScalar(K.cint(e.value))

    def ev_FloatLit(self, ctx, env, e):
        return SScalar(K.Const("float", e.value))

    def ev_DoubleLit(self, ctx, env, e):
        return SScalar(K.Const("double", e.value))

    def ev_BoolLit(self, ctx, env, e):
        return SScalar(K.Const("bool", bool(e.value)))

    def ev_HwParam(self, ctx, env, e):
        self.hw_read.add(e.name)
        return SScalar(K.cint(self.hw[e.name]))

    def ev_Var(self, ctx, env, e):
        if e.name in env:
            value = env[e.name]
            if isinstance(value, PolyLet):      # a polymorphic let's value, at this use's types
                let_env = value.env
                inst = let_env[INST].for_let(value.let, env[INST].at(e))
                return ctx.share(self.ev(ctx, {**let_env, INST: inst}, value.let.value))
            return value
        return self.global_value(ctx, e.name, e.span, env[INST].at(e), env.get(SCOPE, self.end))

    def global_value(self, ctx, name, span, ty: T.Type | C.Inst, limit=None):
        """The value of declaration `name` as seen from before declaration number `limit`
        (a declaration sees the earlier ones only; a later one may shadow a name), at type
        `ty` (the concrete type of the occurrence; for the entry point, its instance)."""
        limit = self.end if limit is None else limit
        seen = [(k, d) for k, d in self.decls.get(name, ()) if k < limit]
        if seen:
            k, d = seen[-1]
            inst = ty if isinstance(ty, C.Inst) else C.Inst(self.core).for_decl(d, ty)
            return self.ev(ctx, {SCOPE: k, INST: inst}, d.value)
        if name in TYPED:
            prim = TYPED[name](ty, name)
            return with_span(prim, span)
        if name in self.prims:
            prim = self.prims[name]
            return with_span(prim, span) if name in SPANNED else prim
        raise CompileError(f"unbound name `{name}` during compilation", span)

    def ev_Lam(self, ctx, env, e):
        def f(c, v, env=env, e=e):
            # an argument is evaluated before the call, as in the evaluator: its zero-divisor
            # checks are made here, used or not (bounds checks stay where the value is used)
            return self.ev(c, {**env, e.param: c.share(v, eager=divides(v))}, e.body)
        return SFun(f, e.param)

    def ev_LevelLam(self, ctx, env, e):
        rigid = self.core.rigid_level(e)

        def f(c, lvl, env=env, e=e):
            return self.ev(c, {**env, e.lvar: SLevel(lvl), INST: env[INST].with_level(rigid, lvl)}, e.body)
        return SLevelFun(f)

    def ev_App(self, ctx, env, e):
        fn = self.ev(ctx, env, e.fn)
        arg = self.ev(ctx, env, e.arg)
        return self.apply_at(ctx, fn, arg, e.span)

    def apply_at(self, ctx, fn, arg, span):
        saved = ctx.b.span
        ctx.b.span = span
        try:
            return apply(ctx, fn, arg)
        finally:
            ctx.b.span = saved

    def ev_LevelApp(self, ctx, env, e):
        fn = self.ev(ctx, env, e.fn)
        if not isinstance(fn, SLevelFun):
            raise CompilerBug("level application of a value that is not level-abstracted")
        saved = ctx.b.span
        ctx.b.span = e.span
        try:
            return fn.f(ctx, self.level(env, e.level))
        finally:
            ctx.b.span = saved

    def level(self, env, lv: A.LevelAst) -> int:
        if isinstance(lv, A.LNamed):
            return T.level_depth(T.LEVEL_NAMES[lv.name])
        if isinstance(lv, A.LSucc):
            return self.level(env, lv.inner) + 1
        value = env.get(lv.name)
        if not isinstance(value, SLevel):
            raise CompilerBug(f"level variable {lv.name} unbound at compile time")
        return value.level

    def ev_Let(self, ctx, env, e):
        _, tq, lq = self.core.let_info(e)
        if tq or lq:        # polymorphic: lowered at each use, at that use's types (`ev_Var`)
            return self.ev(ctx, {**env, e.name: PolyLet(e, env)}, e.body)
        value = self.ev(ctx, env, e.value)
        if isinstance(value, SScalar):
            value = SScalar(ctx.bind(value.e))
        return self.ev(ctx, {**env, e.name: ctx.share(value, eager=True)}, e.body)

    def ev_If(self, ctx, env, e):
        cond = self.ev(ctx, env, e.cond)
        c = cond.e
        if isinstance(c, K.Const):
            return self.ev(ctx, env, e.then if c.value else e.else_)
        return branch(ctx, c, lambda sc: self.ev(sc, env, e.then), lambda sc: self.ev(sc, env, e.else_), e.span)

    def ev_Pair(self, ctx, env, e):
        return SPair(self.ev(ctx, env, e.fst), self.ev(ctx, env, e.snd))

    def ev_ArrayLit(self, ctx, env, e):
        if not e.elems:     # `[]`: any read is out of range; a value of its type stands in
            return empty_array(env[INST].at(e).elem)
        elems = [ctx.share(self.ev(ctx, env, x), eager=True) for x in e.elems]
        return literal_array(elems)

    def ev_UnOp(self, ctx, env, e):
        v = self.ev(ctx, env, e.operand).e
        if e.op == "not":
            return SScalar(K.unop("not", v))
        if isinstance(v, K.Const) and v.ty in ("float", "double"):
            return SScalar(K.Const(v.ty, -v.value))
        return SScalar(K.unop("neg", v))

    def ev_BinOp(self, ctx, env, e):
        if e.op == "|>":
            arg = self.ev(ctx, env, e.left)
            return self.apply_at(ctx, self.ev(ctx, env, e.right), arg, e.span)
        if e.op == ".":
            f, g = self.ev(ctx, env, e.left), self.ev(ctx, env, e.right)
            return SFun(lambda c, x: apply(c, f, apply(c, g, x)), "compose")
        if e.op in ("&&", "||"):
            return self.short_circuit(ctx, env, e)
        a = self.ev(ctx, env, e.left).e
        b = self.ev(ctx, env, e.right).e
        op = BINOPS[e.op]
        if op in ("div", "mod") and a.ty == "int":
            b = ctx.b.checked_divisor(a, b, op, e.span)
        return SScalar(K.binop(op, a, b))

    def short_circuit(self, ctx, env, e):
        """`a && b`, `a || b`: b's code (a loop, a checked index in it) runs only when a
        does not decide, as the evaluator evaluates it; a pure b stays C's own operator."""
        a = self.ev(ctx, env, e.left).e
        if isinstance(a, K.Const):
            return self.ev(ctx, env, e.right) if a.value == (e.op == "&&") else SScalar(a)
        decided = SScalar(K.Const("bool", e.op == "||"))
        seen = []

        def right(sc):
            b = self.ev(sc, env, e.right)
            seen.append((sc, b))
            return b
        then, else_ = (right, lambda sc: decided) if e.op == "&&" else (lambda sc: decided, right)
        v = branch(ctx, a, then, else_)
        (sc, b), = seen
        if not sc.stmts:        # no code of its own: the value is good where `a` is
            return SScalar(K.binop(BINOPS[e.op], a, b.e))
        return v


SCOPE = "\0scope"    # env key: the number of the declaration whose body is evaluated
INST = "\0inst"      # env key: the `core.Inst` giving the concrete types of the code evaluated


@dataclass
class PolyLet:
    """The binding of a `let` that the checker generalised: its value is lowered at each
    use, where the use is, under the instance that use needs, as if inlined there.  Such
    values are functions (or empty arrays), so this costs no code; only a function that
    does work before it takes its last argument would do that work once per use."""
    let: A.Let
    env: dict


BINOPS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "div": "div", "%": "mod", "mod": "mod",
          "<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne", "&&": "and",
          "||": "or", "&": "band", "|": "bor", "^": "bxor", "<<": "shl", ">>": "shr"}


SPANNED = frozenset({"force", "while", "push", "concat", "interleave", "foldl", "power", "seqfor",
                     "seqConcat", "generate"})


def with_span(v: SVal, span) -> SVal:
    """A primitive whose applications report (and place buffers at) the span of its name."""
    def at(ctx, thunk):
        saved = ctx.b.span
        ctx.b.span = span
        try:
            return thunk()
        finally:
            ctx.b.span = saved
    if isinstance(v, SFun):
        return SFun(lambda c, x: at(c, lambda: with_span(v.f(c, x), span)), v.name)
    if isinstance(v, SLevelFun):
        return SLevelFun(lambda c, lvl: at(c, lambda: with_span(v.f(c, lvl), span)))
    return v


def divides(v: SVal) -> bool:
    """A scalar value (or pair of them) holding a checked divisor (`kir.checked_divisor`)."""
    if isinstance(v, SPair):
        return divides(v.a) or divides(v.b)
    return isinstance(v, SScalar) and bool(v.e.kinds & K.kind_bits(K.Checked)) and any(
        K.plain_divisor(x) is not x for x in K.walk_expr(v.e) if isinstance(x, K.Select))


def apply(ctx: Ctx, fn: SVal, arg: SVal) -> SVal:
    if not isinstance(fn, SFun):
        raise CompilerBug(f"application of a non-function {type(fn).__name__}")
    return fn.f(ctx, arg)


def apply2(ctx, fn, a, b):
    return apply(ctx, apply(ctx, fn, a), b)


def literal_array(elems: list[SVal]) -> SPull:
    def at(ctx, i, elems=elems):
        if isinstance(i, K.Const):
            if 0 <= i.value < len(elems):
                return elems[i.value]
            raise ctx.error(f"index {i.value} out of range for an array literal of length {len(elems)}")
        result = elems[-1]
        for k in range(len(elems) - 2, -1, -1):
            result = merge_pure(K.binop("eq", i, K.cint(k)), elems[k], result)
        return result
    return SPull(K.cint(len(elems)), at)


def empty_array(elem: T.Type) -> SPull:
    """An empty pull array of `elem`: its index function gives zeros of that type."""
    return SPull(K.cint(0), lambda ctx, i: zero_value(elem))


def zero_value(t: T.Type) -> SVal:
    if isinstance(t, T.TCon):
        return SScalar(K.Const(t.name, _zero(t.name)))
    if isinstance(t, T.TPairT):
        return SPair(zero_value(t.fst), zero_value(t.snd))
    if isinstance(t, T.TPullT):
        return empty_array(t.elem)
    raise CompilerBug(f"the typed core gives an empty array literal elements of type {format_type(t)}")


# ---------------------------------------------------------------- conditionals

def merge_pure(c: K.Expr, a: SVal, b: SVal, span: Span | None = None) -> SVal:
    """`if c then a else b` for values whose computation emitted no statements (`span`:
    the `if`'s, for an error in the branches of push arrays run later)."""
    if isinstance(a, SScalar) and isinstance(b, SScalar):
        return SScalar(K.select(c, a.e, b.e))
    if isinstance(a, SPair) and isinstance(b, SPair):
        return SPair(merge_pure(c, a.a, b.a, span), merge_pure(c, a.b, b.b, span))
    if isinstance(a, SPull) and isinstance(b, SPull):
        return SPull(K.select(c, a.n, b.n),
                     lambda ctx, i: branch(ctx, c, lambda sc: a.at(sc, i), lambda sc: b.at(sc, i), span))
    if isinstance(a, SPush) and isinstance(b, SPush):
        def run(ctx, w):
            ta, tb = ctx.sub(), ctx.sub()
            a.run(ta, w)
            b.run(tb, w)
            emit_if(ctx, c, tuple(ta.stmts), tuple(tb.stmts), span)
        return SPush(max(a.level, b.level), K.select(c, a.n, b.n), run, a.span)
    if isinstance(a, SFun) and isinstance(b, SFun):
        return SFun(lambda ctx, x: branch(ctx, c, lambda sc: apply(sc, a, x), lambda sc: apply(sc, b, x), span))
    if isinstance(a, SLevelFun) and isinstance(b, SLevelFun):
        return SLevelFun(lambda ctx, l: branch(ctx, c, lambda sc: a.f(sc, l), lambda sc: b.f(sc, l), span))
    raise CompilerBug(f"branches of different shapes: {type(a).__name__} and {type(b).__name__}")


def branch(ctx: Ctx, c: K.Expr, then: Callable, else_: Callable, span: Span | None = None) -> SVal:
    """Evaluate both branches in their own statement lists and join the results."""
    if isinstance(c, K.Const):
        return then(ctx) if c.value else else_(ctx)
    ta, tb = ctx.sub(guard=c), ctx.sub(guard=c)
    a, b = then(ta), else_(tb)
    if not ta.stmts and not tb.stmts:
        return merge_pure(c, a, b, span)
    then_stmts, else_stmts = hoist_decls(ctx, ta.stmts), hoist_decls(ctx, tb.stmts)
    if _same_scalar_shape(a, b) and not ctx.top:
        leaves_a, leaves_b = scalar_leaves(ctx, a), scalar_leaves(ctx, b)
        names = [ctx.b.fresh("r") for _ in leaves_a]
        for var, x in zip(names, leaves_a):
            ctx.emit(K.DeclVar(var, K.Const(x.e.ty, _zero(x.e.ty))))
        then_stmts += tuple(K.Assign(v, x.e) for v, x in zip(names, leaves_a))
        else_stmts += tuple(K.Assign(v, x.e) for v, x in zip(names, leaves_b))
        emit_if(ctx, c, then_stmts, else_stmts, span)
        return rebuild(a, iter(SScalar(K.Var(x.e.ty, v)) for v, x in zip(names, leaves_a)))
    c = emit_if(ctx, c, then_stmts, else_stmts, span)
    return merge_pure(c, a, b, span)


def _same_scalar_shape(a: SVal, b: SVal) -> bool:
    """Scalars, or pairs of such, of the same shape (the result of a branch held in variables)."""
    if isinstance(a, SScalar) and isinstance(b, SScalar):
        return a.e.ty == b.e.ty
    if isinstance(a, SPair) and isinstance(b, SPair):
        return _same_scalar_shape(a.a, b.a) and _same_scalar_shape(a.b, b.b)
    return False

def emit_if(ctx: Ctx, c: K.Expr, then_stmts: tuple, else_stmts: tuple, span: Span | None = None) -> K.Expr:
    """`if (c) then else`.  In code a warp runs, c may differ between the warps of a
    block, so a barrier in a branch (a warp-level force) is taken out of the `if`:
    the branches are cut at their barriers and every warp runs each barrier.
    Returns the condition as the code after the `if` must test it."""
    if ctx.level > WARP or not (K.contains_barrier(then_stmts) or K.contains_barrier(else_stmts)):
        ctx.emit(K.If(c, then_stmts, else_stmts))
        return c
    segs_a, segs_b = barrier_segments(ctx, then_stmts, span), barrier_segments(ctx, else_stmts, span)
    if not isinstance(c, (K.Var, K.Const)):
        name = ctx.b.fresh("cond")
        ctx.emit(K.Let(name, c))
        c = K.Var(c.ty, name)
    for k in range(max(len(segs_a), len(segs_b))):
        sa = segs_a[k][0] if k < len(segs_a) else ()
        sb = segs_b[k][0] if k < len(segs_b) else ()
        if sa or sb:
            ctx.emit(K.If(c, sa, sb))
        why = next((seg[1] for seg in (segs_a[k:k + 1] + segs_b[k:k + 1]) if seg[1] is not None), None)
        if why is not None:
            ctx.emit(why)
    return c


def barrier_segments(ctx: Ctx, stmts: tuple, span: Span | None = None) -> list:
    """[(statements, the barrier after them or None)]; a barrier nested in a loop or an
    inner `if` of the branch cannot be taken out: a located error."""
    segs, cur = [], []
    for s in stmts:
        if isinstance(s, K.Barrier):
            segs.append((tuple(cur), s))
            cur = []
            continue
        if K.contains_barrier([s]):
            raise CompileError("this `if` runs in each warp and its condition may differ between the warps "
                               "of a block, but a branch synchronises the whole block inside a loop (a "
                               "warp-level while, seqConcat or parts with their own barriers), which some "
                               "warps would never reach", span or ctx.b.span,
                               ["compute both alternatives before the `if` (force them outside it) and let "
                                "the `if` choose between the results"])
        cur.append(s)
    segs.append((tuple(cur), None))
    return segs


def hoist_decls(ctx: Ctx, stmts: list) -> tuple:
    """A branch's own declarations, moved before the `if` (as assignments inside it),
    so the joined result may refer to them (a foldl's accumulator, a while's length)."""
    out = []
    for s in stmts:
        if isinstance(s, (K.Let, K.DeclVar)):
            value = s.expr if isinstance(s, K.Let) else s.init
            ctx.emit(K.DeclVar(s.var, K.Const(value.ty, _zero(value.ty))))
            out.append(K.Assign(s.var, value))
        elif isinstance(s, K.DeclPtr):
            ctx.emit(s)
        else:
            out.append(s)
    return tuple(out)


def _zero(ty: str):
    return {"int": 0, "float": 0.0, "double": 0.0, "bool": False}[ty]


# ---------------------------------------------------------------- iteration schemes

def check_level(ctx: Ctx, level: int, what: str):
    if ctx.level < level:
        raise ctx.error(
            f"cannot {what} a {LEVEL_NAMES[level]}-level array here: this code runs in one "
            f"{LEVEL_NAMES[ctx.level]}",
            [f"a {LEVEL_NAMES[level]}-level computation must be started from code that a whole "
             f"{LEVEL_NAMES[level]} (or a larger unit) runs; move it out of the per-element function",
             "a block- or warp-level `force` may stand in the per-element work of a block-level "
             "`push` (the block computes it together); to stage tiles in a loop, step over them "
             "with a block-level `power` (examples/matmul.fcl)"])


def push_scheme(level: int, arr: SPull, span) -> SPush:
    """`push <level> arr`: elements shared out over the work-items of one unit of `level`.
    When an element's work forces a block- or warp-level array (all work-items of the
    block compute it together), every work-item runs the same number of rounds:
    round r gives work-item t element r * #BlockSize + t (clamped to the last element,
    whose work is then done again but not written), so the barriers line up."""
    def run(ctx: Ctx, w):
        check_level(ctx, level, "compute")
        body = ctx.sub(THREAD)
        var = ctx.b.fresh("i")
        i = K.Var("int", var)
        if level == BLOCK:
            body.elem = ElemLoop(level, var, {var})
            body.guards = ()
        v = as_scalar(ctx, arr.at(body, i))
        writes = body.sub()
        w(writes, i, v)
        if body.elem is None or not body.elem.collective:
            for st in writes.stmts:
                body.emit(st)
            ctx.emit(K.ParFor(LEVEL_NAMES[level], var, arr.n, tuple(body.stmts)))
            return
        if ctx.elem is not None and ctx.elem.reads_varying(arr.n):
            raise ctx.error("this block-level array's length differs between the work-items of the block, "
                            "but its elements force block-level arrays, which the whole block computes "
                            "together")
        bs = K.cint(ctx.b.hw["#BlockSize"])
        r, active = ctx.b.fresh("round"), ctx.b.fresh("active")
        idx = K.add(K.mul(K.Var("int", r), bs), K.HwId("int", "lid"))
        rounds = K.div(K.add(arr.n, K.cint(ctx.b.hw["#BlockSize"] - 1)), bs)
        head = (K.Let(var, K.call("min", (idx, K.sub(arr.n, K.cint(1))), "int")),
                K.Let(active, K.lt(idx, arr.n)))
        stmts = head + tuple(body.stmts) + (K.If(K.Var("bool", active), tuple(writes.stmts)),)
        ctx.emit(K.SeqFor(r, rounds, stmts))
    return SPush(level, arr.n, run, span)


def as_scalar(ctx, v: SVal) -> SScalar:
    if not isinstance(v, SScalar):
        raise ctx.error("push arrays hold scalars only")
    return v


def parts_scheme(level: int, n: K.Expr, parts: SPull, place: Callable, fits: Callable, span) -> SPush:
    """`concat`/`interleave` at `level`: part p goes to the p-th sub-unit, element j
    of it to position place(ctx, p, j, count) (with the condition that it is inside the
    result and the failure to record where it is not, the evaluator's error: such a position
    is never written).  A part
    whose length m the operation does not take is the evaluator's error too:
    fits(ctx, p, m, count, active) checks it at the part's top and gives the condition, so
    the part writes nothing then (no element lands outside the result or on another part's)."""
    def run(ctx: Ctx, w):
        check_level(ctx, level, "compute")
        var, active = ctx.b.fresh("part"), ctx.b.fresh("active")
        p = K.Var("int", var)
        body = ctx.sub(level - 1)
        part = parts.at(body, p)
        if not isinstance(part, SPush) or part.level != level - 1:
            raise CompilerBug("concat of parts at the wrong level")
        going = K.binop("and", K.Var("bool", active), fits(body, p, part.n, parts.n, K.Var("bool", active)))

        def inner(c, j, v):
            pos, inside, outside = place(c, p, j, parts.n)
            guarded = c.sub()
            w(guarded, pos, v)
            writes = tuple(guarded.stmts)
            if not K.is_const(inside, True):
                writes = (K.If(inside, writes, outside),)
            c.emit(K.If(going, writes))
        part.run(body, inner)
        reuse_barrier(body, level, p, parts.n)
        ctx.emit(K.PartFor(LEVEL_NAMES[level], var, parts.n, tuple(body.stmts), active))
    return SPush(level, K.mul(n, parts.n), run, span)


def fail_unless(ctx: Ctx, ok: K.Expr, kind: str, values: tuple, span=None, when: K.Expr | None = None) -> K.Expr:
    """`ok`, a condition the evaluator reports as the run-time error `kind` where it is false
    (and `when` holds): emits the failure (the plan's check, recording `values`) there."""
    if (not isinstance(ok, K.Const) or not ok.value) and not ctx.b.dry:    # (a probe's code is dropped)
        buf, site = ctx.b.check_site(kind, span)
        failed = K.unop("not", ok) if when is None else K.binop("and", when, K.unop("not", ok))
        if site >= 0:
            ctx.emit(K.If(failed, (K.Fail(buf, site, tuple(values)),)))
    return ok


def reuse_barrier(body: Ctx, level: int, p: K.Expr, count: K.Expr):
    """A unit that takes another part reuses its local memory: wait for everyone first.
    At grid level the barrier runs only when this work-group has a next part (uniform
    over the group); at block level the warps' loop is uniform, so it always runs."""
    if level == WARP:
        return
    stmts = body.stmts
    local = any(body.b.bufs.get(n) is not None and body.b.bufs[n].space == "local"
                for n in K.buffers_used(stmts))
    if not (local or K.contains_barrier(stmts)) or _ends_in_barrier(body, stmts):
        return
    barrier = K.Barrier("the next part reuses local memory")
    if level == GRID:
        more = K.binop("lt", K.binop("add", p, K.HwId("int", "num_groups")), count)
        body.emit(K.If(more, (barrier,)))
    else:
        body.emit(barrier)


def _ends_in_barrier(ctx: Ctx, stmts) -> bool:
    """Whether every run of `stmts` ends with a barrier after which nothing but private memory
    is touched (then a unit's next part needs no barrier of its own): the statements after
    their last barrier touch only private memory and hold no barrier, or the last statement is
    a loop of a constant, positive number of steps whose body so ends (the steps of a
    `seqConcat` or `power`).  PoCL's optimising build also ran a block-level part loop wrongly
    where that second barrier stood after such a loop (warpSeqParts in
    tests/programs/fuzz_regressions.fcl)."""
    last = stmts[-1] if stmts else None
    if isinstance(last, K.SeqFor) and K.is_const(last.count) and last.count.value >= 1 \
            and _ends_in_barrier(ctx, last.body):
        return True
    ends = _outside_barriers(stmts)
    if ends is None:
        return False
    tail = ends[1]
    reads, writes = K.all_accesses(tail)
    return not K.contains_barrier(tail) and all(
        ctx.b.bufs.get(x) is not None and ctx.b.bufs[x].space == "private" for x in reads | writes)


def _outside_barriers(stmts) -> tuple[tuple, tuple] | None:
    """(the statements before the first barrier at the top level of `stmts`, those after
    the last one), or None where there is none."""
    cuts = [k for k, s in enumerate(stmts) if isinstance(s, K.Barrier)]
    return (tuple(stmts[:cuts[0]]), tuple(stmts[cuts[-1] + 1:])) if cuts else None


# ---------------------------------------------------------------- memory: force and while

def placement(ctx: Ctx, level: int, n: K.Expr, what: str, role: str, ty: str):
    """Allocate memory for a `level`-level array of n elements of type `ty`: (buffer,
    base offset expr)."""
    b = ctx.b
    origin = origin_of(b.span, what)
    if not b.dry and not b.host_computable(n):
        raise host_length_error(ctx, n, f"the array this {what} stores")
    if level == GRID:
        return b.buffer("global", n, origin, role, ty=ty), K.cint(0)
    if level == BLOCK:
        return b.buffer("local", n, origin, role, ty=ty), K.cint(0)
    if level == WARP:
        rec = b.buffer("local", n, origin, role, per="warp", ty=ty)
        return rec, K.mul(K.HwId("int", "wid"), n)
    if isinstance(n, K.Const) and n.value <= PRIVATE_MAX:
        return b.buffer("private", n, origin, role, ty=ty), K.cint(0)
    rec = b.buffer("local", n, origin, role, per="thread", ty=ty)
    return rec, K.mul(K.HwId("int", "lid"), n)


def store_writer(rec: BufRec, base: K.Expr):
    if not rec.ty:
        raise CompilerBug(f"buffer {rec.name} ({rec.origin}) has no element type")

    def w(ctx, i, v: SScalar):
        if rec.ty != v.e.ty:
            raise CompilerBug(f"buffer {rec.name} of {rec.ty} written with {v.e.ty}")
        ctx.emit(K.Store(rec.name, K.add(base, i), v.e))
    return w


def reader(rec_name: str, base: K.Expr, n: K.Expr, ty: str) -> SPull:
    return SPull(n, lambda ctx, i: SScalar(K.Load(ty, rec_name, K.add(base, i))))


def sync(ctx: Ctx, level: int, why: str):
    if level >= WARP and level <= BLOCK:
        ctx.emit(K.Barrier(why))


def force(ctx: Ctx, arr: SPush, ty: str) -> SPull:
    """Materialise a push array of `ty` where its level says (registers, local, global)."""
    if WARP <= arr.level <= BLOCK and ctx.level < arr.level and ctx.elem is not None:
        return collective_force(ctx, arr, ty)
    check_level(ctx, arr.level, "force")
    if arr.level == GRID and not ctx.top:
        raise ctx.error("a grid-level array can only be forced at the top level of a kernel, "
                        "not inside a part of a concat or inside per-element work")
    rec, base = placement(ctx, arr.level, arr.n, "force", "force", ty)
    arr.run(ctx, store_writer(rec, base))
    if arr.level == GRID:
        ctx.b.split_kernel()
    sync(ctx, arr.level, rec.origin)
    return reader(rec.name, base, arr.n, ty)


def collective_force(ctx: Ctx, arr: SPush, ty: str) -> SPull:
    """A block- or warp-level force inside the per-element work of a block-level push
    (or a sequential loop in it): the work-items of the block compute the array together,
    between two barriers, in a round that every work-item runs (see `push_scheme`).  The
    array must be the same for every element of the round, and the conditions and loop
    counts on the way to it the same for every work-item."""
    e = ctx.elem
    for g in ctx.guards:
        names = e.reads_varying(g)
        if names:
            raise ctx.error(
                f"this {LEVEL_NAMES[arr.level]}-level force runs inside a condition or loop that "
                f"differs between the work-items of the block (it reads {_names(names, e)}), so not "
                "every work-item would reach its barriers",
                ["make the loop count or condition depend only on values every work-item shares "
                 "(arguments, the part index, loop counters of such loops)"])
    rec, base = placement(ctx, arr.level, arr.n, "force", "force", ty)
    work = Ctx(ctx.b, arr.level, [])
    arr.run(work, store_writer(rec, base))
    names = sorted({n for st in K.walk_stmts(work.stmts) for x in _stmt_exprs(st)
                    for n in e.reads_varying(x, warp_uniform=True)})
    if names or e.reads_varying(arr.n):
        raise ctx.error(
            f"this {LEVEL_NAMES[arr.level]}-level force inside per-element work depends on the element "
            f"(it reads {_names(names or e.reads_varying(arr.n), e)}); the whole block computes it "
            "together, so it must be the same for every element",
            ["force only what every element of the block shares (tiles indexed by the part and "
             "by loop counters), or compute the per-element part without a force"])
    e.collective = True
    if not (ctx.stmts and isinstance(ctx.stmts[-1], K.Barrier)):
        ctx.emit(K.Barrier(f"{rec.origin}: reads of the previous round are done"))
    for st in work.stmts:
        ctx.emit(st)
    ctx.emit(K.Barrier(rec.origin))
    return reader(rec.name, base, arr.n, ty)


def _names(names, e: ElemLoop | None = None) -> str:
    """How to name varying values in a message: the element index, the work-item's id,
    or values computed from them (the compiler's own names mean nothing to the user)."""
    said = []
    for n in names:
        text = ("the element's index" if e is not None and n == e.var
                else n if " " in n else "values computed from the element")
        if text not in said:
            said.append(text)
    return " and ".join(said)


def _stmt_exprs(st: K.Stmt):
    """The expressions directly in one statement (not in nested statements)."""
    for name in getattr(st, "__dataclass_fields__", {}):
        v = getattr(st, name)
        if isinstance(v, K.Expr):
            yield v


def while_loop(ctx: Ctx, cond: SVal, step: SVal, init: SPush, ty: str) -> SPull:
    """`while cond step init`: force init, then step between two buffers while cond holds."""
    level = init.level
    check_level(ctx, level, "loop over")
    if level == GRID and not ctx.top:
        raise ctx.error("a grid-level while can only run at the top level of a kernel")
    bufs = [placement(ctx, level, init.n, "while", "while", ty) for _ in range(2)]
    (ra, base), (rb, _) = bufs
    init.run(ctx, store_writer(ra, base))
    _boundary(ctx, level, ra.origin)
    cur, other, n = ra, rb, init.n
    for _ in range(WHILE_UNROLL_MAX):
        arr = reader(cur.name, base, n, ty)
        probe = ctx.sub()
        c = as_scalar(ctx, apply(probe, cond, arr)).e
        if not isinstance(c, K.Const):
            return _dynamic_while(ctx, cond, step, (cur, other), base, n, level)
        if not c.value:
            return arr
        nxt = apply(ctx, step, arr)
        _check_step(ctx, nxt, level, init.n)
        nxt.run(ctx, store_writer(other, base))
        _boundary(ctx, level, other.origin)
        cur, other, n = other, cur, nxt.n
    return _dynamic_while(ctx, cond, step, (cur, other), base, n, level)


def _boundary(ctx, level, why):
    if level == GRID:
        ctx.b.split_kernel()
    sync(ctx, level, why)


def _check_step(ctx, nxt, level, size):
    if not isinstance(nxt, SPush) or nxt.level != level:
        raise CompilerBug("while step of the wrong level")
    if isinstance(nxt.n, K.Const) and isinstance(size, K.Const) and nxt.n.value > size.value:
        raise ctx.error(f"the step of this while makes the array grow from {size.value} to "
                        f"{nxt.n.value} elements; arrays never grow in while")


def _dynamic_while(ctx, cond, step, bufs, base, n, level) -> SPull:
    """A run-time loop over a ping-pong pair of pointers.  At block level the
    condition is uniform over the work-group; at warp level every warp may stop
    at a different step, so all warps loop while any warp goes on (a local flag
    set with atomic_or) and each warp's step is guarded by its own condition."""
    if level == GRID:
        return _host_while(ctx, cond, step, bufs, n)
    cur, other = bufs
    ty = cur.ty
    b = ctx.b
    final = _host_final_length(ctx, cond, step, n, level, ty, cur.name)
    length, pc, po = b.fresh("len"), b.fresh("cur"), b.fresh("nxt")
    space = cur.space
    ctx.emit(K.DeclVar(length, n))
    ctx.emit(K.DeclPtr(pc, space, ty, cur.name))
    ctx.emit(K.DeclPtr(po, space, ty, other.name))
    arr = reader(pc, base, K.Var("int", length), ty)
    head = ctx.sub()
    c = as_scalar(ctx, apply(head, cond, arr)).e
    body = ctx.sub(guard=c)
    nxt = apply(body, step, arr)
    _check_step(ctx, nxt, level, K.Var("int", length))
    new_len = body.bind(nxt.n, "newlen")
    ptr = BufRec(po, space, n, cur.origin, None, "while", ty=ty)
    nxt.run(body, store_writer(ptr, base))
    updates = [K.Assign(length, new_len), K.SwapPtr(pc, po)]
    if level == WARP:
        going = head.bind(c, "going")
        if not isinstance(going, K.Var):
            going = K.Var("bool", b.fresh("going"))
            head.emit(K.Let(going.name, c))
        flag = b.buffer("local", K.cint(1), origin_of(b.span, "while (any warp still stepping)"), "while",
                        ty="int")
        anyv = b.fresh("anygoing")
        head.emit(K.If(K.binop("eq", K.HwId("int", "lid"), K.cint(0)), (K.Store(flag.name, K.cint(0), K.cint(0)),)))
        head.emit(K.Barrier("reset the while flag"))
        head.emit(K.If(going, (K.AtomicOr(flag.name, K.cint(0), K.cint(1)),)))
        head.emit(K.Barrier("every warp has voted"))
        head.emit(K.Let(anyv, K.binop("ne", K.Load("int", flag.name, K.cint(0)), K.cint(0))))
        steps = tuple(body.stmts) + tuple(updates)
        body_stmts = (K.If(going, steps), K.Barrier(cur.origin))
        _guarded_loop(ctx, tuple(head.stmts), K.Var("bool", anyv), body_stmts, cur.name)
    else:
        sync(body, level, cur.origin)
        for u in updates:
            body.emit(u)
        _guarded_loop(ctx, tuple(head.stmts), c, tuple(body.stmts), cur.name, K.Var("int", length))
    return reader(pc, base, final if final is not None else K.Var("int", length), ty)


def _host_final_length(ctx, cond, step, n, level, ty, origin: str):
    """When a while's condition and step lengths read only the length, and its first
    length is known to the host, the host runs the same loop over lengths alone before
    the launch: the length after the loop becomes a host scalar (so later forces and
    the result can be sized by it).  None otherwise."""
    b = ctx.b
    if b.dry or not b.host_computable(n):
        return None
    var = K.Var("int", b.fresh("hlen"))
    b.length_spans[var.name] = b.span
    probe = Builder(b.hw, dry=True)
    probe.parent = b            # its condition and lengths become host code of this plan
    probe.params = set(b.params) | {var.name}
    probe.counter = b.counter + 100000
    probe.span = b.span
    pctx = Ctx(probe, level, [])
    arr = reader("probe", K.cint(0), var, ty)
    try:
        c = as_scalar(pctx, apply(pctx, cond, arr)).e
        nxt = apply(pctx, step, arr)
    except FCLError:
        return None
    if pctx.stmts or not probe.host_computable(c) or not isinstance(nxt, SPush) \
            or not probe.host_computable(nxt.n):
        return None
    b.params.add(var.name)
    b.host_vars.append(K.Param(var.name, "int"))
    b.host += [P.SetVar(var.name, n), P.Loop((), c, (P.SetVar(var.name, nxt.n),), var.name, origin)]
    return var


def _guarded_loop(ctx, head, cond, body, holder: str, length=None):
    """Loop(head, cond, body) that also stops where the evaluator would say the
    while never terminates: its condition holding on an empty array (`length` 0:
    the step of an empty array is empty again; not given at warp level, where the
    loop condition must stay uniform) or, failing that, after P.MAX_DEVICE_STEPS
    steps.  Then it sets its bit (and CAPPED for the cap) in the plan's guard
    buffer, which the host's CheckSteps reports.  `stuck` keeps the last condition:
    true after the loop only when the guard ended it."""
    b = ctx.b
    steps, stuck = b.fresh("steps"), b.fresh("stuck")
    ctx.emit(K.DeclVar(steps, K.cint(0)))
    ctx.emit(K.DeclVar(stuck, K.const(False, "bool")))
    capped = K.binop("ge", K.Var("int", steps), K.cint(P.MAX_DEVICE_STEPS))
    going = K.binop("and", K.Var("bool", stuck), K.lt(K.Var("int", steps), K.cint(P.MAX_DEVICE_STEPS)))
    if length is not None:
        going = K.binop("and", going, K.binop("ne", length, K.cint(0)))
    ctx.emit(K.Loop(head + (K.Assign(stuck, cond),), going,
                    body + (K.Assign(steps, K.add(K.Var("int", steps), K.cint(1))),)))
    if b.dry:
        return
    if b.guard is None:
        b.guard = b.buffer("global", K.cint(1), "device while guard", "guard", prefix="guard", ty="int")
    if holder not in b.guarded:
        b.guarded.append(holder)
    bit = K.cint(1 << min(b.guarded.index(holder), 29))
    flag = K.select(capped, K.binop("bor", bit, K.cint(P.CAPPED)), bit)
    ctx.emit(K.If(K.Var("bool", stuck), (K.AtomicOr(b.guard.name, K.cint(0), flag),)))


def _host_while(ctx, cond, step, bufs, n) -> SPull:
    """A grid-level while with a run-time condition: a loop of launches on the host.
    The first work-group evaluates the condition into a flag the host reads; the step
    kernels read alias `cur` and write alias `nxt`, which the host binds to the two
    global buffers in turn; the length lives in a host variable passed to kernels."""
    b = ctx.b
    cur, other = bufs
    ty = cur.ty
    length = b.fresh("hlen")
    b.length_spans[length] = b.span
    b.params.add(length)
    b.host_vars.append(K.Param(length, "int"))
    pc = b.buffer("global", cur.size, cur.origin, "alias", prefix="cur", ty=ty)
    po = b.buffer("global", cur.size, cur.origin, "alias", prefix="nxt", ty=ty)
    b.split_kernel()
    outer = b.host
    outer += [P.Bind(pc.name, cur.name), P.Bind(po.name, other.name), P.SetVar(length, n)]
    head_host = b.host = []
    arr = reader(pc.name, K.cint(0), K.Var("int", length), ty)
    head = Ctx(b, GRID, [])
    c = as_scalar(ctx, apply(head, cond, arr)).e
    if not head.stmts and b.host_computable(c):
        loop_cond = c           # the condition reads only the length: the host decides it
    else:
        go = b.fresh("go")
        b.host_vars.append(K.Param(go, "int"))
        flag = b.buffer("global", K.cint(1), origin_of(b.span, "while condition"), "flag", prefix="flag",
                        ty="int")
        # the first work-group evaluates the condition (a block-level computation in it, with
        # its barriers, needs the whole group); its first work-item stores it
        store = K.Store(flag.name, K.cint(0), K.select(c, K.cint(1), K.cint(0)))
        head.emit(K.If(K.binop("eq", K.HwId("int", "lid"), K.cint(0)), (store,)))
        ctx.emit(K.If(K.binop("eq", K.HwId("int", "group_id"), K.cint(0)), tuple(head.stmts)))
        b.split_kernel()
        head_host.append(P.ReadScalar(go, flag.name))
        loop_cond = K.binop("ne", K.Var("int", go), K.cint(0))
    body_host = b.host = []
    nxt = apply(ctx, step, arr)
    _check_step(ctx, nxt, GRID, K.Var("int", length))
    if not b.host_computable(nxt.n):
        raise host_length_error(ctx, nxt.n, "each step of this grid-level while")
    nxt.run(ctx, store_writer(po, K.cint(0)))
    b.split_kernel()
    body_host += [P.SetVar(length, nxt.n), P.Swap(pc.name, po.name)]
    b.host = outer
    varying = {length}
    outer += hoist_allocs(b, head_host, varying) + hoist_allocs(b, body_host, varying)
    outer.append(P.Loop(tuple(head_host), loop_cond, tuple(body_host)))
    return arr


def hoist_allocs(b: Builder, stmts: list, varying: set) -> list:
    """Take out of `stmts` (a loop's) the allocations whose size does not change in the loop."""
    varying = varying | {s.var for s in P.walk(stmts) if isinstance(s, P.SetVar)}
    out = [s for s in stmts if isinstance(s, P.Alloc) and not b.bufs[s.buffer].size.names & varying]
    stmts[:] = [s for s in stmts if s not in out]
    return out


def power_loop(ctx: Ctx, count: SScalar, step: SVal, init: SPush, ty: str) -> SPull:
    """`power n step init`: force init, then step n times between two buffers; step i
    gets the iteration number.  A constant count unrolls (sizes stay constants); else
    a loop in the kernel that every work-item of the unit runs equally often."""
    level = init.level
    check_level(ctx, level, "loop over")
    n = count.e
    if level == GRID and not ctx.top:
        raise ctx.error("a grid-level power can only run at the top level of a kernel")
    bufs = [placement(ctx, level, init.n, "power", "while", ty) for _ in range(2)]
    (ra, base), (rb, _) = bufs
    init.run(ctx, store_writer(ra, base))
    _boundary(ctx, level, ra.origin)
    if isinstance(n, K.Const) and n.value <= WHILE_UNROLL_MAX:
        cur, other, size = ra, rb, init.n
        for k in range(n.value):
            arr = reader(cur.name, base, size, ty)
            nxt = apply2(ctx, step, SScalar(K.cint(k)), arr)
            _check_step(ctx, nxt, level, init.n)
            nxt.run(ctx, store_writer(other, base))
            _boundary(ctx, level, other.origin)
            cur, other, size = other, cur, nxt.n
        return reader(cur.name, base, size, ty)
    if level == GRID:
        return _host_power(ctx, n, step, (ra, rb), init.n)
    if level == WARP and not ctx.b.dry and not ctx.b.host_computable(n):
        raise ctx.error("the step count of a warp-level power must be known to the host (it may "
                        "depend on the arguments only): every warp must take the same number of "
                        "steps, because each step ends with a work-group barrier")
    cur, other = ra, rb
    b = ctx.b
    length, pc, po, it = b.fresh("len"), b.fresh("cur"), b.fresh("nxt"), b.fresh("it")
    ctx.emit(K.DeclVar(length, init.n))
    ctx.emit(K.DeclPtr(pc, cur.space, ty, cur.name))
    ctx.emit(K.DeclPtr(po, cur.space, ty, other.name))
    arr = reader(pc, base, K.Var("int", length), ty)
    body = ctx.sub(guard=n)
    nxt = apply2(body, step, SScalar(K.Var("int", it)), arr)
    _check_step(ctx, nxt, level, K.Var("int", length))
    new_len = body.bind(nxt.n, "newlen")
    nxt.run(body, store_writer(BufRec(po, cur.space, init.n, cur.origin, None, "while", ty=ty), base))
    sync(body, level, cur.origin)
    body.emit(K.Assign(length, new_len))
    body.emit(K.SwapPtr(pc, po))
    ctx.emit(K.SeqFor(it, n, tuple(body.stmts)))
    return reader(pc, base, K.Var("int", length), ty)


def _host_power(ctx, n, step, bufs, size) -> SPull:
    """A grid-level power with a run-time count: a loop of launches on the host with a
    counter the step kernels receive; the ping-pong aliases as in `_host_while`."""
    b = ctx.b
    if not b.dry and not b.host_computable(n):
        raise ctx.error("the step count of a grid-level power must be known to the host (it may "
                        "depend on the arguments only)")
    cur, other = bufs
    ty = cur.ty
    length, it = b.fresh("hlen"), b.fresh("hit")
    b.length_spans[length] = b.span
    b.params |= {length, it}
    b.host_vars += [K.Param(length, "int"), K.Param(it, "int")]
    pc = b.buffer("global", cur.size, cur.origin, "alias", prefix="cur", ty=ty)
    po = b.buffer("global", cur.size, cur.origin, "alias", prefix="nxt", ty=ty)
    b.split_kernel()
    outer = b.host
    outer += [P.Bind(pc.name, cur.name), P.Bind(po.name, other.name), P.SetVar(length, size),
              P.SetVar(it, K.cint(0))]
    body_host = b.host = []
    arr = reader(pc.name, K.cint(0), K.Var("int", length), ty)
    nxt = apply2(ctx, step, SScalar(K.Var("int", it)), arr)
    _check_step(ctx, nxt, GRID, K.Var("int", length))
    if not b.host_computable(nxt.n):
        raise host_length_error(ctx, nxt.n, "each step of this grid-level power")
    nxt.run(ctx, store_writer(po, K.cint(0)))
    b.split_kernel()
    body_host += [P.SetVar(length, nxt.n), P.Swap(pc.name, po.name),
                  P.SetVar(it, K.add(K.Var("int", it), K.cint(1)))]
    b.host = outer
    outer += hoist_allocs(b, body_host, {length, it})
    outer.append(P.Loop((), K.lt(K.Var("int", it), n), tuple(body_host)))
    return arr


def seqfor(ctx: Ctx, count: SScalar, state: SVal, f: SVal) -> SPush:
    """`seqfor n s f`: a thread-level push array; one work-item runs the n steps in
    order, the state in registers (scalars or pairs of scalars), and writes element i
    as it is computed."""
    n, span = count.e, ctx.b.span

    def run(c: Ctx, w):
        if isinstance(n, K.Const) and n.value <= UNROLL_MAX:
            st = state
            for k in range(n.value):
                r = _seqfor_step(c, f, st, K.cint(k))
                w(c, K.cint(k), SScalar(c.bind(r.b.e, "sv")))
                st = r.a
            return

        def step(body, st, i):
            r = _seqfor_step(body, f, st, i)
            v = body.bind(r.b.e, "sv")
            temps = [snapshot(body, x.e, "nst") for x in scalar_leaves(c, r.a)]
            w(body, i, SScalar(v))
            return temps
        state_loop(c, n, state, "the state of a seqfor", step, span=span)
    return SPush(THREAD, n, run, span)


def state_loop(c: Ctx, n: K.Expr, state: SVal, what: str, step, prefix: str = "st", span=None) -> SVal:
    """A loop of n steps in the kernel whose state (scalars or pairs of scalars) lives in
    registers: step(body, st, i) emits step i and gives the next state's scalars, named
    (`snapshot`) before anything of the step that the state's variables must outlive.
    Gives the state's variables (after the loop: the final state)."""
    leaves = scalar_leaves(c, state, what, span)
    names = [c.b.fresh(prefix) for _ in leaves]
    for name, leaf in zip(names, leaves):
        c.emit(K.DeclVar(name, leaf.e))
    st = rebuild(state, iter(SScalar(K.Var(l.e.ty, nm)) for nm, l in zip(names, leaves)))
    body = c.sub(guard=n)
    var = c.b.fresh("k")
    temps = step(body, st, K.Var("int", var))
    for name, t in zip(names, temps):
        body.emit(K.Assign(name, t))
    c.emit(K.SeqFor(var, n, tuple(body.stmts)))
    return st


def seq_concat(ctx: Ctx, part: SScalar, count: SScalar, state: SVal, f: SVal, level: int) -> SPush:
    """`seqConcat m n s f`: a loop of n steps that the units of `level` run together,
    the state in every work-item's registers (scalars or pairs of scalars, the same in
    all of them); step i writes its part (m elements, at `level`) at i*m + j.  At warp
    and block level a step ends with a barrier where the next step's first accesses
    could race with this one's last (`_wraps_around`)."""
    m, n = part.e, count.e
    span = ctx.b.span
    if level == GRID:
        raise ctx.error("seqConcat cannot step over grid-level parts: each step would be a "
                        "kernel, and the state cannot live in registers between kernels",
                        ["run it per work-group (block-level parts inside a grid-level concat), "
                         "or use a grid-level power"])

    def run(c: Ctx, w):
        check_level(c, level, "compute")
        if level == WARP and not c.b.dry and not c.b.host_computable(n):
            raise CompileError("the step count of a warp-level seqConcat must be known to the host "
                               "(it may depend on the arguments only): every warp must take the same "
                               "number of steps, because a step may end with a work-group barrier", span)

        def step(body, st, i):
            r = apply2(body, f, st, SScalar(i))
            if not isinstance(r, SPair) or not isinstance(r.b, SPush) or r.b.level != level:
                raise CompilerBug("seqConcat step did not return (state, push array of its level)")
            if isinstance(r.b.n, K.Const) and isinstance(m, K.Const) and r.b.n.value != m.value:
                raise CompileError(f"each step of this seqConcat must write {m.value} elements, but "
                                   f"it writes {r.b.n.value}", span)
            temps = [snapshot(body, x.e, "nst") for x in scalar_leaves(c, r.a)]
            r.b.run(body, lambda cc, j, v: w(cc, K.add(K.mul(i, m), j), v))
            if level in (WARP, BLOCK) and _wraps_around(body):
                body.emit(K.Barrier("the next step reuses local memory"))
            return temps
        state_loop(c, n, state, "the state of a seqConcat", step, span=span)
    return SPush(level, K.mul(n, m), run, span)


def _wraps_around(body: Ctx) -> bool:
    """Whether a loop body needs a barrier at its end: some memory that is not private
    is written after its last barrier and used before its first (in the next
    iteration), or used after the last and written before the first.  A pointer
    variable counts as touching everything; barriers only inside nested statements
    count as one at the end."""
    stmts = body.stmts
    ends = _outside_barriers(stmts)
    if ends is None:    # no barrier: no work-item reads what another wrote in the loop
        return K.contains_barrier(stmts)
    (hr, hw), (tr, tw) = (K.all_accesses(seg) for seg in ends)
    if any(body.b.bufs.get(x) is None for x in hr | hw | tr | tw):
        return True
    shared = ((hw & (tr | tw)) | (tw & hr))
    return any(body.b.bufs[x].space != "private" for x in shared)


def _seqfor_step(ctx, f, state, i) -> SPair:
    r = apply2(ctx, f, state, SScalar(i))
    if not isinstance(r, SPair) or not isinstance(r.b, SScalar):
        raise CompilerBug("seqfor step did not return (state, scalar)")
    return r


def size_of(ctx: Ctx, v: SVal) -> SScalar:
    """`sizeOf v`: a constant, the bytes of v's scalar type in device memory."""
    return SScalar(K.cint(STORAGE_DTYPES[as_scalar(ctx, v).e.ty].itemsize))


def foldl(ctx: Ctx, f: SVal, acc: SVal, arr: SPull) -> SVal:
    """Sequential loop in one work-item; the accumulator lives in registers."""
    n = arr.n
    if isinstance(n, K.Const) and n.value <= UNROLL_MAX:
        for k in range(n.value):
            acc = apply2(ctx, f, acc, arr.at(ctx, K.cint(k)))
        return acc

    def step(body, state, i):
        new = apply2(body, f, state, arr.at(body, i))
        return [snapshot(body, x.e, "nacc") for x in scalar_leaves(ctx, new)]
    return state_loop(ctx, n, acc, "the accumulator of a foldl with a loop", step, prefix="acc")


def snapshot(ctx: Ctx, e: K.Expr, prefix: str) -> K.Expr:
    """`e` named by a fresh variable (unless constant): the value it has now, safe to use
    after the loop-carried variables it reads are assigned."""
    if isinstance(e, K.Const):
        return e
    name = ctx.b.fresh(prefix)
    ctx.emit(K.Let(name, e))
    return K.Var(e.ty, name)


def scalar_leaves(ctx, v: SVal, what: str = "a loop's state", span: Span | None = None) -> list[SScalar]:
    if isinstance(v, SScalar):
        return [v]
    if isinstance(v, SPair):
        return scalar_leaves(ctx, v.a, what, span) + scalar_leaves(ctx, v.b, what, span)
    raise CompileError(f"{what} must be scalars or pairs of scalars (it lives in registers)",
                       span or ctx.b.span)


def rebuild(shape: SVal, leaves) -> SVal:
    if isinstance(shape, SScalar):
        return next(leaves)
    return SPair(rebuild(shape.a, leaves), rebuild(shape.b, leaves))


# ---------------------------------------------------------------- primitives

def curried(arity: int, fn: Callable, name: str) -> SVal:
    def make(args):
        if len(args) == arity:
            return None
        return SFun(lambda ctx, x: step(ctx, args + [x]), name)

    def step(ctx, args):
        if len(args) == arity:
            return fn(ctx, *args)
        return make(args)
    return make([])


def primitives() -> dict[str, SVal]:
    def span(ctx):
        return ctx.b.span

    def generate(ctx, n, f):
        # the evaluator reports a negative length where `generate` is applied, used or not
        fail_unless(ctx, K.binop("ge", n.e, K.cint(0)), "length:generate", (n.e,), ctx.b.span)
        return SPull(n.e, lambda c, i: apply(c, f, SScalar(i)))

    def index(ctx, arr, i):
        return arr.at(ctx, ctx.b.checked_index(i.e, arr.n))

    def map_pull(ctx, f, arr):
        return SPull(arr.n, lambda c, i: apply(c, f, arr.at(c, i)))

    def map_push(ctx, f, arr):
        return SPush(arr.level, arr.n,
                     lambda c, w: arr.run(c, lambda c2, i, v: w(c2, i, as_scalar(c2, apply(c2, f, v)))),
                     arr.span)

    def zip_with_push(ctx, f, a, p):
        n = K.call("min", (a.n, p.n), "int")

        def run(c, w):
            def write(c2, i, v):
                g = c2.sub()
                w(g, i, as_scalar(g, apply2(g, f, a.at(g, i), v)))
                if isinstance(n, K.Const) and isinstance(p.n, K.Const) and n.value >= p.n.value:
                    for st in g.stmts:
                        c2.emit(st)
                else:
                    c2.emit(K.If(K.lt(i, n), tuple(g.stmts)))
            p.run(c, write)
        return SPush(p.level, n, run, p.span)

    def push(ctx, level):
        return SFun(lambda c, arr: push_scheme(level, arr, span(c)), "push")

    prims = {
        "generate": curried(2, generate, "generate"),
        "lengthPull": curried(1, lambda c, a: SScalar(a.n), "lengthPull"),
        "lengthPush": curried(1, lambda c, a: SScalar(a.n), "lengthPush"),
        "index": curried(2, index, "index"),
        "mapPull": curried(2, map_pull, "mapPull"),
        "mapPush": curried(2, map_push, "mapPush"),
        "zipWithPush": curried(3, zip_with_push, "zipWithPush"),
        "push": SLevelFun(push),
        "foldl": curried(3, foldl, "foldl"),
        "seqfor": curried(3, seqfor, "seqfor"),
        "sizeOf": curried(1, size_of, "sizeOf"),
        "fst": curried(1, lambda c, p: p.a, "fst"),
        "snd": curried(1, lambda c, p: p.b, "snd"),
    }
    conversions = {"i2d": "double", "d2i": "int", "i2f": "float", "f2i": "int",
                   "f2d": "double", "d2f": "float", "b2i": "int"}
    for name, ty in conversions.items():
        prims[name] = curried(1, lambda c, x, name=name, ty=ty: SScalar(K.call(name, (x.e,), ty)), name)
    for name in ("sqrt", "exp", "log", "sin", "cos", "floor", "abs"):
        prims[name] = curried(1, lambda c, x, name=name: SScalar(K.call(name, (x.e,), x.e.ty)), name)
    for name in ("min", "max"):
        prims[name] = curried(2, lambda c, x, y, name=name: SScalar(K.call(name, (x.e, y.e), x.e.ty)), name)
    prims["fma"] = curried(3, lambda c, x, y, z: SScalar(K.call("fma", (x.e, y.e, z.e), x.e.ty)), "fma")
    return prims


def concat(ctx, n, parts, level: int):
    """`concat n parts` whose parts the typed core puts at `level` - 1: each part of n elements."""
    span = ctx.b.span

    def place(c, p, j, count):
        return K.add(K.mul(p, n.e), j), K.Const("bool", True), ()

    def fits(c, p, m, count, active):
        return fail_unless(c, K.binop("eq", m, n.e), "concat", (p, m, n.e, count), span, active)
    return parts_scheme(level, n.e, parts, place, fits, span)


def interleave(ctx, n, f, parts, level: int):
    """`interleave n f parts`: element j of part p (at most n elements) at position f (p, j),
    inside the result of n * (the number of parts) elements."""
    span = ctx.b.span

    def place(c, p, j, count):
        pos, total = as_scalar(c, apply(c, f, SPair(SScalar(p), SScalar(j)))).e, K.mul(n.e, count)
        pos = c.bind(pos, "pos")
        inside = K.binop("and", K.binop("le", K.cint(0), pos), K.lt(pos, total))
        buf, site = c.b.check_site("interleave-position", span)
        return pos, inside, (K.Fail(buf, site, (p, j, pos, total)),) if site >= 0 else ()

    def fits(c, p, m, count, active):
        return fail_unless(c, K.binop("le", m, n.e), "interleave-part", (p, m, n.e), span, active)
    return parts_scheme(level, n.e, parts, place, fits, span)


def _elem(fn):
    """A primitive of type ... -> Push l a -> Pull a (`force`, `while`, `power`) at the
    type `t` of its occurrence: told the scalar a; the level l checks the array's."""
    def at(t: T.Type, name: str) -> SVal:
        params = C.params(t)
        ty = C.scalar(C.result(t).elem, f"the elements of `{name}`")
        level = C.depth(params[-1].level, f"the array `{name}` takes")

        def run(ctx, *args):
            if args[-1].level != level:
                raise CompilerBug(f"`{name}` of a {LEVEL_NAMES[args[-1].level]}-level array typed "
                                  f"{LEVEL_NAMES[level]}-level")
            return fn(ctx, *args, ty)
        return curried(len(params), run, name)
    return at


def _parts(fn):
    """`concat`/`interleave` (result Push a (1+l)) and `seqConcat` (result Push a l) at
    the type `t` of its occurrence: told the level of the result."""
    def at(t: T.Type, name: str) -> SVal:
        level = C.depth(C.result(t).level, f"the result of `{name}`")
        return curried(len(C.params(t)), lambda ctx, *args: fn(ctx, *args, level), name)
    return at


# the primitives whose lowering reads the type of their occurrence
TYPED = {"force": _elem(force), "while": _elem(while_loop), "power": _elem(power_loop),
         "concat": _parts(concat), "interleave": _parts(interleave), "seqConcat": _parts(seq_concat)}


# ---------------------------------------------------------------- entry points

SCALAR_TYPES = {"int", "float", "double", "bool"}


def lower_entry(decls, name: str, arg_types: list[T.Type], hw: dict[str, int], entry_span=None,
                static: dict | None = None, names=(), launch_groups: int | None = None,
                bounds_checks: bool = True, core: C.TypedCore | None = None):
    """Compile declaration `name`, applied to arguments of `arg_types`:
    (Plan, {buffer name: span of the force/while it holds}).  `static`: {position:
    value} of scalar arguments compiled in as constants; `names`: parameter names.
    `launch_groups`: when the program never reads #NumGroups, the most work-groups
    a launch may take (instead of #NumGroups): a part per work-group up to it.
    `core`: the checker's types of `decls` (fcl.types.node_types); by default `decls` are
    checked for it (the prelude's once per process)."""
    if core is None:
        core = core_of(decls)
    lw = Lowerer(decls, hw, core)
    b = Builder(hw, checks=bounds_checks)
    b.span = entry_span
    b.arg_names = list(names)        # the program's parameter names, for messages
    ctx = Ctx(b, GRID, None, top=True)
    params, args = [], []
    static = static or {}
    values = [entry_arg(b, t, k, params, args, static, names[k] if k < len(names) else "")
              for k, t in enumerate(arg_types)]
    b.params = {p.name for p in params}
    seen = lw.decls.get(name)
    if not seen:
        raise CompileError(f"unbound name `{name}` during compilation", entry_span)
    inst, result_type = C.entry_inst(core, seen[-1][1], list(arg_types))
    value = lw.global_value(ctx, name, entry_span, inst)
    for a in values:
        value = apply(ctx, value, a)
    result = emit_result(ctx, value, name, result_type)
    b.finish()
    if launch_groups and "#NumGroups" not in lw.hw_read:
        hw = dict(hw, **{"#NumGroups": launch_groups})
    plan = assemble(b, name, args, params, result, hw)
    spans = {n: r.span for n, r in b.bufs.items()}
    spans.update({site_key(k): site.span for k, site in enumerate(b.sites)})
    spans.update(b.length_spans)
    return plan, spans


def core_of(decls) -> C.TypedCore:
    """The typed core of `decls` when the caller has none: the prelude's (when `decls`
    start with its declarations) followed by the rest, checked now."""
    from fcl.syntax.loader import prelude_decls
    from fcl.types.infer import builtins_env, check_program, prelude_checked
    decls = list(decls)
    pre = prelude_decls()
    if len(decls) >= len(pre) and all(a is b for a, b in zip(decls, pre)):
        checked = prelude_checked()
        rest = check_program(A.Program(tuple(decls[len(pre):])), checked.env)
        return checked.core.then(rest.core)
    return check_program(A.Program(tuple(decls)), builtins_env()).core


def site_key(k: int) -> str:
    """The key of run-time check number k in lower_entry's spans."""
    return f"index site {k}"


def entry_arg(b: Builder, t: T.Type, k: int, params, args, static: dict, name: str) -> SVal:
    """The symbolic value of argument k of type t; its plan argument goes to `args`.
    A static scalar is a constant the kernels never see."""
    if isinstance(t, T.TCon) and k in static:
        args.append(P.ScalarArg(f"arg{k}", t.name, name, static[k]))
        return SScalar(K.cint(static[k]) if t.name == "int" else K.const(static[k], t.name))
    value, spec = _arg_value(b, t, k, f"{k}", params)
    args.append(dataclasses.replace(spec, name=name) if name else spec)
    return value


def _arg_value(b: Builder, t: T.Type, k: int, path: str, params) -> tuple[SVal, object]:
    """(value, plan argument) for (part `path` of) argument k: scalars are host scalars,
    pairs their components, arrays of scalars input buffers, arrays of pairs one buffer
    per component, regular arrays of arrays a flat buffer and its shape."""
    if isinstance(t, T.TCon):
        pname = f"arg{path}"
        params.append(K.Param(pname, t.name))
        return SScalar(K.Var(t.name, pname)), P.ScalarArg(pname, t.name)
    if isinstance(t, T.TPairT):
        a, sa = _arg_value(b, t.fst, k, f"{path}_0", params)
        c, sc = _arg_value(b, t.snd, k, f"{path}_1", params)
        return SPair(a, c), P.PairArg(sa, sc)
    if isinstance(t, T.TPullT) and isinstance(t.elem, T.TCon):
        rec, length = _input_buffer(b, t.elem.name, k, path, params)
        return reader(rec.name, K.cint(0), length, t.elem.name), P.ArrayArg(rec.name, length.name, t.elem.name)
    if isinstance(t, T.TPullT) and isinstance(t.elem, T.TPairT):
        a, sa = _arg_value(b, T.TPullT(t.elem.fst), k, f"{path}_0", params)
        c, sc = _arg_value(b, T.TPullT(t.elem.snd), k, f"{path}_1", params)
        return SPull(a.n, lambda ctx, i: SPair(a.at(ctx, i), c.at(ctx, i))), P.ZipArg(sa, sc)
    if isinstance(t, T.TPullT) and isinstance(t.elem, T.TPullT) and isinstance(t.elem.elem, T.TCon):
        ty = t.elem.elem.name
        rec, length = _input_buffer(b, ty, k, path, params)
        rows, cols = K.Var("int", f"r{path}"), K.Var("int", f"c{path}")
        params += [K.Param(rows.name, "int"), K.Param(cols.name, "int")]

        def row(ctx, i):
            base = K.mul(i, cols)
            return SPull(cols, lambda c2, j: SScalar(K.Load(ty, rec.name, K.add(base, j))))
        return SPull(rows, row), P.NestedArg(P.ArrayArg(rec.name, length.name, ty), rows.name, cols.name)
    raise CompileError(f"argument {k + 1} has type {format_type(t)}, which a kernel cannot take: kernel "
                       "arguments are scalars, pairs, arrays of scalars or of pairs, and regular arrays "
                       "of arrays of scalars; pass deeper structures flat, with their sizes, and rebuild "
                       "them with `splitUp` or `generate`", b.span)


def _input_buffer(b: Builder, ty: str, k: int, path: str, params):
    length = K.Var("int", f"n{path}")
    rec = b.buffer("global", length, f"argument {k + 1}", "input", prefix=f"in{path}_", ty=ty)
    params.append(K.Param(length.name, "int"))
    return rec, length


def emit_result(ctx: Ctx, value: SVal, name: str, ty: T.Type) -> P.Result:
    b = ctx.b
    if isinstance(value, SPull):
        value = push_scheme(GRID, value, b.span)
    if isinstance(value, SPush):
        check_host_size(b, value.n, name)
        if not isinstance(ty, (T.TPullT, T.TPushT)):
            raise CompilerBug(f"`{name}` returns an array, but its type is {format_type(ty)}")
        if not isinstance(ty.elem, T.TCon):
            raise ctx.error("push arrays hold scalars only")
        elem = ty.elem.name
        rec = b.buffer("global", value.n, f"result of {name}", "output", prefix="out", ty=elem)
        w = store_writer(rec, K.cint(0))
        single = value.level < GRID
        if value.level < BLOCK:
            guard = K.binop("eq", K.HwId("int", "wid" if value.level == WARP else "lid"), K.cint(0))
            inner = w

            def w(c, i, v):
                g = c.sub()
                inner(g, i, v)
                c.emit(K.If(guard, tuple(g.stmts)))
        value.run(ctx, w)
        return P.Result("array", rec.name, rec.ty, value.n, single)
    if isinstance(value, SScalar):
        rec = b.buffer("global", K.cint(1), f"result of {name}", "output", prefix="out", ty=value.e.ty)
        ctx.emit(K.If(K.binop("eq", K.HwId("int", "global_id"), K.cint(0)),
                      (K.Store(rec.name, K.cint(0), value.e),)))
        return P.Result("scalar", rec.name, rec.ty, K.cint(1), True)
    raise CompileError(f"`{name}` returns a {describe(value)}, which a kernel cannot return; "
                       f"return a push array, a pull array of scalars or a scalar", b.span)


def describe(v: SVal) -> str:
    return {SPair: "pair", SFun: "function", SLevelFun: "level function"}.get(type(v), type(v).__name__)


def check_host_size(b: Builder, n: K.Expr, name: str):
    if not b.host_computable(n):
        from fcl.codegen.sizewords import length_error
        raise length_error(b, n, f"the result of `{name}`", b.span, b.top)


def host_length_error(ctx: Ctx, n: K.Expr, what: str) -> CompileError:
    """The length `n` of `what` needs values only the kernels know: the error, in the
    program's terms (fcl/codegen/sizewords.py)."""
    from fcl.codegen.sizewords import length_error
    return length_error(ctx.b, n, what, ctx.b.span, ctx.stmts)


def carry_scalars(b: Builder, params) -> None:
    """A scalar declared at the top of one kernel (a foldl, an `if`) and used in a later
    kernel is stored by work-item 0 into a one-element global buffer at the end of
    the kernel that computes it, and read back at the start of each kernel that uses it."""
    known = {p.name for p in params} | {v.name for v in b.host_vars} | b.params
    top = []                                   # per kernel: {name: type} declared at its top
    for stmts, _, _ in b.kernels:
        top.append({s.var: (s.expr if isinstance(s, K.Let) else s.init).ty
                    for s in stmts if isinstance(s, (K.Let, K.DeclVar))})
    carried: dict[str, BufRec] = {}
    for i, (stmts, locals_, privates) in enumerate(b.kernels):
        declared, used = set(), K.names_read(stmts)
        for st in K.walk_stmts(stmts):
            declared.update(declared_names(st))
        loads = []
        for name in sorted(used - declared - known):
            j = next((j for j in range(i - 1, -1, -1) if name in top[j]), None)
            if j is None:
                continue
            ty = top[j][name]
            if name not in carried:
                rec = b.buffer("global", K.cint(1), f"scalar {name} carried to a later kernel", "carry",
                               prefix="carry", ty=ty)
                b.host.insert(0, b.host.pop())      # its Alloc goes before every launch
                carried[name] = rec
                b.kernels[j][0].append(K.If(K.binop("eq", K.HwId("int", "global_id"), K.cint(0)),
                                            (K.Store(rec.name, K.cint(0), K.Var(ty, name)),)))
            loads.append(K.Let(name, K.Load(ty, carried[name].name, K.cint(0))))
        stmts[:0] = loads


def declared_names(s: K.Stmt) -> list[str]:
    if isinstance(s, (K.Let, K.DeclVar, K.SeqFor, K.ParFor, K.DeclPtr)):
        return [s.var]
    if isinstance(s, K.PartFor):
        return [s.var, s.active]
    return []


def assemble(b: Builder, name, args, params, result: P.Result, hw) -> P.Plan:
    """Name the kernels and resolve the host program's launches (each takes what it uses)."""
    carry_scalars(b, params)
    kernels = [K.Kernel(name=f"{name}_k{k}" if len(b.kernels) > 1 else name, body=tuple(stmts),
                        locals_=tuple(frozen(r) for r in locals_),
                        privates=tuple(frozen(r) for r in privates))
               for k, (stmts, locals_, privates) in enumerate(b.kernels)]
    check_local_scope(b, kernels)
    all_params = tuple(params) + tuple(b.host_vars)
    buffers = tuple(frozen(r) for r in b.globals)

    checks = (P.CheckSteps(b.guard.name, tuple(b.guarded)),) if b.guard is not None and b.guarded else ()
    bounds = ()
    if b.bounds is not None:
        bounds = (P.CheckBounds(b.bounds.name, tuple(site_text(site.span) for site in b.sites),
                                tuple(site.kind for site in b.sites)),)
        checks = checks + bounds    # a while the device stopped comes first: what follows it is garbage

    def resolve(stmts) -> tuple:
        out = []
        for s in stmts:
            if isinstance(s, P.ReadScalar):
                out.extend(bounds)      # a value read back means nothing after a failed check
            if isinstance(s, PendingLaunch):
                k = kernels[s.index]
                s = P.Launch(k.name, tuple(grid_groups(b, k.body, hw["#BlockSize"])),
                             P.kernel_uses(k, buffers, all_params))
            elif isinstance(s, P.Loop):
                s = dataclasses.replace(s, head=resolve(s.head), body=resolve(s.body))
            out.append(s)
        return tuple(out)

    return P.Plan(entry=name, args=tuple(args), params=all_params, buffers=buffers, kernels=tuple(kernels),
                  body=resolve(b.host) + checks + (result,), block_size=hw["#BlockSize"], warp_size=hw["#WarpSize"],
                  num_groups=hw["#NumGroups"])


def site_text(span: Span | None) -> str:
    """Where a run-time check is, as `file:line:col`."""
    return span.location() if span is not None else "?"


def frozen(r: BufRec) -> K.Buffer:
    if not r.ty:
        raise CompilerBug(f"buffer {r.name} ({r.origin}) has no element type")
    return K.Buffer(r.name, r.space, r.ty, r.size, r.origin, r.role, r.per)


def grid_groups(b: Builder, stmts, block_size: int) -> list[K.Expr]:
    """Work-groups each grid loop of a kernel can use (all #NumGroups when the loop's
    count is known only on the device): those at its top and those under an `if` there
    (a result chosen by a condition the compiler cannot fold; the launch takes the most)."""
    out = []
    for s in K.walk_stmts(stmts):
        if isinstance(s, K.ParFor) and s.level == K.Level.GRID:
            want = K.div(K.add(s.count, K.cint(block_size - 1)), K.cint(block_size))
        elif isinstance(s, K.PartFor) and s.level == K.Level.GRID:
            want = s.count
        else:
            continue
        out.append(want if b.host_computable(want) else K.cint(b.hw["#NumGroups"]))
    return out


def check_local_scope(b: Builder, kernels):
    """A local or private buffer must be used only in the kernel that allocated it (also
    through a pointer of a `while`'s ping-pong, declared in that kernel)."""
    pointers = {s.var: s.init for k in kernels for s in K.walk_stmts(k.body) if isinstance(s, K.DeclPtr)}
    for k in kernels:
        own = {r.name for r in k.locals_ + k.privates}
        own |= {s.var for s in K.walk_stmts(k.body) if isinstance(s, K.DeclPtr)}
        for used in K.buffers_used(k.body):
            rec = b.bufs.get(pointers.get(used, used)) if used not in own else None
            if rec is not None and rec.name not in own and rec.space != "global":
                raise CompileError(
                    f"the {rec.space} array from the {rec.origin} is used after a grid-level force "
                    f"(a kernel boundary) and would be lost; force it at grid level instead", rec.span)
