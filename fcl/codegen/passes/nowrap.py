"""The `nowrap` pass: integer arithmetic the range analysis proves cannot wrap, as plain C.

`a + b`, `a - b`, `a * b` whose exact result provably fits 32 bits print as
plain C arithmetic (`add_nw`, `sub_nw`, `mul_nw`) instead of the wrapping
helpers, so the OpenCL compiler may assume no signed overflow there (and
`vectorize` may take such an index apart).  Reads `ranges`; the interpreter
re-checks every proof at run time.  Not here: division and comparisons (the
`strength` pass, strength.py).
"""
from __future__ import annotations

from fcl.base import scalars as S
from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.analysis.ranges import NodeRewrite, Ranges, exact, rewrite_kernels
from fcl.codegen.passes.base import Pass

Op = K.Op
_NO_WRAP = {Op.ADD: Op.ADD_NW, Op.SUB: Op.SUB_NW, Op.MUL: Op.MUL_NW}


def mark_no_wrap(plan: P.Plan) -> P.Plan:
    return rewrite_kernels(plan, NodeRewrite(_no_wrap, K.kind_bits(*_NO_WRAP)), proofs=False)


def _no_wrap(e: K.Expr, r: Ranges) -> K.Expr:
    if not (isinstance(e, K.Bin) and e.op in _NO_WRAP and e.a.ty == "int"):
        return e
    lo, hi = exact(e.op, r.of(e.a), r.of(e.b))
    if S.INT_MIN <= lo and hi <= S.INT_MAX:
        return K.Bin("int", _NO_WRAP[e.op], e.a, e.b)
    return e


PASS = Pass("nowrap", "plain + - * where the range analysis proves no 32-bit overflow", mark_no_wrap)
