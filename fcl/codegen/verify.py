"""The kernel-IR verifier: checks the invariants every pass must keep.

Consumes a `plan.Plan` (and the name of the pass that made it); raises
`CompilerBug` naming the pass, the kernel and the broken rule, or returns
None.  The rules:

* every variable is defined before it is read (a parameter, an enclosing
  loop's counter, an earlier `Let`/`DeclVar` in this or an enclosing body),
  and defined once per kernel; `Assign` targets a `DeclVar`;
* a vector access (`VLoad`, `VStore`) reads or writes 2 or 4 ints, floats
  or bools (or 16 bools: the tags' check) of a global buffer, or ints or
  floats of a plainly stored local buffer of constant size;
* every buffer an access names exists (a global of the program, a local or
  private of this kernel, or a `DeclPtr` in scope) and has the element type
  the access has; a run-time check (`Checked`, `Fail`) records into a global bounds buffer;
* operand and result types agree (int arithmetic on ints, bool conditions);
* barriers do not occur in per-element code (a `ParFor` body or a warp's
  parts); the parallel forms are gone once `mapped` (after `map_hw`).

The pass manager runs it after every pass when asked (the tests do).  Not
checked: races, or that a barrier's enclosing `For` is uniform (the
interpreter finds divergent barriers by running the kernel).
"""
from __future__ import annotations

from fcl.base.errors import CompilerBug
from fcl.codegen import kir as K
from fcl.codegen import plan as P

_ARITH = {K.Op.ADD, K.Op.SUB, K.Op.MUL, K.Op.DIV, K.Op.MOD}
_INT_ONLY = {K.Op.BAND, K.Op.BOR, K.Op.BXOR, K.Op.SHL, K.Op.SHR} | set(K.GENERAL_OP)
_CMP = {K.Op.LT, K.Op.LE, K.Op.GT, K.Op.GE, K.Op.EQ, K.Op.NE}


class _Invalid(Exception):
    pass


def verify_program(kp: P.Plan, after: str = "lower", mapped: bool = False) -> None:
    params = {p.name: p.ty for p in kp.params}
    globals_ = {b.name: b for b in kp.buffers}
    for k in kp.kernels:
        try:
            _Kernel(k, params, globals_, mapped).check()
        except _Invalid as e:
            raise CompilerBug(f"invalid kernel IR after pass `{after}`, kernel {k.name}: {e}") from None


class _Kernel:
    def __init__(self, k: K.Kernel, params: dict, globals_: dict, mapped: bool):
        self.k = k
        self.mapped = mapped
        self.buffers = dict(globals_)
        self.buffers.update({b.name: b for b in k.locals_ + k.privates})
        self.params = params
        self.defined: set[str] = set()

    def check(self):
        self.block(self.k.body, dict(self.params), per_element=False)

    def define(self, name: str, scope: dict, ty):
        if name in self.defined or name in self.params:
            raise _Invalid(f"`{name}` is defined twice")
        self.defined.add(name)
        scope[name] = ty

    def block(self, stmts, scope: dict, per_element: bool):
        scope = dict(scope)
        for s in stmts:
            self.stmt(s, scope, per_element)

    def stmt(self, s: K.Stmt, scope: dict, per_element: bool):
        if not isinstance(s, K.Loop):        # a Loop's condition reads what its head defines
            for e in K.stmt_exprs(s):
                self.expr(e, scope)
        if isinstance(s, K.Let):
            self.define(s.var, scope, s.expr.ty)
        elif isinstance(s, K.DeclVar):
            self.define(s.var, scope, ("var", s.init.ty))
        elif isinstance(s, K.Assign):
            if scope.get(s.var) != ("var", s.expr.ty):
                raise _Invalid(f"assignment to `{s.var}`, which is not a {s.expr.ty} variable in scope")
        elif isinstance(s, (K.Store, K.Atomic)):
            word = "float" if isinstance(s, K.Atomic) and s.op == "fadd" else "int"
            if isinstance(s, K.Atomic) and s.buf in self.buffers and self.buffers[s.buf].ty == "long":
                word = "long"
                if s.op not in ("xchg", "add") or self.buffers[s.buf].space != "global":
                    raise _Invalid(f"a 64-bit atomic `{s.op}` on `{s.buf}`: only xchg and add, in global memory")
            self.access(s.buf, s.value.ty if isinstance(s, K.Store) else word, scope)
            self.want(s.index, "int", "an index")
            if isinstance(s, K.Atomic):
                if s.op not in K.ATOMIC_OPS:
                    raise _Invalid(f"an atomic operation `{s.op}`, not one of {', '.join(K.ATOMIC_OPS)}")
                self.want(s.value, word, "an atomic operand")
                if s.op == "fadd" and s.var:
                    raise _Invalid("a float atomic `+=` gives no old value")
                if s.var:
                    self.define(s.var, scope, word)
        elif isinstance(s, (K.VLoad, K.VStore)):
            self.vector(s, scope)
        elif isinstance(s, K.Fail):
            self.records(s.buf, scope)
            if len(s.values) > K.CHECK_VALUES:
                raise _Invalid(f"a failure records {len(s.values)} values, at most {K.CHECK_VALUES}")
            for v in s.values:
                self.want(v, "int", "a recorded value")
        elif isinstance(s, K.DeclPtr):
            if s.init not in self.buffers:
                raise _Invalid(f"pointer `{s.var}` to unknown buffer `{s.init}`")
            self.define(s.var, scope, ("ptr", s.ty))
        elif isinstance(s, K.SwapPtr):
            if not (scope.get(s.a, ("",))[0] == scope.get(s.b, ("",))[0] == "ptr"):
                raise _Invalid(f"swap of `{s.a}` and `{s.b}`, which are not pointers in scope")
        elif isinstance(s, K.Barrier) and per_element:
            raise _Invalid("a barrier in per-element code")
        elif isinstance(s, K.If):
            self.want(s.cond, "bool", "a condition")
            self.block(s.then, scope, per_element)
            self.block(s.else_, scope, per_element)
        elif isinstance(s, K.Loop):
            inner = dict(scope)
            for x in s.head:
                self.stmt(x, inner, per_element)
            self.expr(s.cond, inner)
            self.want(s.cond, "bool", "a loop condition")
            self.block(s.body, inner, per_element)
        else:
            self.loop(s, scope, per_element)

    def loop(self, s: K.Stmt, scope: dict, per_element: bool):
        if isinstance(s, (K.ParFor, K.PartFor)) and self.mapped:
            raise _Invalid(f"{type(s).__name__} {s.var} left after hardware mapping")
        if isinstance(s, (K.SeqFor, K.ParFor, K.PartFor, K.For)):
            for e in K.stmt_exprs(s):
                self.want(e, "int", "a loop bound")
            inner = dict(scope)
            self.define(s.var, inner, "int")
            if isinstance(s, K.PartFor) and s.active:
                self.define(s.active, inner, "bool")
            elements = isinstance(s, K.ParFor) or (isinstance(s, K.PartFor) and s.level == K.Level.WARP)
            self.block(s.body, inner, per_element or elements)

    def records(self, buf: str, scope: dict):
        """A run-time check (`Checked`, `Fail`) records into a global bounds buffer."""
        self.access(buf, "int", scope)
        if self.buffers[buf].role != "bounds":
            raise _Invalid(f"a run-time check records into `{buf}`, not a bounds buffer")

    def vector(self, s, scope: dict):
        """A vector access: 2 or 4 int, float or bool elements of a global buffer (bools: a grid-level
        interleave's tags, `lower.claims`, which reads 16 at a time as well), or ints or floats of a
        local buffer of constant size stored plainly (not skewed), an int index."""
        width = len(s.vars) if isinstance(s, K.VLoad) else len(s.values)
        tys = {s.ty} if isinstance(s, K.VLoad) else {v.ty for v in s.values}
        if width not in K.VECTOR_WIDTHS + ((16,) if tys == {"bool"} else ()) or len(tys) != 1:
            raise _Invalid(f"a vector access to `{s.buf}` of {width} elements of types {sorted(tys)}")
        ty = tys.pop()
        self.access(s.buf, ty, scope)
        b = self.buffers[s.buf]
        if not (b.space == "global" and ty in ("int", "float", "bool")
                or K.plain_local(b) and ty in ("int", "float")):
            raise _Invalid(f"a vector access to `{s.buf}`, not a global buffer of ints, floats or bools "
                           "nor a plainly stored local buffer of ints or floats of a constant size")
        self.want(s.index, "int", "a vector index")
        if isinstance(s, K.VLoad):
            for name in (s.var,) + s.vars:
                self.define(name, scope, s.ty)

    def access(self, buf: str, ty, scope: dict):
        if buf in self.buffers:
            have = self.buffers[buf].ty
        elif scope.get(buf, ("",))[0] == "ptr":
            have = scope[buf][1]
        else:
            raise _Invalid(f"access to unknown buffer `{buf}`")
        if have != ty:
            raise _Invalid(f"buffer `{buf}` holds {have}, accessed as {ty}")

    @staticmethod
    def want(e: K.Expr, ty: str, what: str):
        if e.ty != ty:
            raise _Invalid(f"{what} of type {e.ty}: {K.format_expr(e)}")

    def expr(self, e: K.Expr, scope: dict):
        for node in K.walk_expr(e):
            if isinstance(node, K.Var):
                have = scope.get(node.name)
                have = have[1] if isinstance(have, tuple) and have[0] == "var" else have
                if have is None:
                    raise _Invalid(f"`{node.name}` is read before it is defined")
                if have != node.ty:
                    raise _Invalid(f"`{node.name}` is {have}, read as {node.ty}")
            elif isinstance(node, K.Load):
                self.access(node.buf, node.ty, scope)
                self.want(node.index, "int", "an index")
            elif isinstance(node, K.Checked):
                self.records(node.buf, scope)
                self.want(node.index, "int", "a checked index")
                self.want(node.length, "int", "a checked length")
            elif isinstance(node, K.Bin):
                self.binary(node)
            elif isinstance(node, K.Select):
                self.want(node.cond, "bool", "a select condition")
                if node.a.ty != node.b.ty or node.a.ty != node.ty:
                    raise _Invalid(f"select of {node.a.ty} and {node.b.ty}: {K.format_expr(node)}")

    @staticmethod
    def binary(e: K.Bin):
        if e.a.ty != e.b.ty and e.op not in (K.Op.SHL, K.Op.SHR):
            raise _Invalid(f"{e.op} of {e.a.ty} and {e.b.ty}: {K.format_expr(e)}")
        if e.op in _INT_ONLY and e.a.ty != "int":
            raise _Invalid(f"{e.op} of {e.a.ty}: {K.format_expr(e)}")
        want = "bool" if e.op in _CMP or e.op in (K.Op.AND, K.Op.OR) else e.a.ty
        if e.ty != want:
            raise _Invalid(f"{e.op} typed {e.ty}, not {want}: {K.format_expr(e)}")
        if e.op in (K.Op.AND, K.Op.OR) and e.a.ty != "bool":
            raise _Invalid(f"{e.op} of {e.a.ty}: {K.format_expr(e)}")
