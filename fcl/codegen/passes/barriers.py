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

A loop whose barriers are all at its body's top level (two or more) is taken as a cycle:
the stretch after its last barrier runs on into the next step's first one, so the last
barrier goes where that stretch and the one before it share nothing, and the first where
the stretches around it do (`double_buffer`'s pairs of steps: the barrier ending each copy,
one a step where there were two).  Where a stretch runs past the loop's ends: the
first barrier goes only where what the stretch after it touches does not conflict with the
code before the loop since the barrier before it (at the kernel's top: all of it), or is
the loop's own (buffers nothing outside the loop's body touches; buffers nothing writes
count as anyone's), for in the first step the loop's start, not a last barrier, comes before
it; the last barrier only where what the stretch before it touches is the loop's own, for
after the last step the loop's end comes after it.  The loop must not start again
with no barrier between (it is in the kernel's body, or its list has another barrier).
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
    body = _Drop(k, private, pointers).block(k.body, True, top=True)
    return k if body == k.body else dataclasses.replace(k, body=body)


def top_barriers(body: tuple) -> list[int] | None:
    """The positions of a loop body's barriers where there are two or more, all at its top
    level (none inside a nested statement); None otherwise."""
    marks = [i for i, s in enumerate(body) if isinstance(s, K.Barrier)]
    if len(marks) < 2 or any(K.contains_barrier((s,)) for s in body if not isinstance(s, K.Barrier)):
        return None
    return marks


class _Drop:
    def __init__(self, k: K.Kernel, private: set, pointers: set):
        self.k, self.private, self.pointers = k, private, pointers
        self.written = K.all_accesses(k.body)[1]        # a buffer no statement writes orders nothing

    def shared(self, stmts) -> tuple[set, set] | None:
        """(shared buffers read, written) by stmts, or None where they hold a barrier or
        touch a pointer variable."""
        if K.contains_barrier(stmts):
            return None
        reads, writes = K.all_accesses(stmts)
        if (reads | writes) & self.pointers:
            return None
        return reads - self.private, writes - self.private

    def block(self, stmts: tuple, ordered: bool, top: bool = False) -> tuple:
        """stmts with their nested bodies done and the barriers that order nothing dropped;
        `ordered`: every shared access before stmts is ordered against them by a barrier;
        `top`: stmts is the kernel's body."""
        out, clear = [], ordered
        for i, s in enumerate(stmts):
            s = self.nested(s, clear, stmts, i, top)
            out.append(s)
            if isinstance(s, K.Barrier):
                clear = True
            elif self.shared((s,)) != (set(), set()):
                clear = False
        return tuple(self.drop(out, ordered))

    def nested(self, s: K.Stmt, clear: bool, around: tuple, at: int, top: bool) -> K.Stmt:
        if isinstance(s, K.If):
            return dataclasses.replace(s, then=self.block(s.then, clear), else_=self.block(s.else_, clear))
        if isinstance(s, (K.For, K.SeqFor)):
            cyclic = self.cyclic(s, around, at, top)
            if cyclic is not None:
                return dataclasses.replace(s, body=cyclic)
            last = max((i for i, x in enumerate(s.body) if isinstance(x, K.Barrier)), default=None)
            again = last is not None and self.shared(s.body[last + 1:]) == (set(), set())
            return dataclasses.replace(s, body=self.block(s.body, clear and again))
        return s        # a `while`'s Loop (its head runs before each body) is left as it is

    def cyclic(self, loop, around: tuple, at: int, top: bool) -> tuple | None:
        """The body of a loop whose barriers are all at its top level (two or more), with those
        that order nothing dropped, its steps taken as a cycle: the stretch after the last
        barrier runs on into the next step's first one.  None where the loop is not of that
        kind, or where it could run again after it ends with no barrier between (`around`,
        the list that holds it, is not the kernel's body and has no other barrier at its top)."""
        body = loop.body
        marks = top_barriers(body)
        if marks is None or not top and not any(isinstance(x, K.Barrier) for x in around):
            return None
        own = K.buffers_used(body) - K.used_outside(self.k.body, body)
        before_loop = self.since_barrier(around[:at], top)
        gone: set[int] = set()
        while len(live := [m for m in marks if m not in gone]) >= 2:
            for j, b1 in enumerate(live):
                b0, b2 = live[j - 1], live[(j + 1) % len(live)]
                before = self.shared(self.between(body, b0, b1))
                after = self.shared(self.between(body, b1, b2))
                if before is None or after is None or self.conflict(before, after):
                    continue
                if j == 0 and not self.apart(after, own, before_loop):          # the first step
                    continue
                if j == len(live) - 1 and not self.apart(before, own, None):    # the last step
                    continue
                gone.add(b1)
                break
            else:
                break
        return tuple(self.nested(x, False, body, i, False) if not isinstance(x, K.Barrier) else x
                     for i, x in enumerate(body) if i not in gone)

    @staticmethod
    def between(body: tuple, b0: int, b1: int) -> list:
        """The statements after barrier b0 up to barrier b1 (live barriers, so none between
        them is), around the end of the body where b1 comes first."""
        span = body[b0 + 1:b1] if b0 < b1 else body[b0 + 1:] + body[:b1]
        return [x for x in span if not isinstance(x, K.Barrier)]

    @staticmethod
    def conflict(a: tuple, b: tuple) -> bool:
        """Whether two stretches' (reads, writes) share a buffer one of them writes (either order)."""
        return bool(a[1] & (b[0] | b[1]) or a[0] & b[1])

    def apart(self, stretch: tuple, own: set, outside) -> bool:
        """Whether a stretch of the loop's first or last step needs no order against the code
        before or after the loop: the buffers it touches that anything writes are the loop's
        own, or it does not conflict with `outside` (the code before the loop since its last
        barrier; None: not known)."""
        if ((stretch[0] | stretch[1]) & self.written) <= own:
            return True
        return outside is not None and not self.conflict(stretch, outside)

    def since_barrier(self, before: tuple, top: bool):
        """(reads, writes) of the statements before a loop since the last barrier of its list
        (all of them in the kernel's body with none); None where one of them holds a barrier or
        the list has none before the loop (its start may follow anything)."""
        last = max((i for i, x in enumerate(before) if isinstance(x, K.Barrier)), default=None)
        if last is None and not top:
            return None
        return self.shared(before[last + 1:] if last is not None else before)

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
            if before is not None and after is not None and not self.conflict(before, after):
                gone.add(b1)            # the stretch before it runs on to b2
            else:
                start = b1 + 1
        return [s for i, s in enumerate(stmts) if i not in gone]


PASS = Pass("barriers", "a barrier between two stretches of code that touch no buffer in common that one "
            "of them writes goes (two forces in a row: the first one's; a loop's steps taken as a cycle)",
            drop_barriers)
