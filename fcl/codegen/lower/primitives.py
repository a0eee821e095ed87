"""The primitives as symbolic functions.

`primitives()`: those whose lowering needs their arguments only; `TYPED`: those that
read the type of their occurrence (`force`, `while`, `power` the element type,
`concat`, `interleave`, `seqConcat` the level); `SPANNED`: those whose applications
report, and place their buffers, at the span of their name.
"""
from __future__ import annotations

from typing import Callable

from fcl.base.errors import CompilerBug
from fcl.base.hw import STORAGE_DTYPES, Level
from fcl.codegen import kir as K
from fcl.codegen.lower.builder import Ctx
from fcl.codegen.lower.claims import Claims
from fcl.codegen.lower.lookback import pack_concat, scan_concat
from fcl.codegen.lower.packing import pack_threads, seq_filter
from fcl.codegen.lower.loops import double_buffered_loop, foldl, power_loop, seq_concat, seqfor, while_loop
from fcl.codegen.lower.scatter import reduce_by_index, scatter
from fcl.codegen.lower.schemes import check_count, fail_unless, force, parts_scheme, push_scheme
from fcl.codegen.lower.values import (SFun, SLevelFun, SPair, SPull, SPush, SScalar, SVal, apply, apply2, as_element,
                                      as_scalar, checked_scalars, checks, scalar_leaves)
from fcl.types import node_types as NT
from fcl.types import terms as T


# the primitives whose applications report, and place their buffers, at the span of their name
SPANNED = frozenset({"force", "while", "push", "concat", "interleave", "placeConcat", "foldl", "power", "powerDoubleBuffered", "seqfor",
                     "seqConcat", "scanConcat", "packConcat", "packThreads", "seqFilter", "generate",
                     "reduceByIndex", "scatter"})


def curried(arity: int, fn: Callable, name: str) -> SVal:
    """`fn(ctx, *args)` as a symbolic function of `arity` arguments, taken one at a time."""
    def make(args):
        if len(args) == arity:
            return None
        return SFun(lambda ctx, x: step(ctx, args + [x]), name)

    def step(ctx, args):
        if len(args) == arity:
            return fn(ctx, *args)
        return make(args)
    return make([])


def primitives() -> dict[str, SVal]:
    """{name: symbolic function} of the primitives whose lowering needs only their arguments."""
    def span(ctx):
        return ctx.b.span

    def generate(ctx, n, f):
        check_count(ctx, n.e, "generate")
        return SPull(n.e, lambda c, i: apply(c, f, SScalar(i)))

    def index(ctx, arr, i):
        return arr.at(ctx, ctx.b.checked_index(i.e, arr.n))

    def map_pull(ctx, f, arr):
        return SPull(arr.n, lambda c, i: apply(c, f, arr.at(c, i)))

    def map_push(ctx, f, arr):
        return SPush(arr.level, arr.n,
                     lambda c, w: arr.run(c, lambda c2, i, v: w(c2, i, as_element(c2, apply(c2, f, v)))),
                     arr.span, arr.bound, arr.most)

    def zip_with_push(ctx, f, a, p):
        """Element i is f a[i] v where p writes v to i < min(lengthPull a, p's length); the
        evaluator computes p's other elements too (and drops them), so their run-time checks
        are made before the test of i."""
        n = K.call("min", (a.n, p.n), "int")

        def run(c, w):
            def write(c2, i, v):
                g = c2.sub()
                whole = isinstance(n, K.Const) and isinstance(p.n, K.Const) and n.value >= p.n.value
                if not whole:
                    c2.make_checks(v)
                w(g, i, as_element(g, apply2(g, f, a.at(g, i), v)))
                if whole:
                    for st in g.stmts:
                        c2.emit(st)
                else:   # (a packConcat's length is known once it has run; it writes only its own)
                    c2.emit(K.If(K.lt(i, n if p.bound is None else a.n), tuple(g.stmts)))
            p.run(c, write)
        return SPush(p.level, n, run, p.span, p.bound)

    def push(ctx, level):
        return SFun(lambda c, arr: push_scheme(level, arr, span(c)), "push")

    prims = {
        "generate": curried(2, generate, "generate"),
        "lengthPull": curried(1, lambda c, a: SScalar(a.n), "lengthPull"),
        "lengthPush": curried(1, length_push, "lengthPush"),
        "index": curried(2, index, "index"),
        "mapPull": curried(2, map_pull, "mapPull"),
        "mapPush": curried(2, map_push, "mapPush"),
        "zipWithPush": curried(3, zip_with_push, "zipWithPush"),
        "push": SLevelFun(push),
        "foldl": curried(3, foldl, "foldl"),
        "reduceByIndex": curried(5, reduce_by_index, "reduceByIndex"),
        "scatter": curried(3, scatter, "scatter"),
        "seqfor": curried(3, seqfor, "seqfor"),
        "seqFilter": curried(2, seq_filter, "seqFilter"),
        "sizeOf": curried(1, size_of, "sizeOf"),
        "fst": curried(1, lambda c, p: component(c, p, True), "fst"),
        "snd": curried(1, lambda c, p: component(c, p, False), "snd"),
    }
    conversions = {"i2d": "double", "d2i": "int", "i2f": "float", "f2i": "int",
                   "f2d": "double", "d2f": "float", "b2i": "int"}
    for name, ty in conversions.items():
        prims[name] = curried(1, lambda c, x, name=name, ty=ty: SScalar(K.call(name, (x.e,), ty)), name)
    for name in ("sqrt", "exp", "log", "sin", "cos", "floor", "abs"):
        prims[name] = curried(1, lambda c, x, name=name: SScalar(K.call(name, (x.e,), x.e.ty)), name)
    for name in ("min", "max"):
        prims[name] = curried(2, lambda c, x, y, name=name: SScalar(K.call(name, (x.e, y.e), x.e.ty)), name)
    prims["floatBits"] = curried(1, lambda c, x: SScalar(K.call("as_int", (x.e,), "int")), "floatBits")
    prims["fma"] = curried(3, lambda c, x, y, z: SScalar(K.call("fma", (x.e, y.e, z.e), x.e.ty)), "fma")
    return prims


def component(ctx: Ctx, p: SPair, first: bool) -> SVal:
    """`fst p` (first) or `snd p`.  The evaluator computed both parts when it made the pair,
    so the dropped part's run-time checks (an `index`, a divisor) are made too: a scalar
    part kept is `d == d ? kept : kept` for each checked scalar d dropped (an expression
    still, which the later passes fold once they prove d's checks cannot fail); another
    part kept makes them where it is taken."""
    kept, dropped = (p.a, p.b) if first else (p.b, p.a)
    if not checks(dropped):
        return kept
    if not isinstance(kept, SScalar):
        ctx.make_checks(dropped)
        return kept
    e = kept.e
    for d in checked_scalars(dropped):
        if not K.checks_covered(d, e):      # (a pair read from one place: the same checks)
            e = K.select(K.binop("eq", d, d), e, e)
    return SScalar(e)


def length_push(ctx: Ctx, arr: SPush) -> SScalar:
    """`lengthPush arr`; a packConcat's length is known once it has run (after a `force`)."""
    if arr.bound is not None:
        raise ctx.limitation("device-length", "the length of a packConcat is known only once it has run: "
                             "force it, then take `lengthPull` of the result")
    return SScalar(arr.n)


def size_of(ctx: Ctx, v: SVal) -> SScalar:
    """`sizeOf v`: a constant, the bytes of v's scalar type in device memory (a pair's: the
    sum of its scalars')."""
    return SScalar(K.cint(sum(STORAGE_DTYPES[x.e.ty].itemsize for x in scalar_leaves(ctx, v, "sizeOf's argument"))))


def concat(ctx, n, parts, level: int):
    """`concat n parts` whose parts the typed core puts at `level` - 1: each part of n elements."""
    span = ctx.b.span
    check_count(ctx, n.e, "concat", "the part length")

    def place(c, p, j, count, v):
        return K.add(K.mul(p, n.e), j), K.Const("bool", True), (), None

    def fits(c, p, m, count, active):
        return fail_unless(c, K.binop("eq", m, n.e), "concat", (p, m, n.e, count), span, active)
    return parts_scheme(level, n.e, parts, place, fits, span)


def interleave(ctx, n, f, parts, level: int):
    """`interleave n f parts`: element j of part p (n elements) at position f (p, j), inside
    the result of n * (the number of parts) elements, each written once (`claims`)."""
    return _placed(ctx, "interleave", n, parts, level,
                   lambda c, p, j, v: as_scalar(c, apply(c, f, SPair(SScalar(p), SScalar(j)))).e)


def place_concat(ctx, n, parts, level: int):
    """`placeConcat n parts`: each element (pos, x) of part p (n elements) puts x at pos, as
    `interleave` places its elements (the same checks: inside the result, each place written
    once, by claims, as the positions come from the data)."""
    return _placed(ctx, "placeConcat", n, parts, level, lambda c, p, j, v: as_scalar(c, v.a).e, lambda v: v.b)


def _placed(ctx, name: str, n, parts, level: int, where, value=None):
    """`interleave` and `placeConcat`: element j (v) of part p at `where(c, p, j, v)`, where
    `value(v)` goes (v where value is None)."""
    span = ctx.b.span
    check_count(ctx, n.e, name, "the part length")
    claims = Claims(ctx, level, n.e, span, name)

    def place(c, p, j, count, v):
        if not isinstance(j, K.Var):
            var = c.b.fresh("j")
            c.emit(K.Let(var, j))
            j = K.Var("int", var)
        mark = len(c.stmts)
        pos, total = where(c, p, j, v), K.mul(n.e, count)
        claims.decide(c, p, j, pos, count, {s.var: s.expr for s in c.stmts[mark:] if isinstance(s, K.Let)})
        pos = c.bind(pos, "pos")
        inside = K.binop("and", K.binop("le", K.cint(0), pos), K.lt(pos, total))
        buf, site = c.b.check_site(f"{name}-position", span)
        return (pos, inside, (K.Fail(buf, site, (p, j, pos, total)),) if site >= 0 else (),
                claims.claim(c, p, pos))

    def fits(c, p, m, count, active):
        fail_unless(c, K.binop("ge", m, n.e), f"{name}-holes", (p, m, n.e), span, active)
        return fail_unless(c, K.binop("le", m, n.e), f"{name}-part", (p, m, n.e), span, active)
    return parts_scheme(level, n.e, parts, place, fits, span, claims, value)


def _elem(fn):
    """A primitive of type ... -> Push l a -> Pull a (`force`, `while`, `power`) at the
    type `t` of its occurrence: told the scalar a; the level l checks the array's."""
    def at(t: T.Type, name: str) -> SVal:
        params = NT.params(t)
        ty = NT.shape(NT.result(t).elem, f"the elements of `{name}`")
        level = NT.depth(params[-1].level, f"the array `{name}` takes")

        def run(ctx, *args):
            if args[-1].level != level:
                raise CompilerBug(f"`{name}` of a {Level(args[-1].level)}-level array typed "
                                  f"{Level(level)}-level")
            return fn(ctx, *args, ty)
        return curried(len(params), run, name)
    return at


def _shaped(fn):
    """A primitive whose result is a push array, at the type `t` of its occurrence: told the
    shape of the result's elements (`packThreads`, which stages them in local memory)."""
    def at(t: T.Type, name: str) -> SVal:
        ty = NT.shape(NT.result(t).elem, f"the elements of `{name}`")
        return curried(len(NT.params(t)), lambda ctx, *args: fn(ctx, *args, ty), name)
    return at


def _parts(fn):
    """`concat`/`interleave` (result Push a (1+l)) and `seqConcat` (result Push a l) at
    the type `t` of its occurrence: told the level of the result."""
    def at(t: T.Type, name: str) -> SVal:
        level = NT.depth(NT.result(t).level, f"the result of `{name}`")
        return curried(len(NT.params(t)), lambda ctx, *args: fn(ctx, *args, level), name)
    return at


# the primitives whose lowering reads the type of their occurrence


TYPED = {"force": _elem(force), "while": _elem(while_loop), "power": _elem(power_loop),
         "powerDoubleBuffered": _elem(double_buffered_loop),
         "concat": _parts(concat), "interleave": _parts(interleave), "placeConcat": _parts(place_concat),
         "seqConcat": _parts(seq_concat),
         "scanConcat": _parts(scan_concat), "packConcat": _parts(pack_concat),
         "packThreads": _shaped(pack_threads)}
