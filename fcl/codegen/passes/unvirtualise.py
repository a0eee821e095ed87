"""The `unvirtualise` pass: no virtualisation loop where every part has its own work-group.

After `map_hw`, grid parts run in `for (p = group_id; p < n; p += num_groups)`
and grid elements in `for (i = global_id; i < n; i += global_size)`.  When n
is a constant no larger than what the launch provides (#NumGroups groups, or
#NumGroups x #BlockSize work-items), each unit gets at most one part: the
launch takes min(#NumGroups, max(the kernel's grid sizes)) groups, which is
at least n here.  The loop becomes `if (group_id < n) { p = group_id; ... }`
(uniform over the work-group, so barriers inside stay convergent), or just
`p = group_id; ...` where every launch of the kernel takes exactly n groups
(n x #BlockSize work-items for elements), and the test for a next part
(`p + num_groups < n`) is false.  Not here:
sizes known only at run time (static arguments make them constants).
"""
from __future__ import annotations

import dataclasses

from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.passes.base import Pass, replace_kernels


def unvirtualise(plan: P.Plan) -> P.Plan:
    capacity = {"group_id": plan.num_groups, "global_id": plan.num_groups * plan.block_size}
    stride = {"group_id": "num_groups", "global_id": "global_size"}

    def rewrite(k: K.Kernel) -> K.Kernel:
        groups = plan.launch_groups(k.name)
        units = {"group_id": groups, "global_id": groups * plan.block_size if groups else None}

        def fs(s: K.Stmt):
            if not (isinstance(s, K.For) and isinstance(s.start, K.HwId) and s.start.name in capacity
                    and isinstance(s.step, K.HwId) and s.step.name == stride[s.start.name]
                    and isinstance(s.stop, K.Const) and s.stop.value <= capacity[s.start.name]):
                return s
            # no unit takes a next part: `p + num_groups < n` (the lowering's test before
            # the barrier that lets a next part reuse local memory) is false
            nxt = K.lt(K.add(K.Var("int", s.var), s.step), s.stop)
            body = (K.Let(s.var, s.start),) + K.map_stmts(
                lambda x: x, lambda e: K.Const("bool", False) if e == nxt else e, s.body,
                lambda e: nxt.names <= e.names)
            if units[s.start.name] == s.stop.value:     # every unit has a part: no test (and no
                return body                              # barrier under one: PoCL's optimiser
            return K.If(K.lt(s.start, s.stop), body)     # crashed on some, partPerGroup in
                                                         # tests/programs/fuzz_regressions.fcl)

        return dataclasses.replace(k, body=K.map_stmts(fs, None, k.body))

    return replace_kernels(plan, rewrite)


PASS = Pass("unvirtualise", "a part or element per work-group/work-item, without a loop, where a constant "
                            "count fits the launch", unvirtualise)
