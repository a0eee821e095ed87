"""Integer range analysis of mapped kernel IR (an analysis, not a rewrite).

`Ranges(plan, kernel)` knows an interval for every int expression at a point
of a kernel: hardware ids from the launch geometry (lid in [0, #BlockSize),
group_id in [0, #NumGroups) ...), array lengths and host variables
non-negative, a `For` counter in [start, stop) when its step is positive, a name
bounded by the condition of the `If` it is under, a
`Let` the interval of its expression, constants exactly; other scalars (entry
arguments, mutable variables, loads) may be anything.  Arithmetic is exact
when the result provably stays in 32 bits, else the full int range (it may
wrap).  `rewrite_kernels(plan, f)` walks each kernel in order with the facts
in scope and lets f(node, ranges) replace an expression node, bottom-up; the
strength-reduction and no-wrap passes are such functions.  Not here: facts
from `else` branches or loop exits, or fixpoints over mutable variables.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from fcl import scalars as S
from fcl.codegen import kir as K
from fcl.codegen import plan as P

Op = K.Op


@dataclass(frozen=True)
class Interval:
    lo: int
    hi: int

    def nonneg(self) -> bool:
        return self.lo >= 0

    def positive(self) -> bool:
        return self.lo >= 1


FULL = Interval(S.INT_MIN, S.INT_MAX)
BOOL = Interval(0, 1)
NONNEG = Interval(0, S.INT_MAX)


def fit(lo: int, hi: int) -> Interval:
    """The exact interval if it fits 32 bits, else everything (the operation may wrap)."""
    return Interval(lo, hi) if S.INT_MIN <= lo and hi <= S.INT_MAX else FULL


def exact(op: Op, a: Interval, b: Interval) -> tuple[int, int] | None:
    """Exact bounds of a + b, a - b, a * b over the intervals (no wrapping), or None."""
    if op in (Op.ADD, Op.ADD_NW):
        return a.lo + b.lo, a.hi + b.hi
    if op in (Op.SUB, Op.SUB_NW):
        return a.lo - b.hi, a.hi - b.lo
    if op in (Op.MUL, Op.MUL_NW):
        corners = [x * y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
        return min(corners), max(corners)
    return None


class Ranges:
    """Intervals of expressions under the facts in scope (`env`: variable -> Interval)."""

    def __init__(self, plan: P.Plan, env: dict[str, Interval] | None = None, mutable: frozenset = frozenset()):
        self.plan = plan
        self.env = dict(env or {})
        self.mutable = mutable          # assigned names: a branch's condition says nothing lasting about them

    @staticmethod
    def for_plan(plan: P.Plan) -> "Ranges":
        env = {}
        for p in plan.params:
            env[p.name] = BOOL if p.ty == "bool" else FULL
        for a in plan.args:
            if isinstance(a, P.ArrayArg):
                env[a.length] = NONNEG
        for s in P.walk(plan.body):
            if isinstance(s, (P.SetVar, P.ReadScalar)):
                env[s.var] = NONNEG if isinstance(s, P.SetVar) and s.size else FULL
        bs, ng = plan.block_size, plan.num_groups
        env.update({"%lid": Interval(0, bs - 1), "%wid": Interval(0, max(1, bs // plan.warp_size) - 1),
                    "%lane": Interval(0, min(bs, plan.warp_size) - 1), "%group_id": Interval(0, ng - 1),
                    "%num_groups": Interval(1, ng), "%global_id": Interval(0, ng * bs - 1),
                    "%global_size": Interval(bs, ng * bs)})
        return Ranges(plan, env)

    def child(self) -> "Ranges":
        return Ranges(self.plan, self.env, self.mutable)

    def refined(self, cond: K.Expr) -> "Ranges":
        """The facts where `cond` holds: `x < e`, `x <= e`, `e > x`, `e >= x` bound a
        variable or hardware id x from above (conjunctions too)."""
        out = self.child()
        conds = [cond]
        while conds:
            c = conds.pop()
            if not isinstance(c, K.Bin):
                continue
            if c.op == Op.AND:
                conds += [c.a, c.b]
                continue
            flip = {Op.GT: Op.LT, Op.GE: Op.LE}
            op, x, bound = (flip[c.op], c.b, c.a) if c.op in flip else (c.op, c.a, c.b)
            key = _key(x)
            if op not in (Op.LT, Op.LE) or key is None or key in self.mutable:
                continue
            have, limit = out.env.get(key, FULL), self.of(bound).hi - (op == Op.LT)
            if limit >= have.lo:
                out.env[key] = Interval(have.lo, min(have.hi, limit))
        return out

    def of(self, e: K.Expr) -> Interval:
        if e.ty == "bool":
            return BOOL
        if e.ty != "int":
            return FULL
        if isinstance(e, K.Const):
            return Interval(e.value, e.value)
        if isinstance(e, K.Var):
            return self.env.get(e.name, FULL)
        if isinstance(e, K.HwId):
            return self.env[f"%{e.name}"]
        if isinstance(e, K.Bin):
            return self.binary(e.op, self.of(e.a), self.of(e.b))
        if isinstance(e, K.Select):
            a, b = self.of(e.a), self.of(e.b)
            return Interval(min(a.lo, b.lo), max(a.hi, b.hi))
        if isinstance(e, K.Call):
            return self.call(e)
        return FULL

    def binary(self, op: Op, a: Interval, b: Interval) -> Interval:
        bounds = exact(op, a, b)
        if bounds is not None:
            return fit(*bounds)
        if op in (Op.DIV, Op.DIV_NN) and a.nonneg() and b.positive():
            return Interval(a.lo // b.hi, a.hi // b.lo)
        if op in (Op.MOD, Op.MOD_NN) and a.nonneg() and b.positive():
            return Interval(0, min(a.hi, b.hi - 1))
        if op == Op.BAND and (a.nonneg() or b.nonneg()):
            return Interval(0, min(x.hi for x in (a, b) if x.nonneg()))
        if op == Op.SHR and a.nonneg() and b.lo == b.hi and 0 <= b.lo < 32:
            return Interval(a.lo >> b.lo, a.hi >> b.lo)
        return FULL

    def call(self, e: K.Call) -> Interval:
        if e.fn in ("min", "max") and e.ty == "int":
            a, b = (self.of(x) for x in e.args)
            f = min if e.fn == "min" else max
            return Interval(f(a.lo, b.lo), f(a.hi, b.hi))
        if e.fn == "b2i":
            return BOOL
        if e.fn == "skew":
            a = self.of(e.args[0])
            return fit(a.lo + (a.lo >> 5), a.hi + (a.hi >> 5)) if a.nonneg() else FULL
        return FULL


def _key(e: K.Expr) -> str | None:
    if isinstance(e, K.Var) and e.ty == "int":
        return e.name
    return f"%{e.name}" if isinstance(e, K.HwId) else None


def rewrite_kernels(plan: P.Plan, f=None, fs=None) -> P.Plan:
    """Every kernel with f(node, ranges) applied to each expression node bottom-up,
    with the range facts of the point where the expression is evaluated; and
    fs(stmt, ranges) to each statement once its parts are rewritten, with the facts
    in scope where it starts (it returns a statement or a tuple of them)."""
    base = Ranges.for_plan(plan)
    f = f or (lambda node, r: node)
    kernels = []
    for k in plan.kernels:
        mutable = frozenset(s.var for s in K.walk_stmts(k.body) if isinstance(s, (K.DeclVar, K.Assign)))
        kernels.append(dataclasses.replace(k, body=_block(k.body, Ranges(plan, base.env, mutable), f, fs)))
    kernels = tuple(kernels)
    return dataclasses.replace(plan, kernels=kernels)


def _expr(e: K.Expr, r: Ranges, f) -> K.Expr:
    return K.map_expr(lambda node: f(node, r), e)


def _block(stmts, r: Ranges, f, fs=None) -> tuple:
    out = []
    for s in stmts:
        if isinstance(s, K.For):
            start, stop, step = (_expr(x, r, f) for x in (s.start, s.stop, s.step))
            inner = r.child()
            lo, hi, st = r.of(start), r.of(stop), r.of(step)
            inner.env[s.var] = Interval(lo.lo, max(lo.lo, hi.hi - 1)) if st.positive() else FULL
            s = dataclasses.replace(s, start=start, stop=stop, step=step, body=_block(s.body, inner, f, fs))
        elif isinstance(s, K.Let):
            s = K.Let(s.var, _expr(s.expr, r, f))
            r.env[s.var] = r.of(s.expr)
        elif isinstance(s, (K.DeclVar, K.Assign)):
            s = K.map_stmts(lambda x: x, lambda node: f(node, r), (s,))[0]
            r.env[s.var] = FULL
        elif isinstance(s, K.If):
            cond = _expr(s.cond, r, f)
            s = K.If(cond, _block(s.then, r.refined(cond), f, fs), _block(s.else_, r.child(), f, fs))
        elif isinstance(s, K.Loop):
            inner = r.child()
            head = _block(s.head, inner, f, fs)
            s = K.Loop(head, _expr(s.cond, inner, f), _block(s.body, inner, f, fs))
        else:
            s = K.map_stmts(lambda x: x, lambda node: f(node, r), (s,))[0]
        result = fs(s, r) if fs else s
        out.extend(result if isinstance(result, tuple) else (result,))
    return tuple(out)
