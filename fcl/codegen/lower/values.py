"""The symbolic values the lowering runs a program over, and what all of it does with them.

`SScalar` (a kernel-IR expression), `SPull` (a length and an index function), `SPush` (a
level, a length and an iteration scheme); `SPair`, `SFun`, `SLevelFun` and `SLevel`, which
exist at compile time only; `PolyLet`, a generalised `let`, lowered at each use.  Also
applying a symbolic function (`apply`, `with_span`), a scalar or pair of scalars taken
apart and rebuilt, the zero of a scalar type, and `BINOPS`, the program's binary
operators as kernel-IR operators.  Nothing here emits code.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from fcl.base.errors import CompilerBug, CompilerLimitation, Span
from fcl.base.operators import BY_SPELLING
from fcl.codegen import kir as K
from fcl.syntax import ast as A


class SVal:
    """A value of the program at compile time."""


@dataclass
class SScalar(SVal):
    e: K.Expr


@dataclass
class SPair(SVal):
    a: SVal
    b: SVal


@dataclass
class SPull(SVal):
    n: K.Expr
    at: Callable          # (ctx, index expr) -> SVal
    whole: str = ""       # the global buffer whose first n elements these are, when an entry
                          # may return it as it is (schemes.global_array: a grid-level force, a scatter)


@dataclass
class SPush(SVal):
    level: int
    n: K.Expr
    run: Callable         # (ctx, writer) -> None;  writer: (ctx, index expr, SScalar) -> None
    span: Span | None = None
    bound: K.Expr | None = None   # where n is known only once run (packConcat): at most this many
    most: K.Expr | None = None    # where n is computed (seqFilter's count): a bound on it known sooner
    # a block-level array that can run with its work-items taking elements from -lead, so
    # that a writer whose element 0 lands lead words past a 128-byte line writes whole lines
    # (packThreads's, in a packConcat): (ctx, writer, lead or None) -> None
    aligned: Callable | None = None


@dataclass
class SFun(SVal):
    f: Callable           # (ctx, SVal) -> SVal
    name: str = ""


@dataclass
class SLevelFun(SVal):
    f: Callable           # (ctx, int level) -> SVal


@dataclass
class SLevel(SVal):
    level: int


@dataclass
class PolyLet:
    """The binding of a `let` that the checker generalised: its value is lowered at each
    use, where the use is, under the instance that use needs, as if inlined there.  Such
    values are functions (or empty arrays), so this costs no code; only a function that
    does work before it takes its last argument would do that work once per use."""
    let: A.Let
    env: dict


# the program's binary operators as kernel-IR operators (`&&` and `||` when they decide nothing)
BINOPS = {spelling: op.name for spelling, op in BY_SPELLING.items()}


def with_span(v: SVal, span) -> SVal:
    """A primitive whose applications report (and place buffers at) the span of its name."""
    def at(ctx, f, x):
        with ctx.b.at(span):
            return with_span(f(ctx, x), span)
    if isinstance(v, SFun):
        return SFun(lambda c, x: at(c, v.f, x), v.name)
    if isinstance(v, SLevelFun):
        return SLevelFun(lambda c, lvl: at(c, v.f, lvl))
    return v


def apply(ctx, fn: SVal, arg: SVal) -> SVal:
    """`fn arg`, in `ctx`."""
    if not isinstance(fn, SFun):
        raise CompilerBug(f"application of a non-function {type(fn).__name__}")
    return fn.f(ctx, arg)


def apply2(ctx, fn, a, b):
    """`fn a b`, in `ctx`."""
    return apply(ctx, apply(ctx, fn, a), b)


def as_scalar(ctx, v: SVal) -> SScalar:
    """`v`, which must be a scalar (a condition, a position, an index)."""
    if not isinstance(v, SScalar):
        raise ctx.limitation("element-types", "this value must be a scalar")
    return v


def as_element(ctx, v: SVal) -> SVal:
    """`v`, an element of a push array: a scalar or (nested) pairs of scalars."""
    scalar_leaves(ctx, v, "the elements of a push array")
    return v


# The element type of an array the lowering stores: the name of a scalar type, or a pair
# (a 2-tuple) of such shapes, stored as one buffer per scalar (a structure of arrays).
Shape = str | tuple


def shape_leaves(shape: Shape) -> list[str]:
    """The scalar types of `shape`, in order (one buffer each)."""
    return [shape] if isinstance(shape, str) else shape_leaves(shape[0]) + shape_leaves(shape[1])


def shape_of(v: SVal) -> Shape:
    """The shape of element `v`, a scalar or (nested) pairs of them."""
    return v.e.ty if isinstance(v, SScalar) else (shape_of(v.a), shape_of(v.b))


def build(shape: Shape, leaves) -> SVal:
    """A value of `shape` made of the scalars (SScalar) `leaves` gives, in order."""
    if isinstance(shape, str):
        return next(leaves)
    return SPair(build(shape[0], leaves), build(shape[1], leaves))


def scalar_leaves(ctx, v: SVal, what: str = "a loop's state", span: Span | None = None) -> list[SScalar]:
    """The scalars of `v`, a scalar or nested pairs of them (`what`, at `span`, lives in registers)."""
    if isinstance(v, SScalar):
        return [v]
    if isinstance(v, SPair):
        return scalar_leaves(ctx, v.a, what, span) + scalar_leaves(ctx, v.b, what, span)
    raise CompilerLimitation("element-types", f"{what} must be scalars or pairs of scalars (it lives in registers)",
                       span or ctx.b.span)


def checks(v: SVal) -> bool:
    """A scalar value (or pair of them) holding a run-time check."""
    return bool(checked_scalars(v))


def checked_scalars(v: SVal) -> list[K.Expr]:
    """The scalars of v (nested pairs looked into) holding a run-time check."""
    if isinstance(v, SPair):
        return checked_scalars(v.a) + checked_scalars(v.b)
    return [v.e] if isinstance(v, SScalar) and K.holds_check(v.e) else []
