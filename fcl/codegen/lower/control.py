"""Conditionals in the lowering: an `if` whose condition is known only at run time.

`branch` lowers both alternatives, each into a statement list of its own, and joins their
values (`merge_pure` where neither emitted code); `emit_if` emits the `if`, cut at its
branches' barriers where a warp runs it (`barrier_segments`; elsewhere the `cut_ifs` pass
cuts it); `hoist_decls` moves a branch's declarations before the `if`, so that the joined
value may name them (not where the branches' scalars leave through variables they assign
and no barrier cuts them: there the declarations stay `let`s, which the range analysis
reads).
"""
from __future__ import annotations

from typing import Callable

from fcl.base.errors import CompilerBug, CompilerLimitation, Span
from fcl.base.hw import Level
from fcl.codegen import kir as K
from fcl.codegen.lower.builder import Ctx
from fcl.codegen.lower.values import (SFun, SLevelFun, SPair, SPull, SPush, SScalar, SVal, apply, build,
                                      scalar_leaves, shape_of)


def merge_pure(c: K.Expr, a: SVal, b: SVal, span: Span | None = None) -> SVal:
    """`if c then a else b` for values whose computation emitted no statements (`span`:
    the `if`'s, for an error in the branches of push arrays run later)."""
    if isinstance(a, SScalar) and isinstance(b, SScalar):
        return SScalar(K.select(c, a.e, b.e))
    if isinstance(a, SPair) and isinstance(b, SPair):
        return SPair(merge_pure(c, a.a, b.a, span), merge_pure(c, a.b, b.b, span))
    if isinstance(a, SPull) and isinstance(b, SPull):
        return SPull(K.select(c, a.n, b.n),
                     lambda ctx, i: branch(ctx, c, lambda sc: a.at(sc, i), lambda sc: b.at(sc, i), span))
    if isinstance(a, SPush) and isinstance(b, SPush):
        def run(ctx, w):
            ta, tb = ctx.sub(), ctx.sub()
            a.run(ta, w)
            b.run(tb, w)
            emit_if(ctx, c, tuple(ta.stmts), tuple(tb.stmts), span)
        return SPush(max(a.level, b.level), K.select(c, a.n, b.n), run, a.span)
    if isinstance(a, SFun) and isinstance(b, SFun):
        return SFun(lambda ctx, x: branch(ctx, c, lambda sc: apply(sc, a, x), lambda sc: apply(sc, b, x), span))
    if isinstance(a, SLevelFun) and isinstance(b, SLevelFun):
        return SLevelFun(lambda ctx, l: branch(ctx, c, lambda sc: a.f(sc, l), lambda sc: b.f(sc, l), span))
    raise CompilerBug(f"branches of different shapes: {type(a).__name__} and {type(b).__name__}")


def branch(ctx: Ctx, c: K.Expr, then: Callable, else_: Callable, span: Span | None = None) -> SVal:
    """Evaluate both branches in their own statement lists and join the results."""
    if isinstance(c, K.Const):
        return then(ctx) if c.value else else_(ctx)
    ta, tb = ctx.sub(guard=c), ctx.sub(guard=c)
    a, b = then(ta), else_(tb)
    if not ta.stmts and not tb.stmts:
        return merge_pure(c, a, b, span)
    joined = _same_scalar_shape(a, b) and not ctx.top
    if joined and not (K.contains_barrier(ta.stmts) or K.contains_barrier(tb.stmts)):
        # the results leave through variables assigned in the branches, and no barrier cuts
        # a branch in stretches: its declarations stay in it, `let`s the range analysis
        # reasons with (radixCounts' whole-chunk branch reads its 64 elements unchecked)
        then_stmts, else_stmts = tuple(ta.stmts), tuple(tb.stmts)
    else:
        then_stmts, else_stmts = hoist_decls(ctx, ta.stmts), hoist_decls(ctx, tb.stmts)
    if joined:
        leaves_a, leaves_b = scalar_leaves(ctx, a), scalar_leaves(ctx, b)
        names = [ctx.b.fresh("r") for _ in leaves_a]
        for var, x in zip(names, leaves_a):
            ctx.emit(K.DeclVar(var, K.zero(x.e.ty)))
        then_stmts += tuple(K.Assign(v, x.e) for v, x in zip(names, leaves_a))
        else_stmts += tuple(K.Assign(v, x.e) for v, x in zip(names, leaves_b))
        emit_if(ctx, c, then_stmts, else_stmts, span)
        return build(shape_of(a), iter(SScalar(K.Var(x.e.ty, v)) for v, x in zip(names, leaves_a)))
    c = emit_if(ctx, c, then_stmts, else_stmts, span)
    return merge_pure(c, a, b, span)


def _same_scalar_shape(a: SVal, b: SVal) -> bool:
    """Scalars, or pairs of such, of the same shape (the result of a branch held in variables)."""
    if isinstance(a, SScalar) and isinstance(b, SScalar):
        return a.e.ty == b.e.ty
    if isinstance(a, SPair) and isinstance(b, SPair):
        return _same_scalar_shape(a.a, b.a) and _same_scalar_shape(a.b, b.b)
    return False


def emit_if(ctx: Ctx, c: K.Expr, then_stmts: tuple, else_stmts: tuple, span: Span | None = None) -> K.Expr:
    """`if (c) then else`.  In code a warp runs, c may differ between the warps of a
    block, so a barrier in a branch (a warp-level force) is taken out of the `if`:
    the branches are cut at their barriers and every warp runs each barrier.  Where c
    is the same in the whole block the `if` stays whole here; the `cut_ifs` pass cuts it
    once the passes have made its barriers what they will be (PoCL's optimising build ran
    barriers under a uniform `if` wrongly: after a scanConcat's look-back loop, fuzz seed
    4535; around warp-level forces, seed 32121).
    Returns the condition as the code after the `if` must test it."""
    if not (K.contains_barrier(then_stmts) or K.contains_barrier(else_stmts)) or ctx.level > Level.WARP:
        ctx.emit(K.If(c, then_stmts, else_stmts))
        return c
    segs_a, segs_b = barrier_segments(ctx, then_stmts, span), barrier_segments(ctx, else_stmts, span)
    if not isinstance(c, (K.Var, K.Const)):
        name = ctx.b.fresh("cond")
        ctx.emit(K.Let(name, c))
        c = K.Var(c.ty, name)
    for k in range(max(len(segs_a), len(segs_b))):
        sa = segs_a[k][0] if k < len(segs_a) else ()
        sb = segs_b[k][0] if k < len(segs_b) else ()
        if sa or sb:
            ctx.emit(K.If(c, sa, sb))
        why = next((seg[1] for seg in (segs_a[k:k + 1] + segs_b[k:k + 1]) if seg[1] is not None), None)
        if why is not None:
            ctx.emit(why)
    return c


def barrier_segments(ctx: Ctx, stmts: tuple, span: Span | None = None) -> list:
    """[(statements, the barrier after them or None)]; a barrier nested in a loop or an
    inner `if` of the branch cannot be taken out: a located error."""
    for s in stmts:
        if not isinstance(s, K.Barrier) and K.contains_barrier([s]):
            raise CompilerLimitation("warp-branch", "this `if` runs in each warp and its condition may differ between the warps "
                               "of a block, but a branch synchronises the whole block inside a loop (a "
                               "warp-level while, seqConcat or parts with their own barriers), which some "
                               "warps would never reach", span or ctx.b.span,
                               ["compute both alternatives before the `if` (force them outside it) and let "
                                "the `if` choose between the results"])
    return K.barrier_segments(stmts)


def hoist_decls(ctx: Ctx, stmts: list) -> tuple:
    """A branch's own declarations, moved before the `if` (as assignments inside it),
    so the joined result may refer to them (a foldl's accumulator, a while's length)."""
    decls, kept = K.hoist_decls(stmts)
    for d in decls:
        ctx.emit(d)
    return kept
