"""The `share_local` pass: local buffers that are never in use at the same time share memory.

The lowering gives every block-, warp- or thread-level `force` (and each
`while`/`power` pair) a local buffer of its own, so a kernel that forces
arrays one after another needs their sum in local memory: a `power` whose
constant step count the lowering unrolls gets new tiles in every step
(examples/matmul.fcl's matmulReg on a 3 x 17 x 66 product needed 50448
bytes, more than the 49152 of an H100 work-group).  Here buffer B takes the
place of buffer A when, in one statement sequence that holds every use of
both:

* B's first use comes after A's last one, with a barrier statement of that
  sequence between them (every work-item has finished with A before any
  touches B);
* where the sequence repeats (any body but the kernel's own: a part loop, a
  loop, a branch inside one), also a barrier after B's last use or before
  A's first one (the next round's A starts after every work-item is done
  with B);
* both have constant sizes, the same element type and copies (`per`) (A is sized to the
  larger, and skewed where either is: each keeps its accesses, which stay inside), and
  not a skewed one with one a vector access reaches (`vectorize`: those stay plain).

Or B is written in place of A (`in_place`): block-level buffers of one layout whose uses
overlap in a stretch of that sequence with no barrier, where each work-item
reads A only at places it then writes in B, and nothing of A after writing
its place in B: a chunk's scan rewrites its elements where they were loaded
(a work-item's run read and its prefixes written, `scanRunsPull`), one tile
of local memory instead of two (the single-pass scan's kernel on an H200,
2^26 ints: 0.266 ms instead of 0.338; 80 registers instead of 102).

A `while`'s pointers (`DeclPtr`, `SwapPtr`) count as uses of every buffer
they may point to, so the two buffers of a ping-pong are never merged with
each other.  Not here: buffers of run-time size, private buffers, placing
buffers of different types in one area.
"""
from __future__ import annotations

import dataclasses

from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.analysis.linear import KernelFacts
from fcl.codegen.passes.base import Pass, replace_kernels


def share_local_memory(plan: P.Plan) -> P.Plan:
    return replace_kernels(plan, _share)


def _share(k: K.Kernel) -> K.Kernel:
    if sum(isinstance(b.size, K.Const) for b in k.locals_) < 2:
        return k
    sharing = _Sharing(k)
    while (merge := sharing.find_merge()) is not None:
        sharing.merge(*merge)
    return sharing.kernel()


class _Sharing:
    """The merges of one kernel, found one at a time as if the kernel were rewritten after
    each (buffer B stored in A: B's uses are A's from then on) but rewritten once at the end:
    `alias` maps a merged-away buffer to the one that stores it, its pointer class joins that
    buffer's, and each statement's own accesses are read once.  Buffers are tried in the
    kernel's order, so the merges do not depend on the order of a set."""

    def __init__(self, k: K.Kernel):
        self.k = k
        self.buffers = {b.name: b for b in k.locals_}          # the current buffers, in order
        self.rank = {name: i for i, name in enumerate(self.buffers)}
        self.alias: dict[str, str] = {}
        self.classes = K.PointerClasses(k)
        self.names: dict[int, frozenset] = {}                   # id(stmt) -> names it uses itself
        for s in K.walk_stmts(k.body):
            reads, writes = K.accesses(s)
            self.names[id(s)] = frozenset(reads | writes)
        # (statement sequence, repeats): every body but the kernel's own may run again
        self.blocks = [(seq, i > 0) for i, seq in enumerate(K.walk_blocks(k.body))]
        # buffers a vector access reaches, which must stay plainly stored (kir.plain_local)
        self._facts = None
        groups = self.groups()          # (a pointer's accesses reach every buffer it may point to)
        self.vectored = {b for s in K.walk_stmts(k.body) if isinstance(s, (K.VLoad, K.VStore))
                         for b in groups.get(s.buf, (s.buf,))}

    def resolve(self, name: str) -> str:
        while name in self.alias:
            name = self.alias[name]
        return name

    def groups(self) -> dict[str, tuple]:
        """name (local buffer or pointer variable) -> the current local buffers a use of it
        may touch, in the kernel's order."""
        find = self.classes.find
        members: dict[str, set] = {}
        for name in self.classes.parent:
            members.setdefault(find(name), set()).update({self.resolve(name)} if name in self.rank else ())
        return {name: tuple(sorted(members[find(name)], key=self.rank.__getitem__)) for name in self.classes.parent}

    def find_merge(self) -> tuple[str, str] | None:
        fixed = {name: b for name, b in self.buffers.items() if isinstance(b.size, K.Const)}
        groups = self.groups()
        uses = _Uses(groups, self.names, self.rank)
        total = uses.count(self.k.body)
        candidates = []
        for seq, repeats in self.blocks:
            spans: dict[str, list[int]] = {}
            for i, s in enumerate(seq):
                for name in uses.within(s):
                    spans.setdefault(name, []).append(i)
            here = uses.count(seq)
            inside = [n for n in spans if n in fixed and here.get(n, 0) == total.get(n, 0) > 0]
            barriers = [i for i, s in enumerate(seq) if isinstance(s, K.Barrier)]
            for a in inside:
                for b in inside:
                    if a != b and _compatible(fixed[a], fixed[b], groups) and self.layouts_keep(a, b):
                        saved = min(fixed[a].size.value, fixed[b].size.value)
                        candidates.append((-saved, len(candidates), a, b, seq, spans, barriers, repeats))
        # the merge that saves the most first: a chunk's tile written in place by its scan
        # before a small buffer takes the scan's place (a single part: no part loop)
        for _, _, a, b, seq, spans, barriers, repeats in sorted(candidates, key=lambda c: c[:2]):
            if (_apart(min(spans[a]), max(spans[a]), min(spans[b]), max(spans[b]), barriers, repeats)
                    or fixed[a].layout == fixed[b].layout
                    and self.in_place(seq, a, b, spans, barriers, repeats, uses, groups)):
                return a, b
        return None

    def layouts_keep(self, a: str, b: str) -> bool:
        """Whether A and B can share one layout: the same, or neither reached by a vector access
        (the shared room is skewed where either is)."""
        return self.buffers[a].layout == self.buffers[b].layout or not {a, b} & self.vectored

    def in_place(self, seq, a: str, b: str, spans, barriers, repeats: bool, uses, groups) -> bool:
        """B may take A's place though their uses overlap: from B's first use to the barrier after
        A's last (none between), A only read and B only written, by statements of their own level
        (lets and stores, not inside a branch or loop), each read of A at a place (a linear form
        of the index, through the kernel's lets) this work-item has not written in B yet and
        writes in B there (so no other work-item writes it: two writes of one place between
        barriers would be a race).  Both block-level; in a repeated body also a barrier after
        B's last use or before A's first (B's last reads end before the next round's A: adding
        one at the end of scanBy's chunk loop instead made its kernel 30% slower on an H200,
        0.34 ms against 0.26 at 2^26, the next chunk's loads no longer overlapping the stores)."""
        if (self.buffers[a].per, self.buffers[b].per) != ("", "") or \
                len(groups.get(a, ())) > 1 or len(groups.get(b, ())) > 1:     # a while's ping-pong
            return False
        lo, hi = min(spans[b]), max(spans[a])
        if not (min(spans[a]) <= lo <= hi <= max(spans[b])) or any(lo <= j <= hi for j in barriers):
            return False
        if repeats and not any(j > max(spans[b]) or j < min(spans[a]) for j in barriers):
            return False
        end = min([j for j in barriers if j > hi] + [len(seq)])     # B's writes until the next barrier
        touching = [s for s in seq[lo:end] if uses.within(s).keys() & {a, b}]
        if len(touching) == 1 and isinstance(touching[0], K.For):
            return self.loop_in_place(touching[0], a, b, uses)
        return _rewrites_own_places(self.facts(), touching, a, b, uses, self.resolve) is not None

    def loop_in_place(self, loop: K.For, a: str, b: str, uses) -> bool:
        """A loop of a work-item's own (no barrier) that rewrites its places in place: each
        round reads A only at places it then writes in B, every place of a round the same
        terms plus c times the counter (c the same, nonzero; the places of a round less than
        c * step apart), so that no round reads what another wrote (a chunk's scan with 32
        elements a work-item, `for k < 32: B[base + k] = f(A[base + k])`)."""
        if K.contains_barrier(loop.body) or not isinstance(loop.step, K.Const) or loop.step.value <= 0:
            return False
        places = _rewrites_own_places(self.facts(), loop.body, a, b, uses, self.resolve)
        if not places:
            return False
        counter = K.Var("int", loop.var)
        forms = [(dict(terms), c) for terms, c in places]
        scale = {terms.pop(counter, 0) for terms, _ in forms}
        rest = {frozenset(terms.items()) for terms, _ in forms}
        offsets = [c for _, c in forms]
        if len(scale) != 1 or len(rest) != 1:
            return False
        c = abs(scale.pop()) * loop.step.value
        return c > 0 and max(offsets) - min(offsets) < c

    def facts(self):
        if self._facts is None:
            self._facts = KernelFacts(self.k)
        return self._facts

    def merge(self, keep: str, gone: str):
        """Buffer `gone` stored in `keep` (sized to the larger of the two)."""
        old = self.buffers
        size = max(old[keep].size.value, old[gone].size.value)
        origins = old[keep].origin.split("; ")
        origin = "; ".join(origins + [o for o in old[gone].origin.split("; ") if o not in origins])
        # (apart, a skewed buffer and a plain one share the skewed room: each access keeps its own
        # indexes, which stay within it)
        layout = old[keep].layout or old[gone].layout
        self.buffers[keep] = dataclasses.replace(old[keep], size=K.cint(size), origin=origin, layout=layout)
        del self.buffers[gone]
        if gone in self.vectored:
            self.vectored.add(keep)
        self.alias[gone] = keep
        self.classes.union(gone, keep)

    def kernel(self) -> K.Kernel:
        if not self.alias:
            return self.k
        table = {gone: self.resolve(gone) for gone in self.alias}
        return dataclasses.replace(self.k, locals_=tuple(self.buffers.values()), body=K.rename(self.k.body, table))


def _rewrites_own_places(facts: KernelFacts, stmts, a: str, b: str, uses, resolve):
    """The places (linear forms) a work-item's straight-line `stmts` read in A and write in B,
    where they only read A at places they then write in B, none after writing it, and do not
    read B or write A (lets and stores only, among the statements that touch either); else
    None.  `resolve`: the buffer a name in the statements now is (earlier merges)."""
    written, read = set(), set()
    for s in stmts:
        if not uses.within(s).keys() & {a, b}:
            continue
        if not isinstance(s, (K.Let, K.Store)):
            return None
        for e in K.stmt_exprs(s):
            for x in K.walk_expr(e):
                if isinstance(x, K.Load) and resolve(x.buf) == b:
                    return None
                if isinstance(x, K.Load) and resolve(x.buf) == a:
                    place = _place(facts, x.index)
                    if place in written:
                        return None
                    read.add(place)
        if isinstance(s, K.Store) and resolve(s.buf) == a:
            return None
        if isinstance(s, K.Store) and resolve(s.buf) == b:
            written.add(_place(facts, s.index))
    return written if read <= written else None


def _place(facts: KernelFacts, index: K.Expr):
    """The place an index of a local buffer names (KernelFacts.place), hashable: (terms, constant)."""
    _, terms, c = facts.place(index)
    return frozenset(terms.items()), c


class _Uses:
    """Per statement (nested ones too), how many statements use each local buffer directly
    (through pointers too), in the kernel's order of buffers; computed once a statement."""

    def __init__(self, groups: dict[str, tuple], names: dict[int, frozenset], rank: dict[str, int]):
        self.groups = groups
        self.names = names
        self.rank = rank
        self.memo: dict[int, dict[str, int]] = {}

    def within(self, s: K.Stmt) -> dict[str, int]:
        got = self.memo.get(id(s))
        if got is None:
            own = {b for n in self.names[id(s)] for b in self.groups.get(n, ())}
            got = dict.fromkeys(sorted(own, key=self.rank.__getitem__), 1)
            for body in K.stmt_children(s):
                for name, c in self.count(body).items():
                    got[name] = got.get(name, 0) + c
            self.memo[id(s)] = got
        return got

    def count(self, stmts) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in stmts:
            for name, c in self.within(s).items():
                out[name] = out.get(name, 0) + c
        return out


def _compatible(a: K.Buffer, b: K.Buffer, groups) -> bool:
    return (a.ty, a.per) == (b.ty, b.per) and b.name not in groups.get(a.name, ())


def _apart(a_first: int, a_last: int, b_first: int, b_last: int, barriers: list[int], repeats: bool) -> bool:
    """A's uses end, a barrier, then B's begin (and, in a repeated body, a barrier after B or
    before A as well)."""
    if not any(a_last < j < b_first for j in barriers):
        return False
    return not repeats or any(j > b_last or j < a_first for j in barriers)


PASS = Pass("share_local", "local buffers never in use at the same time (a barrier between) share memory, or "
            "written in place where each work-item rewrites only its own places",
            share_local_memory)
