"""Kernel-IR expressions evaluated on the host: sizes, lengths and host scalars.

`eval_host(e, env)` computes an int or bool expression over the entry's
parameters and host variables (bound in `env`) with OpenCL's semantics, as
the kernels would: the same folding as the smart constructors (build._fold),
a failing `Checked` raised as facts.CheckFailed.  Consumes an expression and
values; produces a value.  Not here: anything that reads memory (a `Load`
raises LookupError), the kernels themselves (codegen/interp.py).
"""
from __future__ import annotations

from fcl.base import scalars
from fcl.codegen.kir.build import _FOLD_INT, _fold
from fcl.codegen.kir.facts import CheckFailed
from fcl.codegen.kir.nodes import Bin, Call, Checked, Const, Expr, Select, Un, Var


def eval_host(e: Expr, env: dict[str, object], total: bool = False):
    """Evaluate a size expression on the host (params bound in `env`), OpenCL semantics.
    A division or remainder by zero raises ZeroDivisionError, or with `total` gives 0 as
    the kernels' fcl_div and fcl_mod do (a scalar the kernels would have computed)."""
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Var):
        return env[e.name]
    if isinstance(e, Bin):
        a, b = eval_host(e.a, env, total), eval_host(e.b, env, total)
        folded = _fold(e.op, Const(e.a.ty, a), Const(e.b.ty, b))
        if folded is None:
            if total:
                return 0
            raise ZeroDivisionError(e.op)
        return folded.value
    if isinstance(e, Un):
        a = eval_host(e.a, env, total)
        return (not a) if e.op == "not" else scalars.wrap(-a)
    if isinstance(e, Select):
        return eval_host(e.a if eval_host(e.cond, env, total) else e.b, env, total)
    if isinstance(e, Call) and e.fn in ("min", "max"):
        return _FOLD_INT[e.fn](*(eval_host(x, env, total) for x in e.args))
    if isinstance(e, Call) and e.fn == "b2i":
        return 1 if eval_host(e.args[0], env, total) else 0
    if isinstance(e, Call) and e.fn == "abs" and e.ty == "int":
        return scalars.wrap(abs(eval_host(e.args[0], env, total)))
    if isinstance(e, Checked):
        i, n = eval_host(e.index, env, total), eval_host(e.length, env, total)
        if not 0 <= i < n:
            raise CheckFailed(e.site, i, n)
        return i
    raise LookupError(type(e).__name__)
