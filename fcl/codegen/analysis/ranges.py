"""Integer range analysis of mapped kernel IR (an analysis, not a rewrite).

`Ranges(plan, kernel)` knows an interval for every int expression at a point
of a kernel: hardware ids from the launch geometry (lid in [0, #BlockSize),
group_id in [0, #NumGroups) ...), array lengths and host variables
non-negative, a `For` counter in [start, stop) when its step is positive, a name
bounded by the condition of the `If` it is under, a
`Let` the interval of its expression, constants exactly; other scalars (entry
arguments, mutable variables, loads) may be anything.  Arithmetic is exact
when the result provably stays in 32 bits, else the full int range (it may
wrap).  `rewrite_kernels(plan, f)` walks each kernel in order with the facts
in scope and lets f(node, ranges) replace an expression node, bottom-up; the
strength-reduction and no-wrap passes are such functions.  Not here: facts
from `else` branches or loop exits, or fixpoints over mutable variables.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

from fcl.base import scalars as S
from fcl.base.hw import skewed_index
from fcl.codegen import kir as K
from fcl.codegen import plan as P

Op = K.Op
_DIVISIONS = frozenset({Op.DIV, Op.DIV_NN, Op.MOD, Op.MOD_NN})


@dataclass(frozen=True)
class Interval:
    lo: int
    hi: int

    def nonneg(self) -> bool:
        return self.lo >= 0

    def positive(self) -> bool:
        return self.lo >= 1


PROOF_STEPS = 25       # linear forms one proof of `below` or `nonneg` may visit

FULL = Interval(S.INT_MIN, S.INT_MAX)
BOOL = Interval(0, 1)
NONNEG = Interval(0, S.INT_MAX)


def fit(lo: int, hi: int) -> Interval:
    """The exact interval if it fits 32 bits, else everything (the operation may wrap)."""
    return Interval(lo, hi) if S.INT_MIN <= lo and hi <= S.INT_MAX else FULL


def exact(op: Op, a: Interval, b: Interval) -> tuple[int, int] | None:
    """Exact bounds of a + b, a - b, a * b over the intervals (no wrapping), or None."""
    if op in (Op.ADD, Op.ADD_NW):
        return a.lo + b.lo, a.hi + b.hi
    if op in (Op.SUB, Op.SUB_NW):
        return a.lo - b.hi, a.hi - b.lo
    if op in (Op.MUL, Op.MUL_NW):
        corners = [x * y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
        return min(corners), max(corners)
    return None


class Ranges:
    """Intervals of expressions under the facts in scope (`env`: variable -> Interval),
    and symbolic facts for `below`: `upper` (name -> expressions it is less than),
    `lower` (name -> expressions it is at least) and `defs` (the expression of a `Let`);
    `dead` where the conditions in scope contradict the intervals (code that never runs);
    `proofs` False: no linear facts from conditions (they serve `below` and `nonneg` only, so
    a pass that reads intervals alone skips their cost)."""

    def __init__(self, plan: P.Plan, env: dict[str, Interval] | None = None, mutable: frozenset = frozenset(),
                 upper=None, lower=None, defs=None, facts=(), assigned=None, aliases=None, dead=False,
                 known=None, proofs: bool = True):
        self.plan = plan
        self.proofs = proofs
        self.dead = dead                # under a condition that cannot hold: every claim is true
        self.known: dict[K.Expr, Interval] = dict(known or {})    # compound expressions a condition bounds
        self.assigned: dict[str, Interval] = assigned or {}   # mutable name -> every value it is given
        self.aliases: dict[str, str] = aliases or {}            # host scalar -> one always equal to it
        self.env = dict(env or {})
        self.mutable = mutable          # assigned names: a branch's condition says nothing lasting about them
        self.upper: dict[str, tuple] = dict(upper or {})
        self.lower: dict[str, tuple] = dict(lower or {})
        self.defs: dict[str, K.Expr] = dict(defs or {})
        self.facts: tuple = facts       # `_Fact`s: conditions over any expressions, as linear forms <= 0
        self.memo: dict[int, tuple] = {}  # id(compound expression) -> (it, its interval) under these facts

    @staticmethod
    def for_plan(plan: P.Plan, cap: int | None = None, proofs: bool = True) -> "Ranges":
        """The facts every kernel of `plan` starts from; with `cap`, also assuming that every
        array length and host size is at most `cap` (the `bounds` pass's versions test that)."""
        env = {}
        top = S.INT_MAX if cap is None else cap
        for p in plan.params:
            env[p.name] = BOOL if p.ty == "bool" else FULL
        if P.FIRST_GROUP in env:        # a launch in slices (plan.slices): its first work-group, all of them
            env[P.FIRST_GROUP] = Interval(0, S.INT_MAX - P.slice_groups(plan.block_size))
            env[P.GROUP_TOTAL] = Interval(1, S.INT_MAX)
        for a in plan.args:
            if isinstance(a, P.ArrayArg):
                env[a.length] = Interval(0, top)
        for s in P.walk(plan.body):
            if isinstance(s, (P.SetVar, P.ReadScalar)):
                env[s.var] = Interval(0, top) if isinstance(s, P.SetVar) and s.size else FULL
        out = Ranges(plan, env, proofs=proofs)
        once = [s.var for s in P.walk(plan.body) if isinstance(s, (P.SetVar, P.ReadScalar))]
        for s in plan.body:             # set once, before any loop: a launch after it sees that value
            if isinstance(s, P.SetVar) and once.count(s.var) == 1:
                env[s.var] = out.of(s.expr) if not s.size else Interval(max(0, out.of(s.expr).lo), top)
                if out.stable(s.expr):
                    out.defs[s.var] = s.expr
                    out.memo.clear()
        out.aliases = _aliases(plan.body, {v: once.count(v) for v in once}, {})
        read = {s.var for s in P.walk(plan.body) if isinstance(s, P.ReadScalar)}
        hulls: dict[str, Interval] = {}  # any other host scalar holds one of the values it is set to
        for s in P.walk(plan.body):
            if isinstance(s, P.SetVar) and s.var not in out.defs and s.var not in read:
                iv = out.of(s.expr)
                have = hulls.get(s.var, iv)
                hulls[s.var] = Interval(min(have.lo, iv.lo), max(have.hi, iv.hi))
        for var, iv in hulls.items():
            have = env[var]
            if iv.lo <= have.hi and iv.hi >= have.lo:
                env[var] = Interval(max(have.lo, iv.lo), min(have.hi, iv.hi))
        bs = plan.block_size
        env.update({"%lid": Interval(0, bs - 1), "%wid": Interval(0, max(1, bs // plan.warp_size) - 1),
                    "%lane": Interval(0, min(bs, plan.warp_size) - 1)})
        env.update(_grid(plan, 1, plan.num_groups))
        out.env = env
        out.memo.clear()
        return out

    def child(self) -> "Ranges":
        return Ranges(self.plan, self.env, self.mutable, self.upper, self.lower, self.defs, self.facts,
                      self.assigned, self.aliases, self.dead, self.known, self.proofs)

    def refined(self, cond: K.Expr, facts: bool = True) -> "Ranges":
        """The facts where `cond` holds: `x < e`, `x <= e`, `e > x`, `e >= x` bound a
        variable or hardware id x from above, `x > e`, `x >= e`, `e < x`, `e <= x` from
        below (conjunctions too; a bool name stands for its `Let`, `not` for the opposite
        comparison); without `facts`, intervals only (no linear facts for `below`)."""
        out = self.child()
        conds = [cond]
        while conds:
            c = conds.pop()
            if isinstance(c, K.Var) and c.name in self.defs:
                conds.append(self.defs[c.name])
                continue
            if isinstance(c, K.Un) and c.op == Op.NOT:
                neg = negate(self.defs.get(c.a.name, c.a) if isinstance(c.a, K.Var) else c.a)
                if neg is not None:
                    conds.append(neg)
                continue
            if not isinstance(c, K.Bin):
                continue
            if c.op == Op.AND:
                conds += [c.a, c.b]
                continue
            if c.op not in (Op.LT, Op.LE, Op.GT, Op.GE, Op.EQ, Op.NE) or c.a.ty != "int":
                continue
            if facts and self.proofs:
                out._fact(c)
            if c.op in (Op.EQ, Op.NE):
                continue
            flip = {Op.GT: Op.LT, Op.GE: Op.LE}
            op, x, bound = (flip[c.op], c.b, c.a) if c.op in flip else (c.op, c.a, c.b)
            out._bound_above(x, bound, op == Op.LT)       # x < bound (or <=)
            out._bound_below(bound, x, op == Op.LT)       # bound > x (or >=)
        return out

    def _fact(self, c: K.Bin):
        """Record comparison c (which holds); its linear forms are worked out when a proof
        first reads the facts (most scopes never prove anything), under the facts of here."""
        self.facts = self.facts + (_Fact(c, self.child()),)

    def _fact_forms(self, c: K.Bin) -> tuple:
        """Comparison c as linear forms <= 0; `a != b` only where one side is proven not to
        exceed the other (then it is strict)."""
        if not (self.stable(c.a) and self.stable(c.b)):
            return ()
        fa, fb = self.linear(c.a), self.linear(c.b)
        if fa is None or fb is None:
            return ()
        a_b = _combine(fa, fb, -1)          # a - b
        b_a = _scale(a_b, -1)
        forms = {Op.LT: [_plus(a_b, 1)], Op.LE: [a_b], Op.GT: [_plus(b_a, 1)], Op.GE: [b_a],
                 Op.EQ: [a_b, b_a], Op.NE: []}[c.op]
        if c.op == Op.NE:
            if self._at_most_zero(b_a, [0], set()):
                forms = [_plus(b_a, 1)]
            elif self._at_most_zero(a_b, [0], set()):
                forms = [_plus(a_b, 1)]
        return tuple(f for f in forms if f[0])

    def _bound_above(self, x: K.Expr, bound: K.Expr, strict: bool):
        key = _key(x)
        if key is None and self.stable(x):
            self._know(x, Interval(S.INT_MIN, self.of(bound).hi - strict))
        if key is None or key in self.mutable:
            return
        have, limit = self.env.get(key, FULL), self.of(bound).hi - strict
        if limit >= have.lo:
            self.env[key] = Interval(have.lo, min(have.hi, limit))
        else:
            self.dead = True
        if self.stable(bound):
            self.upper[key] = self.upper.get(key, ()) + ((bound if strict else K.add(bound, K.cint(1))),)
        self.memo.clear()

    def _bound_below(self, x: K.Expr, bound: K.Expr, strict: bool):
        key = _key(x)
        if key is None and self.stable(x):
            self._know(x, Interval(self.of(bound).lo + strict, S.INT_MAX))
        if key is None or key in self.mutable:
            return
        have, limit = self.env.get(key, FULL), self.of(bound).lo + strict
        if limit <= have.hi:
            self.env[key] = Interval(max(have.lo, limit), have.hi)
        else:
            self.dead = True
        if self.stable(bound):
            self.lower[key] = self.lower.get(key, ()) + ((K.add(bound, K.cint(1)) if strict else bound),)
        self.memo.clear()

    def _know(self, x: K.Expr, iv: Interval):
        have = self.of(x)
        lo, hi = max(have.lo, iv.lo), min(have.hi, iv.hi)
        if lo > hi:
            self.dead = True
        else:
            self.known[x] = Interval(lo, hi)
            self.memo.clear()

    def bind(self, name: str, iv: Interval, expr: K.Expr | None = None):
        """`name` is given a value in iv here (its `Let` expression where stable).  The intervals
        worked out so far stay: they read no name first bound here (none is read before its
        binding), and one bound again keeps its facts if it keeps its interval and expression."""
        if name in self.env and self.env[name] != iv or name in self.defs and self.defs[name] != expr:
            self.memo.clear()
        self.env[name] = iv
        if expr is not None:
            self.defs[name] = expr

    def stable(self, e: K.Expr) -> bool:
        """The value of `e` cannot change while it is in scope (no assigned name, no memory but
        the bounds buffer its run-time checks record into, which gives them no value)."""
        reads = e.buffers_read
        if reads and (len(reads) > 1 or self.plan is None
                      or not any(b.name in reads and b.role == "bounds" for b in self.plan.buffers)):
            return False
        return self.mutable.isdisjoint(e.names)

    # ------------------------------------------------------------ symbolic: a < b

    def below(self, a: K.Expr, b: K.Expr) -> bool:
        """True when a < b is proven: intervals, then the linear forms of a - b + 1 bounded
        from above through the symbolic facts (loop bounds, conditions, `Let`s, x / k <= x / k,
        min, a checked index below its length), trying each bound of each term in turn."""
        if self.dead or self.of(a).hi < self.of(b).lo:
            return True
        fa, fb = self.linear(a), self.linear(b)
        if fa is None or fb is None:
            return False
        diff = _combine(fa, fb, -1)
        diff = (diff[0], diff[1] + 1)
        return self._at_most_zero(diff, [0], set())

    def nonneg(self, e: K.Expr) -> bool:
        """True when e >= 0 is proven (intervals, min of operands each proven, then as `below`)."""
        if self.dead or self.of(e).lo >= 0:
            return True
        if isinstance(e, K.Call) and e.fn == "min" and e.ty == "int":
            return all(self.nonneg(x) for x in e.args)
        f = self.linear(e)
        return f is not None and self._at_most_zero(_scale(f, -1), [0], set())

    def linear(self, e: K.Expr, depth: int = 0):
        """({term: coefficient}, constant) with e = sum + constant (no wrapping), or None."""
        if e.ty != "int":
            return None
        if isinstance(e, K.Const):
            return {}, e.value
        if depth > 12:
            return {e: 1}, 0
        if isinstance(e, K.Bin) and e.op in (Op.ADD, Op.ADD_NW, Op.SUB, Op.SUB_NW, Op.MUL, Op.MUL_NW, Op.SHL) \
                and self.of(e) != FULL:
            if e.op == Op.SHL:
                if not (isinstance(e.b, K.Const) and 0 <= e.b.value < 31):
                    return {e: 1}, 0
                inner = self.linear(e.a, depth + 1)
                return None if inner is None else _scale(inner, 1 << e.b.value)
            if e.op in (Op.MUL, Op.MUL_NW):
                k, x = (e.a, e.b) if isinstance(e.a, K.Const) else (e.b, e.a)
                if not isinstance(k, K.Const):
                    return {e: 1}, 0
                inner = self.linear(x, depth + 1)
                return None if inner is None else _scale(inner, k.value)
            la, lb = self.linear(e.a, depth + 1), self.linear(e.b, depth + 1)
            if la is None or lb is None:
                return None
            return _combine(la, lb, 1 if e.op in (Op.ADD, Op.ADD_NW) else -1)
        if isinstance(e, K.Un) and e.op == Op.NEG and self.of(e.a).lo > S.INT_MIN:
            inner = self.linear(e.a, depth + 1)
            return None if inner is None else _scale(inner, -1)
        return {e: 1}, 0

    def _bounds(self, t: K.Expr, up: bool) -> list:
        """Linear forms f with t <= f (up) or t >= f (not up), from the symbolic facts."""
        out = []
        key = _key(t)
        if isinstance(t, K.Var) and t.name in self.defs:
            f = self.linear(self.defs[t.name])
            if f is not None:
                out.append(f)
        if key is not None:
            for e in (self.upper if up else self.lower).get(key, ()):
                f = self.linear(e)
                if f is not None:
                    out.append((f[0], f[1] - 1) if up else f)
        if isinstance(t, K.Checked) and up and self.of(t.length).lo >= 1:
            f = self.linear(t.length)
            if f is not None:
                out.append((f[0], f[1] - 1))
        if isinstance(t, K.Bin) and t.op in (Op.DIV, Op.DIV_NN, Op.SHR) and isinstance(t.b, K.Const) \
                and self.of(t.a).nonneg():
            k = t.b.value if t.op != Op.SHR else (1 << t.b.value if 0 <= t.b.value < 31 else 0)
            f = self.linear(t.a) if k > 0 else None
            if f is not None:
                f = _scale(f, _ratio(1, k))
                out.append(f if up else (f[0], f[1] - _ratio(k - 1, k)))
        if isinstance(t, K.Bin) and t.op in (Op.MOD, Op.MOD_NN) and up and self.of(t.a).nonneg() \
                and self.of(t.b).positive():
            fa, fb = self.linear(t.a), self.linear(t.b)      # x % k <= x and <= k - 1
            out.extend(([fa] if fa is not None else []) + ([(fb[0], fb[1] - 1)] if fb is not None else []))
        if isinstance(t, K.Call) and t.ty == "int" and t.fn == ("min" if up else "max"):
            out.extend(f for f in (self.linear(x) for x in t.args) if f is not None)
        if isinstance(t, K.Bin) and t.op in (Op.MUL, Op.MUL_NW) and up:
            out.extend(self._product_bounds(t))
        return out

    def _product_bounds(self, t: K.Bin) -> list:
        """p * k <= X / c - k where p < X / (c k) (a strided loop's rounds: `for p < n / s` reads
        `p * s + r`, which stays below n for r < s; runs of c elements a round: c = 4)."""
        out = []
        for x, k, c, exact in self.part_counts(t):
            fx, fk = self.linear(x), self.linear(k)
            if exact and self.of(x).nonneg() and fx is not None and fk is not None:
                out.append(_combine(_scale(fx, _ratio(1, c)), fk, -1))
        return out

    def _at_most_zero(self, form, budget: list, seen: set) -> bool:
        """True when the linear form is proven <= 0 (budget: steps taken, shared)."""
        if self.dead:
            return True
        terms, const = form
        key = (frozenset(terms.items()), const)
        if key in seen or budget[0] > PROOF_STEPS:
            return False
        seen.add(key)
        budget[0] += 1
        total = const
        for t, c in terms.items():
            iv = self.of(t)
            edge = iv.hi if c > 0 else iv.lo
            if iv == FULL or (c > 0 and edge == S.INT_MAX) or (c < 0 and edge == S.INT_MIN):
                total = None
                break
            total += c * edge
        if total is not None and total <= 0:
            return True
        for fact in (f for held in self.facts for f in held.forms()):
            # form = (form - k fact) + k fact, with k fact <= 0
            for t, c in terms.items():
                f = fact[0].get(t, 0)
                if f and (c > 0) == (f > 0):
                    if self._at_most_zero(_combine(form, _scale(fact, _ratio(c, f)), -1), budget, seen):
                        return True
                    break
        for t, c in terms.items():
            if c == 0:
                continue
            if isinstance(t, K.Select):
                fa, fb = self.linear(t.a), self.linear(t.b)
                if fa is not None and fb is not None:
                    rest = ({x: k for x, k in terms.items() if x != t}, const)
                    if self.refined(t.cond)._at_most_zero(_combine(rest, _scale(fa, c), 1), budget, set()) and \
                            self.refined(opposite(t.cond))._at_most_zero(_combine(rest, _scale(fb, c), 1),
                                                                          budget, set()):
                        return True
                continue
            for f in self._bounds(t, c > 0):
                rest = ({x: k for x, k in terms.items() if x != t}, const)
                if self._at_most_zero(_combine(rest, _scale(f, c), 1), budget, seen):
                    return True
        return False

    def of(self, e: K.Expr) -> Interval:
        if e.ty == "bool":
            return BOOL
        if e.ty != "int":
            return FULL
        if isinstance(e, K.Const):
            return Interval(e.value, e.value)
        if isinstance(e, K.Var):
            return self.env.get(e.name, FULL)
        if isinstance(e, K.HwId):
            return self.env[f"%{e.name}"]
        hit = self.memo.get(id(e))
        if hit is None:
            hit = self.memo[id(e)] = (e, self._compound(e))
        return hit[1]

    def _compound(self, e: K.Expr) -> Interval:
        """The interval of an int expression that is not a leaf."""
        if isinstance(e, K.Bin):
            if self.known and e in self.known:
                return self.known[e]
            b = K.plain_divisor(e.b) if e.op in _DIVISIONS else e.b
            iv = self.binary(e.op, self.of(e.a), self.of(b))
            if e.op in (Op.MUL, Op.MUL_NW) and iv == FULL:
                return self.part_offset(e) or iv
            return iv
        if isinstance(e, K.Select):         # each side under its condition (a dead side adds nothing)
            sides = [r.of(x) for r, x in ((self.refined(e.cond, facts=False), e.a),
                                          (self.refined(opposite(e.cond), facts=False), e.b)) if not r.dead]
            if not sides:
                return self.of(e.a)
            return Interval(min(x.lo for x in sides), max(x.hi for x in sides))
        if isinstance(e, K.Call):
            return self.call(e)
        if isinstance(e, K.Checked):
            return Interval(0, max(0, self.of(e.length).hi - 1))
        return FULL

    def part_offset(self, e: K.Bin) -> Interval | None:
        """p * k where p >= 0 is bounded by p < X / k or p < max(1, X / k) (the count of parts of
        k elements): p * k <= X - k exactly, so [0, max(0, X.hi - k.lo)] when X does not wrap;
        (X / k) * k is in [0, X]."""
        for p, k in ((e.a, e.b), (e.b, e.a)):
            if isinstance(p, K.Bin) and p.op in (Op.DIV, Op.DIV_NN) and self.same(p.b, k) and \
                    self.of(p.a).nonneg() and self.of(k).nonneg() and self.of(p.a) != FULL:
                return Interval(0, self.of(p.a).hi)
        for x, k, c, _ in self.part_counts(e):
            x = self.of(x)
            if x != FULL:
                return Interval(0, max(0, x.hi // c - self.of(k).lo))
        return None

    def part_counts(self, e: K.Bin):
        """(X, k, c, exact) for each way product e is p * k with p >= 0 and k >= 1 bounded by a
        part count: p < X / (c k) (exact: c p k <= X - c k) or p < max(1, X / (c k)) (not
        exact: p is 0 where X < c k); c is a constant, 1 unless the count reads runs of c,
        or 1 / c' where k is c' times the count's divisor (parts of c' steps each)."""
        for p, k in ((e.a, e.b), (e.b, e.a)):
            if _key(p) is None or not self.of(p).nonneg() or not self.of(k).positive():
                continue
            for bound in self.upper.get(_key(p), ()):
                bound = self._defined(bound)
                exact = not (isinstance(bound, K.Call) and bound.fn == "max" and K.is_const(bound.args[0], 1))
                if not exact:
                    bound = bound.args[1]
                if not (isinstance(bound, K.Bin) and bound.op in (Op.DIV, Op.DIV_NN)):
                    continue
                d = K.plain_divisor(bound.b)
                if self.same(d, k):
                    yield bound.a, k, 1, exact
                elif (c := self._multiple(d, k)) is not None:
                    yield bound.a, k, c, exact
                elif (c := self._multiple(self._defined(k), d)) is not None:
                    yield bound.a, k, _ratio(1, c), exact     # k = c d: p k <= c (X - d)

    def _defined(self, e: K.Expr) -> K.Expr:
        """e, or the expression its name is bound to (through a chain of names)."""
        while isinstance(e, K.Var) and e.name in self.defs:
            e = self.defs[e.name]
        return e

    def _multiple(self, e: K.Expr, y: K.Expr) -> int | None:
        """c where e is c * y for a constant c >= 1, else None."""
        if isinstance(e, K.Bin) and e.op in (Op.MUL, Op.MUL_NW):
            for c, x in ((e.a, e.b), (e.b, e.a)):
                if isinstance(c, K.Const) and c.value >= 1 and self.same(x, y):
                    return c.value
        return None

    def same(self, a: K.Expr, b: K.Expr) -> bool:
        """a and b have the same value: equal, or names bound to equal expressions (two host
        scalars the host computes alike)."""
        def value(e):
            e = K.plain_divisor(e)
            while isinstance(e, K.Var) and (e.name in self.defs or e.name in self.aliases):
                e = self.defs[e.name] if e.name in self.defs else K.Var(e.ty, self.aliases[e.name])
            return K.plain_divisor(e)
        return a == b or value(a) == value(b)

    def binary(self, op: Op, a: Interval, b: Interval) -> Interval:
        bounds = exact(op, a, b)
        if bounds is not None:
            return fit(*bounds)
        if op in (Op.DIV, Op.DIV_NN) and a.nonneg() and b.positive():
            return Interval(a.lo // b.hi, a.hi // b.lo)
        if op == Op.DIV and b.lo == b.hi and b.lo >= 1:      # any int over a positive constant
            return Interval(S.int_div(a.lo, b.lo), S.int_div(a.hi, b.lo))
        if op in (Op.MOD, Op.MOD_NN) and a.nonneg() and b.positive():
            return Interval(0, min(a.hi, b.hi - 1))
        if op == Op.BAND and (a.nonneg() or b.nonneg()):
            return Interval(0, min(x.hi for x in (a, b) if x.nonneg()))
        if op == Op.SHR and a.nonneg() and b.lo == b.hi and 0 <= b.lo < 32:
            return Interval(a.lo >> b.lo, a.hi >> b.lo)
        return FULL

    def call(self, e: K.Call) -> Interval:
        if e.fn in ("min", "max") and e.ty == "int":
            a, b = (self.of(x) for x in e.args)
            f = min if e.fn == "min" else max
            return Interval(f(a.lo, b.lo), f(a.hi, b.hi))
        if e.fn == "b2i":
            return BOOL
        if e.fn == "skew":
            a = self.of(e.args[0])
            return fit(skewed_index(a.lo), skewed_index(a.hi)) if a.nonneg() else FULL
        return FULL


class _Fact:
    """A condition that holds, with the facts where it was learnt; its linear forms are
    worked out once, when a proof first asks (shared by every scope inside that one)."""

    def __init__(self, cond: K.Bin, at: Ranges):
        self.cond, self.at, self._forms = cond, at, None

    def forms(self) -> tuple:
        if self._forms is None:
            self._forms, self.at = self.at._fact_forms(self.cond), None
        return self._forms


def _aliases(block, count: dict, out: dict) -> dict:
    """t -> s where host scalars s and t are each set once, in the same block, to the same
    expression, with no launch, loop or new value of what the expression reads between them:
    every launch that can read t sees the value s has."""
    for i, s in enumerate(block):
        if isinstance(s, P.Loop):
            _aliases(s.head, count, out)
            _aliases(s.body, count, out)
        if not (isinstance(s, P.SetVar) and count.get(s.var) == 1):
            continue
        reads = s.expr.names
        for t in block[i + 1:]:
            if isinstance(t, P.SetVar) and count.get(t.var) == 1 and t.expr == s.expr and t.var not in out:
                out[t.var] = out.get(s.var, s.var)
            if isinstance(t, (P.Launch, P.Loop)) or isinstance(t, (P.SetVar, P.ReadScalar)) and t.var in reads:
                break
    return out


def _ratio(a, b):
    """a / b exactly: an int where b divides a, else a Fraction (coefficients of linear forms
    are ints until a division makes one a fraction; int arithmetic is several times cheaper)."""
    if type(a) is int and type(b) is int:
        q, r = divmod(a, b)
        return q if r == 0 else Fraction(a, b)
    return a / b


def _plus(form, k):
    return form[0], form[1] + k


def _scale(form, k):
    terms, const = form
    return {t: c * k for t, c in terms.items()}, const * k


def _combine(a, b, sign: int):
    """a + sign * b of two linear forms."""
    terms = dict(a[0])
    for t, c in b[0].items():
        terms[t] = terms.get(t, 0) + sign * c
        if terms[t] == 0:
            del terms[t]
    return terms, a[1] + sign * b[1]


NEGATED = {Op.LT: Op.GE, Op.GE: Op.LT, Op.LE: Op.GT, Op.GT: Op.LE, Op.EQ: Op.NE, Op.NE: Op.EQ}


def negate(c: K.Expr) -> K.Expr | None:
    """The opposite of an int comparison (None for other conditions)."""
    if isinstance(c, K.Bin) and c.op in NEGATED and c.a.ty == "int":
        return K.Bin("bool", NEGATED[c.op], c.a, c.b)
    return None


def opposite(c: K.Expr) -> K.Expr:
    """The opposite of any condition (`refined` sees through `not` of a comparison or of a
    name bound to one)."""
    return negate(c) or K.unop("not", c)


def _key(e: K.Expr) -> str | None:
    if isinstance(e, K.Var) and e.ty == "int":
        return e.name
    return f"%{e.name}" if isinstance(e, K.HwId) else None


@dataclass(frozen=True)
class NodeRewrite:
    """f(node, ranges) -> node, for `rewrite_kernels`; it may change nodes of the kinds `on`
    (`kir.kind_bits`) only, so a tree without one is not visited."""
    f: Callable
    on: int


def rewrite_kernels(plan: P.Plan, f: NodeRewrite | None = None, fs=None, base: Ranges | None = None,
                    proofs: bool = True) -> P.Plan:
    """Every kernel with f applied to each expression node bottom-up,
    with the range facts of the point where the expression is evaluated; and
    fs(stmt, ranges) to each statement once its parts are rewritten, with the facts
    in scope where it starts (it returns a statement or a tuple of them).  `base`:
    the facts kernels start from (default `Ranges.for_plan(plan, proofs=proofs)`: False
    where f and fs read intervals only, never `below` or `nonneg`)."""
    base = base or Ranges.for_plan(plan, proofs=proofs)
    kernels = tuple(dataclasses.replace(k, body=_block(k.body, kernel_ranges(base, k), f, fs))
                    for k in plan.kernels)
    return dataclasses.replace(plan, kernels=kernels)


def kernel_ranges(base: Ranges, k: K.Kernel) -> Ranges:
    """The facts at the top of kernel k: its assigned names, and for those only ever given
    int constants, the interval of those constants; the ids of the work-groups it is
    launched on, where every launch takes the same constant count."""
    values: dict[str, list] = {}
    for s in K.walk_stmts(k.body):
        if isinstance(s, (K.DeclVar, K.Assign)):
            values.setdefault(s.var, []).append(s.init if isinstance(s, K.DeclVar) else s.expr)
    assigned = {name: Interval(min(v.value for v in vs), max(v.value for v in vs)) for name, vs in values.items()
                if all(isinstance(v, K.Const) and v.ty == "int" for v in vs)}
    env = dict(base.env)
    groups = base.plan.launch_groups(k.name)
    if groups is not None:          # every launch takes this many work-groups
        env.update(_grid(base.plan, groups, groups))
    elif any(P.FIRST_GROUP in s.uses.params for s in base.plan.launches() if k.name in s.kernels()):
        env.update(_grid(base.plan, 1, P.slice_groups(base.plan.block_size)))   # a slice's ids
    return Ranges(base.plan, env, frozenset(values), defs=base.defs, assigned=assigned, aliases=base.aliases,
                  proofs=base.proofs)


def _grid(plan: P.Plan, fewest: int, most: int) -> dict[str, Interval]:
    """The ids of a launch of between `fewest` and `most` work-groups."""
    bs = plan.block_size
    return {"%group_id": Interval(0, most - 1), "%num_groups": Interval(fewest, most),
            "%global_id": Interval(0, most * bs - 1), "%global_size": Interval(fewest * bs, most * bs)}


def _own_exprs(s: K.Stmt, r: Ranges, f) -> K.Stmt:
    """A statement without bodies with f applied to its expressions."""
    changes = {}
    for name, kind in K._child_fields(type(s)):
        old = getattr(s, name)
        new = _expr(old, r, f) if kind == "expr" else tuple(_expr(x, r, f) for x in old) if kind == "exprs" \
            else _block(old, r.child(), f)
        if new != old:
            changes[name] = new
    return K.rebuilt(s, changes) if changes else s


def _expr(e: K.Expr, r: Ranges, f) -> K.Expr:
    """map_expr with the facts of each point: the arms of a `Select` under its condition
    (and its opposite); `e` itself where there is no f or nothing for f in e."""
    if f is None or not e.kinds & f.on:
        return e
    if type(e) is K.Bin and e.op is not Op.AND and e.op is not Op.OR:   # the common node
        return f.f(K.with_operands(e, _expr(e.a, r, f), _expr(e.b, r, f)), r)
    if isinstance(e, K.Select):
        cond = _expr(e.cond, r, f)
        a = _expr(e.a, r.refined(cond), f)
        b = _expr(e.b, r.refined(opposite(cond)), f)
        if (cond, a, b) == (e.cond, e.a, e.b):
            return f.f(e, r)
        new = K.select(cond, a, b)
        return f.f(new, r) if isinstance(new, K.Select) else new
    if isinstance(e, K.Bin) and e.op in (Op.AND, Op.OR):      # && and || evaluate b only after a
        a = _expr(e.a, r, f)
        b = _expr(e.b, r.refined(a if e.op == Op.AND else opposite(a)), f)
        if (a, b) != (e.a, e.b):
            e = K.refold(e, a=a, b=b)
        return f.f(e, r)
    changes = {}
    for name, kind in K._child_fields(type(e)):
        old = getattr(e, name)
        new = _expr(old, r, f) if kind == "expr" else tuple(_expr(x, r, f) for x in old)
        if new != old:
            changes[name] = new
    if changes:
        e = K.refold(e, **changes)
    return f.f(e, r)


def _block(stmts, r: Ranges, f, fs=None) -> tuple:
    out = []
    for s in stmts:
        if isinstance(s, K.For):
            start, stop, step = (_expr(x, r, f) for x in (s.start, s.stop, s.step))
            lo, hi, st = r.of(start), r.of(stop), r.of(step)
            inner = r.refined(K.binop("lt", start, stop)) if st.positive() else r.child()
            inner.env[s.var] = Interval(lo.lo, max(lo.lo, hi.hi - 1)) if st.positive() else FULL
            if st.positive() and s.var not in r.mutable:
                if inner.stable(stop):
                    inner.upper[s.var] = (stop,)
                if inner.stable(start):
                    inner.lower[s.var] = (start,)
            s = K.rebuilt(s, dict(start=start, stop=stop, step=step, body=_block(s.body, inner, f, fs)))
        elif isinstance(s, K.Let):
            s = K.Let(s.var, _expr(s.expr, r, f))
            r.bind(s.var, r.of(s.expr), s.expr if r.stable(s.expr) and s.expr.ty in ("int", "bool") else None)
        elif isinstance(s, (K.DeclVar, K.Assign)):
            s = _own_exprs(s, r, f)
            r.bind(s.var, r.assigned.get(s.var, FULL))
        elif isinstance(s, K.If):
            cond = _expr(s.cond, r, f)
            s = K.If(cond, _block(s.then, r.refined(cond), f, fs) if s.then else (),
                     _block(s.else_, r.refined(opposite(cond)), f, fs) if s.else_ else ())
        elif isinstance(s, K.Loop):
            inner = r.child()
            head = _block(s.head, inner, f, fs)
            s = K.Loop(head, _expr(s.cond, inner, f), _block(s.body, inner, f, fs))
        else:
            s = _own_exprs(s, r, f)
        result = fs(s, r) if fs else s
        out.extend(result if isinstance(result, tuple) else (result,))
    return tuple(out)
