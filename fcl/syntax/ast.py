"""The FCL abstract syntax tree: frozen dataclasses, each node with a span.

Spans do not take part in equality, so ``parse(print(parse(s))) == parse(s)``
compares structure only.  Surface sugar is removed by the parser:

* ``fn x y => e``            -> ``Lam("x", Lam("y", e))``
* ``fun f <l> x = e``        -> ``Val("f", LevelLam("l", Lam("x", e)))``
* ``let f x = e1 in e2``     -> ``Let("f", Lam("x", e1), e2)``
* ``maxi -2 10``             -> a negative ``IntLit`` (language.md section 1)

Everything else stays as written: ``|>`` and ``.`` are `BinOp`s, ``-e`` and
``not e`` are `UnOp`s, so diagnostics and the printer see what the user wrote.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from fcl.base.errors import NO_SPAN, Span


def _span():
    return field(default=NO_SPAN, compare=False, repr=False)


# ---------------------------------------------------------------- levels

@dataclass(frozen=True)
class LevelAst:
    """Base class of written levels."""


@dataclass(frozen=True)
class LNamed(LevelAst):
    """`thread`, `warp`, `block`, `grid` or `Z` (stored as written)."""
    name: str
    span: Span = _span()


@dataclass(frozen=True)
class LVar(LevelAst):
    """A level variable such as `lvl`."""
    name: str
    span: Span = _span()


@dataclass(frozen=True)
class LSucc(LevelAst):
    """`1+l`."""
    inner: LevelAst
    span: Span = _span()


# ---------------------------------------------------------------- types

@dataclass(frozen=True)
class TypeAst:
    """Base class of written types."""


@dataclass(frozen=True)
class TBase(TypeAst):
    """`int`, `float`, `double` or `bool`."""
    name: str
    span: Span = _span()


@dataclass(frozen=True)
class TVar(TypeAst):
    """A type variable; `name` without the quote (`'a` and bare `a` both give "a")."""
    name: str
    span: Span = _span()


@dataclass(frozen=True)
class TPair(TypeAst):
    fst: TypeAst
    snd: TypeAst
    span: Span = _span()


@dataclass(frozen=True)
class TFun(TypeAst):
    arg: TypeAst
    res: TypeAst
    span: Span = _span()


@dataclass(frozen=True)
class TLevelFun(TypeAst):
    """`<lvl> -> t`."""
    lvar: str
    body: TypeAst
    span: Span = _span()


@dataclass(frozen=True)
class TPull(TypeAst):
    """`[t]`."""
    elem: TypeAst
    span: Span = _span()


@dataclass(frozen=True)
class TPush(TypeAst):
    """`[t]<level>`."""
    elem: TypeAst
    level: LevelAst
    span: Span = _span()


@dataclass(frozen=True)
class SchemeAst:
    """`forall <l> 'a. t` (both tuples empty when no `forall` was written)."""
    lvars: tuple[str, ...]
    tvars: tuple[str, ...]
    body: TypeAst
    span: Span = _span()


# ---------------------------------------------------------------- expressions

@dataclass(frozen=True)
class Expr:
    """Base class of expressions."""


@dataclass(frozen=True)
class IntLit(Expr):
    value: int
    span: Span = _span()


@dataclass(frozen=True)
class FloatLit(Expr):
    """A 32-bit float literal, written with a trailing `f` (`2.5f`)."""
    value: float
    span: Span = _span()


@dataclass(frozen=True)
class DoubleLit(Expr):
    value: float
    span: Span = _span()


@dataclass(frozen=True)
class BoolLit(Expr):
    value: bool
    span: Span = _span()


@dataclass(frozen=True)
class Var(Expr):
    name: str
    span: Span = _span()


@dataclass(frozen=True)
class HwParam(Expr):
    """`#BlockSize`, `#WarpSize`, `#NumGroups` (name includes the `#`)."""
    name: str
    span: Span = _span()


@dataclass(frozen=True)
class Lam(Expr):
    """`fn x => body` (one parameter; multi-parameter sugar is nested)."""
    param: str
    body: Expr
    span: Span = _span()


@dataclass(frozen=True)
class LevelLam(Expr):
    """`fn <lvl> => body`."""
    lvar: str
    body: Expr
    span: Span = _span()


@dataclass(frozen=True)
class App(Expr):
    fn: Expr
    arg: Expr
    span: Span = _span()


@dataclass(frozen=True)
class LevelApp(Expr):
    """`e <level>`."""
    fn: Expr
    level: LevelAst
    span: Span = _span()


@dataclass(frozen=True)
class Let(Expr):
    name: str
    value: Expr
    body: Expr
    span: Span = _span()


@dataclass(frozen=True)
class If(Expr):
    cond: Expr
    then: Expr
    else_: Expr
    span: Span = _span()


@dataclass(frozen=True)
class Pair(Expr):
    fst: Expr
    snd: Expr
    span: Span = _span()


@dataclass(frozen=True)
class ArrayLit(Expr):
    elems: tuple[Expr, ...]
    span: Span = _span()


# Binary operators as written: "|>" "||" "&&" "==" "!=" "<" "<=" ">" ">="
# "|" "^" "&" "<<" ">>" "+" "-" "*" "/" "%" "div" "mod" ".".
BINARY_OPS = ("|>", "||", "&&", "==", "!=", "<", "<=", ">", ">=", "|", "^", "&",
              "<<", ">>", "+", "-", "*", "/", "%", "div", "mod", ".")


@dataclass(frozen=True)
class BinOp(Expr):
    op: str
    left: Expr
    right: Expr
    span: Span = _span()


@dataclass(frozen=True)
class UnOp(Expr):
    """`-e` (op "-") or `not e` (op "not")."""
    op: str
    operand: Expr
    span: Span = _span()


# ---------------------------------------------------------------- declarations

@dataclass(frozen=True)
class Decl:
    """Base class of declarations."""


@dataclass(frozen=True)
class Include(Decl):
    """`include "path.fcl"` (path relative to the including file)."""
    path: str
    span: Span = _span()


@dataclass(frozen=True)
class Sig(Decl):
    name: str
    scheme: SchemeAst
    span: Span = _span()


@dataclass(frozen=True)
class Val(Decl):
    """`val x = e`, and `fun f <l> x y = e` after desugaring.

    `name_span` locates the declared name; `is_fun` remembers that it was
    written with `fun` so the printer can give it back that way.
    """
    name: str
    value: Expr
    is_fun: bool = field(default=False, compare=False)
    name_span: Span = _span()
    span: Span = _span()


@dataclass(frozen=True)
class Program:
    decls: tuple[Decl, ...]
    span: Span = _span()


def free_uses(e: Expr) -> list[Var]:
    """The `Var` nodes of `e` that no `fn` or `let` inside `e` binds, in source order
    (an explicit stack: programs nest deeper than Python's recursion limit)."""
    out, stack = [], [(e, frozenset())]
    while stack:
        node, bound = stack.pop()
        if isinstance(node, Var):
            if node.name not in bound:
                out.append(node)
            continue
        if isinstance(node, Lam):
            kids = [(node.body, bound | {node.param})]
        elif isinstance(node, Let):
            kids = [(node.value, bound), (node.body, bound | {node.name})]
        elif isinstance(node, ArrayLit):
            kids = [(x, bound) for x in node.elems]
        else:
            kids = [(getattr(node, f), bound) for f in node.__dataclass_fields__
                    if isinstance(getattr(node, f), Expr)]
        stack.extend(reversed(kids))
    return out
