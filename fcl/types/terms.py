"""Internal types, levels and schemes of the checker (not the written `TypeAst`).

Levels are `LZero | LSucc(l) | LVarT(name)`; `thread = Z`, `warp = 1+Z`,
`block = 1+warp`, `grid = 1+block`.  Types are frozen dataclasses; the
checker's unification variables are `TVarT` with a kind:

* ``"TYP"`` anything, ``"GT"`` no functions (pull-array elements),
* ``"PT"`` scalars and (nested) pairs of them (push-array elements),
* ``"BT"`` scalars (equality), ``"NUM"`` int/float/double
  (arithmetic overloading, defaults to int when generalised),
* ``"FRAC"`` float/double (sqrt, exp, ...; defaults to double).

Other packages (values, codegen, runtime) read these classes; they never
construct unification variables themselves.
"""
from __future__ import annotations

from dataclasses import dataclass

from fcl.base.hw import LEVEL_BY_NAME, LEVEL_KEYWORDS

# ---------------------------------------------------------------- levels


@dataclass(frozen=True)
class Level:
    """Base class of levels."""


@dataclass(frozen=True)
class LZero(Level):
    pass


@dataclass(frozen=True)
class LSucc(Level):
    inner: Level


@dataclass(frozen=True)
class LVarT(Level):
    name: str


THREAD = LZero()
WARP = LSucc(THREAD)
BLOCK = LSucc(WARP)
GRID = LSucc(BLOCK)
LEVEL_NAMES = {name: (THREAD, WARP, BLOCK, GRID)[depth] for name, depth in LEVEL_BY_NAME.items()}


def level_depth(level: Level) -> int | None:
    """0 for thread ... 3 for grid; None when the level contains a variable."""
    depth = 0
    while isinstance(level, LSucc):
        depth += 1
        level = level.inner
    return depth if isinstance(level, LZero) else None


def level_name(level: Level) -> str:
    """`thread`/`warp`/`block`/`grid`, `1+l` for open levels."""
    depth = level_depth(level)
    if depth is not None and depth <= 3:
        return LEVEL_KEYWORDS[depth]
    if isinstance(level, LSucc):
        return "1+" + level_name(level.inner)
    if isinstance(level, LVarT):
        return level.name
    return "Z"


# ---------------------------------------------------------------- types


@dataclass(frozen=True)
class Type:
    """Base class of types."""

    def __str__(self) -> str:
        return format_type(self)


@dataclass(frozen=True)
class TCon(Type):
    """A base type: "int", "float", "double" or "bool"."""
    name: str


@dataclass(frozen=True)
class TVarT(Type):
    """A type variable (unification variable or quantified); `kind` as above."""
    name: str
    kind: str = "TYP"


@dataclass(frozen=True)
class TPairT(Type):
    fst: Type
    snd: Type


@dataclass(frozen=True)
class TFunT(Type):
    arg: Type
    res: Type


@dataclass(frozen=True)
class TLevelFunT(Type):
    """`<lvar> -> body`."""
    lvar: str
    body: Type


@dataclass(frozen=True)
class TPullT(Type):
    elem: Type


@dataclass(frozen=True)
class TPushT(Type):
    elem: Type
    level: Level


INT = TCon("int")
FLOAT = TCon("float")
DOUBLE = TCon("double")
BOOL = TCon("bool")


@dataclass(frozen=True)
class Scheme:
    """`forall <lvars> tvars. body`; `str()` is the canonical form of language.md section 4."""
    lvars: tuple[str, ...]
    tvars: tuple[str, ...]
    body: Type

    def __str__(self) -> str:
        return format_scheme(self)


# ---------------------------------------------------------------- printing
# Canonical printing of types, levels and schemes (language.md section 4).
#
# Consumes internal `Type`/`Level`/`Scheme` values; produces the text
# `fclc check` prints: type variables renamed `'a`, `'b`, ... in order of
# first appearance, level variables under the name the user gave (internal
# suffixes such as `#12` dropped; `l`, `l1`, ... when there is none), a
# `forall` prefix with level variables first, and the fewest parentheses.
# Several types printed for one message share one `Namer`, so the same
# variable gets the same name in all of them.  Kinds are not printed.

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


class Namer:
    """Assigns printed names to variables, stable across several types."""

    def __init__(self):
        self.types: dict[str, str] = {}
        self.levels: dict[str, str] = {}
        self._used_levels: set[str] = set()

    def type_name(self, name: str) -> str:
        """`'a`, `'b`, ... `'z`, `'a1`, ... in order of first request."""
        if name not in self.types:
            n = len(self.types)
            letter = _LETTERS[n % 26]
            self.types[name] = "'" + letter + (str(n // 26) if n >= 26 else "")
        return self.types[name]

    def level_name(self, name: str) -> str:
        """The user's name for a level variable, made unique with a number."""
        if name not in self.levels:
            base = name.lstrip("?").split("#")[0] or "l"
            candidate, k = base, 0
            while candidate in self._used_levels:
                k += 1
                candidate = f"{base}{k}"
            self._used_levels.add(candidate)
            self.levels[name] = candidate
        return self.levels[name]


def format_level(lv: Level, namer: Namer | None = None) -> str:
    """`thread`/`warp`/`block`/`grid`, `1+grid` beyond, `1+l` over variables."""
    namer = namer or Namer()
    depth = level_depth(lv)
    if depth is not None and depth <= 3:
        return LEVEL_KEYWORDS[depth]
    if isinstance(lv, LSucc):
        return "1+" + format_level(lv.inner, namer)
    if isinstance(lv, LVarT):
        return namer.level_name(lv.name)
    if isinstance(lv, LZero):
        return "thread"
    return repr(lv)


def format_type(t: Type, namer: Namer | None = None) -> str:
    """A type in canonical form (fresh names unless a shared `namer` is given)."""
    return _fmt(t, namer or Namer(), arrow_left=False)


def format_types(*ts) -> list[str]:
    """Several types or levels with one shared naming, for one message."""
    namer = Namer()
    return [format_level(t, namer) if isinstance(t, (LZero, LSucc, LVarT)) else format_type(t, namer)
            for t in ts]


def format_scheme(s: Scheme, namer: Namer | None = None) -> str:
    """`forall <l> 'a 'b. type`, or just the type when nothing is quantified."""
    namer = namer or Namer()
    body = format_type(s.body, namer)
    quantified_levels = [namer.levels[v] for v in s.lvars if v in namer.levels]
    quantified_types = [namer.types[v] for v in s.tvars if v in namer.types]
    quantified_types.sort(key=_letter_order)
    quantified_levels.sort(key=lambda n: list(namer.levels.values()).index(n))
    if not quantified_levels and not quantified_types:
        return body
    prefix = " ".join([f"<{n}>" for n in quantified_levels] + quantified_types)
    return f"forall {prefix}. {body}"


def _letter_order(name: str) -> tuple[int, int]:
    """Sort key putting `'a` ... `'z` before `'a1` ...: first appearance order."""
    letter, digits = name[1], name[2:]
    return (int(digits) if digits else 0, _LETTERS.index(letter))


def _fmt(t: Type, namer: Namer, arrow_left: bool) -> str:
    if isinstance(t, TCon):
        return t.name
    if isinstance(t, TVarT):
        return namer.type_name(t.name)
    if isinstance(t, TFunT):
        text = f"{_fmt(t.arg, namer, True)} -> {_fmt(t.res, namer, False)}"
        return f"({text})" if arrow_left else text
    if isinstance(t, TLevelFunT):
        text = f"<{namer.level_name(t.lvar)}> -> {_fmt(t.body, namer, False)}"
        return f"({text})" if arrow_left else text
    if isinstance(t, TPairT):
        return f"({_fmt(t.fst, namer, False)}, {_fmt(t.snd, namer, False)})"
    if isinstance(t, TPullT):
        return f"[{_fmt(t.elem, namer, False)}]"
    if isinstance(t, TPushT):
        return f"[{_fmt(t.elem, namer, False)}]<{format_level(t.level, namer)}>"
    return repr(t)
