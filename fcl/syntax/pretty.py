"""AST -> FCL text with the fewest parentheses that precedence allows.

The output parses back to an equal AST (spans aside): `parse(print(e)) == e`.
Binary operators are printed with spaces around them, so a negative literal
always follows white space, an opening bracket or a comma (language.md
section 1); `-` applied to something starting with a digit or `-` gets a space
(`- 2` is negation of 2, `-2` the literal).  `fn`/`let`/`if` are bare only as
the rightmost part of their context, where they may extend to the end.
Declarations go one to a line; long expressions are not broken.
"""
from __future__ import annotations

from fcl.base.errors import CompilerBug
from fcl.base.recursion import deep_recursion
from fcl.syntax import ast as A
from fcl.syntax.parser import NON_ASSOC, PRECEDENCE, RIGHT_ASSOC

# Precedence levels of the non-binary forms (binary operators: 1..9).
LOW, PREFIX, APP, ATOM = 0, 10, 11, 12


# ---------------------------------------------------------------- levels, types, schemes

def print_level(level: A.LevelAst) -> str:
    """Level -> `block`, `lvl`, `1+lvl`."""
    if isinstance(level, (A.LNamed, A.LVar)):
        return level.name
    if isinstance(level, A.LSucc):
        return "1+" + print_level(level.inner)
    raise CompilerBug(f"not a level: {level!r}")


def print_type(ty: A.TypeAst) -> str:
    """Type -> text; `->` is right associative, so only a function argument
    that is itself a function (or level function) gets parentheses."""
    if isinstance(ty, A.TBase):
        return ty.name
    if isinstance(ty, A.TVar):
        return "'" + ty.name
    if isinstance(ty, A.TPair):
        return f"({print_type(ty.fst)}, {print_type(ty.snd)})"
    if isinstance(ty, A.TPull):
        return f"[{print_type(ty.elem)}]"
    if isinstance(ty, A.TPush):
        return f"[{print_type(ty.elem)}]<{print_level(ty.level)}>"
    if isinstance(ty, A.TLevelFun):
        return f"<{ty.lvar}> -> {print_type(ty.body)}"
    if isinstance(ty, A.TFun):
        arg = print_type(ty.arg)
        if isinstance(ty.arg, (A.TFun, A.TLevelFun)):
            arg = f"({arg})"
        return f"{arg} -> {print_type(ty.res)}"
    raise CompilerBug(f"not a type: {ty!r}")


def print_scheme(scheme: A.SchemeAst) -> str:
    """Scheme -> `forall <l> 'a. t`, or just the type when nothing is quantified."""
    body = print_type(scheme.body)
    if not scheme.lvars and not scheme.tvars:
        return body
    binders = [f"<{l}>" for l in scheme.lvars] + ["'" + t for t in scheme.tvars]
    return f"forall {' '.join(binders)}. {body}"


# ---------------------------------------------------------------- expressions

def print_expr(expr: A.Expr) -> str:
    """Expression -> one line of text with minimal parentheses."""
    with deep_recursion():
        return _expr(expr, LOW, True)


def _expr(e: A.Expr, need: int, last: bool) -> str:
    """Print e where the context needs precedence >= need; `last` says nothing
    follows e in its context, so a `fn`/`let`/`if` needs no parentheses."""
    prec = _prec(e)
    if prec == LOW and last:
        return _form(e, need, last)
    if prec < need or prec == LOW:
        return "(" + _form(e, LOW, True) + ")"
    return _form(e, need, last)


def _prec(e: A.Expr) -> int:
    """The precedence level an expression is printed at."""
    if isinstance(e, (A.Lam, A.LevelLam, A.Let, A.If)):
        return LOW
    if isinstance(e, A.BinOp):
        return PRECEDENCE[e.op]
    if isinstance(e, A.UnOp):
        return PREFIX
    if isinstance(e, (A.App, A.LevelApp)):
        return APP
    return ATOM


def _form(e: A.Expr, need: int, last: bool) -> str:
    """Print e without parentheses of its own."""
    if isinstance(e, A.BinOp):
        return _binop(e, last)
    if isinstance(e, A.UnOp):
        return _unop(e, last)
    if isinstance(e, A.App):
        return f"{_expr(e.fn, APP, False)} {_expr(e.arg, ATOM, last)}"
    if isinstance(e, A.LevelApp):
        return f"{_expr(e.fn, APP, False)} <{print_level(e.level)}>"
    if isinstance(e, (A.Lam, A.LevelLam)):
        return _lambda(e)
    if isinstance(e, A.Let):
        return _let(e)
    if isinstance(e, A.If):
        return f"if {print_expr(e.cond)} then {print_expr(e.then)} else {print_expr(e.else_)}"
    return _atom(e)


def _binop(e: A.BinOp, last: bool) -> str:
    """`l op r` with the operand precedences that keep the tree as it is."""
    prec = PRECEDENCE[e.op]
    if e.op in RIGHT_ASSOC:
        left_need, right_need = prec + 1, prec
    elif e.op in NON_ASSOC:
        left_need, right_need = prec + 1, prec + 1
    else:
        left_need, right_need = prec, prec + 1
    left = _expr(e.left, left_need, False)
    right = _expr(e.right, right_need, last)
    return f"{left} {e.op} {right}"


def _unop(e: A.UnOp, last: bool) -> str:
    """`-e` / `not e`; `- 2` and `- -x` keep the minus from reading as a literal or comment."""
    operand = _expr(e.operand, PREFIX, last)
    if e.op == "not" or operand[:1].isdigit() or operand.startswith("-"):
        return f"{e.op} {operand}"
    return e.op + operand


def _binders(e: A.Expr) -> tuple[list[str], A.Expr]:
    """Nested lambdas -> (`<l>`/`x` binders in order, innermost body)."""
    out = []
    while isinstance(e, (A.Lam, A.LevelLam)):
        out.append(e.param if isinstance(e, A.Lam) else f"<{e.lvar}>")
        e = e.body
    return out, e


def _lambda(e: A.Expr) -> str:
    """`fn x <l> y => body` for a chain of lambdas."""
    binders, body = _binders(e)
    return f"fn {' '.join(binders)} => {print_expr(body)}"


def _sugar_binders(e: A.Expr) -> tuple[list[str], A.Expr]:
    """Lambdas of a `let`/`fun` -> (level binders, then variable binders; body).

    The written form allows level binders before variable binders only."""
    out = []
    while isinstance(e, A.LevelLam):
        out.append(f"<{e.lvar}>")
        e = e.body
    while isinstance(e, A.Lam):
        out.append(e.param)
        e = e.body
    return out, e


def _let(e: A.Let) -> str:
    """`let f <l> x = v in body`."""
    binders, value = _sugar_binders(e.value)
    head = " ".join([e.name] + binders)
    return f"let {head} = {print_expr(value)} in {print_expr(e.body)}"


def _atom(e: A.Expr) -> str:
    """Literals, names, pairs and arrays."""
    if isinstance(e, A.IntLit):
        return str(e.value)
    if isinstance(e, A.DoubleLit):
        return _double(e.value)
    if isinstance(e, A.FloatLit):
        return _double(e.value) + "f"
    if isinstance(e, A.BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, (A.Var, A.HwParam)):
        return e.name
    if isinstance(e, A.Pair):
        return f"({print_expr(e.fst)}, {print_expr(e.snd)})"
    if isinstance(e, A.ArrayLit):
        return "[" + ", ".join(print_expr(x) for x in e.elems) + "]"
    raise CompilerBug(f"not an expression: {e!r}")


def _double(value: float) -> str:
    """A finite float -> literal text that reads back as the same value (`1.0`, `1e-05`)."""
    text = repr(float(value))
    if text in ("inf", "-inf", "nan"):
        raise CompilerBug(f"no literal for the value {text}")
    return text


# ---------------------------------------------------------------- programs

def print_decl(decl: A.Decl) -> str:
    """Declaration -> one line."""
    if isinstance(decl, A.Include):
        return f'include "{decl.path}"'
    if isinstance(decl, A.Sig):
        return f"sig {decl.name} : {print_scheme(decl.scheme)}"
    if isinstance(decl, A.Val):
        return _val(decl)
    raise CompilerBug(f"not a declaration: {decl!r}")


def _val(decl: A.Val) -> str:
    """`fun f <l> x = body` when written with `fun` (and it has a parameter), else `val`."""
    if decl.is_fun:
        binders, body = _sugar_binders(decl.value)
        has_param = bool(binders) and not binders[-1].startswith("<")
        if has_param:
            return f"fun {' '.join([decl.name] + binders)} = {print_expr(body)}"
    binders = []
    value = decl.value
    while isinstance(value, A.LevelLam):
        binders.append(f"<{value.lvar}>")
        value = value.body
    return f"val {' '.join([decl.name] + binders)} = {print_expr(value)}"


def print_program(program: A.Program) -> str:
    """Program -> text, one declaration per line, a blank line before each
    declaration that is not directly after its `sig`."""
    lines: list[str] = []
    prev = None
    with deep_recursion():
        for decl in program.decls:
            if lines and not isinstance(prev, A.Sig):
                lines.append("")
            lines.append(print_decl(decl))
            prev = decl
    return "\n".join(lines) + ("\n" if lines else "")
