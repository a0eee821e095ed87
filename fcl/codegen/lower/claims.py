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

The converse makes a grid-level `interleave` with no proof cheaper: as many writes as places, each inside
the result, write every place once exactly where they leave no place unwritten.  So where
the host scalar P.EXACT_CLAIMS is 0 (as the host runs a plan first), each write stores a
tag (a byte) for its place, with no atomic, and a kernel launched right after the writes'
checks that every place has its tag, clearing it for the next run: a place without one is a
failed check of kind P.RECHECK, on which the host runs the whole plan again with
EXACT_CLAIMS 1, the claims above, for the evaluator's error and its parts (Oclgrind, where
two tags written at once would be a race, always runs with 1).  On an H200, sorting 2^26
ints (8 passes), the downsweeps took 5.85 ms instead of 6.85 and the checks 0.45 ms (1.02
a byte at a time), where the claims also had the host fill 256 MB a pass: 8.16 ms in all
against 8.73 (sortByKey 9.44 against 10.48).
"""
from __future__ import annotations

import dataclasses

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


TAGS = 16       # tags a work-item checks at a time (a uchar16)


class Claims:
    """The claims of one `interleave` of n-element parts at `level` (see the module)."""

    def __init__(self, ctx: Ctx, level: int, n: K.Expr, span, name: str = "interleave"):
        self.ctx, self.level, self.n, self.span, self.name = ctx, level, n, span, name
        self.proven: K.Expr | None = None       # where no claims are needed (decided at the first write)
        self.rec = None
        self.tags = None                        # grid level: a byte a place (see the module)
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
        origin = f"claims of the {self.name} at {self.span.source.name}:{self.span.line}" if self.span else "claims"
        what = f"the claims of this {self.name}'s places"
        if self.level == Level.GRID:
            size = host_length(self.ctx, total, what, self.span)
            if not K.is_const(self.proven, False):
                # the proof holds where its conditions do (no claims' memory then, and no check
                # kernel to launch): claims, only where they fail
                if b.host_computable(self.proven):
                    size = K.mul(size, K.sub(K.cint(1), K.call("b2i", (self.proven,), "int")))
                self.rec = b.buffer("global", size, origin, "claims", prefix="claims", ty="int")
                return
            exact = b.exact_claims()
            self.rec = b.buffer("global", K.mul(size, exact), origin, "claims", prefix="claims", ty="int")
            self.tags = b.buffer("global", K.mul(size, K.sub(K.cint(1), exact)), f"{origin}: tags", "tags",
                                 prefix="tags", ty="bool")
            self._check_tags(b, self.tags)
            return
        if not b.host_computable(total):
            raise host_length_error(self.ctx, total, what, self.span)
        if self.level == Level.BLOCK:
            self.rec = b.buffer("local", total, origin, "claims", ty="int")
        else:
            self.rec = b.buffer("local", total, origin, "claims", per="warp", ty="int")
            self.base = K.mul(K.HwId("int", "wid"), total)

    def _check_tags(self, b, tags):
        """The kernel after the writes: every place tagged (else a failed P.RECHECK check, the
        first untagged place recorded), every tag cleared; 16 tags a work-item at a time (a
        uchar16: on an H200, a radix sort pass's check at 2^26 took 0.035 ms so, 0.057 in
        uchar4s, 0.13 a byte at a time), then the last size % 16 one at a time.  Strip-mined
        here, not by the `vectorize` pass (4 elements an access), which leaves loops with
        run-time checks alone and groups no loads across a store to their buffer (each tag is
        cleared after it is read)."""
        fbuf, site = b.check_site(P.RECHECK, self.span)
        if site < 0:
            return
        q, vec = b.fresh("q"), b.fresh("tags")
        parts = [b.fresh("tag") for _ in range(TAGS)]
        base = K.mul(K.cint(TAGS), K.Var("int", q))
        first = K.add(base, K.cint(TAGS - 1))
        for k in reversed(range(TAGS - 1)):         # the first place of the TAGS without its tag
            first = K.select(K.unop("not", K.Var("bool", parts[k])), K.add(base, K.cint(k)), first)
        every = K.Var("bool", parts[0])
        for name in parts[1:]:
            every = K.binop("and", every, K.Var("bool", name))
        runs = K.binop("div", tags.size, K.cint(TAGS))
        i = b.fresh("i")
        at = K.add(K.mul(K.cint(TAGS), runs), K.Var("int", i))
        b.kernel_after((
            K.ParFor(Level.GRID, q, runs, (K.VLoad(vec, tuple(parts), "bool", tags.name, K.Var("int", q)),
                                           K.If(K.unop("not", every), (K.Fail(fbuf, site, (first,)),)),
                                           K.VStore(tags.name, K.Var("int", q), (K.Const("bool", False),) * TAGS))),
            K.ParFor(Level.GRID, i, K.sub(tags.size, K.mul(K.cint(TAGS), runs)),
                     (K.If(K.unop("not", K.Load("bool", tags.name, at)), (K.Fail(fbuf, site, (at,)),)),
                      K.Store(tags.name, at, K.Const("bool", False))))))

    def claim(self, c: Ctx, p: K.Expr, pos: K.Expr):
        """(the condition under which no claim is made, the claim, its success, the failure of
        a place claimed before), or None where the proof holds for certain."""
        if self.rec is None:
            return None
        take, free, failed = claim_place(c.b, self.rec.name, K.add(self.base, pos), pos, p, f"{self.name}-twice",
                                         self.span)
        if self.tags is None:
            return self.proven, (take,), free, failed
        got = c.b.fresh("old")      # EXACT_CLAIMS 0: the place's tag, the place taken as free
        exact = K.binop("ne", c.b.exact_claims(), K.cint(0))
        claimed = (dataclasses.replace(take, var=got), K.Assign(take.var, K.Var("int", got)))
        tagged = (K.Store(self.tags.name, pos, K.Const("bool", True)),)
        return self.proven, (K.DeclVar(take.var, K.cint(0)), K.If(exact, claimed, tagged)), free, failed

    def zero(self, ctx: Ctx):
        """Before the parts run at block or warp level: the claims zeroed, then a barrier."""
        if self.rec is None or self.level == Level.GRID:
            return
        i = ctx.b.fresh("z")
        clear = K.ParFor(Level(self.level), i, self.total,
                         (K.Store(self.rec.name, K.add(self.base, K.Var("int", i)), K.cint(0)),))
        ctx.emit(clear if K.is_const(self.proven, False) else K.If(K.unop("not", self.proven), (clear,)))
        ctx.emit(K.Barrier(f"{self.rec.origin}: zero"))
