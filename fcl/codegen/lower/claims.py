"""Claims: the run-time check that an `interleave` writes no place twice.

The evaluator reports a position written twice (`interleave is not injective`).  The
compiled program leaves the check out where `analysis.injective` proves the position
function one-to-one (a mixed-radix formula: transposes, tiles, strided placement); where
that proof holds only under conditions on the sizes (non-negative arguments), the
conditions are tested at run time; elsewhere each write first claims its place: an
`atomic_xchg` of (part + 1) into an int per position, zero before the writes, and a place
already claimed is the evaluator's error, naming both parts, and is not written again.
The claims live where the result would: a global buffer for a grid-level `interleave`
(zeroed by the host before its kernel; no memory where the conditions hold), local memory
for a block-level one and a warp's share of it for a warp-level one (zeroed by the unit
between two barriers each time the `interleave` runs).  With every part of n elements
(checked apart) and every position inside the result, a one-to-one function also leaves
no holes.
"""
from __future__ import annotations

from fcl.base.hw import Level
from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.analysis.injective import one_to_one
from fcl.codegen.lower.builder import Ctx
from fcl.codegen.lower.schemes import host_length
from fcl.codegen.lower.sizewords import host_length_error


def claim_place(b, buf: str, index: K.Expr, pos: K.Expr, who: K.Expr, kind: str, span):
    """(the atomic exchange that claims element `index` of int buffer `buf` for `who` (an int
    from 0: it stores who + 1), the condition that the place was free, and the failure `kind`
    where it was not, recording the position, the earlier claimant and `who`).  An
    interleave's parts and a scatter's elements claim their places so."""
    old = b.fresh("old")
    fbuf, site = b.check_site(kind, span)
    failed = (K.Fail(fbuf, site, (pos, K.sub(K.Var("int", old), K.cint(1)), who)),) if site >= 0 else ()
    take = K.Atomic("xchg", buf, index, K.add(who, K.cint(1)), var=old)
    return take, K.binop("eq", K.Var("int", old), K.cint(0)), failed


def _host_scalars(b) -> dict:
    """The expressions of the host's scalars (`Builder.host_scalar`): the same value at a
    launch as the names they are set to (a size over the tile width, named once)."""
    out = {}

    def walk(stmts):
        for s in stmts:
            if isinstance(s, P.SetVar) and not s.size:
                out[s.var] = s.expr
            elif isinstance(s, P.Loop):
                walk(s.head)
                walk(s.body)
    walk(b.host)
    return out


class Claims:
    """The claims of one `interleave` of n-element parts at `level` (see the module)."""

    def __init__(self, ctx: Ctx, level: int, n: K.Expr, span):
        self.ctx, self.level, self.n, self.span = ctx, level, n, span
        self.proven: K.Expr | None = None       # where no claims are needed (decided at the first write)
        self.rec = None
        self.base = K.cint(0)
        self.total: K.Expr | None = None

    def decide(self, c: Ctx, p: K.Var, j: K.Var, pos: K.Expr, count: K.Expr, defs: dict):
        """At the first write: the proof, and where it may fail the claims' memory."""
        if self.proven is not None:
            return
        conds = one_to_one(pos, p.name, count, j.name, self.n, {**_host_scalars(c.b.parent or c.b), **defs})
        self.proven = K.Const("bool", False) if conds is None else K.Const("bool", True)
        for cond in conds or ():
            self.proven = K.binop("and", self.proven, cond)
        if K.is_const(self.proven, True) or c.b.dry:
            return
        b, total = c.b, K.mul(self.n, count)
        self.total = total
        origin = f"claims of the interleave at {self.span.source.name}:{self.span.line}" if self.span else "claims"
        what = "the claims of this interleave's places"
        if self.level == Level.GRID:
            size = host_length(self.ctx, total, what, self.span)
            if b.host_computable(self.proven):      # none where the proof's conditions hold
                size = K.mul(size, K.sub(K.cint(1), K.call("b2i", (self.proven,), "int")))
            self.rec = b.buffer("global", size, origin, "claims", prefix="claims", ty="int")
            return
        if not b.host_computable(total):
            raise host_length_error(self.ctx, total, what, self.span)
        if self.level == Level.BLOCK:
            self.rec = b.buffer("local", total, origin, "claims", ty="int")
        else:
            self.rec = b.buffer("local", total, origin, "claims", per="warp", ty="int")
            self.base = K.mul(K.HwId("int", "wid"), total)

    def claim(self, c: Ctx, p: K.Expr, pos: K.Expr):
        """(the condition under which no claim is made, the claim, its success, the failure of
        a place claimed before), or None where the proof holds for certain."""
        if self.rec is None:
            return None
        take, free, failed = claim_place(c.b, self.rec.name, K.add(self.base, pos), pos, p, "interleave-twice",
                                         self.span)
        return self.proven, (take,), free, failed

    def zero(self, ctx: Ctx):
        """Before the parts run at block or warp level: the claims zeroed, then a barrier."""
        if self.rec is None or self.level == Level.GRID:
            return
        i = ctx.b.fresh("z")
        clear = K.ParFor(Level(self.level), i, self.total,
                         (K.Store(self.rec.name, K.add(self.base, K.Var("int", i)), K.cint(0)),))
        ctx.emit(clear if K.is_const(self.proven, False) else K.If(K.unop("not", self.proven), (clear,)))
        ctx.emit(K.Barrier(f"{self.rec.origin}: zero"))
