"""Written types and levels: the `Type`, `Scheme` or `Level` of what a program writes.

A `sig`'s type (`scheme_from_ast`), a level written after a level application
(`written_level`), and the checks written types must pass: push arrays hold
scalars and pairs of them only, pull arrays hold no functions, every level is at most grid.
Also the level variables a signature abstracts over (`leading_level_binders`).
The kinds of type variables follow from their positions (builtins.close).
"""
from __future__ import annotations

from fcl.base.errors import CompilerBug, Span, TypeCheckError
from fcl.syntax import ast
from fcl.types.builtins import close
from fcl.types.messages import did_you_mean
from fcl.types.terms import (BOOL, DOUBLE, FLOAT, INT, LEVEL_NAMES, LSucc, LVarT, Level, Scheme,
                             TFunT, TLevelFunT, TPairT, TPullT, TPushT, TVarT, Type, format_level,
                             format_type)
from fcl.types.unify import level_succs


def scheme_from_ast(sa: ast.SchemeAst) -> Scheme:
    """The Scheme of a written `sig` type; kinds follow from positions.

    Raises TypeCheckError for a push array of non-scalars, a pull array of
    functions, an unknown level or a level above grid.
    """
    body = type_from_ast(sa.body, frozenset())
    return close(body)


def type_from_ast(t: ast.TypeAst, bound: frozenset) -> Type:
    """The Type of a written type (`bound`: the level variables bound around it)."""
    if isinstance(t, ast.TBase):
        return _BASE_TYPES[t.name]
    if isinstance(t, ast.TVar):
        return TVarT(t.name, "TYP")
    if isinstance(t, ast.TPair):
        return TPairT(type_from_ast(t.fst, bound), type_from_ast(t.snd, bound))
    if isinstance(t, ast.TFun):
        return TFunT(type_from_ast(t.arg, bound), type_from_ast(t.res, bound))
    if isinstance(t, ast.TLevelFun):
        return TLevelFunT(t.lvar, type_from_ast(t.body, bound | {t.lvar}))
    if isinstance(t, ast.TPull):
        _require_written_ground(t.elem)
        return TPullT(type_from_ast(t.elem, bound))
    if isinstance(t, ast.TPush):
        _require_written_scalar(t.elem)
        return TPushT(type_from_ast(t.elem, bound), written_level(t.level, t.span))
    raise CompilerBug(f"unknown written type {t!r}")


_BASE_TYPES = {"int": INT, "float": FLOAT, "double": DOUBLE, "bool": BOOL}


def _require_written_scalar(t: ast.TypeAst) -> None:
    """Raise unless the written element type of a push array is a scalar or pairs of them."""
    if isinstance(t, ast.TPair):
        _require_written_scalar(t.fst)
        _require_written_scalar(t.snd)
        return
    if not isinstance(t, (ast.TBase, ast.TVar)):
        raise TypeCheckError(
            "push arrays can hold only scalars (int, float, double or bool) and pairs of them, "
            f"not {_written(t)}", t.span,
            ["pull arrays may hold arrays too; push arrays hold what a buffer (or one buffer "
             "per component of a pair) can store"])


def _require_written_ground(t: ast.TypeAst) -> None:
    """Raise if the written element type of a pull array is or holds a function."""
    if isinstance(t, (ast.TFun, ast.TLevelFun)):
        raise TypeCheckError(f"pull arrays cannot hold functions, but this element type is {_written(t)}",
                             t.span)
    if isinstance(t, ast.TPair):
        _require_written_ground(t.fst)
        _require_written_ground(t.snd)


def _written(t: ast.TypeAst) -> str:
    """A written type as printed, for a message (`this type` when it has no Type)."""
    try:
        return format_type(type_from_ast(t, frozenset()))
    except TypeCheckError:
        return "this type"


def written_level(lv: ast.LevelAst, span: Span, scope: dict[str, Level] | None = None) -> Level:
    """The Level of a written level; with `scope`, variables must be bound there."""
    level = _level_from_ast(lv, scope)
    if too_high(level):
        raise TypeCheckError(f"there is no level above grid, but this is {format_level(level)}",
                             getattr(lv, "span", span))
    return level


def _level_from_ast(lv: ast.LevelAst, scope: dict[str, Level] | None) -> Level:
    """The Level of a written level, not yet checked against grid."""
    if isinstance(lv, ast.LNamed):
        if lv.name not in LEVEL_NAMES:
            raise TypeCheckError(f"unknown level `{lv.name}`; the levels are thread, warp, block "
                                 "and grid", lv.span)
        return LEVEL_NAMES[lv.name]
    if isinstance(lv, ast.LVar):
        if scope is None:
            return LVarT(lv.name)
        if lv.name not in scope:
            raise TypeCheckError(f"unbound level variable `{lv.name}`"
                                 f"{did_you_mean(lv.name, list(scope) + list(LEVEL_NAMES))}",
                                 lv.span, ["bind it with `fn <l> => ...` or `fun f <l> x = ...`"])
        return scope[lv.name]
    if isinstance(lv, ast.LSucc):
        return LSucc(_level_from_ast(lv.inner, scope))
    raise CompilerBug(f"unknown written level {lv!r}")


def level_base(lv: Level) -> Level:
    """A level without its `1+`s: a level variable or thread."""
    while isinstance(lv, LSucc):
        lv = lv.inner
    return lv


def too_high(lv: Level) -> bool:
    """More than three `1+` (above grid, whatever the base)."""
    return level_succs(lv) > 3


def leading_level_binders(t: Type) -> list[str]:
    """The level variables a signature abstracts over, outermost first (`<l> -> ...`)."""
    names = []
    while isinstance(t, (TLevelFunT, TFunT)):
        if isinstance(t, TLevelFunT):
            names.append(t.lvar)
            t = t.body
        else:
            t = t.res
    return names
