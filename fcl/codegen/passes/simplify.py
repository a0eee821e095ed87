"""The `simplify` pass: constant and copy propagation, common `Let`s, dead `Let`s, constant branches.

Every kernel goes through kir/simplify.py's `simplify_kernel` (which says
what it rewrites; `privatise` and `vectorize` also run it on the kernels
they rewrite, to drop what their rewrites leave unused).  Runs after
`licm`, `unroll` and `strength`, which leave copies, constant conditions and
dead `Let`s behind.  Not here: anything that needs ranges (`strength`) or
moves code (`licm`).
"""
from __future__ import annotations

from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.passes.base import Pass, replace_kernels


def simplify(plan: P.Plan) -> P.Plan:
    return replace_kernels(plan, K.simplify_kernel)


PASS = Pass("simplify", "constant and copy propagation, common lets, constant branches, dead lets", simplify)
