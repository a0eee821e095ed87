"""Linear forms of a kernel's int expressions, through its pure `Let`s (an analysis, not a rewrite).

`KernelFacts(k)` reads once what kernel k's code says about its names and
buffers: the expression of each `Let`, each `For` by its counter, the names
that are assigned (mutable variables, pointers) and the buffers stored to.
`linear(e)` gives e as ({term: coefficient}, constant), equal to e modulo
2^32, following the `Let`s whose value is fixed once defined (`pure`): two
indexes with equal forms are equal values; `place(i)` is the form of a local
buffer's index under its layout's `skew`.  `privatise` keys a work-item's
registers by these places, `share_local` compares the places a work-item
reads and writes, `vectorize` finds runs of consecutive elements
with them (and adds congruences mod the vector width: its VectorFacts).
Consumes a kernel; produces facts.  Not here: intervals (ranges.py).
"""
from __future__ import annotations

from fcl.codegen import kir as K

Op = K.Op
MAX_DEPTH = 24                       # Let definitions followed in one proof

# an operation and its proven no-wrap form compute the same value
ADDS = (Op.ADD, Op.ADD_NW)
SUBS = (Op.SUB, Op.SUB_NW)
MULS = (Op.MUL, Op.MUL_NW)


class KernelFacts:
    """What one kernel's code says about its names and buffers."""

    def __init__(self, k: K.Kernel):
        self.k = k
        self.lets: dict[str, K.Expr] = {}
        self.loops: dict[str, K.For] = {}
        self.assigned: set[str] = set()
        self.written: set[str] = set()          # buffers the kernel stores to
        for s in K.walk_stmts(k.body):
            if isinstance(s, K.Let):
                self.lets[s.var] = s.expr
            elif isinstance(s, K.For):
                self.loops[s.var] = s
            elif isinstance(s, (K.DeclVar, K.Assign)):
                self.assigned.add(s.var)
            elif isinstance(s, (K.DeclPtr, K.SwapPtr)):
                self.assigned.update(K.binds(s))
            self.written |= K.accesses(s)[1]

    def pure(self, e: K.Expr) -> bool:
        """The value of e is fixed once its names are defined: no memory, no assigned name."""
        return not e.buffers_read and self.assigned.isdisjoint(e.names)

    def definition(self, e: K.Expr) -> K.Expr | None:
        """The expression of the pure `Let` that e names (names are unique in a kernel)."""
        if isinstance(e, K.Var) and e.name in self.lets and self.pure(self.lets[e.name]):
            return self.lets[e.name]
        return None

    def place(self, index: K.Expr) -> tuple[bool, dict, int]:
        """(skewed?, terms, constant): the element of a local buffer an index names, the linear
        form of the index under a common `skew` (two indexes of one layout with equal forms name
        one element)."""
        skewed = isinstance(index, K.Call) and index.fn == "skew"
        terms, const = self.linear(index.args[0] if skewed else index)
        return skewed, terms, const

    def linear(self, e: K.Expr, depth: int = 0) -> tuple[dict, int]:
        """({term: coefficient}, constant) equal to e modulo 2^32, through pure `Let`s."""
        if isinstance(e, K.Const):
            return {}, e.value
        d = self.definition(e)
        if d is not None and depth < MAX_DEPTH:
            return self.linear(d, depth + 1)
        if isinstance(e, K.Bin) and e.op in ADDS + SUBS:
            (ta, ca), (tb, cb) = self.linear(e.a, depth + 1), self.linear(e.b, depth + 1)
            sign = 1 if e.op in ADDS else -1
            terms = dict(ta)
            for t, c in tb.items():
                terms[t] = terms.get(t, 0) + sign * c
                if terms[t] == 0:
                    del terms[t]
            return terms, ca + sign * cb
        if isinstance(e, K.Bin) and (e.op in MULS and (isinstance(e.a, K.Const) or isinstance(e.b, K.Const))
                                     or e.op == Op.SHL and isinstance(e.b, K.Const)):
            if e.op == Op.SHL:
                k, x = 1 << (e.b.value & 31), e.a
            else:
                k, x = (e.a.value, e.b) if isinstance(e.a, K.Const) else (e.b.value, e.a)
            terms, c = self.linear(x, depth + 1)
            return {t: v * k for t, v in terms.items() if v * k}, c * k
        if isinstance(e, K.Un) and e.op == Op.NEG:
            terms, c = self.linear(e.a, depth + 1)
            return {t: -v for t, v in terms.items()}, -c
        return {e: 1}, 0
