"""Which part of a definition makes it disagree with its `sig`.

When a definition's type does not match its signature, the checker (fcl/types/infer.py) finds
the conflict only at the end, at the `sig`; the cause is usually one expression that fixes a
type or a level the signature does not allow: a literal (`1.5` where the sig says int), a
written level (`push <thread>` where it says grid), an int-only operator, a function of a
fixed type (`i2d`).  `culprit` finds it by checking the definition again with one such
expression at a time replaced by a hole of any type: the first whose hole makes the
definition match the signature is the cause, for certain (alone, it makes the difference).
Where no single expression does, there is no culprit, and the error stays at the `sig`.
Nothing here runs unless a signature check has failed.
"""
from __future__ import annotations

import re

from fcl.base.errors import Span, TypeCheckError
from fcl.syntax import ast
from fcl.types.terms import Scheme, Type, format_scheme, format_type
from fcl.types.written import leading_level_binders

MAX_TRIES = 80        # re-checks of one definition at most (each costs one inference of it)


def culprit(decl: ast.Val, sig: tuple[ast.Sig, Scheme], scope: dict[str, Scheme],
            checker: type) -> tuple[Span, str] | None:
    """(span, words) of the one expression of `decl` without which it would match `sig`; None
    when there is none (or it is not found within MAX_TRIES re-checks).  `checker` is the
    checker's class (infer._Checker), which checks the definition again."""
    fixed, named = [], []
    _candidates(decl.value, frozenset(), scope, fixed, named)
    tries = 0
    for node in fixed + named:              # written literals and levels before library names
        if tries >= MAX_TRIES:
            return None
        tries += 1
        if _fits_without(decl, sig, scope, node, checker):
            return node.span, _words(node, scope)
    return None


def _fits_without(decl: ast.Val, sig, scope, hole, checker: type) -> bool:
    """Whether `decl` matches `sig` once `hole` is a hole of any type."""
    class Holed(checker):
        def infer(self, e):
            if e is hole:
                return self.sub.fresh_type("TYP", self.depth)
            return super().infer(e)
    holed = Holed(scope, self_name=decl.name)
    holed.sig_levels = leading_level_binders(sig[1].body)
    try:
        t = holed.infer(decl.value)
        holed.check_signature(t, sig[1], sig[0])
        holed.finish(decl.span)
        return True
    except (TypeCheckError, RecursionError):
        return False


_INT_ONLY = ("%", "div", "mod", "<<", ">>", "|", "^", "&")


def _candidates(e, bound: frozenset, scope, fixed: list, named: list) -> None:
    """The expressions of `e` that fix a type or level by themselves, in source order:
    literals, hardware parameters, written levels, int-only and boolean operators (`fixed`),
    and uses of declarations whose type mentions a base type (`named`)."""
    if isinstance(e, (ast.IntLit, ast.FloatLit, ast.DoubleLit, ast.BoolLit, ast.HwParam)):
        fixed.append(e)
    elif isinstance(e, ast.Var):
        s = scope.get(e.name)
        if e.name not in bound and s is not None and _mentions_base_type(s.body):
            named.append(e)
    elif isinstance(e, ast.LevelApp) and _written_level(e.level):
        fixed.append(e)
    elif isinstance(e, ast.BinOp) and (e.op in _INT_ONLY or e.op in ("&&", "||")):
        fixed.append(e)
    elif isinstance(e, ast.UnOp) and e.op == "not":
        fixed.append(e)
    if isinstance(e, ast.Lam):
        _candidates(e.body, bound | {e.param}, scope, fixed, named)
    elif isinstance(e, ast.Let):
        _candidates(e.value, bound, scope, fixed, named)
        _candidates(e.body, bound | {e.name}, scope, fixed, named)
    else:
        for child in _children(e):
            _candidates(child, bound, scope, fixed, named)


def _children(e) -> list:
    if isinstance(e, ast.App):
        return [e.fn, e.arg]
    if isinstance(e, ast.LevelApp):
        return [e.fn]
    if isinstance(e, ast.LevelLam):
        return [e.body]
    if isinstance(e, ast.If):
        return [e.cond, e.then, e.else_]
    if isinstance(e, ast.Pair):
        return [e.fst, e.snd]
    if isinstance(e, ast.ArrayLit):
        return list(e.elems)
    if isinstance(e, ast.BinOp):
        return [e.left, e.right]
    if isinstance(e, ast.UnOp):
        return [e.operand]
    return []


def _written_level(lv) -> bool:
    """A level written with `thread`/`warp`/`block`/`grid` (and `1+`), no variable."""
    while isinstance(lv, ast.LSucc):
        lv = lv.inner
    return isinstance(lv, ast.LNamed)


def _mentions_base_type(t: Type) -> bool:
    return re.search(r"\b(int|float|double|bool)\b", format_type(t)) is not None


_LITERAL_TYPES = {ast.IntLit: "an int", ast.FloatLit: "a float", ast.DoubleLit: "a double",
                  ast.BoolLit: "a bool", ast.HwParam: "an int"}


def _words(e, scope) -> str:
    """How a note names the culprit: `1.5` (a double), `push <thread>` (level thread), ..."""
    text = _source(e.span)
    shown = f"`{text}`" if text else "this expression"
    if type(e) in _LITERAL_TYPES:
        return f"{shown} ({_LITERAL_TYPES[type(e)]})"
    if isinstance(e, ast.LevelApp):
        return f"{shown} (a written level)"
    if isinstance(e, ast.BinOp):
        return f"{shown} (`{e.op}` works on {'bools' if e.op in ('&&', '||') else 'ints'} only)"
    if isinstance(e, ast.UnOp):
        return f"{shown} (`not` works on bools only)"
    if isinstance(e, ast.Var):
        return f"{shown} (of type {format_scheme(scope[e.name])})"
    return shown


def _source(span: Span) -> str:
    text = span.source.text[span.start:span.end]
    return text if text and "\n" not in text and len(text) <= 40 else ""
