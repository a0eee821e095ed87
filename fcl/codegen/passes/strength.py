"""The `strength` pass: integer division and comparisons the range analysis proves safe, made cheap.

`a / b` and `a % b` with a >= 0 and b >= 1 print as C's own operators
(`div_nn`, `mod_nn`) instead of `fcl_div`/`fcl_mod` with their zero and
minus-one guards; by a constant power of two they become `a >> k` and
`a & (2^k - 1)`; an int comparison that the ranges decide becomes a constant
(so `c < cols ? x : 0` over c in [0, cols) keeps only x), unless it holds a run-time check
that would go with it (`(index a i & 0) == k`: the index's check stays).  Reads `ranges`;
the interpreter re-checks every proof at run time.  Not here: arithmetic that
cannot wrap (the `nowrap` pass, nowrap.py).
"""
from __future__ import annotations

from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.analysis.ranges import Interval, NodeRewrite, Ranges, rewrite_kernels
from fcl.codegen.passes.base import Pass

Op = K.Op
_PROVEN = {Op.DIV: Op.DIV_NN, Op.MOD: Op.MOD_NN}
_COMPARE = {Op.LT, Op.LE, Op.GT, Op.GE, Op.EQ, Op.NE}


def strength_reduce(plan: P.Plan) -> P.Plan:
    return rewrite_kernels(plan, NodeRewrite(_reduce, K.kind_bits(*_COMPARE, *_PROVEN)), proofs=False)


def decide(op: Op, a: Interval, b: Interval) -> bool | None:
    """The value of `a op b` for every pair of values in the intervals, or None."""
    if op in (Op.GT, Op.GE):
        op, a, b = {Op.GT: Op.LT, Op.GE: Op.LE}[op], b, a
    if op == Op.LT:
        return True if a.hi < b.lo else (False if a.lo >= b.hi else None)
    if op == Op.LE:
        return True if a.hi <= b.lo else (False if a.lo > b.hi else None)
    if a.hi < b.lo or b.hi < a.lo:
        return op == Op.NE
    if a.lo == a.hi == b.lo == b.hi:
        return op == Op.EQ
    return None


def _reduce(e: K.Expr, r: Ranges) -> K.Expr:
    if isinstance(e, K.Bin) and e.op in _COMPARE and e.a.ty == "int":
        if K.holds_check(e):      # (folded, it would drop a run-time check)
            return e
        known = decide(e.op, r.of(e.a), r.of(e.b))
        return e if known is None else K.Const("bool", known)
    if not (isinstance(e, K.Bin) and e.op in _PROVEN and e.a.ty == "int"):
        return e
    if not (r.of(e.a).nonneg() and r.of(e.b).positive()):
        return e
    if isinstance(e.b, K.Const) and e.b.value & (e.b.value - 1) == 0:
        k = e.b.value.bit_length() - 1
        return K.binop(Op.SHR, e.a, K.cint(k)) if e.op == Op.DIV else K.binop(Op.BAND, e.a, K.cint(e.b.value - 1))
    return K.Bin("int", _PROVEN[e.op], e.a, e.b)


PASS = Pass("strength", "x / y and x % y as C operators where x >= 0 and y >= 1 (range analysis); "
                        "by 2^k as shifts and masks; comparisons the ranges decide folded", strength_reduce)
