"""The `bounds` pass: device bounds checks that the range analysis proves are removed.

The lowering wraps the index of every `index` in a `kir.Checked` (index, the
array's length, the plan's bounds buffer, the site); a check whose index is
proven in [0, length) at its point of the kernel (`ranges.Ranges.below`: loop
bounds, conditions of `if`s and selects, `Let`s, constants) becomes the plain
index.  When no check is left in any kernel or host expression, the bounds
buffer, its allocation and the plan's `CheckBounds` go too, so a program whose
indexes are all proven runs exactly the code it would without checks.
`Plan.check_count()` says how many checks remain (`--explain` prints it).

A kernel that still checks gets a second, unchecked version when the checks
left are proven under facts about host values alone, tested once at the
kernel's top (uniform over the launch): every array length and host size the
kernel reads at most CAP (so sums of sizes and part offsets `p * k` with
`p < (n + k - 1) / k` cannot wrap), and `hi < length` for an index whose
interval [0, hi] is known (an index bounded by static sizes, against an
input's length).  `if (facts) { unchecked } else { checked }`: where the test
fails the checked body runs as before (same located error).  `fast_checks`
counts the checks on the path taken when the facts hold.
Not here: which checks exist (lower.py), what a failure does (kir.Checked).
"""
from __future__ import annotations

import dataclasses

from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.passes.ranges import Ranges, kernel_ranges, rewrite_kernels
from fcl.codegen.passes.unroll import Names, defines, rename

CAP = 1 << 30                 # lengths and host sizes the unchecked versions assume at most
CHECKED_VERSION = "checked version (the facts above do not hold for these arguments)"


def elide_checks(plan: P.Plan) -> P.Plan:
    plan = rewrite_kernels(plan, _elide)
    plan = dataclasses.replace(plan, kernels=tuple(_versioned(plan, k) for k in plan.kernels))
    return _trim(plan, everywhere=plan.check_count() == 0)


def checks_in(stmts, fast: bool = False) -> list:
    """The `Checked` nodes in stmts; `fast`: not those of checked versions (taken only where
    the host facts of an unchecked version fail)."""
    out = []
    for s in stmts:
        if fast and _is_version(s):
            out += checks_in(s.then, fast) + [x for x in K.walk_expr(s.cond) if isinstance(x, K.Checked)]
            continue
        out += [x for e in K.stmt_exprs(s) for x in K.walk_expr(e) if isinstance(x, K.Checked)]
        for body in K.stmt_children(s):
            out += checks_in(body, fast)
    return out


def fast_checks(plan: P.Plan) -> dict[str, int]:
    """{kernel: checks on the path taken when its unchecked version's facts hold}."""
    return {k.name: len(checks_in(k.body, fast=True)) for k in plan.kernels}


def _is_version(s: K.Stmt) -> bool:
    return isinstance(s, K.If) and s.else_[:1] == (K.Comment(CHECKED_VERSION),)


def version_test(k: K.Kernel) -> K.Expr | None:
    """The host facts that pick kernel k's unchecked version, or None when it has one body."""
    return k.body[0].cond if len(k.body) == 1 and _is_version(k.body[0]) else None


def _versioned(plan: P.Plan, k: K.Kernel) -> K.Kernel:
    """k as `if (host facts) { k without the checks they prove } else { k }`, or k itself."""
    before = len(checks_in(k.body))
    if before == 0 or any(isinstance(s, K.Barrier) for s in K.walk_stmts(k.body)):
        # No versions of a kernel with barriers: PoCL's optimised builds run a barrier
        # under the version's `if` wrongly (paper.fcl's transposeTiled gave garbage),
        # though the condition is the same for every work-item.
        return k
    real, capped = Ranges.for_plan(plan), Ranges.for_plan(plan, cap=CAP)
    host = {name for name in real.env if not name.startswith("%")}
    needs: list = []

    def prove(e: K.Expr, r: Ranges) -> K.Expr:
        if not isinstance(e, K.Checked):
            return e
        if r.nonneg(e.index) and r.below(e.index, e.length):
            return e.index
        iv = r.of(e.index)
        if iv.nonneg() and iv.hi < r.of(e.length).hi and K.free_params(e.length) <= host and r.stable(e.length):
            needs.append(K.lt(K.cint(iv.hi), e.length))
            return e.index
        return e
    one = dataclasses.replace(plan, kernels=(k,))
    fast = rewrite_kernels(one, prove, base=capped).kernels[0]
    if len(checks_in(fast.body)) == before:
        return k
    used = {n for s in K.walk_stmts(k.body) for e in K.stmt_exprs(s) for n in K.free_params(e)} & host
    facts = []
    for name in sorted(used):
        iv = capped.env.get(name)
        if iv is not None and iv != real.env.get(name):
            v = K.Var("int", name)
            facts += [K.binop("le", K.cint(iv.lo), v), K.binop("le", v, K.cint(iv.hi))]
    facts += needs
    cond = facts[0]
    for f in facts[1:]:
        cond = K.binop("and", cond, f)
    if isinstance(cond, K.Const):      # facts that never hold (or need no test): no second version
        return k if not cond.value else fast
    names = Names(k)
    table = {name: names.fresh(name, "c") for name in sorted(defines(k.body))}
    checked = (K.Comment(CHECKED_VERSION),) + rename(k.body, table)
    return dataclasses.replace(k, body=(K.If(cond, fast.body, checked),))


def _elide(e: K.Expr, r: Ranges) -> K.Expr:
    if isinstance(e, K.Checked) and r.nonneg(e.index) and r.below(e.index, e.length):
        return e.index
    return e


def _trim(plan: P.Plan, everywhere: bool) -> P.Plan:
    """Kernels that check nothing no longer take the bounds buffer; `everywhere`: the plan
    has no bounds buffer at all (no allocation, no CheckBounds)."""
    names = {b.name for b in plan.buffers if b.role == "bounds"}
    used = {k.name: K.buffers_used(k.body) for k in plan.kernels}

    def host(stmts) -> tuple:
        out = []
        for s in stmts:
            if everywhere and (isinstance(s, P.Alloc) and s.buffer in names or isinstance(s, P.CheckBounds)):
                continue
            if isinstance(s, P.Loop):
                s = dataclasses.replace(s, head=host(s.head), body=host(s.body))
            elif isinstance(s, P.Launch):
                keep = tuple(b for b in s.uses.buffers if b not in names or b in used[s.kernel])
                s = dataclasses.replace(s, uses=P.Uses(keep, s.uses.params))
            out.append(s)
        return tuple(out)
    buffers = tuple(b for b in plan.buffers if not (everywhere and b.name in names))
    return dataclasses.replace(plan, buffers=buffers, body=host(plan.body))
