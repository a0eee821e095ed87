"""The `privatise` pass: the state of a `power` that each work-item keeps to itself lives in registers.

A block-level (or warp-level) `power` with a run-time step count ping-pongs
its state between two local buffers (`lower.loops.power_loop`):

    ptr cur -> A;  ptr nxt -> B
    for it = .. { ... cur[r] ... ; nxt[w1] := v1; ...; barrier; swap cur nxt }
    ... cur[..] (the result, read in any distribution)

Where, in every step, every work-item reads `cur` only at indexes it also
writes `nxt` at in that step, no work-item ever sees another's state between
steps, and the state can stay in each work-item's registers: `var s1 =
cur[w1]` before the loop, reads of `cur[w1]` become `s1`, the store
`nxt[w1] := v1` becomes `let t1 = v1` and `s1 := t1` at the end of the
step, and after the loop the registers go back to `cur[w1]` (then a
barrier) for whatever reads the result.  The swap goes, so `cur` stays on
A (its accesses become A's own) and B is no longer used.  This is the
shape of the prelude's `perThread` inside a block-level `power`
(examples/matmul.fcl's matmulReg: a work-item's 4 x 4 tile of C between
K-tiles): 32 local accesses a step fewer, and half the local memory.

Exactness.  Indexes are compared as linear forms over names that are never
reassigned (through pure `Let`s: analysis/linear.py, under a common `skew`):
equal forms are equal values.  Every store to `nxt` is a statement of the
loop body itself (it runs in every step), at an index that is the same for
every step (its terms are defined before the loop and read no memory), no
two at the same index; every read of `cur` in the body is at one of these
indexes; nothing else in the body touches the two pointers, and nothing after
the loop touches `nxt`.  A work-item's stores in one step land where only it
reads in the next, unless two work-items store the same element of one
step, which is already a race in the unprivatised kernel.  The body ends in
a barrier at its top level, so every work-item of the group runs the loop
alike and the barrier added after it is reached by all.  The loads before
and the stores after the loop run only when the loop runs at least once.

Runs after `unroll` and `simplify` (a work-item's stores are then straight-line) and
before `share_local`.  Not here: private (thread-level) state, vector
accesses, more than MAX_SLOTS elements a work-item.
"""
from __future__ import annotations

import dataclasses

from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.analysis.linear import KernelFacts
from fcl.codegen.passes.base import Pass, replace_kernels

MAX_SLOTS = 96         # state elements a work-item keeps in registers (matmulPrefetch: 64 results and 20 or 32 loads)


def privatise(plan: P.Plan) -> P.Plan:
    return replace_kernels(plan, lambda k: _kernel(plan, k))


def _kernel(plan: P.Plan, k: K.Kernel) -> K.Kernel:
    if not any(isinstance(s, K.SwapPtr) for s in K.walk_stmts(k.body)):
        return k
    rewrite = _Rewrite(KernelFacts(k), K.Names(k), plan.block_size)
    body = rewrite.block(k.body)
    if body == k.body:
        return k
    body = K.rename(body, rewrite.aliases)      # the pointer no longer moves: its buffer itself
    # the copies of registers that replaced the reads go, and so do the buffers no longer used
    return K.simplify_kernel(K.without_unused_locals(dataclasses.replace(k, body=body)))


class _Rewrite:
    def __init__(self, facts: KernelFacts, names: K.Names, block_size: int):
        self.facts = facts
        self.names = names
        self.block_size = block_size
        self.aliases: dict[str, str] = {}     # pointer -> the buffer it stays on
        self.uses = _uses(facts.k.body)       # buffer -> the statements of the kernel that use it

    def block(self, stmts) -> tuple:
        out = []
        rest = list(stmts)
        while rest:
            s = rest.pop(0)
            bodies = {name: self.block(getattr(s, name)) for name, kind in K._child_fields(type(s))
                      if kind == "block"}
            s = dataclasses.replace(s, **bodies) if bodies else s
            private = self.loop(s, out, tuple(rest)) if isinstance(s, K.For) else None
            if private is None:
                out.append(s)
            else:
                out.extend(private[0])
                rest = list(private[1])
        return tuple(out)

    def loop(self, loop: K.For, before: list, after: tuple) -> tuple | None:
        """(the statements that replace `loop`, those that replace `after`, the rest of its
        block) when its state can be private (`before`, the statements of the block so far,
        loses the `nxt` pointer), else None."""
        if not (loop.body and isinstance(loop.body[-1], K.SwapPtr)):
            return None
        cur, nxt = loop.body[-1].a, loop.body[-1].b
        ptrs = {s.var: s for s in before if isinstance(s, K.DeclPtr)}
        if not (cur in ptrs and nxt in ptrs and ptrs[cur].space == "local"
                and any(isinstance(s, K.Barrier) for s in loop.body)
                and nxt not in K.buffers_used(after)
                and nxt not in K.buffers_used([s for s in before if s is not ptrs[nxt]])):
            return None
        ty = ptrs[cur].ty
        here = _uses((*before, loop, *after))
        varying = K.defined_in(loop.body) | {loop.var} | self.facts.assigned
        slots: dict = {}        # slot key -> (register, its new value's name)
        body = []
        for s in self.straight(loop.body[:-1], nxt):
            if isinstance(s, K.Store) and s.buf == nxt:
                key = self.key(s.index, varying)
                if key is None or key in slots or len(slots) == MAX_SLOTS:
                    return None
                slots[key] = (self.names.fresh(nxt, "s"), self.names.fresh(nxt, "v"))
                s = K.Let(slots[key][1], s.value)
            body.append(s)
        body = self.reads(tuple(body), cur, nxt, ty, {key: reg for key, (reg, _) in slots.items()}, varying)
        if not slots or body is None:
            return None
        before.remove(ptrs[nxt])
        before.remove(ptrs[cur])
        self.aliases[cur] = ptrs[cur].init
        body += tuple(K.Assign(reg, K.Var(ty, new)) for reg, new in slots.values())
        whole = self.whole(ptrs[cur].init, cur, nxt, before, after, slots, ty, here)
        if whole is not None:
            decls, after = whole
            return (*decls, dataclasses.replace(loop, body=body)), after
        runs = K.lt(loop.start, loop.stop)
        zero = K.zero(ty)
        loads = tuple(K.DeclVar(reg, K.select(runs, K.Load(ty, cur, _index(key)), zero))
                      for key, (reg, _) in slots.items())
        stores = tuple(K.Store(cur, _index(key), K.Var(ty, reg)) for key, (reg, _) in slots.items())
        back = K.If(runs, stores + (K.Barrier("the power's state from registers to local memory"),))
        return (*loads, dataclasses.replace(loop, body=body), back), after

    def whole(self, buf: str, cur: str, nxt: str, before: list, after: tuple, slots: dict, ty: str,
              here: dict):
        """(the registers' declarations, `after` reading them) where the state need not be in
        local memory at all, else None: the initial state is one value written to every
        element of `buf` by the work-group's strided loop (a block-level generate's `for i =
        lid; i < size; i += #BlockSize`), nothing but the loop's block uses `buf` (`here`
        counts its statements that do), and everything after the loop reads the state at a
        work-item's own slots only (perThread's reading of the result, its loops of at most
        MAX_SLOTS elements made straight-line).  The registers then start at that value, and
        the state never goes back to local memory: a power whose state is larger than local
        memory (a 128 x 128 tile of a matrix product) fits."""
        inits = [s for s in before if buf in K.buffers_used([s])]
        size = next((b.size for b in self.facts.k.locals_ if b.name == buf), None)
        if len(inits) != 1 or size is None or self.uses.get(buf) != here.get(buf):
            return None
        value = self.fill_value(inits[0], buf, size, {skewed for skewed, _, _ in slots})
        if value is None:
            return None
        registers = {key: reg for key, (reg, _) in slots.items()}
        unknown = []

        def load(e):
            if isinstance(e, K.Load) and e.buf == cur:
                key = self.key(e.index, self.facts.assigned)
                if key in registers:
                    return K.Var(ty, registers[key])
                unknown.append(e)
            return e

        out = K.map_stmts(lambda s: s, load, tuple(self.straight(after, cur)), lambda e: cur in e.buffers_read)
        if unknown or {cur, nxt, buf} & K.buffers_used(out):
            return None
        before.remove(inits[0])
        return tuple(K.DeclVar(reg, value) for reg, _ in slots.values()), out

    def straight(self, stmts, nxt: str) -> list:
        """`stmts` with each loop of a constant count of at most MAX_SLOTS that uses `nxt`
        (a work-item's run of state elements: perThread's `generate s` beyond `unroll`'s
        limits) as straight-line copies, so its accesses have indexes of their own."""
        out = []
        for s in stmts:
            trips = _trips(s) if isinstance(s, K.For) and nxt in K.buffers_used(s.body) else None
            if trips is None or trips > MAX_SLOTS:
                out.append(s)
                continue
            straight = K.straight_copies(s, trips, trips, self.names, "p")
            # the copies' lets, for the linear forms of their indexes
            self.facts.lets.update((x.var, x.expr) for x in straight if isinstance(x, K.Let))
            out.extend(straight)
        return out

    def fill_value(self, s: K.Stmt, buf: str, size: K.Expr, skews: set) -> K.Expr | None:
        """The value `s` writes to every element of `buf` (of `size` elements), where `s` is
        `for i = lid; i < size; i += #BlockSize` storing one pure value that does not depend
        on i at index i (skewed or not, as the slots are), else None."""
        if not (isinstance(s, K.For) and isinstance(s.start, K.HwId) and s.start.name == K.Hw.LID
                and K.is_const(s.step, self.block_size) and s.stop == size and len(s.body) == 1
                and isinstance(s.body[0], K.Store) and s.body[0].buf == buf and len(skews) == 1):
            return None
        at, value = K.Var("int", s.var), s.body[0].value
        index = K.Call("int", "skew", (at,)) if True in skews else at
        if s.body[0].index != index or not self.facts.pure(value) or s.var in value.names:
            return None
        return value

    def key(self, index: K.Expr, varying: set):
        """The slot an index names: (skewed?, its linear form), when its terms are the same in
        every step of the loop (defined before it, reading no memory)."""
        skewed, terms, const = self.facts.place(index)
        if any(t.buffers_read or t.names & varying for t in terms):
            return None
        return skewed, frozenset((t, c % 2 ** 32) for t, c in terms.items() if c % 2 ** 32), const % 2 ** 32

    def reads(self, body: tuple, cur: str, nxt: str, ty: str, registers: dict, varying: set):
        """`body` with its reads of `cur` as registers, or None where it reads another element
        or touches the pointers otherwise."""
        unknown = []

        def load(e):
            if isinstance(e, K.Load) and e.buf == cur:
                key = self.key(e.index, varying)
                if key not in registers:
                    unknown.append(e)
                    return e
                return K.Var(ty, registers[key])
            return e

        out = K.map_stmts(lambda s: s, load, body, lambda e: cur in e.buffers_read)
        if unknown or {cur, nxt} & K.buffers_used(out):
            return None
        return out


def _uses(stmts) -> dict[str, int]:
    """How many statements of `stmts` (nested ones included) use each buffer or pointer."""
    count: dict[str, int] = {}
    for s in K.walk_stmts(stmts):
        reads, writes = K.accesses(s)
        for name in reads | writes:
            count[name] = count.get(name, 0) + 1
    return count


def _trips(loop: K.For) -> int | None:
    if all(isinstance(x, K.Const) for x in (loop.start, loop.stop, loop.step)) and loop.step.value >= 1:
        return max(0, -(-(loop.stop.value - loop.start.value) // loop.step.value))
    return None


def _index(key) -> K.Expr:
    """An index expression of a slot key (the terms in a fixed order)."""
    skewed, terms, const = key
    e = K.cint(const)
    for t, c in sorted(terms, key=lambda tc: K.format_expr(tc[0])):
        e = K.add(e, K.mul(K.cint(c), t))
    return K.Call("int", "skew", (e,)) if skewed else e


PASS = Pass("privatise", "a block-level power's state in registers where each work-item reads only the elements "
                         "it writes (then back to local memory once, after the loop)", privatise)
