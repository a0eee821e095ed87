"""Simplification of one kernel: constant and copy propagation, common `Let`s, dead `Let`s, constant branches.

`simplify_kernel(k)` substitutes a `Let` bound to a constant, a hardware id
or a name that is never assigned into its uses and drops it, and so does
with a `Let` of a pure expression (no loads, no assigned names) that an
earlier `Let` in scope already computes (common-subexpression elimination
over `Let`s, which `licm` creates); the smart constructors re-fold every
expression that changes (so `active = true` makes `if (active)` vanish).
An `If` on a constant keeps only the branch taken; a `For` whose constant
bounds admit no iteration is dropped; a barrier right after another is
dropped (unrolled part loops leave one before the next force's); a `Let`
nobody reads is dropped (expressions are pure; a bounds check counts as
pure here, but its `Let` stays).  Names are unique in a kernel (the
verifier checks it), so substitution needs no renaming.  Consumes and
produces a `Kernel`; the `simplify` pass runs it on every kernel, and
`privatise` and `vectorize` on the kernels they rewrite.  Not here:
anything that needs ranges (the `strength` pass) or moves code (`licm`).
"""
from __future__ import annotations

import dataclasses

from fcl.codegen.kir.nodes import (Assign, Barrier, Checked, Const, DeclVar, Expr, For, HwId, If, Kernel, Let,
                                   Load, Loop, Var, _child_fields)
from fcl.codegen.kir.walk import map_expr, map_own_exprs, names_read, walk_expr, walk_stmts


def simplify_kernel(k: Kernel) -> Kernel:
    """`k` with copies and constants propagated, common and dead `Let`s gone, and the branches
    and loops that constants decide resolved."""
    assigned = {s.var for s in walk_stmts(k.body) if isinstance(s, (Assign, DeclVar))}
    body = _propagate(k.body, {}, assigned, {})
    for _ in range(4):          # dead Lets can make others dead
        used = names_read(body)
        smaller = _drop_dead(body, used)
        if smaller == body:
            break
        body = smaller
    return dataclasses.replace(k, body=body)


def _copyable(e: Expr, assigned: set) -> bool:
    return isinstance(e, (Const, HwId)) or (isinstance(e, Var) and e.name not in assigned)


def _pure(e: Expr, assigned: set) -> bool:
    """Reads no buffer and no assigned name: its value is the same wherever it is in scope."""
    return not any(isinstance(n, Load) or (isinstance(n, Var) and n.name in assigned) for n in walk_expr(e))


def _propagate(stmts, subst: dict, assigned: set, avail: dict) -> tuple:
    """Substitute copies, and reuse a `Let` of the same pure expression (`avail`: expression
    -> the name bound to it in scope) instead of computing it again."""
    def fe(e: Expr) -> Expr:
        return subst.get(e.name, e) if isinstance(e, Var) else e

    out = []
    for s in stmts:
        if isinstance(s, Loop):           # the condition reads what the head defines
            inner, seen = dict(subst), dict(avail)
            head = _propagate(s.head, inner, assigned, seen)
            cond = map_expr(lambda e: inner.get(e.name, e) if isinstance(e, Var) else e, s.cond)
            out.append(Loop(head, cond, _propagate(s.body, inner, assigned, seen)))
            continue
        s = map_own_exprs(s, fe)
        if isinstance(s, Let) and _copyable(s.expr, assigned):
            subst[s.var] = s.expr
            continue
        if isinstance(s, Let) and _pure(s.expr, assigned):
            if s.expr in avail:
                subst[s.var] = Var(s.expr.ty, avail[s.expr])
                continue
            avail[s.expr] = s.var
        if isinstance(s, If) and isinstance(s.cond, Const):
            out.extend(_propagate(s.then if s.cond.value else s.else_, subst, assigned, avail))
            continue
        if isinstance(s, For) and isinstance(s.start, Const) and isinstance(s.stop, Const) \
                and s.start.value >= s.stop.value:
            continue
        if isinstance(s, Barrier) and out and isinstance(out[-1], Barrier):
            continue        # nothing between them: the first one already synchronises
        names = [n for n, kind in _child_fields(type(s)) if kind == "block"]
        if names:
            s = dataclasses.replace(s, **{n: _propagate(getattr(s, n), dict(subst), assigned, dict(avail))
                                          for n in names})
        out.append(s)
    return tuple(out)


def _drop_dead(stmts, used: set) -> tuple:
    out = []
    for s in stmts:
        if isinstance(s, Let) and s.var not in used \
                and not any(isinstance(n, Checked) for n in walk_expr(s.expr)):
            continue        # (a bounds check whose value is unused still reports its failure)
        names = [n for n, kind in _child_fields(type(s)) if kind == "block"]
        if names:
            s = dataclasses.replace(s, **{n: _drop_dead(getattr(s, n), used) for n in names})
        out.append(s)
    return tuple(out)
