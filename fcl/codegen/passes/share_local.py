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
* both have constant sizes, the same element type, copies (`per`) and layout
  (A is sized to the larger).

A `while`'s pointers (`DeclPtr`, `SwapPtr`) count as uses of every buffer
they may point to, so the two buffers of a ping-pong are never merged with
each other.  Not here: buffers of run-time size, private buffers, placing
buffers of different types in one area.
"""
from __future__ import annotations

import dataclasses

from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.passes.unroll import rename


def share_local_memory(plan: P.Plan) -> P.Plan:
    return dataclasses.replace(plan, kernels=tuple(_share(k) for k in plan.kernels))


def _share(k: K.Kernel) -> K.Kernel:
    while True:
        merge = _find_merge(k)
        if merge is None:
            return k
        keep, gone = merge
        k = _rename(k, gone, keep)


def _groups(k: K.Kernel) -> dict[str, frozenset]:
    """name (local buffer or pointer variable) -> the local buffers a use of it may touch."""
    parent: dict[str, str] = {}

    def find(x):
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    def union(a, b):
        parent[find(a)] = find(b)
    for s in K.walk_stmts(k.body):
        if isinstance(s, K.DeclPtr):
            union(s.var, s.init)
        elif isinstance(s, K.SwapPtr):
            union(s.a, s.b)
    locals_ = {b.name for b in k.locals_}
    members: dict[str, set] = {}
    for name in set(parent) | locals_:
        members.setdefault(find(name), set()).update({name} & locals_)
    return {name: frozenset(members[find(name)]) for name in set(parent) | locals_}


def _blocks(stmts, top: bool = True):
    """(statement sequence, repeats) for the kernel body and every body nested in it."""
    yield stmts, not top
    for s in stmts:
        for body in K.stmt_children(s):
            yield from _blocks(body, top=False)


def _find_merge(k: K.Kernel) -> tuple[str, str] | None:
    fixed = {b.name: b for b in k.locals_ if isinstance(b.size, K.Const)}
    if len(fixed) < 2:
        return None
    groups = _groups(k)
    uses = _Uses(groups)
    total = uses.count(k.body)
    for seq, repeats in _blocks(k.body):
        spans: dict[str, list[int]] = {}
        for i, s in enumerate(seq):
            for name in uses.within(s):
                spans.setdefault(name, []).append(i)
        here = uses.count(seq)
        inside = [n for n in spans if n in fixed and here.get(n, 0) == total.get(n, 0) > 0]
        barriers = [i for i, s in enumerate(seq) if isinstance(s, K.Barrier)]
        for a in inside:
            for b in inside:
                if a != b and _compatible(fixed[a], fixed[b], groups) and \
                        _apart(min(spans[a]), max(spans[a]), min(spans[b]), max(spans[b]), barriers, repeats):
                    return a, b
    return None


class _Uses:
    """Per statement (nested ones too), how many statements use each local buffer directly
    (through pointers too); computed once a statement."""

    def __init__(self, groups):
        self.groups = groups
        self.memo: dict[int, dict[str, int]] = {}

    def within(self, s: K.Stmt) -> dict[str, int]:
        got = self.memo.get(id(s))
        if got is None:
            reads, writes = K.accesses(s)
            got = dict.fromkeys({b for n in reads | writes for b in self.groups.get(n, ())}, 1)
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
    return (a.ty, a.per, a.layout) == (b.ty, b.per, b.layout) and b.name not in groups.get(a.name, ())


def _apart(a_first: int, a_last: int, b_first: int, b_last: int, barriers: list[int], repeats: bool) -> bool:
    """A's uses end, a barrier, then B's begin (and, in a repeated body, a barrier after B or
    before A as well)."""
    if not any(a_last < j < b_first for j in barriers):
        return False
    return not repeats or any(j > b_last or j < a_first for j in barriers)


def _rename(k: K.Kernel, gone: str, keep: str) -> K.Kernel:
    """Kernel k with local buffer `gone` stored in `keep` (sized to the larger of the two)."""
    old = {b.name: b for b in k.locals_}
    size = max(old[keep].size.value, old[gone].size.value)
    origins = old[keep].origin.split("; ")
    origin = "; ".join(origins + [o for o in old[gone].origin.split("; ") if o not in origins])
    merged = dataclasses.replace(old[keep], size=K.cint(size), origin=origin)
    locals_ = tuple(merged if b.name == keep else b for b in k.locals_ if b.name != gone)
    return dataclasses.replace(k, locals_=locals_, body=rename(k.body, {gone: keep}))
