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
(`p + num_groups < n`) is false.

Where the count is known only at run time, a loop that runs once is still a
loop: NVIDIA's compiler hoists everything the part computes from the work-item's
id out of it and keeps it in registers across the whole part (80 registers for a
scanConcat's chunk of 4096, 32 without the loop: three work-groups of 256 on a
multiprocessor instead of eight; 0.268 ms against 0.202 at 2^26 ints on an H200).
So where the number of work-groups does not change the results (the program never
reads #NumGroups: `plan.free_groups`), a kernel with a loop over heavy parts (8 KB of
local memory or more, ONE_PART_BYTES) whose number the range analysis does not bound by
num_groups
(`for (p = group_id; p < n; p += num_groups)`) runs as one launch of
group_total = max(1, the launch's sizes...) work-groups: every hardware id is the
whole launch's (group_id + first_group, group_total work-groups), so each loop
over parts or elements runs at most once a work-item, and the loops over parts
are marked `once`, which the OpenCL renderer prints as an `if` on GPUs (where
FCL_ONE_PART) and as the loop on CPUs (PoCL mishandles barriers under an `if`).
The host launches it in slices of up to slice_groups() work-groups, `first_group`
the first of each (`plan.slices`): a launch runs after the one before it, so the
first slices' work-groups end before the later ones start, as a loop over parts
allows (a scanConcat's tickets are taken in launch order).
"""
from __future__ import annotations

import dataclasses

from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.analysis.ranges import Ranges
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

    plan = replace_kernels(plan, rewrite)
    return in_slices(plan) if plan.free_groups else plan


def in_slices(plan: P.Plan) -> P.Plan:
    """The launches of kernels that loop over heavy parts of a count the ranges do not bound
    (_worth_slicing) as one launch of max(1, sizes...) work-groups, in slices (see above)."""
    kernels = {k.name: k for k in plan.kernels}
    done: dict[str, K.Kernel] = {}
    for s in plan.launches():
        if s.kernels()[0] in done or not s.groups:
            continue
        if all(_worth_slicing(plan, kernels[name]) for name in s.kernels()):
            done.update((name, _one_part(kernels[name], plan.block_size)) for name in s.kernels())
    if not done:
        return plan
    extra = (P.FIRST_GROUP, P.GROUP_TOTAL)

    def host(stmts: tuple) -> tuple:
        out = []
        for s in stmts:
            if isinstance(s, P.Launch) and s.kernel in done:
                s = dataclasses.replace(s, uses=P.Uses(s.uses.buffers, s.uses.params + extra))
            elif isinstance(s, P.Loop):
                s = dataclasses.replace(s, head=host(s.head), body=host(s.body))
            out.append(s)
        return tuple(out)

    return dataclasses.replace(plan, params=plan.params + tuple(K.Param(n, "int") for n in extra),
                               kernels=tuple(done.get(k.name, k) for k in plan.kernels), body=host(plan.body))


# A part is heavy enough for a work-group of its own where it takes this much local memory
# (a scan's chunk of 4096 ints takes 16 KB, a radix sort's chunk of 2048 8 KB); a lighter one
# (spmv's 8 rows, 1.6 KB) is cheaper in a loop: at 2^20 rows on an H200, 131072 work-groups
# of one part took 0.451 ms against 0.404 for 65536 of two, as the hand-written kernel's
# grid-stride loop does.
ONE_PART_BYTES = 8192


def _worth_slicing(plan: P.Plan, k: K.Kernel) -> bool:
    """Whether k's parts are heavy and their number not bounded by one launch: where the
    range analysis bounds it by num_groups, each part has its work-group already and the
    loop stays (reduceByIndex's sliced kernel, at most 792 parts, took 0.325 ms at 65536
    bins of 2^26 ints on an H200 as the loop, 0.337 as an `if`)."""
    size = P.local_bytes(plan, k)
    if isinstance(size, K.Const) and size.value < ONE_PART_BYTES:
        return False
    ranges = Ranges.for_plan(plan)
    return any(ranges.of(s.stop).hi > plan.num_groups for s in K.walk_stmts(k.body) if _part_loop(s))


def _part_loop(s: K.Stmt, group: K.Expr = K.HwId("int", "group_id"),
               groups: K.Expr = K.HwId("int", "num_groups")) -> bool:
    """Whether s is a loop over parts, `for (p = group; p < n; p += groups)`."""
    return isinstance(s, K.For) and s.start == group and s.step == groups


def _one_part(k: K.Kernel, block_size: int) -> K.Kernel:
    """Kernel k run as a slice of one launch of `group_total` work-groups (its work-group
    ids from `first_group` on), its loops over parts marked `once` (each work-group takes
    one part at most)."""
    group, total = K.add(K.HwId("int", "group_id"), K.Var("int", P.FIRST_GROUP)), K.Var("int", P.GROUP_TOTAL)
    ids = {"group_id": group, "num_groups": total, "global_size": K.mul(total, K.cint(block_size)),
           "global_id": K.add(K.mul(group, K.cint(block_size)), K.HwId("int", "lid"))}
    body = K.map_stmts(lambda s: dataclasses.replace(s, once=True) if _part_loop(s, group, total) else s,
                       lambda e: ids.get(e.name, e) if isinstance(e, K.HwId) else e, k.body)
    return dataclasses.replace(k, body=body)


PASS = Pass("unvirtualise", "a part or element per work-group/work-item, without a loop, where a constant "
                            "count fits the launch, or the number of work-groups is free", unvirtualise)
