"""Smart constructors of kernel-IR expressions, and constant folding.

`binop`, `unop`, `select`, `call` (and the short forms `add`, `sub`, `mul`,
`div`, `lt`, `cint`) build an expression from its parts, folding constants
and the usual integer identities, so sizes that are known at compile time
stay `Const`; `checked` and `checked_divisor` build the run-time checks of
an index and of a divisor, and `plain_divisor` sees through the latter.
Consumes nodes.py's classes; produces expressions.  `_fold` and `_FOLD_INT`
are also the host's arithmetic (host.py).  Not here: rebuilding a tree after
a rewrite (walk.refold), checks as host facts (facts.hoist_checks).
"""
from __future__ import annotations

from fcl.base import scalars
from fcl.base.operators import COMPARISONS, OPERATORS
from fcl.codegen.kir.nodes import (GENERAL_OP, Bin, Call, Checked, Const, Expr, Op, Select, Un, holds_check,
                                   _member)


def const(value, ty: str) -> Const:
    return Const(ty, value)


def zero(ty: str) -> Const:
    """The zero of scalar type ty (false for bool)."""
    return Const(ty, {"int": 0, "float": 0.0, "double": 0.0, "bool": False}[ty])


def cint(value: int) -> Const:
    return Const("int", scalars.wrap(int(value)))


def is_const(e: Expr, value=None) -> bool:
    return isinstance(e, Const) and (value is None or e.value == value)


# what folding computes on int constants: fcl.base.operators's semantics (no `/` or `%`: their
# folding minds the divisor, below), and the int calls `min` and `max`
_FOLD_INT = {**{name: op.on_ints for name, op in OPERATORS.items()
                if op.kind == "bits" or name in ("add", "sub", "mul")},
             "min": min, "max": max}
_FOLD_CMP = {name: OPERATORS[name].on_ints for name in COMPARISONS}


def binop(op: str, a: Expr, b: Expr) -> Expr:
    """A binary operation with constant folding and the usual identities (ints only)."""
    op = _member(Op, op)
    ty = "bool" if op in COMPARISONS or op in ("and", "or") else a.ty
    if isinstance(a, Const) and isinstance(b, Const):
        folded = _fold(op, a, b)
        if folded is not None:
            return folded
    if a.ty == "int":
        simple = _simplify_int(GENERAL_OP.get(op, op), a, b)
        if simple is not None:
            return simple
    if op == "and":
        if is_const(a):
            return b if a.value else a
        if is_const(b, True):
            return a
    if op == "or":
        if is_const(a):
            return a if a.value else b
        if is_const(b, False):
            return a
    return Bin(ty, op, a, b)


def _fold(op: str, a: Const, b: Const) -> Expr | None:
    v = value_op(op, a.ty)(a.value, b.value)
    return None if v is None else Const("bool" if isinstance(v, bool) else "int", v)


def value_op(op: str, ty: str):
    """`a op b` for operands of type `ty` as the kernels compute it, a function of the two
    values: a bool for a comparison, `and` and `or`, an int for int arithmetic; None where it
    does not fold (a division by zero, arithmetic on other types).  `_fold` and the host's
    evaluator of sizes (host.eval_host) both."""
    op = GENERAL_OP.get(op, op)
    if op in _FOLD_CMP:
        cmp = _FOLD_CMP[op]
        return lambda a, b: bool(cmp(a, b))
    if op == "and":
        return lambda a, b: bool(a and b)
    if op == "or":
        return lambda a, b: bool(a or b)
    if ty == "int" and op in _FOLD_INT:
        return _FOLD_INT[op]
    if ty == "int" and op in ("div", "mod"):
        fn = scalars.int_div if op == "div" else scalars.int_rem
        return lambda a, b: fn(a, b) if b != 0 else None
    return lambda a, b: None


def _simplify_int(op: str, a: Expr, b: Expr) -> Expr | None:
    """The identities of int arithmetic, but none that drops an operand holding a run-time
    check (`Checked`: an index, a divisor): x * 0 is 0 only where x can fail no check, or
    the evaluator's error would be lost."""
    if op == "add":
        if is_const(a, 0):
            return b
        if is_const(b, 0):
            return a
        # (x + c1) + c2 -> x + (c1 + c2)
        if isinstance(b, Const) and isinstance(a, Bin) and a.op == "add" and isinstance(a.b, Const):
            return binop("add", a.a, cint(a.b.value + b.value))
    if op == "sub":
        if is_const(b, 0):
            return a
        if a == b and not holds_check(a):
            return cint(0)
    if op == "mul":
        if is_const(a, 0) and not holds_check(b) or is_const(b, 0) and not holds_check(a):
            return cint(0)
        if is_const(a, 1):
            return b
        if is_const(b, 1):
            return a
    if op == "div" and is_const(b, 1):
        return a
    if op == "mod" and is_const(b, 1) and not holds_check(a):
        return cint(0)
    if op in ("shl", "shr") and is_const(b, 0):
        return a
    if op in _FOLD_CMP and a == b and not holds_check(a):    # x == x, x < x ...
        return Const("bool", op in ("eq", "le", "ge"))
    return None


def add(a, b):
    return binop("add", a, b)


def sub(a, b):
    return binop("sub", a, b)


def mul(a, b):
    return binop("mul", a, b)


def div(a, b):
    return binop("div", a, b)


def lt(a, b):
    return binop("lt", a, b)


def checked(index: Expr, length: Expr, buf: str, site: int) -> Expr:
    """`Checked` unless the index is a constant that is known to be in range."""
    if isinstance(index, Const) and isinstance(length, Const) and 0 <= index.value < length.value:
        return index
    return Checked("int", index, length, buf, site)


def checked_divisor(b: Expr, a: Expr, buf: str, site: int) -> Expr:
    """The divisor b of `a / b` or `a % b`, checked: b where b != 0, else a failed check
    (site `site`, recording the dividend a) whose value 0 makes fcl_div and fcl_mod give 0.
    Its value is b's wherever the division's is not 0 either (`plain_divisor`)."""
    return select(binop("ne", b, cint(0)), b, Checked("int", a, cint(0), buf, site))


def plain_divisor(e: Expr) -> Expr:
    """b for a divisor that `checked_divisor` checks, else e: `a / b` and `a / e` have the
    same value (0 where b = 0), so analyses see through the check."""
    if isinstance(e, Select) and isinstance(e.b, Checked) and isinstance(e.cond, Bin) and e.cond.op == "ne" \
            and e.cond.a == e.a and is_const(e.cond.b, 0):
        return e.a
    return e


def select(c: Expr, a: Expr, b: Expr) -> Expr:
    if isinstance(c, Const):
        return a if c.value else b
    if a == b and not holds_check(c):     # (c's checks are made whichever arm)
        return a
    return Select(a.ty, c, a, b)


def unop(op: str, a: Expr) -> Expr:
    op = _member(Op, op)
    if isinstance(a, Const):
        if op == "not":
            return Const("bool", not a.value)
        if op == "neg" and a.ty == "int":
            return cint(-a.value)
    return Un(a.ty, op, a)


def call(fn: str, args: tuple, ty: str) -> Expr:
    if fn in ("min", "max") and args[0] == args[1]:
        return args[0]
    if fn == "min" and _rounds_up(args[0], args[1]):
        return args[0]
    if fn in ("min", "max") and ty == "int" and all(isinstance(x, Const) for x in args):
        return cint(_FOLD_INT[fn](args[0].value, args[1].value))
    return Call(ty, fn, tuple(args))


def _rounds_up(a: Expr, b: Expr) -> bool:
    """b is `c * ((a + c - 1) / c)` for a constant c > 0, the quotient perhaps as `max(1, ...)`:
    a rounded up to a whole number of c (the length of a whole number of chunks of c covering
    a), so min(a, b) = a for every a (truncating division: for a <= 0, b >= a + c - 1 or b = 0
    or b >= c)."""
    match b:
        case Bin(op=Op.MUL, a=Const(value=c), b=Call(fn="max", args=(Const(value=1), q))):
            pass
        case Bin(op=Op.MUL, a=Const(value=c), b=q):
            pass
        case _:
            return False
    match q:
        case Bin(op=Op.DIV, a=Bin(op=Op.SUB, a=Bin(op=Op.ADD, a=x, b=Const(value=c2)), b=Const(value=1)),
                 b=Const(value=c3)):
            return c > 0 and c == c2 == c3 and x == a
        case Bin(op=Op.DIV, a=Bin(op=Op.ADD, a=x, b=Const(value=k)), b=Const(value=c3)):
            return c > 0 and k == c - 1 and c == c3 and x == a
    return False
