"""The `unroll` pass: loops with a small trip count known at compile time become straight-line code.

After `map_hw`, a block's elements run in `for (i = lid; i < 2048; i += 256)`
and a thread's in `for (i = 0; i < 8; i++)`.  When the step is a positive
constant and the range analysis bounds the start and the stop, every
work-item runs between `lo` and `hi` iterations (the same for all when the
stop is a multiple of the step away from every start).  Where hi <= MAX_TRIPS
and the copies stay small (MAX_STATEMENTS), the loop becomes hi copies of
its body, copy k preceded by `let i_k = start + k * step`; copies k >= lo
are guarded by `if (i_k < stop)`.  The names the body defines are renamed in
each copy (names stay unique in a kernel; kir.walk's `straight_copies`,
which `privatise` also uses, makes the copies).  Independent loads of the copies
can then be in flight together (the target compiler rarely unrolls a loop
whose start is the local id).  A loop that every work-item runs exactly once
becomes its body whatever it holds (a warp's part loop where there are no
more parts than warps: fewer loops around barriers for the target compiler),
unless it is a power's step between its two buffers (`privatise` looks for
those loops), and one that none runs goes.  Not here: loops whose body holds a barrier
(their rounds are few and long, and PoCL miscompiles some straight-line
sequences of barriers under conditions: tests/programs/fuzz_regressions.fcl
warpIfForce gave wrong results there), partial unrolling of long loops,
loops whose step is not a constant (the grid-stride loops), loops whose body
still holds a loop after its own loops were unrolled (little to gain, and
PoCL's optimising build of 7 copies of two nested loops before a barrier did
not finish in 120 s: foldsBeforeBarrier in tests/programs/fuzz_regressions.fcl).
"""
from __future__ import annotations

import dataclasses

from fcl.base import scalars as S
from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.analysis.ranges import Ranges, rewrite_kernels
from fcl.codegen.passes.base import Pass, replace_kernels

MAX_TRIPS = 16          # copies at most
MAX_STATEMENTS = 256    # statements in all the copies together


def unroll_loops(plan: P.Plan) -> P.Plan:
    return replace_kernels(plan, lambda k: _unroll_kernel(plan, k))


def _unroll_kernel(plan: P.Plan, k: K.Kernel) -> K.Kernel:
    names = K.Names(k)
    one = dataclasses.replace(plan, kernels=(k,))
    return rewrite_kernels(one, fs=lambda s, r: _unroll(s, r, names), proofs=False).kernels[0]


def trip_bounds(loop: K.For, r: Ranges) -> tuple[int, int] | None:
    """(fewest, most) iterations any work-item runs, when the step is a positive constant."""
    if not (isinstance(loop.step, K.Const) and loop.step.value >= 1):
        return None
    step, start, stop = loop.step.value, r.of(loop.start), r.of(loop.stop)
    if start.lo == S.INT_MIN or stop.hi == S.INT_MAX:
        return None
    most = max(0, -(-(stop.hi - start.lo) // step))
    fewest = max(0, -(-(stop.lo - start.hi) // step))
    return fewest, most


def _size(stmts) -> int:
    return sum(1 for _ in K.walk_stmts(stmts))


def _unroll(s: K.Stmt, r: Ranges, names: K.Names):
    if not isinstance(s, K.For):
        return s
    bounds = trip_bounds(s, r)
    if bounds is None:
        return s
    fewest, most = bounds
    if most == 0:                   # no work-item runs it
        return ()
    pingpong = bool(s.body) and isinstance(s.body[-1], K.SwapPtr)
    if fewest == most == 1 and not pingpong:    # every work-item runs it once: its body, barriers
        return (K.Let(s.var, s.start),) + s.body  # and loops too (a power's loop stays, for `privatise`)
    if most > MAX_TRIPS or most * (_size(s.body) + 1) > MAX_STATEMENTS:
        return s
    if K.contains_barrier(s.body) or any(isinstance(x, (K.For, K.SeqFor, K.ParFor, K.PartFor, K.Loop))
                                         for x in K.walk_stmts(s.body)):
        return s
    return K.straight_copies(s, fewest, most, names, "u")


PASS = Pass("unroll", "loops of at most 16 iterations with a constant step whose trip count the ranges bound "
                      "-> straight-line copies (guarded where a work-item may run fewer); not around barriers",
            unroll_loops)
