"""The `licm` pass: loop-invariant code motion out of `For` loops.

In mapped kernel IR, the virtualisation loop (parts over work-groups), the
strided element loops and sequential loops recompute index arithmetic that
depends only on names defined outside them (tile origins, sizes divided by
the tile).  For each `For`, innermost first, every maximal subexpression of
its body that reads no buffer, no name the body defines or assigns, and is
more than one cheap operation on leaves is computed once into a `Let` just before the loop; identical
occurrences share it (so this is also common-subexpression elimination for
invariants).  Expressions are pure and never trap (x/0 is 0), so computing
one for a loop that runs zero times is harmless.  A loop's bound (`stop`) is
evaluated at least once, so its invariant parts move out with their run-time
checks (a divisor that may be zero: `part < n / chunk`, which would otherwise
divide at every step), but for those under a select's arms or the right of
&& ||, which it need not evaluate.  The `simplify` pass then removes the copies
left behind.  Not moved: loads (a store in the loop may change them),
statements, checks of the body.
"""
from __future__ import annotations

import dataclasses

from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.passes.base import Pass, replace_kernels


def hoist_invariants(plan: P.Plan) -> P.Plan:
    return replace_kernels(plan, lambda k: _Kernel(k).run())


def _leaf(e: K.Expr) -> bool:
    return isinstance(e, (K.Const, K.Var, K.HwId))


_COSTLY = {K.Op.DIV, K.Op.MOD, K.Op.MUL, K.Op.DIV_NN, K.Op.MOD_NN, K.Op.MUL_NW}


def _worth(e: K.Expr) -> bool:
    """Not a leaf, and not one cheap operation on leaves (a register is dearer than that)."""
    if _leaf(e):
        return False
    return not (isinstance(e, K.Bin) and e.op not in _COSTLY and _leaf(e.a) and _leaf(e.b))


class _Kernel:
    def __init__(self, k: K.Kernel):
        self.k = k
        self.names = K.defined_in(k.body) | K.names_read(k.body)
        self.counter = 0

    def run(self) -> K.Kernel:
        return dataclasses.replace(self.k, body=self.block(self.k.body))

    def fresh(self) -> str:
        while True:
            self.counter += 1
            name = f"inv{self.counter}"
            if name not in self.names:
                self.names.add(name)
                return name

    def block(self, stmts) -> tuple:
        out = []
        for s in stmts:
            blocks = K.stmt_children(s)
            if blocks:
                names = [n for n, kind in K._child_fields(type(s)) if kind == "block"]
                s = dataclasses.replace(s, **{n: self.block(getattr(s, n)) for n in names})
            if isinstance(s, K.For):
                lets, s = self.hoist(s)
                out.extend(lets)
            out.append(s)
        return tuple(out)

    def hoist(self, loop: K.For):
        variant = K.defined_in(loop.body) | {loop.var}
        found: dict[K.Expr, str] = {}

        def invariant(e: K.Expr) -> bool:
            return not e.buffers_read and variant.isdisjoint(e.names)

        def hoisted(e: K.Expr) -> bool:
            return _worth(e) and invariant(e)

        def checked_bound(e: K.Expr) -> bool:
            """Invariant but for the checks it makes (in the bound, which always runs)."""
            checks = {x.buf for x in K.walk_expr(e) if isinstance(x, K.Checked)} if e.buffers_read else set()
            return _worth(e) and e.buffers_read <= checks and variant.isdisjoint(e.names)

        def collect(e: K.Expr, take=hoisted):
            if take(e):
                found.setdefault(e, "")
                return
            for c, always in K.strict_children(e):
                collect(c, take if always else hoisted)   # a check that may not run stays

        for s in K.walk_stmts(loop.body):
            for e in K.stmt_exprs(s):
                collect(e)
        collect(loop.stop, checked_bound)
        if not found:
            return (), loop
        lets = []
        for e in found:
            found[e] = self.fresh()
            lets.append(K.Let(found[e], e))

        body = _replace_stmts(loop.body, found, hoisted)
        bounds = {f: _replace(getattr(loop, f), found, hoisted) for f in ("start", "step")}
        bounds["stop"] = _replace(loop.stop, found, lambda e: hoisted(e) or checked_bound(e))
        return tuple(lets), dataclasses.replace(loop, body=body, **bounds)


def _replace(e: K.Expr, table: dict, hoisted) -> K.Expr:
    """`e` with every occurrence of a key of `table` (outermost first) replaced by its variable;
    the keys are `hoisted` (only those nodes are looked up: hashing a node hashes its tree)."""
    name = hoisted(e) and table.get(e)
    if name:
        return K.Var(e.ty, name)
    changes = {}
    for field, kind in K._child_fields(type(e)):
        old = getattr(e, field)
        new = _replace(old, table, hoisted) if kind == "expr" else tuple(_replace(x, table, hoisted) for x in old)
        if new != old:
            changes[field] = new
    return dataclasses.replace(e, **changes) if changes else e


def _replace_stmts(stmts, table: dict, hoisted) -> tuple:
    out = []
    for s in stmts:
        changes = {}
        for field, kind in K._child_fields(type(s)):
            old = getattr(s, field)
            if kind == "expr":
                new = _replace(old, table, hoisted)
            elif kind == "exprs":
                new = tuple(_replace(x, table, hoisted) for x in old)
            else:
                new = _replace_stmts(old, table, hoisted)
            if new != old:
                changes[field] = new
        out.append(dataclasses.replace(s, **changes) if changes else s)
    return tuple(out)


PASS = Pass("licm", "loop-invariant index arithmetic computed once before its loop (shared when repeated)",
            hoist_invariants)
