"""The `double_buffer` pass: a loop that stages tiles in local memory takes two steps a round, the second on its own tiles.

A block-level `power` whose step forces its operands into local memory (the
prelude's matrix products: a K-tile of a and of b each step) runs

    for it { write T; barrier; read T ...; barrier }

and the second barrier is there only so that step it + 1 does not write T
while a work-item still reads step it's.  Here such a loop becomes

    for it = start, step 2, while it + 1 < stop { the body at it; the body at it + 1 on T' }
    for it in the last step where the count is odd { the body as it was }

where T' is a second copy of each buffer the body stages (the names the body
defines renamed in each copy).  The barrier that ended each copy then orders
nothing: what comes before it reads only T (or T'), what comes after it
until the next barrier writes only the other; the `barriers` pass (after this
one) drops both, one barrier a step where there were two.

A program asks for it loop by loop: `powerDoubleBuffered` marks its loop
(`For.double_buffer`), and the pass's `asked` part, which runs wherever the
pass is not switched off, takes the marked loops (the prelude's matmulF
where its tiles are few: matmulPipelines).  Every loop of that form only
where named (`fclc --pass double_buffer`, `compile(with_pass=...)`): whether
it pays depends on the kernel and the device.  On an H200 (2026-11-28,
`bench/run.py`, each kernel of a run), examples/matmul.fcl's matmulPrefetch
at #BlockSize 256 took 0.338 ms for 2000 x 3000 x 1000 (0.94 of the
hand-written kernel's 0.318; 0.369 without), 0.128 at 1024^3 (as without)
and 3.76 at 4096^3 (3.87 without); but the prelude's matmulF, whose steps
load their tiles from global memory, took 3.99 ms at 4096^3 instead of 3.48,
and both at #BlockSize 128 slowed (matmulPrefetch at 1024^3: 0.132 ms
instead of 0.090), so it is not on by default.  PoCL's unoptimised build
(`-cl-opt-disable`, as the test suite builds) of the double-buffered
matmulPrefetch at #BlockSize 256 crashes inside PoCL (a segmentation fault
at 130 x 21 x 133, 2026-11-28; not with the PoCL of 2026-11-29); its
optimised build, Oclgrind (no race, the right products) and NVIDIA's
compiler run it.

Exactness.  The loop counts by one and its body holds two barriers or more,
all at its top level (at most MAX_BARRIERS: a step with more, a block's
tree of sums after its loads, gains too little for a body twice as long) (every work-item runs the steps alike).  The staged
buffers are the local buffers of `force`s, of a size known at compile time,
that no pointer variable may name and that nothing outside the loop's body
touches: each step writes what it reads of them before reading it (a
`force`'s array is whole before anything reads it), so a step sees nothing
of the step before it in them, and which copy a step uses does not matter.
The pass applies only where the stretch between the body's last two
barriers touches no shared memory but these buffers and buffers that no
statement of the kernel writes (so that the barrier
that ends a copy can go) and where both copies fit the work-group's local
memory (#LocalMemory).  The step count is whatever the loop's bounds say:
the first loop runs the pairs, the second the last step of an odd count (after
the pairs, so that what comes before the pairs' loop is what came before the
loop, which the `barriers` pass looks at).
Not here: loops with a barrier inside a nested statement, loops nested in a
loop this pass has already rewritten, `while` loops.
"""
from __future__ import annotations

import dataclasses

from fcl.base.hw import STORAGE_BYTES
from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.passes.barriers import top_barriers
from fcl.codegen.passes.base import Pass, replace_kernels


def double_buffer(plan: P.Plan) -> P.Plan:
    """Every loop where the rewrite applies (`--pass double_buffer`)."""
    return replace_kernels(plan, lambda k: _kernel(plan, k, every=True))


def asked(plan: P.Plan) -> P.Plan:
    """The loops the program asks for (`powerDoubleBuffered`), where the rewrite applies."""
    return replace_kernels(plan, lambda k: _kernel(plan, k, every=False))


def _kernel(plan: P.Plan, k: K.Kernel, every: bool) -> K.Kernel:
    if not any(isinstance(s, K.For) and (every or s.double_buffer) and _marks(s.body) for s in K.walk_stmts(k.body)):
        return k
    return _Rewrite(plan, k, every).kernel()


MAX_BARRIERS = 3        # a step's barriers where one fewer pays for a body twice as long


def _marks(body) -> list[int] | None:
    """The positions of the body's barriers where there are two to MAX_BARRIERS, all at its top level."""
    marks = top_barriers(body)
    return marks if marks is not None and len(marks) <= MAX_BARRIERS else None


def _bytes(plan: P.Plan, b: K.Buffer) -> int:
    """The bytes of local memory a buffer of a constant size takes (every copy, the skew's padding)."""
    return STORAGE_BYTES[b.ty] * K.footprint(b, K.copies(b, plan.block_size, plan.warp_size) * b.size.value)


class _Rewrite:
    def __init__(self, plan: P.Plan, k: K.Kernel, every: bool):
        self.plan, self.k, self.every = plan, k, every
        self.names = K.Names(k)
        self.locals = {b.name: b for b in k.locals_}
        classes = K.PointerClasses(k)
        pointed = {classes.find(s.var) for s in K.walk_stmts(k.body) if isinstance(s, K.DeclPtr)}
        self.candidates = {name for name, b in self.locals.items()
                           if b.role == "force" and isinstance(b.size, K.Const) and classes.find(name) not in pointed}
        self.private = {b.name for b in k.privates} | {b.name for b in plan.buffers if b.role == "bounds"}
        self.written = K.all_accesses(k.body)[1]           # what no statement writes orders nothing
        self.room = plan.local_memory
        if all(isinstance(b.size, K.Const) for b in k.locals_):
            self.room -= sum(_bytes(plan, b) for b in k.locals_)
        else:
            self.room = -1                      # host-sized buffers: how much is left is not known here
        self.added: list[K.Buffer] = []

    def kernel(self) -> K.Kernel:
        body = self.block(self.k.body)
        if not self.added:
            return self.k
        return dataclasses.replace(self.k, body=body, locals_=self.k.locals_ + tuple(self.added))

    def block(self, stmts: tuple) -> tuple:
        out = []
        for s in stmts:
            if isinstance(s, K.For) and (new := self.pair(s)) is not None:
                out.extend(new)
                continue
            changes = {name: self.block(getattr(s, name)) for name in ("body", "then", "else_", "head")
                       if isinstance(getattr(s, name, None), tuple)}
            out.append(dataclasses.replace(s, **changes) if changes else s)
        return tuple(out)

    def shared(self, stmts) -> set:
        reads, writes = K.all_accesses(stmts)
        return (reads | writes) - self.private

    def staged(self, loop: K.For) -> set:
        """The candidate buffers the loop's body uses that nothing outside its body touches."""
        return (K.buffers_used(loop.body) & self.candidates) - K.used_outside(self.k.body, loop.body)

    def pair(self, loop: K.For) -> tuple | None:
        """The loop as a loop over pairs of steps and the last step of an odd count, or None where it does not apply."""
        marks = _marks(loop.body)
        if marks is None or loop.once or not K.is_const(loop.step, 1) or not (self.every or loop.double_buffer):
            return None
        if isinstance(loop.start, K.Const) and isinstance(loop.stop, K.Const) and loop.stop.value - loop.start.value < 2:
            return None                         # no pair of steps
        staged = self.staged(loop)
        tail = self.shared(loop.body[marks[-2] + 1:marks[-1]]) & self.written
        if not staged or not tail or not tail <= staged:
            return None
        need = sum(_bytes(self.plan, self.locals[b]) for b in staged)
        if need > self.room:
            return None
        self.room -= need
        second = {}
        for name in sorted(staged):
            b = self.locals[name]
            second[name] = self.names.fresh(name, "db")
            self.added.append(dataclasses.replace(b, name=second[name], origin=f"{b.origin} (the second copy)"))
        var = self.names.fresh(loop.var, "db")
        copies = []
        for n, table in ((0, {}), (1, second)):
            own = self.names.fresh(loop.var, f"db{n}")
            renaming = {name: self.names.fresh(name, f"db{n}") for name in K.defines(loop.body)}
            copies.append(K.Let(own, K.add(K.Var("int", var), K.cint(n))))
            copies.extend(K.rename(loop.body, {**renaming, **table, loop.var: own}))
        odd = K.binop("band", K.sub(loop.stop, loop.start), K.cint(1))
        last = K.select(K.lt(loop.start, loop.stop), K.sub(loop.stop, odd), loop.start)
        return (dataclasses.replace(loop, var=var, stop=K.sub(loop.stop, K.cint(1)), step=K.cint(2), body=tuple(copies),
                                    double_buffer=False),
                dataclasses.replace(loop, start=last, double_buffer=False))


PASS = Pass("double_buffer", "a loop that stages tiles in local memory (a power of forces) takes two steps a "
            "round, the second on a second copy of the tiles, so that the barrier between steps can go "
            "(without --pass: the loops of powerDoubleBuffered)",
            double_buffer, default=False, asked=asked)
