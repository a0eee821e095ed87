"""Whether an `interleave`'s position function writes each place once, from its formula.

`one_to_one(pos, p, parts, j, n)`: `pos`, an int expression of the part number `p` (in
[0, parts)) and the element number `j` (in [0, n)), takes a different value for every
(p, j) under the conditions it returns (kir bools over the other names, made at run time
where they are not constants), or None where it finds no proof.  The lowering of
`interleave` then writes without claiming each place (`lower.primitives.interleave`); in
range and with every part of n elements (checked apart), such a function is a bijection
onto the result, so it leaves no holes either.

The method is mixed-radix numbers.  `pos` is brought to a sum of coefficient x digit
plus a constant, where a digit of p or j is `(v / s) % w` (stride s, width w; a top digit
`v / s` has no width), coefficients, strides and widths polynomials over the names and
subexpressions that p and j do not reach ("atoms", taken to be non-negative: a condition
each).  `/` and `%` by such a divisor d split a sum into the terms whose coefficient d
divides and one digit (`(d*q + r) / d = q + r / d` for non-negative r); a digit divided
again is a digit further up, where d divides its width.  Then:

* the digits of each of p and j chain up (strides 1, w1, w1*w2, ...) and reach its range,
  so together they tell v;
* ordered by their coefficients' sizes |c1| <= |c2| <= ..., each coefficient is at least
  the one before times that digit's width (|c1| >= 1): the highest digit in which two
  points differ then moves the sum further than all lower digits together can.  The order
  tried first is that of the coefficients' values with every atom 2^20 (a matrix's tiles:
  matmulF's write-back has eight digits); where that fails, every order of up to seven.

The comparisons are proved over the atoms' polynomials, with `d * (x / d) <= x` for an
atom `x / d` (the tiles of a matrix whose width is not a multiple of the tile width
leave a margin: concat2DGrid).  Positions are taken as exact integers: a position
function whose arithmetic wraps around past 2^31 is outside this analysis's word.
"""
from __future__ import annotations

from itertools import pairwise, permutations

from fcl.codegen import kir as K

Mono = tuple          # sorted atom keys (with repeats)
Poly = tuple          # sorted ((Mono, coefficient), ...), no zero coefficients


class _NoProof(Exception):
    pass


def _poly(terms: dict) -> Poly:
    return tuple(sorted((m, c) for m, c in terms.items() if c))


def _const(k: int) -> Poly:
    return _poly({(): k})


def _add(a: Poly, b: Poly, sign: int = 1) -> Poly:
    out = dict(a)
    for m, c in b:
        out[m] = out.get(m, 0) + sign * c
    return _poly(out)


def _mul(a: Poly, b: Poly) -> Poly:
    out: dict = {}
    for ma, ca in a:
        for mb, cb in b:
            m = tuple(sorted(ma + mb))
            out[m] = out.get(m, 0) + ca * cb
    return _poly(out)


def _scale(a: Poly, k: int) -> Poly:
    return _poly({m: c * k for m, c in a})


def _value(a: Poly) -> int | None:
    """The constant a is, or None."""
    if not a:
        return 0
    return a[0][1] if len(a) == 1 and a[0][0] == () else None


def _without(m: Mono, part: Mono) -> Mono | None:
    """Monomial m divided by monomial `part`, or None where `part` does not divide it."""
    rest = list(m)
    for x in part:
        if x not in rest:
            return None
        rest.remove(x)
    return tuple(rest)


def _divide(a: Poly, d: Poly) -> Poly | None:
    """a / d exactly, for d a single monomial with a positive coefficient, or None."""
    if len(d) != 1 or d[0][1] <= 0:
        return None
    (md, kd), = d
    out = {}
    for m, c in a:
        rest = _without(m, md)
        if rest is None or c % kd:
            return None
        out[rest] = c // kd
    return _poly(out)


def _estimate(a: Poly) -> int:
    """a's value where every atom is 2^20: the order of coefficients tried first (a
    coefficient of more atoms is taken as the larger; the digits of a matrix's tiles)."""
    return sum(c * (1 << (20 * len(m))) for m, c in a)


class _Prover:
    def __init__(self, p: str, j: str, defs: dict):
        self.vars = (p, j)
        self.defs = defs                    # Let-bound names of the position's code
        self.atoms: dict[str, K.Expr] = {}  # key -> the atom's expression
        self.positive: set[str] = set()     # atoms used as divisors (> 0, not just >= 0)
        self.assumed: set[str] = set()

    # ------------------------------------------------------------ expressions

    def inline(self, e: K.Expr) -> K.Expr:
        if not any(isinstance(x, K.Var) and x.name in self.defs for x in K.walk_expr(e)):
            return e
        return K.map_expr(lambda x: self.inline(self.defs[x.name]) if isinstance(x, K.Var)
                          and x.name in self.defs else x, e)

    def varies(self, e: K.Expr) -> bool:
        return bool(e.names & set(self.vars))

    def atom(self, e: K.Expr) -> Poly:
        """e as an atom; its divisors without their checks (where a divisor is zero the
        division's own check reports it), so two copies of a size are one atom."""
        e = K.map_expr(K.plain_divisor, e)
        key = K.format_expr(e)
        self.atoms[key] = e
        return _poly({(key,): 1})

    def poly(self, e: K.Expr) -> Poly:
        """An expression that p and j do not reach, as a polynomial over atoms."""
        if isinstance(e, K.Const) and e.ty == "int":
            return _const(int(e.value))
        if isinstance(e, K.Bin):
            op = K.GENERAL_OP.get(e.op, e.op)
            if op in (K.Op.ADD, K.Op.SUB):
                return _add(self.poly(e.a), self.poly(e.b), 1 if op == K.Op.ADD else -1)
            if op == K.Op.MUL:
                return _mul(self.poly(e.a), self.poly(e.b))
            if op == K.Op.DIV:          # exact: (3 * n) / n (a zero n is the division's error)
                exact = _divide(self.poly(e.a), self.poly(K.plain_divisor(e.b)))
                if exact is not None:
                    return exact
        if isinstance(e, K.Un) and e.op == K.Op.NEG:
            return _scale(self.poly(e.a), -1)
        return self.atom(e)

    def form(self, e: K.Expr) -> tuple[dict, Poly]:
        """e as ({digit: coefficient}, constant); a digit is (var, stride, width or None)."""
        if not self.varies(e):
            return {}, self.poly(e)
        if isinstance(e, K.Var):
            return {(e.name, _const(1), None): _const(1)}, ()
        if isinstance(e, K.Un) and e.op == K.Op.NEG:
            digits, c = self.form(e.a)
            return {d: _scale(k, -1) for d, k in digits.items()}, _scale(c, -1)
        if not isinstance(e, K.Bin):
            raise _NoProof
        op = K.GENERAL_OP.get(e.op, e.op)
        if op in (K.Op.ADD, K.Op.SUB):
            (da, ca), (db, cb) = self.form(e.a), self.form(e.b)
            sign = 1 if op == K.Op.ADD else -1
            digits = dict(da)
            for d, k in db.items():
                digits[d] = _add(digits.get(d, ()), k, sign)
            return {d: k for d, k in digits.items() if k}, _add(ca, cb, sign)
        if op == K.Op.MUL:
            a, b = (e.a, e.b) if self.varies(e.a) else (e.b, e.a)
            if self.varies(b):
                raise _NoProof      # a product of two digits
            digits, c = self.form(a)
            k = self.poly(b)
            return {d: _mul(x, k) for d, x in digits.items() if _mul(x, k)}, _mul(c, k)
        if op in (K.Op.DIV, K.Op.MOD):
            divisor = K.plain_divisor(e.b)
            if self.varies(divisor):
                raise _NoProof
            d = self.poly(divisor)
            if _value(d) is None:
                self.positive.update(m[0] for m, _ in d if len(m) == 1)
                if len(d) != 1 or len(d[0][0]) != 1:
                    raise _NoProof  # a divisor that is not one atom times a constant
            elif _value(d) <= 0:
                raise _NoProof
            return self.divided(self.form(e.a), d, op == K.Op.DIV)
        raise _NoProof

    def divided(self, f: tuple[dict, Poly], d: Poly, div: bool) -> tuple[dict, Poly]:
        """(q*d + r) / d = q + r / d and (q*d + r) % d = r % d, for non-negative q*d + r and r,
        where r is at most one digit of coefficient 1."""
        digits, c = f
        self.nonneg(c)
        for k in digits.values():
            self.nonneg(k)
        q, rest = {}, []
        for dig, k in digits.items():
            kq = _divide(k, d)
            if kq is None:
                rest.append((dig, k))
            else:
                q[dig] = kq
        cq = _divide(c, d)
        if cq is None and c:
            raise _NoProof
        if len(rest) > 1 or rest and rest[0][1] != _const(1):
            raise _NoProof
        if not rest:
            return (q, cq or ()) if div else ({}, ())
        (v, s, w), _ = rest[0]
        if div:
            top = None if w is None else _divide(w, d)
            if w is not None and top is None:
                raise _NoProof
            q[(v, _mul(s, d), top)] = _add(q.get((v, _mul(s, d), top), ()), _const(1))
            return q, cq or ()
        if w is not None and w != d and _divide(w, d) is None:
            raise _NoProof
        return {(v, s, d): _const(1)}, ()

    # ------------------------------------------------------------ comparisons

    def nonneg(self, a: Poly):
        """a >= 0 for non-negative atoms (or no proof)."""
        if any(c < 0 for _, c in a):
            raise _NoProof
        for m, _ in a:
            self.assumed.update(m)

    def at_least(self, a: Poly, b: Poly) -> bool:
        """Whether a >= b for non-negative atoms, with d * (x / d) <= x."""
        diff = _add(a, b, -1)
        for _ in range(8):
            if all(c >= 0 for _, c in diff):
                for m, _ in diff:
                    self.assumed.update(m)
                return True
            changed = False
            for m, c in diff:
                if c >= 0:
                    continue
                bound = self.floor_bound(m, c)
                if bound is not None:
                    diff = _add(_add(diff, _poly({m: c}), -1), bound)
                    changed = True
                    break
            if not changed:
                return False
        return False

    def floor_bound(self, m: Mono, c: int) -> Poly | None:
        """A lower bound of the negative term c * m without an atom x / d of m: c/d' * x * (m
        without x / d and d), where d = d' times atoms of m."""
        for key in set(m):
            e = self.atoms[key]
            if not (isinstance(e, K.Bin) and K.GENERAL_OP.get(e.op, e.op) == K.Op.DIV):
                continue
            d = self.poly(K.plain_divisor(e.b))
            if len(d) != 1 or d[0][1] <= 0:
                continue
            (md, kd), = d
            rest = _without(_without(m, (key,)), md)
            if rest is None or c % kd:
                continue
            self.positive.update(x for x in md)
            self.assumed.update(key for m, _ in self.atom(e.a) for key in m)    # d * (x / d) <= x, x >= 0
            return _mul(_poly({rest: c // kd}), self.poly(e.a))
        return None

    # ------------------------------------------------------------ the proof

    def prove(self, pos: K.Expr, ranges: dict[str, Poly]) -> None:
        digits, _ = self.form(self.inline(pos))
        widths = {}
        for v in self.vars:
            own = [(s, w) for (x, s, w) in digits if x == v]
            for s, w in own:
                if w is None:
                    w = _divide(ranges[v], s)
                widths[(v, s)] = w
            if not self._chain(v, own, ranges[v]):
                raise _NoProof
        terms = []
        for (v, s, _), k in digits.items():
            mag = k if all(c > 0 for _, c in k) else _scale(k, -1)
            if not all(c > 0 for _, c in mag):
                raise _NoProof          # a coefficient of unknown sign
            terms.append((mag, widths[(v, s)]))
        if not terms or self._attempt(sorted(terms, key=lambda t: _estimate(t[0]))):
            return
        if len(terms) > 7 or not any(self._attempt(order) for order in permutations(terms)):
            raise _NoProof

    def _attempt(self, order) -> bool:
        """`_ordered`, keeping the assumptions only of an order that works."""
        saved = set(self.assumed), set(self.positive)
        if self._ordered(order):
            return True
        self.assumed, self.positive = saved
        return False

    def _chain(self, v: str, own, reach: Poly) -> bool:
        """Whether the digits (stride, width) of v tell v: strides 1, w1, w1*w2, ... up to a
        top digit or a stride * width that reaches v's range."""
        by_stride = dict(own)
        if len(by_stride) != len(own):
            return False                # two digits at one stride
        stride, seen, visited = _const(1), 0, set()
        while stride in by_stride:
            if stride in visited:
                return False            # a digit of width 1 keeps its stride: no proof, not a loop
            visited.add(stride)
            w, seen = by_stride[stride], seen + 1
            if w is None:
                return seen == len(own)
            stride = _mul(stride, w)
        return seen == len(own) and self.at_least(stride, reach)

    def _ordered(self, order) -> bool:
        """Each coefficient at least the one before times its width, the first at least 1
        (a digit of no known width only last)."""
        first = order[0][0]
        if len(first) == 1 and first[0][1] > 0:
            self.positive.update(first[0][0])      # c * atoms >= 1 for positive atoms
        elif not self.at_least(first, _const(1)):
            return False
        for (mag, width), (after, _) in pairwise(order):
            if width is None or not self.at_least(after, _mul(mag, width)):
                return False
        return True


def one_to_one(pos: K.Expr, p: str, parts: K.Expr, j: str, n: K.Expr, defs: dict | None = None) -> list | None:
    """The conditions under which int `pos` differs for every p in [0, parts) and j in [0, n)
    (`defs`: the expressions of names bound on the way to pos), or None (see the module)."""
    prover = _Prover(p, j, defs or {})
    try:
        # (a count the host computes, a name in defs, is the expression it names: the same
        # atoms as the position's coefficients)
        ranges = {p: prover.poly(prover.inline(parts)), j: prover.poly(prover.inline(n))}
        prover.assumed.clear()
        prover.prove(pos, ranges)
    except _NoProof:
        return None
    conds = []
    for key in sorted(prover.assumed | prover.positive):
        e = prover.atoms[key]
        if isinstance(e, K.Const):
            continue
        conds.append(K.binop("gt" if key in prover.positive else "ge", e, K.cint(0)))
    return conds
