"""`seqFilter p xs` and `packThreads m n f`: a work-item's elements of data-dependent number,
and a block-level array of the work-items' parts one after another.

`seqFilter` is a thread-level push array whose length is a count the work-item computes: a
loop over xs that counts the elements p keeps when the array is made (its length), and one
that writes them, one after another, when it runs.

`packThreads m n f` is what a hand-written stream compaction does inside a work-group: work-
item t computes the length of its part f t (at most m), the block scans the n lengths in
local memory (Hillis-Steele, a barrier a step), each work-item writes its part into a local
array from the sum of the lengths before it (room for n * m elements), and the block-level
array the result is reads that array's first `total` elements, so that whatever consumes it
(a `packConcat`'s part: global memory) gets consecutive elements from consecutive work-items.
Its length is the scan's last element, the same in every work-item.
"""
from __future__ import annotations

from fcl.base.hw import Level
from fcl.codegen import kir as K
from fcl.codegen.lower.builder import Ctx, origin_of
from fcl.codegen.lower.schemes import check_count, check_level, fail_unless, force, largest, push_scheme
from fcl.codegen.lower.values import SPull, SPush, SScalar, SVal, Shape, apply, apply2, as_element


def seq_filter(ctx: Ctx, p: SVal, xs: SPull) -> SPush:
    """`seqFilter p xs`: the count of the kept elements now (the length), the writes when run."""
    span = ctx.b.span
    count = ctx.b.fresh("kept")
    ctx.emit(K.DeclVar(count, K.cint(0)))

    def element(c: Ctx, i: K.Expr) -> SVal:
        return c.share(xs.at(c, i))

    def kept(c: Ctx, i: K.Expr):
        x = element(c, i)
        return x, apply2(c, p, SScalar(i), x).e

    # (at most 32 elements: which were kept, a bit each, so that the writes do not test them
    # again; on an H200 a filter of 2^26 ints took 0.138 ms so against 0.155)
    bits = ctx.b.fresh("keep") if isinstance(xs.n, K.Const) and xs.n.value <= 32 else None
    if bits is not None:
        ctx.emit(K.DeclVar(bits, K.cint(0)))
    body = ctx.sub(guard=xs.n)
    i = ctx.b.fresh("i")
    iv = K.Var("int", i)
    _, keep = kept(body, iv)
    counted = (K.Assign(count, K.add(K.Var("int", count), K.cint(1))),)
    if bits is not None:
        counted += (K.Assign(bits, K.binop("bor", K.Var("int", bits), K.binop("shl", K.cint(1), iv))),)
    body.emit(K.If(keep, counted))
    ctx.emit(K.SeqFor(i, xs.n, tuple(body.stmts)))

    def run(c: Ctx, w):
        j = c.b.fresh("at")
        c.emit(K.DeclVar(j, K.cint(0)))
        loop = c.sub(guard=xs.n)
        k = c.b.fresh("i")
        kv = K.Var("int", k)
        if bits is None:
            x, keep = kept(loop, kv)
        else:
            x = element(loop, kv)
            keep = K.binop("ne", K.binop("band", K.binop("shr", K.Var("int", bits), kv), K.cint(1)), K.cint(0))
        write = loop.sub(guard=keep)
        w(write, K.Var("int", j), x)
        write.emit(K.Assign(j, K.add(K.Var("int", j), K.cint(1))))
        loop.emit(K.If(keep, tuple(write.stmts)))
        c.emit(K.SeqFor(k, xs.n, tuple(loop.stmts)))
    return SPush(Level.THREAD, K.Var("int", count), run, span, most=xs.n)


def pack_threads(ctx: Ctx, m: SScalar, count: SScalar, f: SVal, ty: Shape) -> SPush:
    """`packThreads m n f` (see the module's note): work-item t makes part t once, at the
    block's level (not inside a loop over the parts), so that what the part computes before
    its length (a `force` of its elements into registers) is still there when it writes,
    after the scan's barriers.  n must be a constant, at most #BlockSize, and m a constant or
    a choice between constants (`largest`: the room staged for each part)."""
    span = ctx.b.span
    check_count(ctx, m.e, "packThreads", "the part length")
    check_count(ctx, count.e, "packThreads", "the number of parts")
    bs = ctx.b.hw["#BlockSize"]
    room = largest(m.e)
    if room is None or not isinstance(count.e, K.Const):
        raise ctx.limitation("local-size", "packThreads stages its parts in local memory, whose size the "
                             "compiler must know: its part length and number of parts must be constants",
                             ["compute them from constants and #BlockSize (the prelude's packWhere: "
                              "`blockThreads` parts of `c / blockThreads` elements), or choose between "
                              "such constants with `if`"])
    n = count.e.value
    if n > bs:
        raise ctx.limitation("local-size", f"packThreads has a part a work-item: {n} parts, more than the "
                             f"{bs} work-items of a block (#BlockSize)",
                             ["give each part more elements (the part length) and fewer parts"])
    if n == 0:
        return SPush(Level.BLOCK, K.cint(0), lambda c, w: None, span)
    check_level(ctx, Level.BLOCK, "compute")
    lid = K.HwId("int", "lid")
    mine = K.lt(lid, K.cint(n))
    # part t = lid (work-items past the last part make the last one and count nothing)
    body = ctx.sub(Level.THREAD)
    part = apply(body, f, SScalar(lid if n == bs else K.call("min", (lid, K.cint(n - 1)), "int")))
    for st in body.stmts:
        ctx.emit(st)
    length = ctx.bind(part.n if n == bs else K.select(mine, part.n, K.cint(0)), "length")
    # (a part that cannot be longer than m, a seqFilter of at most m elements, needs no check:
    # on an H200 a filter of 2^26 ints took 0.143 ms without it against 0.160)
    known = part.most is not None and K.is_const(K.binop("le", part.most, m.e), True)
    fits = fail_unless(ctx, K.Const("bool", True) if known else K.binop("le", length, m.e), "packThreads",
                       (lid, length, m.e), span)
    # the parts' lengths, then their inclusive scan, in local memory
    origin = origin_of(span, "packThreads")
    lengths = ctx.b.buffer("local", K.cint(n), f"{origin}: the parts' lengths", "temp", ty="int").name
    # (a part too long counts nothing: the run-time error is reported, and no element of the
    # result is read from room it did not write)
    ctx.emit(K.If(mine, (K.Store(lengths, lid, K.select(fits, length, K.cint(0))),)))
    ctx.emit(K.Barrier(f"{origin}: the parts' lengths"))
    incl = SPull(count.e, lambda c, t: SScalar(K.Load("int", lengths, t)))
    d = 1
    while d < n:
        prev, step = incl, d
        incl = force(ctx, push_scheme(Level.BLOCK, SPull(count.e, lambda c, t, prev=prev, step=step: SScalar(
            K.select(K.binop("ge", t, K.cint(step)),
                     K.add(prev.at(c, K.sub(t, K.cint(step))).e, prev.at(c, t).e), prev.at(c, t).e))), span),
                       "int", "packThreads (a step of the scan of the parts' lengths)", "temp")
        d *= 2
    total = ctx.bind(incl.at(ctx, K.cint(n - 1)).e, "total")
    start = ctx.bind(K.sub(K.call("min", (incl.at(ctx, K.call("min", (lid, K.cint(n - 1)), "int")).e, total),
                                  "int"), length), "start")

    def stage(c: Ctx, w):
        writes = c.sub(Level.THREAD, guard=fits)
        part.run(writes, lambda c2, j, v: w(c2, K.add(start, j), v))
        c.emit(K.If(K.binop("and", mine, fits) if n < bs else fits, tuple(writes.stmts)))
    def aligned(c: Ctx, w, lead: K.Expr | None):
        # (staged when the array runs, not when it is made: a packConcat's part gives its
        # length to the look-back first, so the parts after it wait less)
        staged = force(c, SPush(Level.BLOCK, K.cint(room * n), stage, span), ty,
                       "packThreads (the parts, each at its start)", "scattered")
        if lead is None:
            push_scheme(Level.BLOCK, SPull(total, staged.at), span).run(c, w)
            return
        # element j taken by work-item (j + lead) % #BlockSize: lead places of nothing first
        i, j = c.b.fresh("i"), c.b.fresh("j")
        jv = K.Var("int", j)
        body = c.sub(Level.THREAD)
        body.emit(K.Let(j, K.sub(K.Var("int", i), lead)))
        inside = body.sub()
        w(inside, jv, as_element(inside, staged.at(inside, jv)))
        body.emit(K.If(K.binop("ge", jv, K.cint(0)), tuple(inside.stmts)))
        c.emit(K.ParFor(Level.BLOCK, i, K.add(total, lead), tuple(body.stmts)))
    return SPush(Level.BLOCK, total, lambda c, w: aligned(c, w, None), span, aligned=aligned)

