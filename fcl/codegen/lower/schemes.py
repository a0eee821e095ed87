"""Iteration schemes and memory: how a push array's elements are shared out, and where
a forced array lives.

`push_scheme` (`push <level>`: the elements over the work-items of one unit, in rounds
that every work-item runs when the per-element work forces arrays together) and
`parts_scheme` (`concat`, `interleave`: a part per sub-unit); `placement` (registers,
local or global memory, by level), `store_writer` and `reader`; `force`, and
`collective_force` inside per-element work; the checks and barriers they need
(`check_level`, `fail_unless`, `reuse_barrier`, `sync`).
"""
from __future__ import annotations

from typing import Callable

from fcl.base.errors import CompilerBug
from fcl.base.hw import Level
from fcl.base.scalars import INT_MAX
from fcl.codegen import kir as K
from fcl.codegen.analysis.ranges import Ranges
from fcl.codegen.lower.builder import Ctx, ElemLoop, origin_of
from fcl.codegen.lower.sizewords import host_length_error
from fcl.codegen.lower.values import SPull, SPush, SScalar, Shape, as_element, build, scalar_leaves, shape_leaves


PRIVATE_MAX = 64          # thread-level forces up to this many elements live in registers


def check_level(ctx: Ctx, level: int, what: str):
    """A `level`-level array may be computed (`what`) only by code a unit of that level or larger runs."""
    if ctx.level < level:
        raise ctx.limitation(
            "grid-nesting" if level == Level.GRID else "force-placement",
            f"cannot {what} a {Level(level)}-level array here: this code runs in one "
            f"{Level(ctx.level)}",
            [f"a {Level(level)}-level computation must be started from code that a whole "
             f"{Level(level)} (or a larger unit) runs; move it out of the per-element function",
             "a block- or warp-level `force` may stand in the per-element work of a block-level "
             "`push` (the block computes it together); to stage tiles in a loop, step over them "
             "with a block-level `power` (examples/matmul.fcl)"])


def push_scheme(level: int, arr: SPull, span) -> SPush:
    """`push <level> arr`: elements shared out over the work-items of one unit of `level`.
    When an element's work forces a block- or warp-level array (all work-items of the
    block compute it together), every work-item runs the same number of rounds:
    round r gives work-item t element r * #BlockSize + t (clamped to the last element,
    whose work is then done again but not written), so the barriers line up."""
    def run(ctx: Ctx, w):
        check_level(ctx, level, "compute")
        body = ctx.sub(Level.THREAD)
        var = ctx.b.fresh("i")
        i = K.Var("int", var)
        if level == Level.BLOCK:
            body.elem = ElemLoop(level, var, {var})
            body.guards = ()
        v = as_element(ctx, arr.at(body, i))
        writes = body.sub()
        w(writes, i, v)
        if body.elem is None or not body.elem.collective:
            for st in writes.stmts:
                body.emit(st)
            ctx.emit(K.ParFor(Level(level), var, arr.n, tuple(body.stmts)))
            return
        if ctx.elem is not None and ctx.elem.reads_varying(arr.n):
            raise ctx.limitation("force-placement", "this block-level array's length differs between the work-items of the block, "
                            "but its elements force block-level arrays, which the whole block computes "
                            "together")
        bs = K.cint(ctx.b.hw["#BlockSize"])
        r, active = ctx.b.fresh("round"), ctx.b.fresh("active")
        idx = K.add(K.mul(K.Var("int", r), bs), K.HwId("int", "lid"))
        rounds = K.div(K.add(arr.n, K.cint(ctx.b.hw["#BlockSize"] - 1)), bs)
        head = (K.Let(var, K.call("min", (idx, K.sub(arr.n, K.cint(1))), "int")),
                K.Let(active, K.lt(idx, arr.n)))
        stmts = head + tuple(body.stmts) + (K.If(K.Var("bool", active), tuple(writes.stmts)),)
        ctx.emit(K.SeqFor(r, rounds, stmts))
    return SPush(level, arr.n, run, span)


def parts_scheme(level: int, n: K.Expr, parts: SPull, place: Callable, fits: Callable, span,
                 claims=None, value: Callable | None = None, lead: Callable | None = None) -> SPush:
    """`concat`/`interleave` at `level`: part p goes to the p-th sub-unit, element j (v)
    of it to position place(ctx, p, j, count, v) (with the condition that it is inside the
    result and the failure to record where it is not, the evaluator's error: such a position
    is never written; and the `claims.Claims` check of a place written twice, or None); what
    goes there is v, or value(v) (placeConcat's (position, value) pairs); where its element 0
    goes lead(ctx, p) words past a 128-byte line, a part that can start its work-items there
    (`SPush.aligned`) does, so that they write whole lines.  A part
    whose length m the operation does not take is the evaluator's error too:
    fits(ctx, p, m, count, active) checks it at the part's top and gives the condition, so
    the part writes nothing then (no element lands outside the result or on another part's)."""
    def run(ctx: Ctx, w):
        check_level(ctx, level, "compute")
        var, active = ctx.b.fresh("part"), ctx.b.fresh("active")
        p = K.Var("int", var)
        body = ctx.sub(level - 1)
        part = parts.at(body, p)
        if not isinstance(part, SPush) or part.level != level - 1:
            raise CompilerBug("concat of parts at the wrong level")
        going = K.binop("and", K.Var("bool", active), fits(body, p, part.n, parts.n, K.Var("bool", active)))

        def inner(c, j, v):
            pos, inside, outside, claim = place(c, p, j, parts.n, v)
            if value is not None:
                v = value(v)

            def write() -> tuple:
                guarded = c.sub()
                w(guarded, pos, v)
                return tuple(guarded.stmts)
            writes = write()
            if claim is not None:       # a place claimed before is not written again
                proven, take, taken, failed = claim
                claimed = take + (K.If(taken, write(), failed),)
                writes = claimed if K.is_const(proven, False) else (K.If(proven, writes, claimed),)
            if not K.is_const(inside, True):
                writes = (K.If(inside, writes, outside),)
            c.emit(K.If(going, writes))
        if lead is not None and part.aligned is not None:
            part.aligned(body, inner, lead(body, p))
        else:
            part.run(body, inner)
        reuse_barrier(body, level, p, parts.n)
        if claims is not None:
            claims.zero(ctx)
        ctx.emit(K.PartFor(Level(level), var, parts.n, tuple(body.stmts), active))
    return SPush(level, K.mul(n, parts.n), run, span)


def check_count(ctx: Ctx, n: K.Expr, primitive: str, what: str = "", span=None):
    """The evaluator's error where count n of `primitive` (its length, or `what`: "the part
    length"...) is negative, reported where the primitive is applied, used or not."""
    kind = f"length:{primitive}:{what}" if what else f"length:{primitive}"
    fail_unless(ctx, K.binop("ge", n, K.cint(0)), kind, (n,), span or ctx.b.span)


def fail_unless(ctx: Ctx, ok: K.Expr, kind: str, values: tuple, span=None, when: K.Expr | None = None) -> K.Expr:
    """`ok`, a condition the evaluator reports as the run-time error `kind` where it is false
    (and `when` holds): emits the failure (the plan's check, recording `values`) there."""
    if (not isinstance(ok, K.Const) or not ok.value) and not ctx.b.dry:    # (a probe's code is dropped)
        buf, site = ctx.b.check_site(kind, span)
        failed = K.unop("not", ok) if when is None else K.binop("and", when, K.unop("not", ok))
        if site >= 0:
            ctx.emit(K.If(failed, (K.Fail(buf, site, tuple(values)),)))
    return ok


def reuse_barrier(body: Ctx, level: int, p: K.Expr, count: K.Expr):
    """A unit that takes another part reuses its local memory: wait for everyone first.
    At grid level the barrier runs only when this work-group has a next part (uniform
    over the group); at block level the warps' loop is uniform, so it always runs, but
    for a constant count of parts no larger than the warps of a group: a warp takes one
    part at most, and nothing is reused (a block-level `interleave` of a part a warp, as
    `perThread`'s: matmulF's staging of its tiles of a, a barrier a K-tile fewer)."""
    if level == Level.WARP:
        return
    hw = body.b.hw
    if level == Level.BLOCK and isinstance(count, K.Const) \
            and count.value <= hw["#BlockSize"] // min(hw["#WarpSize"], hw["#BlockSize"]):
        return
    stmts = body.stmts
    local = any(body.b.bufs.get(n) is not None and body.b.bufs[n].space == "local"
                for n in K.buffers_used(stmts))
    if not (local or K.contains_barrier(stmts)) or _ends_in_barrier(body, stmts):
        return
    barrier = K.Barrier("the next part reuses local memory")
    if level == Level.GRID:
        more = K.binop("lt", K.binop("add", p, K.HwId("int", "num_groups")), count)
        body.emit(K.If(more, (barrier,)))
    else:
        body.emit(barrier)


def _ends_in_barrier(ctx: Ctx, stmts) -> bool:
    """Whether every run of `stmts` ends with a barrier after which nothing but private memory
    is touched (then a unit's next part needs no barrier of its own): the statements after
    their last barrier touch only private memory and hold no barrier, or the last statement is
    a loop of a constant, positive number of steps whose body so ends (the steps of a
    `seqConcat` or `power`).  PoCL's optimising build also ran a block-level part loop wrongly
    where that second barrier stood after such a loop (warpSeqParts in
    tests/programs/fuzz_regressions.fcl)."""
    last = stmts[-1] if stmts else None
    if isinstance(last, K.SeqFor) and K.is_const(last.count) and last.count.value >= 1 \
            and _ends_in_barrier(ctx, last.body):
        return True
    ends = outside_barriers(stmts)
    if ends is None:
        return False
    tail = ends[1]
    reads, writes = K.all_accesses(tail)
    return not K.contains_barrier(tail) and all(
        ctx.b.bufs.get(x) is not None and ctx.b.bufs[x].space == "private" for x in reads | writes)


def outside_barriers(stmts) -> tuple[tuple, tuple] | None:
    """(the statements before the first barrier at the top level of `stmts`, those after
    the last one), or None where there is none."""
    cuts = [k for k, s in enumerate(stmts) if isinstance(s, K.Barrier)]
    return (tuple(stmts[:cuts[0]]), tuple(stmts[cuts[-1] + 1:])) if cuts else None


def host_length(ctx: Ctx, n: K.Expr, what: str, span=None) -> K.Expr:
    """The length `n` of `what` as the host knows it: n itself, or where only the kernels can
    compute it (a count in an array an earlier kernel wrote), a host variable read back
    after a kernel that computes it (`Builder.read_back`); else a located error (at `span`,
    else the current one)."""
    b = ctx.b
    if b.dry or b.host_computable(n):
        return n
    var = b.read_back(n, what)
    if var is None:
        raise host_length_error(ctx, n, what, span)
    return var


def placement(ctx: Ctx, level: int, n: K.Expr, what: str, role: str, ty: str):
    """Allocate memory for a `level`-level array of n elements of scalar type `ty`:
    (buffer, base offset expr)."""
    b = ctx.b
    origin = origin_of(b.span, what)
    n = host_length(ctx, n, f"the array this {what} stores")
    if level == Level.GRID:
        return b.buffer("global", n, origin, role, ty=ty), K.cint(0)
    room = n if isinstance(n, K.Const) or largest(n) is None else K.cint(largest(n))
    if level == Level.BLOCK:
        return b.buffer("local", room, origin, role, ty=ty), K.cint(0)
    if level == Level.WARP:
        rec = b.buffer("local", room, origin, role, per="warp", ty=ty)
        return rec, K.mul(K.HwId("int", "wid"), room)
    if isinstance(room, K.Const) and room.value <= PRIVATE_MAX:
        return b.buffer("private", room, origin, role, ty=ty), K.cint(0)
    rec = b.buffer("local", n, origin, role, per="thread", ty=ty)
    return rec, K.mul(K.HwId("int", "lid"), n)


def largest(e: K.Expr) -> int | None:
    """The largest value e can take where the range analysis bounds it on both sides, at
    least 0 (a prelude's choice of chunk, `if n == 0 then 256 else 8192`, over #BlockSize);
    None otherwise.  A local array of such a length takes room for the largest."""
    iv = Ranges(None).of(e)
    return iv.hi if 0 <= iv.lo and iv.hi < INT_MAX else None


def placements(ctx: Ctx, level: int, n: K.Expr, what: str, role: str, shape: Shape):
    """`placement` for an array of elements of `shape`: one buffer per scalar of it (a
    structure of arrays), all at the same base: ([buffer, ...], base offset expr)."""
    recs, base = [], K.cint(0)
    for ty in shape_leaves(shape):
        rec, base = placement(ctx, level, n, what, role, ty)
        recs.append(rec)
    return recs, base


def store_writer(recs, base: K.Expr):
    """The writer of a push array that stores element i at `base` + i of buffer `recs` (or of
    the buffers `recs`, one per scalar of a pair)."""
    recs = recs if isinstance(recs, list) else [recs]
    for rec in recs:
        if not rec.ty:
            raise CompilerBug(f"buffer {rec.name} ({rec.origin}) has no element type")

    def w(ctx, i, v):
        leaves = scalar_leaves(ctx, v, "the elements of a push array")
        if len(leaves) != len(recs):
            raise CompilerBug(f"{len(recs)} buffers written with {len(leaves)} scalars")
        at = K.add(base, i)
        for rec, leaf in zip(recs, leaves):
            if rec.ty != leaf.e.ty:
                raise CompilerBug(f"buffer {rec.name} of {rec.ty} written with {leaf.e.ty}")
            ctx.emit(K.Store(rec.name, at, leaf.e))
    return w


def global_array(recs, n: K.Expr, shape: Shape) -> SPull:
    """The n elements of `shape` from the start of global buffers `recs` (one per scalar of
    `shape`) that a grid-level force or scatter wrote; one buffer is `whole`: an entry
    returns it as it is, without a copy."""
    result = reader(names_of(recs), K.cint(0), n, shape)
    if len(recs) == 1:
        result.whole = recs[0].name
    return result


def reader(names, base: K.Expr, n: K.Expr, shape: Shape) -> SPull:
    """The pull array of the n elements of `shape` at `base` in buffer (or pointer) `names`
    (a list of them, one per scalar of `shape`, for pairs)."""
    names = names if isinstance(names, list) else [names]
    tys = shape_leaves(shape)
    if len(names) != len(tys):
        raise CompilerBug(f"{len(names)} buffers read as {shape}")
    if len(names) == 1:
        return SPull(n, lambda ctx, i: SScalar(K.Load(tys[0], names[0], K.add(base, i))))

    def at(ctx, i):
        j = K.add(base, i)
        return build(shape, iter(SScalar(K.Load(ty, nm, j)) for nm, ty in zip(names, tys)))
    return SPull(n, at)


def names_of(recs) -> list[str]:
    """The names of buffers `recs`."""
    return [r.name for r in recs]


def sync(ctx: Ctx, level: int, why: str):
    """The barrier after a warp- or block-level array is written (a grid-level one ends the kernel)."""
    if level >= Level.WARP and level <= Level.BLOCK:
        ctx.emit(K.Barrier(why))


def force(ctx: Ctx, arr: SPush, ty: Shape, what: str = "force", role: str = "force") -> SPull:
    """Materialise a push array of `ty` where its level says (registers, local, global); its
    buffers named for `what` (a primitive that stages an array of its own: `packThreads`)."""
    if Level.WARP <= arr.level <= Level.BLOCK and ctx.level < arr.level and ctx.elem is not None:
        return collective_force(ctx, arr, ty)
    check_level(ctx, arr.level, "force")
    if arr.level == Level.GRID and not ctx.top:
        raise ctx.limitation("grid-nesting", "a grid-level array can only be forced at the top level of a kernel, "
                        "not inside a part of a concat or inside per-element work")
    # (an array whose length is known once it has run, a packConcat's: room for the most)
    n = host_length(ctx, arr.n if arr.bound is None else arr.bound, "the array this force stores")
    recs, base = placements(ctx, arr.level, n, what, role, ty)
    arr.run(ctx, store_writer(recs, base))
    if arr.level == Level.GRID:
        ctx.b.split_kernel()
    if arr.bound is not None:
        n = host_length(ctx, arr.n, "the array this force stores")
    sync(ctx, arr.level, recs[0].origin)
    if arr.level == Level.GRID:
        return global_array(recs, n, ty)
    return reader(names_of(recs), base, n, ty)


def collective_force(ctx: Ctx, arr: SPush, ty: Shape) -> SPull:
    """A block- or warp-level force inside the per-element work of a block-level push
    (or a sequential loop in it): the work-items of the block compute the array together,
    between two barriers, in a round that every work-item runs (see `push_scheme`).  The
    array must be the same for every element of the round, and the conditions and loop
    counts on the way to it the same for every work-item."""
    e = ctx.elem
    for g in ctx.guards:
        names = e.reads_varying(g)
        if names:
            raise ctx.limitation("force-placement",
                f"this {Level(arr.level)}-level force runs inside a condition or loop that "
                f"differs between the work-items of the block (it reads {_names(names, e)}), so not "
                "every work-item would reach its barriers",
                ["make the loop count or condition depend only on values every work-item shares "
                 "(arguments, the part index, loop counters of such loops)"])
    recs, base = placements(ctx, arr.level, arr.n, "force", "force", ty)
    rec = recs[0]
    work = Ctx(ctx.b, arr.level, [])
    arr.run(work, store_writer(recs, base))
    names = sorted({n for st in K.walk_stmts(work.stmts) for x in _stmt_exprs(st)
                    for n in e.reads_varying(x, warp_uniform=True)})
    if names or e.reads_varying(arr.n):
        raise ctx.limitation("force-placement",
            f"this {Level(arr.level)}-level force inside per-element work depends on the element "
            f"(it reads {_names(names or e.reads_varying(arr.n), e)}); the whole block computes it "
            "together, so it must be the same for every element",
            ["force only what every element of the block shares (tiles indexed by the part and "
             "by loop counters), or compute the per-element part without a force"])
    e.collective = True
    if not (ctx.stmts and isinstance(ctx.stmts[-1], K.Barrier)):
        ctx.emit(K.Barrier(f"{rec.origin}: reads of the previous round are done"))
    for st in work.stmts:
        ctx.emit(st)
    ctx.emit(K.Barrier(rec.origin))
    return reader(names_of(recs), base, arr.n, ty)


def _names(names, e: ElemLoop | None = None) -> str:
    """How to name varying values in a message: the element index, the work-item's id,
    or values computed from them (the compiler's own names mean nothing to the user)."""
    said = []
    for n in names:
        text = ("the element's index" if e is not None and n == e.var
                else n if " " in n else "values computed from the element")
        if text not in said:
            said.append(text)
    return " and ".join(said)


def _stmt_exprs(st: K.Stmt):
    """The expressions directly in one statement (not in nested statements)."""
    for name in getattr(st, "__dataclass_fields__", {}):
        v = getattr(st, name)
        if isinstance(v, K.Expr):
            yield v
