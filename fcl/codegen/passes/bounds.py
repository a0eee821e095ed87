"""The `bounds` pass: device bounds checks that the range analysis proves are removed.

The lowering wraps the index of every `index` in a `kir.Checked` (index, the
array's length, the plan's bounds buffer, the site); a check whose index is
proven in [0, length) at its point of the kernel (`ranges.Ranges.below`: loop
bounds, conditions of `if`s and selects, `Let`s, constants) becomes the plain
index.  When no check is left in any kernel or host expression, the bounds
buffer, its allocation and the plan's `CheckBounds` go too, so a program whose
indexes are all proven runs exactly the code it would without checks.
`Plan.check_count()` says how many checks remain (`--explain` prints it).
Not here: which checks exist (lower.py), what a failure does (kir.Checked).
"""
from __future__ import annotations

import dataclasses

from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.passes.ranges import Ranges, rewrite_kernels


def elide_checks(plan: P.Plan) -> P.Plan:
    plan = rewrite_kernels(plan, _elide)
    return _trim(plan, everywhere=plan.check_count() == 0)


def _elide(e: K.Expr, r: Ranges) -> K.Expr:
    if isinstance(e, K.Checked) and r.nonneg(e.index) and r.below(e.index, e.length):
        return e.index
    return e


def _trim(plan: P.Plan, everywhere: bool) -> P.Plan:
    """Kernels that check nothing no longer take the bounds buffer; `everywhere`: the plan
    has no bounds buffer at all (no allocation, no CheckBounds)."""
    names = {b.name for b in plan.buffers if b.role == "bounds"}
    used = {k.name: K.buffers_used(k.body) for k in plan.kernels}

    def host(stmts) -> tuple:
        out = []
        for s in stmts:
            if everywhere and (isinstance(s, P.Alloc) and s.buffer in names or isinstance(s, P.CheckBounds)):
                continue
            if isinstance(s, P.Loop):
                s = dataclasses.replace(s, head=host(s.head), body=host(s.body))
            elif isinstance(s, P.Launch):
                keep = tuple(b for b in s.uses.buffers if b not in names or b in used[s.kernel])
                s = dataclasses.replace(s, uses=P.Uses(keep, s.uses.params))
            out.append(s)
        return tuple(out)
    buffers = tuple(b for b in plan.buffers if not (everywhere and b.name in names))
    return dataclasses.replace(plan, buffers=buffers, body=host(plan.body))
