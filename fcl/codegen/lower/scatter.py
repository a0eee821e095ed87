"""Scatters: `scatter dest is vs` (each write claims its place) and the combining
`reduceByIndex bins op ne is vs`.

The evaluator's meaning is the fold of `op` from `ne` over the values of each bin in index
order.  The device combines with atomics, in whatever order the work-items come, so only
operators for which every order gives that fold are compiled: int `+`, `min`, `max`, `&`,
`|`, `^` (recognised by applying `op` to two names: `fn a => fn b => a + b`, `max`...);
another operator is a located refusal.  Two kernels at grid level: the first sets the
bins to `ne`, the second combines every element whose index is inside [0, bins) into its
bin (`atomic_add` ...).  Where the bins fit in local memory and `ne` is the operator's
identity (0 for `+`, the int range's ends for `min` and `max` ...), each work-group
first combines its elements in a local copy of the bins and then adds its copy into the
global one (privatisation: one global atomic per bin and work-group instead of one per
element).  More bins than that (a constant count) are privatised in slices of SLICE_BINS:
work-group g takes slice g % S of the bins and range g / S of the elements, combines the
elements of its range that fall in its slice in local memory, then adds its slice into
the global bins; the S work-groups of a range run side by side, so all but one read it
from the cache, each work-item reading IN_FLIGHT runs of 4 elements (int4s) before it
combines them (65536 bins of 2^26 ints on an H200: 0.325 ms, the hand-written 0.294; one
run at a time 0.34, four 0.35; elements one by one 1.06, eight at a time 0.46; a global
atomic an element 0.85).
"""
from __future__ import annotations

from fcl.base import scalars as S
from fcl.base.hw import Level
from fcl.codegen import kir as K
from fcl.codegen.lower.builder import Ctx, origin_of
from fcl.codegen.lower.claims import claim_place
from fcl.codegen.lower.schemes import (check_level, fail_unless, global_array, host_length, reuse_barrier,
                                      store_writer)
from fcl.codegen.lower.values import SPull, SScalar, SVal, apply2, as_element, as_scalar, scalar_leaves, shape_of

# op name -> the identity `ne` must be for the work-groups' local copies
IDENTITY = {"add": 0, "or": 0, "xor": 0, "and": -1, "min": S.INT_MAX, "max": S.INT_MIN, "fadd": 0.0}
LOCAL_BINS_MAX = 4096       # privatised bins: 16 KiB of local memory
# work-groups of a privatised reduceByIndex (fewer where #NumGroups or the elements are
# fewer): each merges its copy into the global bins with an atomic a bin, and past about
# a GPU's resident work-groups more only add merges (256 bins of 2^26 ints on an H200:
# 0.109 ms at 4096 work-groups, 0.084 at 1024, the hand-written kernel's 0.082)
LOCAL_BIN_GROUPS = 1024
SLICE_BINS = 8192           # a slice of bins: 32 KiB of 4-byte bins, the local memory every OpenCL device has
# work-groups of a sliced reduceByIndex, all slices and ranges together: about as many as a
# GPU runs at once with 32 KiB each (6 a compute unit of a 132-unit H100/H200), so that the
# work-groups of a range read it together; fewer where the elements are fewer
SLICE_GROUPS = 792
IN_FLIGHT = 2               # runs of 4 elements a work-item of a sliced reduceByIndex reads at once


def scatter(ctx: Ctx, dest: SPull, idx: SPull, vals: SPull) -> SPull:
    """`scatter dest is vs`: dest copied (one kernel), then each value whose index is inside
    it written there (the next), each write first claiming its place with an atomic exchange
    of (element + 1) in a claims buffer the host zeroes: a place claimed before is the
    evaluator's error and is not written again."""
    b = ctx.b
    _at_kernel_top(ctx, "scatter", "writes")
    fail_unless(ctx, K.binop("eq", idx.n, vals.n), "scatter-lengths", (idx.n, vals.n), b.span)
    n = host_length(ctx, dest.n, "the result of this scatter")
    copy = ctx.sub(Level.THREAD)
    i = b.fresh("i")
    elem = as_element(copy, dest.at(copy, K.Var("int", i)))
    leaves = scalar_leaves(copy, elem)
    recs = [b.buffer("global", n, origin_of(b.span, "scatter"), "scatter", ty=x.e.ty) for x in leaves]
    write = store_writer(recs, K.cint(0))
    write(copy, K.Var("int", i), elem)
    ctx.emit(K.ParFor(Level.GRID, i, n, tuple(copy.stmts)))
    b.split_kernel()
    claims = b.buffer("global", n, origin_of(b.span, "claims of the scatter"), "claims", prefix="claims", ty="int")
    body = ctx.sub(Level.THREAD)
    var = b.fresh("i")
    j = K.Var("int", var)
    k = body.bind(as_scalar(body, idx.at(body, j)).e, "at")
    v = as_element(body, vals.at(body, j))
    take, free, failed = claim_place(b, claims.name, k, k, j, "scatter-twice", b.span)
    inside = K.binop("and", K.binop("le", K.cint(0), k), K.lt(k, n))
    stores = body.sub()
    write(stores, k, v)
    body.emit(K.If(inside, (take, K.If(free, tuple(stores.stmts), failed))))
    ctx.emit(K.ParFor(Level.GRID, var, K.call("min", (idx.n, vals.n), "int"), tuple(body.stmts)))
    b.split_kernel()
    return global_array(recs, n, shape_of(elem))


def atomic_op(ctx: Ctx, op: SVal, ty: str) -> str:
    """The atomic operation that `op` is, or a located refusal."""
    probe = Ctx(ctx.b.probe(keep_checks=False), ctx.level, [])
    a, b = K.Var(ty, "%a"), K.Var(ty, "%b")
    r = as_scalar(probe, apply2(probe, op, SScalar(a), SScalar(b))).e
    if ty == "int" and not probe.stmts:
        if isinstance(r, K.Bin) and {r.a, r.b} == {a, b}:
            name = {K.Op.ADD: "add", K.Op.BAND: "and", K.Op.BOR: "or", K.Op.BXOR: "xor"}.get(r.op)
            if name:
                return name
        if isinstance(r, K.Call) and r.fn in ("min", "max") and set(r.args) == {a, b}:
            return r.fn
    if ty == "float" and not probe.stmts and isinstance(r, K.Bin) and r.op == K.Op.ADD and {r.a, r.b} == {a, b}:
        return "fadd"
    raise ctx.limitation("combining-operator",
                         f"reduceByIndex combines {ty}s with this operator, which the device has no "
                         f"atomic operation for; the compiled program combines ints with +, min, max, "
                         f"&, | or ^ and floats with + (written as `fn a => fn b => a + b`, `max`...), "
                         f"in any order",
                         ["a fold whose result depends on the order of the elements is the "
                          "evaluator's only: write it with foldl over a sort, or per bin"])


def reduce_by_index(ctx: Ctx, bins: SScalar, op: SVal, ne: SScalar, idx: SPull, vals: SPull) -> SPull:
    b = ctx.b
    _at_kernel_top(ctx, "reduceByIndex", "combines")
    if not isinstance(ne, SScalar):
        raise ctx.limitation("combining-operator",
                             "reduceByIndex combines pairs here, which the device has no atomic "
                             "operation for; the compiled program combines ints and floats",
                             ["combine each component with a reduceByIndex of its own"])
    ty = ne.e.ty
    name = atomic_op(ctx, op, ty)
    fail_unless(ctx, K.binop("ge", bins.e, K.cint(0)), "reduceByIndex-bins", (bins.e,), b.span)
    n = K.call("max", (K.cint(0), bins.e), "int")      # (no bins where the check fails)
    fail_unless(ctx, K.binop("eq", idx.n, vals.n), "reduceByIndex-lengths", (idx.n, vals.n), b.span)
    n = host_length(ctx, n, "the bins of this reduceByIndex")
    rec = b.buffer("global", n, origin_of(b.span, "reduceByIndex"), "bins", ty=ty)
    i = b.fresh("bin")
    ctx.emit(K.ParFor(Level.GRID, i, n, (K.Store(rec.name, K.Var("int", i), ne.e),)))
    b.split_kernel()
    private = isinstance(n, K.Const) and K.is_const(ne.e, IDENTITY[name])
    if private and n.value > LOCAL_BINS_MAX:
        _sliced(ctx, rec, n.value, name, ne, idx, vals)
    else:
        _combined(ctx, rec, n, name, ne, idx, vals, private)
    b.split_kernel()
    return global_array([rec], n, ty)


def _combined(ctx: Ctx, rec, n: K.Expr, name: str, ne: SScalar, idx: SPull, vals: SPull, local: bool):
    """The combining kernel of a reduceByIndex: every element's value into its bin with an
    atomic, first into the work-group's local copy of the bins where `local` (the module's doc)."""
    b, ty = ctx.b, ne.e.ty
    target = rec.name
    if local:
        # each work-group adds its copy into the global bins: at most LOCAL_BIN_GROUPS of
        # them (a grid-stride loop), not a work-group for every #BlockSize elements
        copy = b.buffer("local", n, origin_of(b.span, "reduceByIndex (a work-group's bins)"), "bins", ty=ty)
        j = b.fresh("bin")
        ctx.emit(K.ParFor(Level.BLOCK, j, n, (K.Store(copy.name, K.Var("int", j), ne.e),)))
        ctx.emit(K.Barrier("reduceByIndex: a work-group's bins set"))
        target = copy.name
    body = ctx.sub(Level.THREAD)
    var = b.fresh("i")
    k = as_scalar(body, idx.at(body, K.Var("int", var))).e
    v = as_scalar(body, vals.at(body, K.Var("int", var))).e
    k = body.bind(k, "bin")
    inside = K.binop("and", K.binop("le", K.cint(0), k), K.lt(k, n))
    body.emit(K.If(inside, (K.Atomic(name, target, k, v),)))
    count = K.call("min", (idx.n, vals.n), "int")
    ctx.emit(K.ParFor(Level.GRID, var, count, tuple(body.stmts), LOCAL_BIN_GROUPS if local else None))
    if local:
        ctx.emit(K.Barrier("reduceByIndex: a work-group's elements combined"))
        j = b.fresh("bin")
        ctx.emit(K.ParFor(Level.BLOCK, j, n, (K.Atomic(name, rec.name, K.Var("int", j),
                                                         K.Load(ty, copy.name, K.Var("int", j))),)))


def _sliced(ctx: Ctx, rec, bins: int, name: str, ne: SScalar, idx: SPull, vals: SPull):
    """The combining kernel of a reduceByIndex whose bins are privatised in slices: a grid
    part a (slice, range of elements) pair (the module's doc)."""
    b, ty = ctx.b, ne.e.ty
    slices = -(-bins // SLICE_BINS)
    count = K.call("min", (idx.n, vals.n), "int")
    chunk = 4 * b.hw["#BlockSize"]                                     # elements a range at least
    ranges = K.call("max", (K.cint(1), K.call("min", (K.cint(max(1, SLICE_GROUPS // slices)),
                                                      K.div(K.add(count, K.cint(chunk - 1)), K.cint(chunk))), "int")),
                    "int")
    whole = K.div(count, K.cint(4))                                     # runs of 4 elements
    per = K.div(K.add(whole, K.sub(ranges, K.cint(1))), ranges)          # runs of a range
    copy = b.buffer("local", K.cint(SLICE_BINS), origin_of(b.span, "reduceByIndex (a work-group's slice of the bins)"),
                    "bins", ty=ty)
    var, active = b.fresh("part"), b.fresh("active")
    p = K.Var("int", var)
    part = ctx.sub(Level.BLOCK)
    first = part.bind(K.mul(K.binop("mod", p, K.cint(slices)), K.cint(SLICE_BINS)), "slice")
    rng = part.bind(K.div(p, K.cint(slices)), "range")
    lo = part.bind(K.mul(rng, per), "lo")
    width = part.bind(K.call("min", (K.cint(SLICE_BINS), K.sub(K.cint(bins), first)), "int"), "width")
    j = b.fresh("bin")
    part.emit(K.ParFor(Level.BLOCK, j, K.cint(SLICE_BINS), (K.Store(copy.name, K.Var("int", j), ne.e),)))
    part.emit(K.Barrier("reduceByIndex: a work-group's slice of the bins set"))

    def key(c: Ctx, at: K.Expr) -> K.Expr:
        return c.bind(K.sub(as_scalar(c, idx.at(c, at)).e, first), "bin")

    def combine(c: Ctx, at: K.Expr, k: K.Expr, counted: K.Expr | None):
        """Element `at` of bin k (less the slice's first) into the slice where k is in it (and
        `counted` holds)."""
        add = c.sub()
        v = as_scalar(add, vals.at(add, at)).e
        add.emit(K.Atomic(name, copy.name, k, v))
        test = K.binop("and", K.binop("le", K.cint(0), k), K.lt(k, width))
        c.emit(K.If(test if counted is None else K.binop("and", counted, test), tuple(add.stmts)))

    # IN_FLIGHT runs of 4 a work-item at a time, all read before any is combined (int4
    # loads: the vectorize pass), each coalesced: run e of each of the range's IN_FLIGHT
    # pieces; past the range's last run, the last one is read again and not counted; then
    # the last count % 4 elements (range 0)
    last = part.bind(K.sub(K.call("min", (K.add(lo, per), whole), "int"), K.cint(1)), "last")
    step = part.bind(K.div(K.add(per, K.cint(IN_FLIGHT - 1)), K.cint(IN_FLIGHT)), "step")
    body = part.sub(Level.THREAD)
    e = b.fresh("e")
    runs = []
    for u in range(IN_FLIGHT):
        q = body.bind(K.add(K.add(lo, K.mul(K.cint(u), step)), K.Var("int", e)), "run")
        at = body.bind(K.mul(K.cint(4), K.call("min", (q, last), "int")), "at")
        runs.append((body.bind(K.binop("le", q, last), "inside"),
                     [(K.add(at, K.cint(r)), key(body, K.add(at, K.cint(r)))) for r in range(4)]))
    for inside, elements in runs:
        for at, k in elements:
            combine(body, at, k, inside)
    part.emit(K.ParFor(Level.BLOCK, e, step, tuple(body.stmts)))
    rest = part.sub(Level.THREAD)
    t = b.fresh("t")
    at = K.add(K.mul(K.cint(4), whole), K.Var("int", t))
    combine(rest, at, key(rest, at), None)
    part.emit(K.If(K.binop("eq", rng, K.cint(0)),
                   (K.ParFor(Level.BLOCK, t, K.sub(count, K.mul(K.cint(4), whole)), tuple(rest.stmts)),)))
    part.emit(K.Barrier("reduceByIndex: a work-group's elements combined"))
    j = b.fresh("bin")
    held = K.Load(ty, copy.name, K.Var("int", j))
    part.emit(K.ParFor(Level.BLOCK, j, width, (K.If(K.binop("ne", held, ne.e), (
        K.Atomic(name, rec.name, K.add(first, K.Var("int", j)), held),)),)))
    reuse_barrier(part, Level.GRID, p, K.mul(ranges, K.cint(slices)))
    ctx.emit(K.PartFor(Level.GRID, var, K.mul(ranges, K.cint(slices)), tuple(part.stmts), active))


def _at_kernel_top(ctx: Ctx, name: str, verb: str):
    """A scatter runs over the whole grid: only at the top level of a kernel."""
    check_level(ctx, Level.GRID, f"run {name}, which {verb} into")
    if not ctx.top:
        raise ctx.limitation("grid-nesting", f"{name} {verb} over the whole grid, so it can stand only at the "
                             "top level of a kernel, not inside a part or per-element work")

