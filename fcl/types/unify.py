"""Unification of types and levels, with kinds and ranks.

Consumes internal `Type`s and `Level`s (fcl.types.terms); produces bindings
in a `Subst`.  It does not know about the AST or spans: a failure is a
`Mismatch` carrying the two clashing parts, the breadcrumbs leading to
them and an optional reason, which the inference engine turns into a
located `TypeCheckError`.

Variables: a `TVarT`/`LVarT` whose name starts with ``?`` is a unification
variable; any other variable is rigid (a quantified name or a skolem).
Kinds form a chain, strictest first: FRAC (float, double) < NUM (int,
float, double) < BT (scalars) < PT (scalars and pairs of them) < GT (no
functions) < TYP.  Every unification
variable has a rank (the let-depth where it was born); binding lowers the
ranks of the variables it captures, so generalisation is a rank test.
"""
from __future__ import annotations

import itertools

from fcl.base.errors import CompilerBug
from fcl.types.terms import (LSucc, LVarT, LZero, Level, TCon, TFunT, TLevelFunT, TPairT,
                             TPullT, TPushT, TVarT, Type)

KIND_ORDER = {"FRAC": 0, "NUM": 1, "BT": 2, "PT": 3, "GT": 4, "TYP": 5}

KIND_DESCRIPTION = {
    "FRAC": "a floating-point type (float or double)",
    "NUM": "a numeric type (int, float or double)",
    "BT": "a scalar type (int, float, double or bool)",
    "PT": "a scalar type or a pair of them (int, float, double, bool, (int, float), ...)",
    "GT": "a ground type (anything but a function)",
    "TYP": "a type",
}

_CON_KIND = {"int": "NUM", "float": "FRAC", "double": "FRAC", "bool": "BT"}

_counter = itertools.count(1)


def fresh_id() -> int:
    """A process-wide fresh number for variable names."""
    return next(_counter)


def is_flexible(name: str) -> bool:
    """Unification variables are the names starting with `?`."""
    return name.startswith("?")


def stricter(k1: str, k2: str) -> str:
    """The stricter (meet) of two kinds."""
    return k1 if KIND_ORDER[k1] <= KIND_ORDER[k2] else k2


def kind_allows(have: str, need: str) -> bool:
    """Does something of kind `have` satisfy a requirement `need`?"""
    return KIND_ORDER[have] <= KIND_ORDER[need]


class Mismatch(Exception):
    """Unification failed: `expected` vs `found` (types or levels) at `path`.

    `path` lists breadcrumbs from the outside in ("in the element type of the
    pull array", ...); `reason` replaces the plain "expected X, found Y" when
    the failure is a kind, occurs or scope problem.
    """

    def __init__(self, expected, found, reason: str | None = None, kind: str | None = None):
        super().__init__(reason or "mismatch")
        self.expected = expected
        self.found = found
        self.reason = reason
        self.kind = kind
        self.offender = None
        self.path: list[str] = []


# ---------------------------------------------------------------- substitution


class Subst:
    """Bindings of unification variables, with ranks; one per top-level declaration."""

    def __init__(self):
        self.tsub: dict[str, Type] = {}
        self.lsub: dict[str, Level] = {}
        self.rank: dict[str, int] = {}
        self.numeric: list[TVarT] = []

    # -- fresh variables

    def fresh_type(self, kind: str, rank: int) -> TVarT:
        """A new unification variable of `kind` born at let-depth `rank`."""
        name = f"?{fresh_id()}"
        self.rank[name] = rank
        v = TVarT(name, kind)
        if kind in ("NUM", "FRAC"):
            self.numeric.append(v)
        return v

    def default_numeric(self) -> None:
        """Bind every still-open NUM variable to int and FRAC variable to double."""
        for v in self.numeric:
            t = self.resolve(v)
            if isinstance(t, TVarT) and is_flexible(t.name):
                self.tsub[t.name] = TCon("int") if t.kind == "NUM" else TCon("double")

    def fresh_level(self, rank: int, hint: str = "l") -> LVarT:
        """A new level unification variable; `hint` is the name it prints as."""
        name = f"?{hint}#{fresh_id()}"
        self.rank[name] = rank
        return LVarT(name)

    def snapshot(self) -> tuple:
        """A copy of the bindings, for `restore` after a trial unification."""
        return dict(self.tsub), dict(self.lsub), dict(self.rank)

    def restore(self, snap: tuple) -> None:
        self.tsub, self.lsub, self.rank = (dict(x) for x in snap)

    # -- resolution

    def resolve(self, t: Type) -> Type:
        """Follow variable bindings at the top of `t` (shallow)."""
        while isinstance(t, TVarT):
            nxt = self.tsub.get(t.name)
            if nxt is None:
                return t
            t = nxt
        return t

    def resolve_level(self, lv: Level) -> Level:
        """Follow level-variable bindings at the top of `lv` (shallow)."""
        while isinstance(lv, LVarT):
            nxt = self.lsub.get(lv.name)
            if nxt is None:
                return lv
            lv = nxt
        return lv

    def zonk_level(self, lv: Level) -> Level:
        """`lv` with every bound level variable replaced, deeply."""
        lv = self.resolve_level(lv)
        if isinstance(lv, LSucc):
            return LSucc(self.zonk_level(lv.inner))
        return lv

    def zonk(self, t: Type) -> Type:
        """`t` with every bound variable replaced, deeply."""
        t = self.resolve(t)
        if isinstance(t, (TCon, TVarT)):
            return t
        if isinstance(t, TFunT):
            return TFunT(self.zonk(t.arg), self.zonk(t.res))
        if isinstance(t, TPullT):
            return TPullT(self.zonk(t.elem))
        if isinstance(t, TPushT):
            return TPushT(self.zonk(t.elem), self.zonk_level(t.level))
        if isinstance(t, TPairT):
            return TPairT(self.zonk(t.fst), self.zonk(t.snd))
        if isinstance(t, TLevelFunT):
            return TLevelFunT(t.lvar, self.zonk(t.body))
        raise CompilerBug(f"zonk: unknown type {t!r}")

    # -- unification

    def unify(self, expected: Type, found: Type) -> None:
        """Make `expected` and `found` equal by binding variables, or raise Mismatch."""
        e = self.resolve(expected)
        f = self.resolve(found)
        if e is f:
            return
        if isinstance(e, TVarT) and is_flexible(e.name):
            self._bind_var(e, f, expected_side=True)
        elif isinstance(f, TVarT) and is_flexible(f.name):
            self._bind_var(f, e, expected_side=False)
        elif isinstance(e, TCon) and isinstance(f, TCon):
            if e.name != f.name:
                raise Mismatch(e, f)
        elif isinstance(e, TVarT) and isinstance(f, TVarT):
            if e.name != f.name:
                raise Mismatch(e, f)
        elif type(e) is not type(f):
            raise Mismatch(e, f)
        else:
            self._unify_parts(e, f)

    def _unify_parts(self, e: Type, f: Type) -> None:
        """Unify two types with the same constructor, adding a breadcrumb on failure."""
        if isinstance(e, TFunT):
            self._descend(e.arg, f.arg, "in the argument type of the function")
            self._descend(e.res, f.res, "in the result type of the function")
        elif isinstance(e, TPullT):
            self._descend(e.elem, f.elem, "in the element type of the pull array")
        elif isinstance(e, TPushT):
            self._descend(e.elem, f.elem, "in the element type of the push array")
            try:
                self.unify_level(e.level, f.level)
            except Mismatch as m:
                m.path.insert(0, "in the level of the push array")
                raise
        elif isinstance(e, TPairT):
            self._descend(e.fst, f.fst, "in the first component of the pair")
            self._descend(e.snd, f.snd, "in the second component of the pair")
        elif isinstance(e, TLevelFunT):
            eb, fb = self.zonk(e.body), self.zonk(f.body)
            name = _common_binder(e.lvar, eb, f.lvar, fb)
            rigid = LVarT(name)
            self._descend(subst_level_in_type(eb, e.lvar, rigid),
                          subst_level_in_type(fb, f.lvar, rigid),
                          "under the level abstraction")
        else:
            raise CompilerBug(f"unify: unknown type {e!r}")

    def _descend(self, e: Type, f: Type, crumb: str) -> None:
        try:
            self.unify(e, f)
        except Mismatch as m:
            m.path.insert(0, crumb)
            raise

    def _bind_var(self, v: TVarT, t: Type, expected_side: bool) -> None:
        """Bind flexible `v` to `t` after kind, occurs and rank bookkeeping."""
        if isinstance(t, TVarT):
            self._bind_var_var(v, t, expected_side)
            return
        if self._occurs(v.name, t):
            exp, fnd = (v, t) if expected_side else (t, v)
            raise Mismatch(exp, fnd, reason="occurs")
        self.require_kind(t, v.kind, expected_side, v)
        self._lower_ranks(t, self.rank.get(v.name, 0))
        self.tsub[v.name] = t

    def _bind_var_var(self, v: TVarT, t: TVarT, expected_side: bool) -> None:
        """Bind a flexible variable to another variable, keeping the stricter kind."""
        if v.name == t.name:
            return
        rank = self.rank.get(v.name, 0)
        if not is_flexible(t.name):
            if not kind_allows(t.kind, v.kind):
                raise self._kind_mismatch(t, v.kind, expected_side, v)
            self.tsub[v.name] = t
            return
        rank = min(rank, self.rank.get(t.name, 0))
        if kind_allows(t.kind, v.kind):
            self.tsub[v.name] = t
            self.rank[t.name] = rank
        elif kind_allows(v.kind, t.kind):
            self.tsub[t.name] = v
            self.rank[v.name] = rank
        else:
            raise CompilerBug("kinds form a chain; one must allow the other")

    def require_kind(self, t: Type, kind: str, expected_side: bool = True, var: Type | None = None) -> None:
        """Check that `t` has `kind`, tightening flexible variables inside it; else Mismatch."""
        if kind == "TYP":
            return
        t = self.resolve(t)
        if isinstance(t, TVarT):
            if kind_allows(t.kind, kind):
                return
            if not is_flexible(t.name):
                raise self._kind_mismatch(t, kind, expected_side, var)
            tight = self.fresh_type(kind, self.rank.get(t.name, 0))
            self.tsub[t.name] = tight
            return
        if isinstance(t, TCon):
            if not kind_allows(_CON_KIND[t.name], kind):
                raise self._kind_mismatch(t, kind, expected_side, var)
            return
        if kind == "GT":
            self._require_ground(t, expected_side, var)
            return
        if kind == "PT" and isinstance(t, TPairT):
            self.require_kind(t.fst, "PT", expected_side, var)
            self.require_kind(t.snd, "PT", expected_side, var)
            return
        raise self._kind_mismatch(t, kind, expected_side, var)

    def _require_ground(self, t: Type, expected_side: bool, var) -> None:
        if isinstance(t, (TFunT, TLevelFunT)):
            raise self._kind_mismatch(t, "GT", expected_side, var)
        if isinstance(t, TPairT):
            self.require_kind(t.fst, "GT", expected_side, var)
            self.require_kind(t.snd, "GT", expected_side, var)
        elif isinstance(t, TPullT):
            self.require_kind(t.elem, "GT", expected_side, var)

    @staticmethod
    def _kind_mismatch(t: Type, kind: str, expected_side: bool, var) -> Mismatch:
        placeholder = var if var is not None else TVarT("?k", kind)
        exp, fnd = (placeholder, t) if expected_side else (t, placeholder)
        m = Mismatch(exp, fnd, reason="kind", kind=kind)
        m.offender = t
        return m

    def _occurs(self, name: str, t: Type) -> bool:
        """Does the variable `name` occur in `t` (through bindings)?"""
        t = self.resolve(t)
        if isinstance(t, TVarT):
            return t.name == name
        if isinstance(t, TCon):
            return False
        return any(self._occurs(name, c) for c in type_children(t))

    def _lower_ranks(self, t: Type, rank: int) -> None:
        """Lower the rank of every unification variable in `t` to at most `rank`."""
        t = self.resolve(t)
        if isinstance(t, TVarT):
            if is_flexible(t.name) and self.rank.get(t.name, 0) > rank:
                self.rank[t.name] = rank
            return
        if isinstance(t, TCon):
            return
        if isinstance(t, TPushT):
            self._lower_level_ranks(t.level, rank)
        for c in type_children(t):
            self._lower_ranks(c, rank)

    def _lower_level_ranks(self, lv: Level, rank: int) -> None:
        lv = self.resolve_level(lv)
        while isinstance(lv, LSucc):
            lv = self.resolve_level(lv.inner)
        if isinstance(lv, LVarT) and is_flexible(lv.name) and self.rank.get(lv.name, 0) > rank:
            self.rank[lv.name] = rank

    # -- levels

    def unify_level(self, expected: Level, found: Level) -> None:
        """Unify two levels structurally (`1+l` against `block` gives `l = warp`)."""
        e = self.resolve_level(expected)
        f = self.resolve_level(found)
        if isinstance(e, LSucc) and isinstance(f, LSucc):
            try:
                self.unify_level(e.inner, f.inner)
            except Mismatch as m:
                raise Mismatch(self.zonk_level(expected), self.zonk_level(found), m.reason) from m
            return
        if isinstance(e, LVarT) and isinstance(f, LVarT) and e.name == f.name:
            return
        if isinstance(e, LVarT) and is_flexible(e.name):
            self._bind_level(e, f, expected, found)
        elif isinstance(f, LVarT) and is_flexible(f.name):
            self._bind_level(f, e, expected, found)
        elif not (isinstance(e, LZero) and isinstance(f, LZero)):
            raise Mismatch(self.zonk_level(expected), self.zonk_level(found))

    def _bind_level(self, v: LVarT, lv: Level, expected: Level, found: Level) -> None:
        if self._level_occurs(v.name, lv):
            raise Mismatch(self.zonk_level(expected), self.zonk_level(found), reason="occurs")
        self._lower_level_ranks(lv, self.rank.get(v.name, 0))
        self.lsub[v.name] = lv

    def _level_occurs(self, name: str, lv: Level) -> bool:
        lv = self.resolve_level(lv)
        while isinstance(lv, LSucc):
            lv = self.resolve_level(lv.inner)
        return isinstance(lv, LVarT) and lv.name == name


def _common_binder(e_name: str, e_body: Type, f_name: str, f_body: Type) -> str:
    """The name both bodies of two level abstractions are unified under.

    One side's own binder, so that a flexible level of that side bound to it
    (a definition's part level that only its signature decides, `fun place <l> n
    a = concat n a` checked against `<l> -> int -> [['a]<l>] -> ['a]<1+l>`)
    stays bound by that side's abstraction, and the typed core can give it the
    level the abstraction is applied to: the side with flexible levels, else the
    found one.  A fresh name where the chosen one is free on the other side.
    """
    e_flex = any(is_flexible(n) for n in level_vars(e_body))
    f_flex = any(is_flexible(n) for n in level_vars(f_body))
    name, other_name, other_body = ((e_name, f_name, f_body) if e_flex and not f_flex
                                    else (f_name, e_name, e_body))
    if name != other_name and name in level_vars(other_body):
        return f"{e_name.split('#')[0]}#{fresh_id()}"
    return name


# ---------------------------------------------------------------- helpers on types


def type_children(t: Type) -> tuple[Type, ...]:
    """The immediate component types of `t`, left to right."""
    if isinstance(t, TFunT):
        return (t.arg, t.res)
    if isinstance(t, TPairT):
        return (t.fst, t.snd)
    if isinstance(t, (TPullT, TPushT)):
        return (t.elem,)
    if isinstance(t, TLevelFunT):
        return (t.body,)
    return ()


def level_succs(lv: Level) -> int:
    """How many `1+` wrap the level (its height above its base, Z or a variable)."""
    n = 0
    while isinstance(lv, LSucc):
        n += 1
        lv = lv.inner
    return n


def subst_level(lv: Level, name: str, by: Level) -> Level:
    """Replace the level variable `name` by `by` inside `lv`."""
    if isinstance(lv, LSucc):
        return LSucc(subst_level(lv.inner, name, by))
    if isinstance(lv, LVarT) and lv.name == name:
        return by
    return lv


def subst_level_in_type(t: Type, name: str, by: Level) -> Type:
    """Replace the level variable `name` by `by` throughout `t`, respecting binders."""
    return substitute(t, {}, {name: by})


def substitute(t: Type, tmap: dict[str, Type], lmap: dict[str, Level]) -> Type:
    """Replace named type and level variables in `t` (no bindings followed).

    A level abstraction `<x> -> ...` binding a name of `lmap` hides it inside.
    """
    if isinstance(t, TVarT):
        return tmap.get(t.name, t)
    if isinstance(t, TCon):
        return t
    if isinstance(t, TFunT):
        return TFunT(substitute(t.arg, tmap, lmap), substitute(t.res, tmap, lmap))
    if isinstance(t, TPullT):
        return TPullT(substitute(t.elem, tmap, lmap))
    if isinstance(t, TPushT):
        return TPushT(substitute(t.elem, tmap, lmap), _subst_level_map(t.level, lmap))
    if isinstance(t, TPairT):
        return TPairT(substitute(t.fst, tmap, lmap), substitute(t.snd, tmap, lmap))
    if isinstance(t, TLevelFunT):
        inner = {k: v for k, v in lmap.items() if k != t.lvar} if t.lvar in lmap else lmap
        return TLevelFunT(t.lvar, substitute(t.body, tmap, inner))
    raise CompilerBug(f"substitute: unknown type {t!r}")


def _subst_level_map(lv: Level, lmap: dict[str, Level]) -> Level:
    if not lmap:
        return lv
    if isinstance(lv, LSucc):
        return LSucc(_subst_level_map(lv.inner, lmap))
    if isinstance(lv, LVarT):
        return lmap.get(lv.name, lv)
    return lv


def type_vars(t: Type, acc: dict[str, TVarT] | None = None) -> dict[str, TVarT]:
    """The type variables of `t` (no bindings followed), in order of first appearance."""
    acc = {} if acc is None else acc
    if isinstance(t, TVarT):
        acc.setdefault(t.name, t)
    else:
        for c in type_children(t):
            type_vars(c, acc)
    return acc


def level_vars(t: Type, bound: frozenset = frozenset(), acc: dict[str, None] | None = None) -> list[str]:
    """The free level variables of `t`, in order of first appearance."""
    acc = {} if acc is None else acc
    if isinstance(t, TPushT):
        lv = t.level
        while isinstance(lv, LSucc):
            lv = lv.inner
        if isinstance(lv, LVarT) and lv.name not in bound:
            acc.setdefault(lv.name, None)
    if isinstance(t, TLevelFunT):
        level_vars(t.body, bound | {t.lvar}, acc)
    else:
        for c in type_children(t):
            level_vars(c, bound, acc)
    return list(acc)


def infer_kinds(t: Type) -> dict[str, str]:
    """The strictest kind each variable of a written type needs by position.

    Under a push array: PT; under a pull array (or inside a pair there): GT;
    variables that already carry a stricter kind keep it.
    """
    kinds: dict[str, str] = {}
    _walk_kinds(t, "TYP", kinds)
    return kinds


def _walk_kinds(t: Type, need: str, kinds: dict[str, str]) -> None:
    if isinstance(t, TVarT):
        kinds[t.name] = stricter(stricter(kinds.get(t.name, "TYP"), need), t.kind)
    elif isinstance(t, TPullT):
        _walk_kinds(t.elem, "GT", kinds)
    elif isinstance(t, TPushT):
        _walk_kinds(t.elem, "PT", kinds)
    elif isinstance(t, TPairT):
        _walk_kinds(t.fst, need, kinds)
        _walk_kinds(t.snd, need, kinds)
    else:
        for c in type_children(t):
            _walk_kinds(c, "TYP", kinds)
