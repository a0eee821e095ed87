"""FCL's binary operators in one table: spellings, precedences, arity and int semantics.

Every layer that reads, prints or computes an operator reads this table:
the parser and the pretty-printer (FCL spelling and precedence), the
lowering (FCL spelling -> kernel-IR operator), the constant folder and the
kernel-IR interpreter (`on_ints`, the int32 semantics of fcl.base.scalars),
the OpenCL printer (C spelling and precedence) and the `--explain` printer.
The key is the kernel IR's name of the operator (`kir.Op` values).  Types
other than int take their semantics from `fcl.base.scalars.BINARY`, keyed by
the FCL spelling.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from fcl.base import scalars


@dataclass(frozen=True)
class Operator:
    """One binary operator.  `fcl`: its spellings in FCL, the first the one printers
    use; `precedence`: how tightly it binds in FCL (language.md section 3, higher
    binds tighter); `c`, `c_precedence`: the same in OpenCL C; `kind`: arith,
    compare, logic or bits; `on_ints`: what it computes on two int32 values (None
    for the logical operators, which take bools)."""
    name: str
    fcl: tuple[str, ...]
    precedence: int
    c: str
    c_precedence: int
    kind: str
    on_ints: Callable | None = None
    arity: int = 2


OPERATORS: dict[str, Operator] = {op.name: op for op in [
    Operator("or", ("||",), 2, "||", 3, "logic"),
    Operator("and", ("&&",), 3, "&&", 4, "logic"),
    Operator("eq", ("==",), 4, "==", 8, "compare", scalars.eq),
    Operator("ne", ("!=",), 4, "!=", 8, "compare", scalars.ne),
    Operator("lt", ("<",), 4, "<", 9, "compare", scalars.lt),
    Operator("le", ("<=",), 4, "<=", 9, "compare", scalars.le),
    Operator("gt", (">",), 4, ">", 9, "compare", scalars.gt),
    Operator("ge", (">=",), 4, ">=", 9, "compare", scalars.ge),
    Operator("bor", ("|",), 5, "|", 5, "bits", scalars.int_or),
    Operator("bxor", ("^",), 5, "^", 6, "bits", scalars.int_xor),
    Operator("band", ("&",), 5, "&", 7, "bits", scalars.int_and),
    Operator("shl", ("<<",), 6, "<<", 10, "bits", scalars.int_shl),
    Operator("shr", (">>",), 6, ">>", 10, "bits", scalars.int_shr),
    Operator("add", ("+",), 7, "+", 11, "arith", scalars.int_add),
    Operator("sub", ("-",), 7, "-", 11, "arith", scalars.int_sub),
    Operator("mul", ("*",), 8, "*", 12, "arith", scalars.int_mul),
    Operator("div", ("/", "div"), 8, "/", 12, "arith", scalars.int_div),
    Operator("mod", ("%", "mod"), 8, "%", 12, "arith", scalars.int_rem),
]}

# FCL spelling -> the operator
BY_SPELLING: dict[str, Operator] = {s: op for op in OPERATORS.values() for s in op.fcl}

COMPARISONS = frozenset(name for name, op in OPERATORS.items() if op.kind == "compare")
