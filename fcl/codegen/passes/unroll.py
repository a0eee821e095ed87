"""The `unroll` pass: loops with a small trip count known at compile time become straight-line code.

After `map_hw`, a block's elements run in `for (i = lid; i < 2048; i += 256)`
and a thread's in `for (i = 0; i < 8; i++)`.  When the step is a positive
constant and the range analysis bounds the start and the stop, every
work-item runs between `lo` and `hi` iterations (the same for all when the
stop is a multiple of the step away from every start).  Where hi <= MAX_TRIPS
and the copies stay small (MAX_STATEMENTS), the loop becomes hi copies of
its body, copy k preceded by `let i_k = start + k * step`; copies k >= lo
are guarded by `if (i_k < stop)`.  The names the body defines are renamed in
each copy (names stay unique in a kernel).  Independent loads of the copies
can then be in flight together (the target compiler rarely unrolls a loop
whose start is the local id).  A loop that every work-item runs exactly once
becomes its body whatever it holds (a warp's part loop where there are no
more parts than warps: fewer loops around barriers for the target compiler),
and one that none runs goes.  Not here: loops whose body holds a barrier
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

MAX_TRIPS = 16          # copies at most
MAX_STATEMENTS = 256    # statements in all the copies together


def unroll_loops(plan: P.Plan) -> P.Plan:
    kernels = []
    for k in plan.kernels:
        names = Names(k)
        one = dataclasses.replace(plan, kernels=(k,))
        kernels.append(rewrite_kernels(one, fs=lambda s, r: _unroll(s, r, names), proofs=False).kernels[0])
    return dataclasses.replace(plan, kernels=tuple(kernels))


class Names:
    """Fresh names for one kernel (unique across it): `base_tag`, else `base_tag_1`, ..."""

    def __init__(self, k: K.Kernel):
        self.taken = K.defined_in(k.body) | {b.name for b in k.locals_ + k.privates} | K.names_read(k.body)

    def fresh(self, base: str, tag: str) -> str:
        name, extra = f"{base}_{tag}", 0
        while name in self.taken:
            extra += 1
            name = f"{base}_{tag}_{extra}"
        self.taken.add(name)
        return name


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


def _unroll(s: K.Stmt, r: Ranges, names: Names):
    if not isinstance(s, K.For):
        return s
    bounds = trip_bounds(s, r)
    if bounds is None:
        return s
    fewest, most = bounds
    if most == 0:                   # no work-item runs it
        return ()
    if fewest == most == 1:         # every work-item runs it once: its body, barriers and loops too
        return (K.Let(s.var, s.start),) + s.body
    if most > MAX_TRIPS or most * (_size(s.body) + 1) > MAX_STATEMENTS:
        return s
    if K.contains_barrier(s.body) or any(isinstance(x, (K.For, K.SeqFor, K.ParFor, K.PartFor, K.Loop))
                                         for x in K.walk_stmts(s.body)):
        return s
    return copies(s, fewest, most, names, "u")


def copies(s: K.For, fewest: int, most: int, names: Names, tag: str) -> tuple:
    """`most` straight-line copies of loop `s`'s body (a positive constant step), copy k after
    `let i_k = start + k * step` and its names renamed (`tag` and k); copies from `fewest` on
    guarded by `if (i_k < stop)`."""
    out = []
    for copy in range(most):
        var = names.fresh(s.var, f"{tag}{copy}")
        renaming = {name: names.fresh(name, f"{tag}{copy}") for name in defines(s.body)}
        renaming[s.var] = var
        out.append(K.Let(var, K.add(s.start, K.cint(copy * s.step.value))))
        body = rename(s.body, renaming)
        out.extend(body if copy < fewest else (K.If(K.lt(K.Var("int", var), s.stop), body),))
    return tuple(out)


# ---------------------------------------------------------------- renaming

def defines(stmts) -> set[str]:
    """Names `stmts` define (not those they only assign or swap: those live outside)."""
    return {name for s in K.walk_stmts(stmts) if not isinstance(s, (K.Assign, K.SwapPtr))
            for name in K.binds(s)}


_NAME_FIELDS = ("var", "active", "a", "b", "buf", "init")


def rename(stmts, table: dict[str, str]) -> tuple:
    """`stmts` with every name in `table` (defined, assigned, read, or a pointer) renamed."""
    def fe(e: K.Expr) -> K.Expr:
        if isinstance(e, K.Var) and e.name in table:
            return K.Var(e.ty, table[e.name])
        if isinstance(e, K.Load) and e.buf in table:
            return dataclasses.replace(e, buf=table[e.buf])
        return e

    def fs(s: K.Stmt) -> K.Stmt:
        changes = {f: table[getattr(s, f)] for f in _NAME_FIELDS
                   if isinstance(getattr(s, f, None), str) and getattr(s, f) in table}
        return dataclasses.replace(s, **changes) if changes else s

    def visit(e: K.Expr) -> bool:
        return not (e.names.isdisjoint(table) and e.buffers_read.isdisjoint(table))

    return K.map_stmts(fs, fe, stmts, visit)
