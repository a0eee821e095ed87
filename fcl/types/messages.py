"""The words of type errors: how the checker (infer.py) names expressions, types and clashes.

Functions of a `Mismatch` (from unify.py) and a substitution that build a
`TypeCheckError` or its notes; names of expressions (`describe`, `callee`);
hints for misspelt names (`did_you_mean`) and for level variables named like
levels; the error for a `sig` with no declaration after it.  Nothing here
decides a type.
"""
from __future__ import annotations

import difflib

from fcl.base.errors import Span, TypeCheckError
from fcl.syntax import ast
from fcl.types.terms import (LEVEL_NAMES, LSucc, LVarT, LZero, Namer, Scheme, TLevelFunT, TPullT,
                             TPushT, Type, format_level, format_scheme, format_type)
from fcl.types.unify import KIND_DESCRIPTION, Mismatch, Subst, type_vars

_KIND_NOTES = {
    "BT": "`==` and `!=` compare scalars (int, float, double, bool) only",
    "PT": "push arrays hold scalars and pairs of them (int, float, double, bool, (int, float) ...); "
          "pull arrays may hold arrays too",
    "GT": "pull arrays and array literals cannot hold functions",
    "NUM": "arithmetic and comparisons work on int, float and double",
    "FRAC": "sqrt, exp, log, sin, cos and floor work on float and double",
}

_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")


def mismatch_error(m: Mismatch, sub: Subst, expected: Type, found: Type, span: Span,
                   context: str, notes: list[str] | None = None) -> TypeCheckError:
    """The error for a failed unification of `expected` with `found` at `span`: `context`,
    both types in full, the innermost clash; `notes` replace the default explanation of
    a kind failure."""
    namer = Namer()
    full_e = format_type(sub.zonk(expected), namer)
    full_f = format_type(sub.zonk(found), namer)
    inner = describe_failure(m, sub, namer)
    if m.path or m.reason:
        where = ", ".join(m.path)
        detail = f" ({where}: {inner})" if where else f" ({inner})"
        if m.reason == "kind" and not m.path:
            message = f"{context}: {inner}"
        else:
            message = f"{context}: expected {full_e}, found {full_f}{detail}"
    else:
        message = f"{context}: expected {full_e}, found {full_f}"
    if notes is not None and m.reason == "kind":
        return TypeCheckError(message, span, notes)
    return TypeCheckError(message, span, (notes or []) + mismatch_notes(m, sub))


def describe_failure(m: Mismatch, sub: Subst, namer: Namer) -> str:
    """The innermost clash of a Mismatch in words."""
    if m.reason == "kind":
        offender = m.offender if m.offender is not None else m.found
        return f"expected {KIND_DESCRIPTION[m.kind]}, found {_show(offender, sub, namer)}"
    if m.reason == "occurs":
        return (f"this would need an infinite type, {_show(m.expected, sub, namer)} = "
                f"{_show(m.found, sub, namer)}")
    return f"expected {_show(m.expected, sub, namer)}, found {_show(m.found, sub, namer)}"


def signature_error(decl: ast.Sig, sig: Scheme, inferred: Scheme, general: bool, m: Mismatch,
                    sub: Subst) -> TypeCheckError:
    """The error at a `sig` whose definition has the type `inferred`: `general` when the
    sig's type is an instance of the definition's; `m`, where the two part ways."""
    sig_text, inf_text = format_scheme(sig), format_scheme(inferred)
    if sig_text == inf_text:
        sig_text += kinds_text(sig)
        inf_text += kinds_text(inferred)
    if general:
        msg = (f"the signature of `{decl.name}` is more general than its definition: the "
               f"signature says {sig_text}, but the definition only has type {inf_text}")
    else:
        msg = (f"the signature of `{decl.name}` does not match its definition: the signature "
               f"says {sig_text}, but the definition has type {inf_text}")
    return TypeCheckError(msg, decl.span, signature_notes(m, sub))


def signature_notes(m: Mismatch, sub: Subst) -> list[str]:
    """Where a signature and its definition part ways, then the usual hints."""
    where = ", ".join(m.path)
    clash = describe_failure(m, sub, Namer())
    first = f"{where}: {clash}" if where else clash
    return [first] + mismatch_notes(m, sub)


def _show(x, sub: Subst, namer: Namer) -> str:
    """A type or level as it is after `sub`, its variables named by `namer`."""
    if isinstance(x, (LZero, LSucc, LVarT)):
        return format_level(sub.zonk_level(x), namer)
    return format_type(sub.zonk(x), namer)


def mismatch_notes(m: Mismatch, sub: Subst) -> list[str]:
    """Hints for a clash: what a kind allows, levels applied too late, push against pull."""
    notes = []
    if m.reason == "kind" and m.kind in _KIND_NOTES:
        notes.append(_KIND_NOTES[m.kind])
    e, f = m.expected, m.found
    if isinstance(e, Type) and isinstance(f, Type):
        e, f = sub.resolve(e), sub.resolve(f)
        if isinstance(f, TLevelFunT) and not isinstance(e, TLevelFunT):
            notes.append("a level-abstracted function (<l> -> ...) must be applied to a level, "
                         "e.g. `push <block>`, before it is used")
        if isinstance(e, (TPullT, TPushT)) and isinstance(f, (TPullT, TPushT)) and type(e) is not type(f):
            notes.append("`push <level>` turns a pull array into a push array; `force` turns a "
                         "push array into a pull array")
    return notes


def kinds_text(s: Scheme) -> str:
    """` (where 'a is a scalar type, ...)`: the kinds of a scheme's type variables, as printed."""
    namer = Namer()
    format_scheme(s, namer)
    kinds = {n: v.kind for n, v in type_vars(s.body).items()}
    parts = [f"{namer.types[n]} is {KIND_DESCRIPTION[kinds.get(n, 'TYP')]}"
             for n in s.tvars if n in namer.types]
    return f" (where {', '.join(parts)})" if parts else ""


def callee(fn_expr: ast.Expr) -> tuple[str | None, int]:
    """The name at the head of an application chain and the number of the next argument."""
    k = 1
    e = fn_expr
    while isinstance(e, ast.App):
        k += 1
        e = e.fn
    while isinstance(e, ast.LevelApp):
        e = e.fn
    return (e.name if isinstance(e, ast.Var) else None), k


def head_text(e: ast.Expr) -> str:
    """The name at the head of an application chain, else `f` (for an example to write)."""
    head, _ = callee(e)
    return head if head is not None else "f"


def describe(e: ast.Expr) -> str:
    """How to name an expression in a message."""
    if isinstance(e, ast.Var):
        return f"`{e.name}`"
    head, k = callee(e)
    if head is not None and isinstance(e, ast.App):
        return f"`{head}` applied to {k - 1} argument{'s' if k > 2 else ''}"
    if head is not None:
        return f"`{head}` with its level"
    return "this expression"


def ordinal(k: int) -> str:
    """`first`, `second`, ... `eighth`, then `9th`."""
    return _ORDINALS[k - 1] if k <= len(_ORDINALS) else f"{k}th"


def did_you_mean(name: str, candidates) -> str:
    """`; did you mean `x` or `y`?` for the candidates close to `name`, else nothing."""
    close_names = difflib.get_close_matches(name, list(candidates), n=3, cutoff=0.6)
    if not close_names:
        return ""
    return "; did you mean " + " or ".join(f"`{c}`" for c in close_names) + "?"


def orphan_sig(sig: ast.Sig, nxt: ast.Val | ast.Sig | None) -> TypeCheckError:
    """The error for a `sig` not followed by its declaration (`nxt` follows it)."""
    if nxt is None:
        what = "but nothing follows it"
    elif isinstance(nxt, ast.Sig):
        what = f"but another signature (for `{nxt.name}`) follows it"
    else:
        what = f"but the next declaration is `{nxt.name}`"
    return TypeCheckError(f"the signature for `{sig.name}` must be followed by the declaration of "
                          f"`{sig.name}`, {what}", sig.span)


def result_span(expr: ast.Expr) -> Span:
    """The part of a definition that produces its result: under `fn`s and `let`s, the last
    stage of a `|>` pipeline, else the expression itself."""
    while True:
        if isinstance(expr, (ast.Lam, ast.LevelLam, ast.Let)):
            expr = expr.body
        elif isinstance(expr, ast.BinOp) and expr.op == "|>":
            expr = expr.right
        else:
            return expr.span


def level_name_hints(scheme_ast) -> list[str]:
    """Notes for level variables in a written type whose names are close to a level's name."""
    names = sorted({lv.name for lv in _walk_levels(scheme_ast) if isinstance(lv, ast.LVar)})
    hints = []
    for name in names:
        close = difflib.get_close_matches(name, list(LEVEL_NAMES), n=1, cutoff=0.6)
        if close and close[0] != name:
            hints.append(f"`{name}` is a level variable here (it stands for any level); "
                         f"did you mean the level `{close[0]}`?")
    return hints


def _walk_levels(node):
    """Every level written inside a type or scheme AST."""
    if isinstance(node, (ast.LVar, ast.LNamed, ast.LSucc)):
        yield node
        if isinstance(node, ast.LSucc):
            yield from _walk_levels(node.inner)
        return
    fields = getattr(node, "__dataclass_fields__", None)
    if fields is None:
        if isinstance(node, (tuple, list)):
            for x in node:
                yield from _walk_levels(x)
        return
    for name in fields:
        if name != "span":
            yield from _walk_levels(getattr(node, name))


def level_ast_vars(lv: ast.LevelAst) -> list[ast.LVar]:
    """The level variable a written level is built on (`1+1+l`: `l`), if any."""
    while isinstance(lv, ast.LSucc):
        lv = lv.inner
    return [lv] if isinstance(lv, ast.LVar) else []
