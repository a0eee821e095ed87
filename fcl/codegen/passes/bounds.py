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
left are proven under facts about host values alone: every array length and
host size the kernel reads at most CAP (so sums of sizes and part offsets
`p * k` with `p < (n + k - 1) / k` cannot wrap), and `hi < length` for an
index whose interval [0, hi] is known (an index bounded by static sizes,
against an input's length).  The version is a kernel of its own (`NAME_fast`)
and the host picks it at each launch (`plan.Launch.fast`/`when`, `plan.chosen`):
where the facts fail the checked kernel runs as before (same located error).
The test is on the host, not at the kernel's top, so no barrier ever stands
under it (PoCL's optimised builds run a barrier under a uniform `if` wrongly:
paper.fcl's transposeTiled gave garbage); `Plan.version` names a kernel's.
Not here: which checks exist (codegen/lower/), what a failure does (kir.Checked).
"""
from __future__ import annotations

import dataclasses

from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.analysis.ranges import NodeRewrite, Ranges, opposite, rewrite_kernels
from fcl.codegen.passes.base import Pass

CAP = 1 << 30                 # lengths and host sizes the unchecked versions assume at most
CHECKS = K.kind_bits(K.Checked)


def elide_checks(plan: P.Plan) -> P.Plan:
    plan = rewrite_kernels(plan, NodeRewrite(_elide, CHECKS))
    kernels, versions = list(plan.kernels), {}
    taken = {k.name for k in plan.kernels}
    for k in plan.kernels:
        fast, when = _version(plan, k)
        if fast is not None and when is None:        # proven outright: the kernel itself
            kernels[kernels.index(k)] = fast
        elif fast is not None:
            name = f"{k.name}_fast"
            while name in taken:
                name += "_"
            taken.add(name)
            kernels.append(dataclasses.replace(fast, name=name))
            versions[k.name] = (name, when)
    plan = dataclasses.replace(plan, kernels=tuple(kernels), body=_launch_versions(plan.body, versions))
    return trim_checks(plan)


def _launch_versions(stmts, versions: dict) -> tuple:
    out = []
    for s in stmts:
        if isinstance(s, P.Loop):
            s = dataclasses.replace(s, head=_launch_versions(s.head, versions),
                                    body=_launch_versions(s.body, versions))
        elif isinstance(s, P.Launch) and s.kernel in versions:
            fast, when = versions[s.kernel]
            s = dataclasses.replace(s, fast=fast, when=when)
        out.append(s)
    return tuple(out)


def checks_in(stmts) -> list:
    """The `Checked` nodes in stmts."""
    return [x for s in K.walk_stmts(stmts) for e in K.stmt_exprs(s) if e.kinds & CHECKS for x in K.walk_expr(e)
            if isinstance(x, K.Checked)]


def _version(plan: P.Plan, k: K.Kernel) -> tuple[K.Kernel | None, K.Expr | None]:
    """(k without the checks that host facts prove, those facts), (k without its checks, None)
    when they always hold, or (None, None): no unchecked version."""
    before = len(checks_in(k.body))
    if before == 0:
        return None, None
    real, capped = Ranges.for_plan(plan), Ranges.for_plan(plan, cap=CAP)
    host = {name for name in real.env if not name.startswith("%")}
    needs: list = []

    def prove(e: K.Expr, r: Ranges) -> K.Expr:
        if not isinstance(e, K.Checked):
            return _live_arm(e, r)
        if r.nonneg(e.index) and r.below(e.index, e.length):
            return e.index
        if isinstance(e.length, K.Call) and e.length.fn == "min" and r.nonneg(e.index):
            # i < min(a, b) where i < a is known: a <= b, a fact about host values, suffices
            for x, y in (e.length.args, e.length.args[::-1]):
                if r.below(e.index, x) and (x.names | y.names) <= host and r.stable(x) and r.stable(y) \
                        and K.host_evaluable(x) and K.host_evaluable(y):
                    if not r.below(e.index, y):
                        needs.append(K.binop("le", x, y))
                    return e.index
        iv = r.of(e.index)
        # (not where only a length of CAP itself would meet hi < length: an index that the
        # capped facts bound by another length, min i (n - 1) of sortBy's first pass, which
        # made its version one that never ran)
        if iv.nonneg() and iv.hi < min(r.of(e.length).hi, CAP - 1) and e.length.names <= host \
                and r.stable(e.length) and K.host_evaluable(e.length):
            needs.append(K.lt(K.cint(iv.hi), e.length))
            return e.index
        return e
    one = dataclasses.replace(plan, kernels=(k,))
    fast = rewrite_kernels(one, NodeRewrite(prove, CHECKS), base=capped).kernels[0]
    if len(checks_in(fast.body)) == before:
        return None, None
    used = K.names_read(k.body) & host
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
        return (fast, None) if cond.value else (None, None)
    return fast, cond


def _elide(e: K.Expr, r: Ranges) -> K.Expr:
    if isinstance(e, K.Checked) and r.nonneg(e.index) and r.below(e.index, e.length):
        return e.index
    return _live_arm(e, r)


def _live_arm(e: K.Expr, r: Ranges) -> K.Expr:
    """A select one of whose arms the ranges prove never taken is the other arm (a checked
    divisor proven nonzero is the divisor: its failing arm is dead), where its condition holds
    no run-time check (which must still run: `(index a 5 & 0) < 1 ? x : y`)."""
    if isinstance(e, K.Select) and not K.holds_check(e.cond):
        if r.refined(opposite(e.cond), facts=False).dead:
            return e.a
        if r.refined(e.cond, facts=False).dead:
            return e.b
    return e


def trim_checks(plan: P.Plan) -> P.Plan:
    """`plan` without the bounds buffer where no kernel or host expression checks anything
    any longer (the passes after this one fold the checks whose conditions they decide), and
    kernels that check nothing without its argument."""
    return _trim(plan, everywhere=plan.check_count() == 0)


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
                keep = tuple(b for b in s.uses.buffers
                             if b not in names or any(b in used[k] for k in s.kernels()))
                s = dataclasses.replace(s, uses=P.Uses(keep, s.uses.params))
            out.append(s)
        return tuple(out)
    buffers = tuple(b for b in plan.buffers if not (everywhere and b.name in names))
    return dataclasses.replace(plan, buffers=buffers, body=host(plan.body))


PASS = Pass("bounds", "bounds checks of `index` removed where the range analysis proves the index "
                      "in range (the rest stay: --no-bounds-checks drops them all)", elide_checks)
