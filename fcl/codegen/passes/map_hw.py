"""The `map_hw` pass: the parallel forms of the kernel IR -> explicit loops over hardware ids.

Consumes a plan whose kernels hold `ParFor`/`PartFor`/`SeqFor`; produces the
same plan with only `For` loops, `If` guards and `Let`s over `HwId`s, which
the OpenCL printer spells and the interpreter runs.  The mapping:

* thread `ParFor`, `SeqFor`: `for v in [0, n)` (marked for unrolling when n
  is a constant of at most 32; a `SeqFor` only without barriers or loops inside: on an
  H200 the segmented scan's runs took 0.263 ms unrolled, 0.286 not);
* warp/block `ParFor`: strided by lane/lid over #WarpSize/#BlockSize, or a
  guard `if (first < n)` when n is a constant no larger than the width (no
  guard when equal);
* grid `ParFor`: strided by the global id over the global size;
* grid `PartFor`: parts strided by the group id over the groups launched
  (block virtualisation); warp `PartFor`: by lane; block `PartFor`: by warp,
  and when its body holds a barrier, in a loop whose trip count is uniform
  over the work-group: a warp past the end redoes the last part (its reads
  stay in range) with `active` false, so it writes nothing.

`active` is always defined here (true outside the uniform loop), so the IR
after this pass has no free names.  Not here: any choice the device makes
(the number of groups launched is the plan's).
"""
from __future__ import annotations

import dataclasses

from fcl.base.errors import CompilerBug
from fcl.base.hw import Level
from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.passes.base import Pass, replace_kernels

UNROLL_MAX = 32
ZERO, ONE = K.cint(0), K.cint(1)


def map_hardware(plan: P.Plan) -> P.Plan:
    mapper = _Mapper(plan.block_size, plan.warp_size)
    return replace_kernels(plan, lambda k: dataclasses.replace(k, body=K.map_stmts(mapper.stmt, None, k.body)))


def hw(name: str) -> K.HwId:
    return K.HwId("int", name)


class _Mapper:
    def __init__(self, block_size: int, warp_size: int):
        self.bs = block_size
        self.ws = warp_size
        self.nwarps = max(1, block_size // warp_size)

    def stmt(self, s: K.Stmt):
        if isinstance(s, K.SeqFor):      # unrolled by the target where short and simple (a scan's run)
            simple = not K.contains_barrier(s.body) and not any(
                isinstance(x, (K.For, K.SeqFor, K.ParFor, K.PartFor, K.Loop)) for x in K.walk_stmts(s.body))
            unroll = isinstance(s.count, K.Const) and s.count.value <= UNROLL_MAX and simple
            return K.For(s.var, ZERO, s.count, ONE, s.body, unroll, double_buffer=s.double_buffer)
        if isinstance(s, K.ParFor):
            return self.par_for(s)
        if isinstance(s, K.PartFor):
            return self.part_for(s)
        return s

    def par_for(self, s: K.ParFor):
        if s.level == Level.THREAD:
            unroll = isinstance(s.count, K.Const) and s.count.value <= UNROLL_MAX
            return K.For(s.var, ZERO, s.count, ONE, s.body, unroll)
        if s.level == Level.GRID:
            return K.For(s.var, hw("global_id"), s.count, hw("global_size"), s.body)
        first, width = (hw("lane"), self.ws) if s.level == Level.WARP else (hw("lid"), self.bs)
        if isinstance(s.count, K.Const) and s.count.value <= width:
            body = (K.Let(s.var, first),) + s.body
            return body if s.count.value == width else K.If(K.lt(first, s.count), body)
        return K.For(s.var, first, s.count, K.cint(width), s.body)

    def part_for(self, s: K.PartFor):
        everyone = (K.Let(s.active, K.Const("bool", True)),) if s.active else ()
        if s.level == Level.GRID:
            return K.For(s.var, hw("group_id"), s.count, hw("num_groups"), everyone + s.body)
        if s.level == Level.WARP:
            if K.contains_barrier(s.body):
                raise CompilerBug("barrier inside thread-level parts")
            return K.For(s.var, hw("lane"), s.count, K.cint(self.ws), everyone + s.body)
        if s.level != Level.BLOCK:
            raise CompilerBug(f"parts at level {s.level}")
        if not K.contains_barrier(s.body):
            return K.For(s.var, hw("wid"), s.count, K.cint(self.nwarps), everyone + s.body)
        # Barriers inside: every warp runs the same number of iterations; a warp past
        # the end redoes the last part (reads stay in range) but writes nothing outside.
        base = s.var + "_base"
        part = K.add(K.Var("int", base), hw("wid"))
        active = s.active or s.var + "_active"
        head = (K.Let(active, K.lt(part, s.count)),
                K.Let(s.var, K.select(K.Var("bool", active), part, K.sub(s.count, ONE))))
        return K.For(base, ZERO, s.count, K.cint(self.nwarps), head + s.body)


PASS = Pass("map_hw", "parallel loops -> loops over hardware ids: strides, guards, unrolling marks, "
                      "warp-uniform loops and the `active` flag", map_hardware, optimising=False)
