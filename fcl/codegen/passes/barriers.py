"""The `barriers` pass: a barrier between two stretches of code that share no memory goes.

A barrier orders the work-group's accesses before it against those after it.  Where the
statements between it (B1) and the barrier before it (B0) and those between it and the next
one (B2) touch no buffer in common that one of them writes (no write-read, read-write or
write-write pair on one buffer), B1 orders nothing that B2 does not: whatever comes after
B2 is ordered against both stretches by B2, and the two stretches need no order between
them.  Two `force`s in a row each end in a barrier (so their arrays can be read), the first
of which is such a B1: the prelude's matmulF stages its tiles of a and b one after the
other, three barriers a K-tile where two do.

Runs after `share_local`, which needs the barriers between buffers' uses to let them share
memory (matmulReg's tiles of a 3 x 17 x 66 product fit 48 KB so) and gives two buffers that
share memory one name.

Exactness.  Both stretches hold no barrier, at any depth, and touch no pointer variable (a
`while`'s ping-pong, which may name either of two buffers); accesses are compared by buffer, whatever
their indexes, global buffers as well as local ones, and private ones not at all (a
work-item's own), nor the run-time checks' record (each failure sets its own bit
atomically).  B0 is a barrier earlier in the same statement list, or, at the top of a
loop's body, the loop's own last barrier together with a barrier before the loop (each run
of the body starts after one: after the body's last barrier and between the barrier before
the loop and the loop nothing touches shared memory); at the top of the kernel
nothing comes before.  B2 is a later barrier of the same list.
"""
from __future__ import annotations

import dataclasses

from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.passes.base import Pass, replace_kernels


def drop_barriers(plan: P.Plan) -> P.Plan:
    records = {b.name for b in plan.buffers if b.role == "bounds"}
    return replace_kernels(plan, lambda k: _kernel(k, records))


def _kernel(k: K.Kernel, records: set) -> K.Kernel:
    private = {b.name for b in k.privates} | records
    pointers = {s.var for s in K.walk_stmts(k.body) if isinstance(s, K.DeclPtr)}
    body = _Drop(private, pointers).block(k.body, True)
    return k if body == k.body else dataclasses.replace(k, body=body)


class _Drop:
    def __init__(self, private: set, pointers: set):
        self.private, self.pointers = private, pointers

    def shared(self, stmts) -> tuple[set, set] | None:
        """(shared buffers read, written) by stmts, or None where they hold a barrier or
        touch a pointer variable."""
        if K.contains_barrier(stmts):
            return None
        reads, writes = K.all_accesses(stmts)
        if (reads | writes) & self.pointers:
            return None
        return reads - self.private, writes - self.private

    def block(self, stmts: tuple, ordered: bool) -> tuple:
        """stmts with their nested bodies done and the barriers that order nothing dropped;
        `ordered`: every shared access before stmts is ordered against them by a barrier."""
        out, clear = [], ordered
        for s in stmts:
            s = self.nested(s, clear)
            out.append(s)
            if isinstance(s, K.Barrier):
                clear = True
            elif self.shared((s,)) != (set(), set()):
                clear = False
        return tuple(self.drop(out, ordered))

    def nested(self, s: K.Stmt, clear: bool) -> K.Stmt:
        if isinstance(s, K.If):
            return dataclasses.replace(s, then=self.block(s.then, clear), else_=self.block(s.else_, clear))
        if isinstance(s, (K.For, K.SeqFor)):
            last = max((i for i, x in enumerate(s.body) if isinstance(x, K.Barrier)), default=None)
            again = last is not None and self.shared(s.body[last + 1:]) == (set(), set())
            return dataclasses.replace(s, body=self.block(s.body, clear and again))
        return s        # a `while`'s Loop (its head runs before each body) is left as it is

    def drop(self, stmts: list, ordered: bool) -> list:
        marks = [i for i, s in enumerate(stmts) if isinstance(s, K.Barrier)]
        gone = set()
        start = 0 if ordered else None      # where the stretch before the current barrier begins
        for n, b1 in enumerate(marks):
            later = marks[n + 1:]
            if start is None or not later:
                start = b1 + 1
                continue
            b2 = later[0]
            before = self.shared([s for i, s in enumerate(stmts[start:b1], start) if i not in gone])
            after = self.shared(stmts[b1 + 1:b2])
            if before is not None and after is not None and not (
                    before[1] & (after[0] | after[1]) or before[0] & after[1]):
                gone.add(b1)            # the stretch before it runs on to b2
            else:
                start = b1 + 1
        return [s for i, s in enumerate(stmts) if i not in gone]


PASS = Pass("barriers", "a barrier between two stretches of code that touch no buffer in common that one "
            "of them writes goes (two forces in a row: the first one's)", drop_barriers)
