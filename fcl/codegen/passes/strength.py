"""The `strength` and `nowrap` passes: integer operations the range analysis proves safe.

`strength`: `a / b` and `a % b` with a >= 0 and b >= 1 print as C's own
operators (`div_nn`, `mod_nn`) instead of `fcl_div`/`fcl_mod` with their zero
and minus-one guards; by a constant power of two they become `a >> k` and
`a & (2^k - 1)`; an int comparison that the ranges decide becomes a constant
(so `c < cols ? x : 0` over c in [0, cols) keeps only x).  `nowrap`: `a + b`, `a - b`, `a * b` whose exact result
provably fits 32 bits print as plain C arithmetic (`add_nw`...) instead of the
wrapping helpers, so the OpenCL compiler may assume no signed overflow there.
Both read `ranges`; the interpreter re-checks every
proof at run time.
"""
from __future__ import annotations

from fcl.base import scalars as S
from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.analysis.ranges import Interval, NodeRewrite, Ranges, exact, rewrite_kernels

Op = K.Op
_PROVEN = {Op.DIV: Op.DIV_NN, Op.MOD: Op.MOD_NN}
_NO_WRAP = {Op.ADD: Op.ADD_NW, Op.SUB: Op.SUB_NW, Op.MUL: Op.MUL_NW}
_COMPARE = {Op.LT, Op.LE, Op.GT, Op.GE, Op.EQ, Op.NE}


def strength_reduce(plan: P.Plan) -> P.Plan:
    return rewrite_kernels(plan, NodeRewrite(_reduce, K.kind_bits(*_COMPARE, *_PROVEN)), proofs=False)


def mark_no_wrap(plan: P.Plan) -> P.Plan:
    return rewrite_kernels(plan, NodeRewrite(_no_wrap, K.kind_bits(*_NO_WRAP)), proofs=False)


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


def _no_wrap(e: K.Expr, r: Ranges) -> K.Expr:
    if not (isinstance(e, K.Bin) and e.op in _NO_WRAP and e.a.ty == "int"):
        return e
    lo, hi = exact(e.op, r.of(e.a), r.of(e.b))
    if S.INT_MIN <= lo and hi <= S.INT_MAX:
        return K.Bin("int", _NO_WRAP[e.op], e.a, e.b)
    return e
