"""Internal types, levels and schemes of the checker (not the written `TypeAst`).

Levels are `LZero | LSucc(l) | LVarT(name)`; `thread = Z`, `warp = 1+Z`,
`block = 1+warp`, `grid = 1+block`.  Types are frozen dataclasses; the
checker's unification variables are `TVarT` with a kind:

* ``"TYP"`` anything, ``"GT"`` no functions (pull-array elements),
* ``"BT"`` scalars (push-array elements), ``"NUM"`` int/float/double
  (arithmetic overloading, defaults to int when generalised),
* ``"FRAC"`` float/double (sqrt, exp, ...; defaults to double).

Other packages (values, codegen, runtime) read these classes; they never
construct unification variables themselves.
"""
from __future__ import annotations

from dataclasses import dataclass

from fcl.hw import LEVEL_BY_NAME, LEVEL_KEYWORDS

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
        from fcl.types.printer import format_type
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
        from fcl.types.printer import format_scheme
        return format_scheme(self)
