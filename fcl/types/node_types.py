"""The typed core: the checker's types, handed to the lowering.

The checker (`infer.check_decl`) records, per top-level declaration, the
types the lowering reads, each in the declaration's own type variables:

* `vars`: the instantiated type of every `Var` occurrence (a primitive's
  occurrence says what `force`, `while`, `power` store and at which level
  `concat`/`interleave` put their parts; a declaration's occurrence says at
  which type its body is instantiated), and of every empty array literal;
* `lets`: for every `let`, the type of its value and the variables the `let`
  generalises (a polymorphic `let` is instantiated at each use);
* `lams`: the rigid level variable of every `fn <l> => ...`;
* `types`: the type of each declaration's body.

A variable the declaration leaves open that is neither in its type nor
generalised by a `let` (no value of that type exists: an empty literal) is
int, a level so left open thread, as the checker defaults numeric variables.

The lowering inlines declarations and applies functions at compile time, so
one AST node is lowered at several types.  It carries an `Inst` (a
substitution of the declaration's variables by concrete types and levels)
in its environment: a declaration's body is lowered under the `Inst` that
`match`es its type against the concrete type of the occurrence that refers to
it; a polymorphic `let`'s value under the `let`'s `Inst` extended for the
use; the body of `fn <l> => ...` with its rigid variable bound to the level.
Every type the lowering looks up is then concrete (`Inst.scalar`,
`Inst.depth`); one that is not is a CompilerBug.
"""
from __future__ import annotations

from fcl.base.errors import CompilerBug
from fcl.types.terms import (INT, LSucc, LVarT, LZero, Level, TCon, TFunT, THREAD, TLevelFunT,
                             TPairT, TPullT, TPushT, TVarT, Type, level_depth)
from fcl.types.unify import is_flexible, level_vars, subst_level, substitute, type_vars


class DeclTypes:
    """The recorded types of one declaration (see the module docstring); keeps `decl`
    alive, so the node ids its tables are keyed by stay unique.  (Plain classes here:
    dataclasses would cost `import fcl` a few milliseconds.)"""
    __slots__ = ("decl", "type", "vars", "lets", "lams")

    def __init__(self, decl, type_: Type, vars_: dict, lets: dict, lams: dict):
        self.decl, self.type, self.vars, self.lets, self.lams = decl, type_, vars_, lets, lams


def finish_decl(decl, sub, body: Type, var_types, lets, lams) -> DeclTypes:
    """Zonk what `_Checker` recorded for `decl` (its Subst is final) and default
    the variables nothing else decides."""
    body = sub.zonk(body)
    vars_ = {id(node): sub.zonk(t) for node, t in var_types}
    lets_ = {key: (sub.zonk(t), tq, lq) for key, (t, tq, lq) in lets.items()}
    decided_t = {n for n in type_vars(body)}
    decided_l = set(level_vars(body))
    for _, tq, lq in lets_.values():
        decided_t |= tq
        decided_l |= lq
    tmap: dict[str, Type] = {}
    lmap: dict[str, Level] = {}
    for t in list(vars_.values()) + [t for t, _, _ in lets_.values()]:
        for n in type_vars(t):
            if is_flexible(n) and n not in decided_t:
                tmap[n] = INT
        for n in level_vars(t):
            if is_flexible(n) and n not in decided_l:
                lmap[n] = THREAD
    if tmap or lmap:
        vars_ = {k: substitute(t, tmap, lmap) for k, t in vars_.items()}
        lets_ = {k: (substitute(t, tmap, lmap), tq, lq) for k, (t, tq, lq) in lets_.items()}
    return DeclTypes(decl, body, vars_, lets_, dict(lams))


class TypedCore:
    """The recorded types of a sequence of declarations (the prelude's, a program's),
    looked up by AST node.  `parts` chain cores: the prelude's is shared."""

    def __init__(self, decls: list[DeclTypes] | None = None, parts: tuple = ()):
        self.parts = tuple(parts)
        self.decls: dict[int, DeclTypes] = {}
        self.vars: dict[int, Type] = {}
        self.lets: dict[int, tuple[Type, frozenset, frozenset]] = {}
        self.lams: dict[int, str] = {}
        for d in decls or ():
            self.add(d)

    def add(self, d: DeclTypes) -> None:
        self.decls[id(d.decl)] = d
        self.vars.update(d.vars)
        self.lets.update(d.lets)
        self.lams.update(d.lams)

    def then(self, other: "TypedCore") -> "TypedCore":
        """This core followed by `other` (a program after the prelude, an extension);
        a flat chain of the cores that hold tables, however often the REPL extends it."""
        return TypedCore(parts=self._leaves() + other._leaves())

    def _leaves(self) -> tuple:
        return self.parts + ((self,) if self.decls else ())

    def _find(self, table: str, key: int):
        for core in (self,) + self.parts[::-1]:
            hit = getattr(core, table).get(key)
            if hit is not None:
                return hit
        return None

    def _get(self, table: str, node, what: str):
        hit = self._find(table, id(node))
        if hit is None:
            raise CompilerBug(f"the typed core has no type for {what} at {_where(node)}")
        return hit

    def decl_type(self, decl) -> Type:
        return self._get("decls", decl, f"declaration `{decl.name}`").type

    def var_type(self, var) -> Type:
        """The type of a `Var` occurrence (or of an empty array literal)."""
        return self._get("vars", var, f"`{getattr(var, 'name', '[]')}`")

    def let_info(self, let) -> tuple[Type, frozenset, frozenset]:
        return self._get("lets", let, f"`let {let.name}`")

    def rigid_level(self, lam) -> str:
        return self._get("lams", lam, f"`fn <{lam.lvar}>`")


def _where(node) -> str:
    span = getattr(node, "span", None)
    return span.location() if span is not None and hasattr(span, "location") else "?"


# ---------------------------------------------------------------- instances


def level_of_depth(depth: int) -> Level:
    lv: Level = LZero()
    for _ in range(depth):
        lv = LSucc(lv)
    return lv


class Inst:
    """Concrete types and levels for the variables of the declaration (and the `let`s
    and `fn <l>`s around) whose body is being lowered."""
    __slots__ = ("core", "tmap", "lmap")

    def __init__(self, core: TypedCore, tmap: dict | None = None, lmap: dict | None = None):
        self.core, self.tmap, self.lmap = core, tmap or {}, lmap or {}

    def resolve(self, t: Type) -> Type:
        return substitute(t, self.tmap, self.lmap)

    def at(self, var) -> Type:
        """The concrete type of occurrence `var` (an `ast.Var`) here."""
        return self.resolve(self.core.var_type(var))

    def extended(self, tmap: dict, lmap: dict) -> "Inst":
        if not tmap and not lmap:
            return self
        return Inst(self.core, {**self.tmap, **tmap}, {**self.lmap, **lmap})

    def with_level(self, name: str, depth: int) -> "Inst":
        """Rigid level `name` (of a `fn <name> => ...` being applied) at level `depth`; also
        where a binding already made refers to it (`match` binds a variable that a level
        abstraction's body alone decides to the abstraction's own name)."""
        lv = level_of_depth(depth)
        one = {name: lv}
        tmap = {k: substitute(v, {}, one) for k, v in self.tmap.items()}
        lmap = {k: subst_level(v, name, lv) for k, v in self.lmap.items()}
        lmap[name] = lv
        return Inst(self.core, tmap, lmap)

    def for_decl(self, decl, occurrence: Type) -> "Inst":
        """The instance of declaration `decl` its occurrence of type `occurrence` refers to."""
        tmap, lmap = match(self.core.decl_type(decl), occurrence)
        return Inst(self.core, tmap, lmap)

    def for_let(self, let, occurrence: Type) -> "Inst":
        """This instance extended by the variables `let` generalises, as a use of type
        `occurrence` instantiates them."""
        t, tq, lq = self.core.let_info(let)
        tmap, lmap = match(self.resolve(t), occurrence)
        return self.extended({n: v for n, v in tmap.items() if n in tq},
                             {n: v for n, v in lmap.items() if n in lq})


def entry_inst(core: TypedCore, decl, arg_types: list[Type]) -> tuple[Inst, Type]:
    """(instance, result type) of entry point `decl` applied to arguments of `arg_types`;
    variables the arguments leave open are int (levels thread), as for `default_types`."""
    t = core.decl_type(decl)
    tmap: dict = {}
    lmap: dict = {}
    for a in arg_types:
        if not isinstance(t, TFunT):
            break
        _match(t.arg, a, tmap, lmap)
        t = t.res
    rest = substitute(t, tmap, lmap)
    for n in type_vars(rest):
        tmap.setdefault(n, INT)
    for n in level_vars(rest):
        lmap.setdefault(n, THREAD)
    return Inst(core, tmap, lmap), substitute(rest, tmap, lmap)


def match(pattern: Type, target: Type) -> tuple[dict, dict]:
    """Bindings of the variables of `pattern` that make it `target` (which is an
    instance of it)."""
    tmap: dict = {}
    lmap: dict = {}
    _match(pattern, target, tmap, lmap)
    return tmap, lmap


def _match(p: Type, t: Type, tmap: dict, lmap: dict) -> None:
    if isinstance(p, TVarT):
        tmap.setdefault(p.name, t)
    elif isinstance(t, TVarT) or isinstance(p, TCon):
        return                       # nothing to learn (an open target; a base type)
    elif isinstance(p, TFunT) and isinstance(t, TFunT):
        _match(p.arg, t.arg, tmap, lmap)
        _match(p.res, t.res, tmap, lmap)
    elif isinstance(p, TPairT) and isinstance(t, TPairT):
        _match(p.fst, t.fst, tmap, lmap)
        _match(p.snd, t.snd, tmap, lmap)
    elif isinstance(p, TPullT) and isinstance(t, TPullT):
        _match(p.elem, t.elem, tmap, lmap)
    elif isinstance(p, TPushT) and isinstance(t, TPushT):
        _match(p.elem, t.elem, tmap, lmap)
        _match_level(p.level, t.level, lmap)
    elif isinstance(p, TLevelFunT) and isinstance(t, TLevelFunT):
        inner: dict = {}
        _match(p.body, substitute(t.body, {}, {t.lvar: LVarT(p.lvar)}), tmap, inner)
        inner.pop(p.lvar, None)
        for n, v in inner.items():
            lmap.setdefault(n, v)
    else:
        raise CompilerBug(f"the typed core's {p} does not match {t}")


def _match_level(p: Level, t: Level, lmap: dict) -> None:
    while isinstance(p, LSucc) and isinstance(t, LSucc):
        p, t = p.inner, t.inner
    if isinstance(p, LVarT):
        lmap.setdefault(p.name, t)


# ---------------------------------------------------------------- what the lowering reads


def scalar(t: Type, what: str) -> str:
    """The name of base type `t` (an element type the lowering stores)."""
    if not isinstance(t, TCon):
        raise CompilerBug(f"the typed core gives {what} the type {t}, not a scalar type")
    return t.name


def shape(t: Type, what: str):
    """The element shape of `t` the lowering stores: a base type's name, or a pair (2-tuple)
    of shapes (stored as a structure of arrays)."""
    if isinstance(t, TPairT):
        return (shape(t.fst, what), shape(t.snd, what))
    return scalar(t, what)


def depth(level: Level, what: str) -> int:
    d = level_depth(level)
    if d is None:
        raise CompilerBug(f"the typed core gives {what} the open level {level}")
    return d


def params(t: Type) -> list[Type]:
    """The parameter types of a (curried) function type."""
    out = []
    while isinstance(t, TFunT):
        out.append(t.arg)
        t = t.res
    return out


def result(t: Type) -> Type:
    """The final result of a (curried) function type."""
    while isinstance(t, TFunT):
        t = t.res
    return t
