"""Kernel-IR expressions evaluated on the host: sizes, lengths and host scalars.

`eval_host(e, env)` computes an int or bool expression over the entry's
parameters and host variables (bound in `env`) with OpenCL's semantics, as
the kernels would: the same folding as the smart constructors (build._fold),
a failing `Checked` raised as facts.CheckFailed.  Consumes an expression and
values; produces a value.  Memory only through a `load` the caller gives (a
`P.ReadScalar`'s expression); without one a `Load` raises
LookupError.  `host_evaluable(e)` says whether it computes e (HOST_CALLS, no
float arithmetic).  Not here: the kernels themselves (codegen/interp.py).
"""
from __future__ import annotations

from fcl.base import scalars
from fcl.codegen.kir.build import _FOLD_INT, _fold
from fcl.codegen.kir.facts import CheckFailed
from fcl.base.operators import COMPARISONS
from fcl.codegen.kir.nodes import Bin, Call, Checked, Const, Expr, HwId, Load, Select, Un, Var
from fcl.codegen.kir.walk import walk_expr

HOST_CALLS = ("min", "max", "b2i", "abs")    # the calls eval_host computes (abs of ints)


def _float_arithmetic(e: Expr) -> bool:
    """Arithmetic on doubles or floats, which the host's evaluators of sizes (eval_host,
    pymodule.py_expr) do not compute: only int arithmetic and comparisons are host code."""
    if isinstance(e, Bin):
        return e.op not in COMPARISONS and e.a.ty in ("double", "float")
    if isinstance(e, (Un, Call)):
        return e.ty in ("double", "float")
    return False


def host_evaluable(e: Expr, loads: bool = False) -> bool:
    """Whether eval_host computes e from host scalars: no hardware id, no call but
    HOST_CALLS, no float arithmetic, and no memory; with `loads` (eval_host with a `load`),
    int and long elements of global buffers and a long's low word too, but no `Checked`
    (a read's check stays where the kernels record it)."""
    def host(x) -> bool:
        if isinstance(x, Checked):
            return not loads
        if isinstance(x, Load):
            return loads and x.ty in ("int", "long")
        if isinstance(x, Call) and x.fn == "lo_word":
            return loads
        return not (isinstance(x, HwId) or isinstance(x, Call) and x.fn not in HOST_CALLS or _float_arithmetic(x))
    return all(host(x) for x in walk_expr(e))


def eval_host(e: Expr, env: dict[str, object], total: bool = False, load=None):
    """Evaluate a size expression on the host (params bound in `env`), OpenCL semantics.
    A division or remainder by zero raises ZeroDivisionError, or with `total` gives 0 as
    the kernels' fcl_div and fcl_mod do (a scalar the kernels would have computed).  With
    `load`, load(buffer, scalar type, index) gives an element of a global buffer (a
    `P.ReadScalar`'s expression), read only where the expression's selects take it."""
    def ev(x):
        return eval_host(x, env, total, load)
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Var):
        return env[e.name]
    if isinstance(e, Bin):
        folded = _fold(e.op, Const(e.a.ty, ev(e.a)), Const(e.b.ty, ev(e.b)))
        if folded is None:
            if total:
                return 0
            raise ZeroDivisionError(e.op)
        return folded.value
    if isinstance(e, Un):
        a = ev(e.a)
        return (not a) if e.op == "not" else scalars.wrap(-a)
    if isinstance(e, Select):
        return ev(e.a if ev(e.cond) else e.b)
    if isinstance(e, Call) and e.fn in ("min", "max"):
        return _FOLD_INT[e.fn](*(ev(x) for x in e.args))
    if isinstance(e, Call) and e.fn == "b2i":
        return 1 if ev(e.args[0]) else 0
    if isinstance(e, Call) and e.fn == "abs" and e.ty == "int":
        return scalars.wrap(abs(ev(e.args[0])))
    if isinstance(e, Call) and e.fn == "lo_word" and load is not None:
        return scalars.wrap(ev(e.args[0]))
    if isinstance(e, Load) and load is not None:
        return load(e.buf, e.ty, ev(e.index))
    if isinstance(e, Checked):
        i, n = ev(e.index), ev(e.length)
        if not 0 <= i < n:
            raise CheckFailed(e.site, i, n)
        return i
    raise LookupError(type(e).__name__)

