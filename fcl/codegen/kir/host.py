"""Kernel-IR expressions evaluated on the host: sizes, lengths and host scalars.

`eval_host(e, env)` computes an int or bool expression over the entry's
parameters and host variables (bound in `env`) with OpenCL's semantics, as
the kernels would: the same folding as the smart constructors (build.value_op),
a failing `Checked` raised as facts.CheckFailed.  Consumes an expression and
values; produces a value.  Memory only through a `load` the caller gives (a
`P.ReadScalar`'s expression); without one a `Load` raises
LookupError.  `host_evaluable(e)` says whether it computes e (HOST_CALLS, no
float arithmetic).  Not here: the kernels themselves (codegen/interp.py).
"""
from __future__ import annotations

from fcl.base import scalars
from fcl.codegen.kir.build import _FOLD_INT, value_op
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
    `P.ReadScalar`'s expression), read only where the expression's selects take it.  The
    expression is compiled once into nested Python functions (`_compiled`): a launcher
    evaluates the same sizes for every launch of every run."""
    return _compiled(e, total)(env, load)


_CACHE: dict[tuple[int, bool], tuple[Expr, object]] = {}     # (id, total) -> (the expression, its function)
_CACHE_MAX = 1 << 16


def _compiled(e: Expr, total: bool):
    key = (id(e), total)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is e:
        return hit[1]
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    fn = _memoised(e, _compile(e, total))
    _CACHE[key] = (e, fn)       # the expression kept alive, so that its id is not reused
    return fn


_MISSING = object()
MEMO_MAX = 64       # the values kept an expression: a launcher's runs at a few sizes


def _memoised(e: Expr, fn):
    """fn, remembering its value for the values of e's variables where e reads no memory (a
    size: the same for every launch of a run, and every run at the same sizes)."""
    reads = any(isinstance(x, Load) or isinstance(x, Call) and x.fn == "lo_word" for x in walk_expr(e))
    if reads or isinstance(e, (Const, Var)):
        return fn
    names = tuple(sorted({x.name for x in walk_expr(e) if isinstance(x, Var)}))
    memo: dict = {}

    def remembered(env, load):
        key = tuple([env[n] for n in names])
        value = memo.get(key, _MISSING)
        if value is _MISSING:
            value = fn(env, load)       # a failing check or division raises, and is not kept
            if len(memo) < MEMO_MAX:
                memo[key] = value
        return value
    return remembered


def _compile(e: Expr, total: bool):
    """e as a function (env, load) -> value (eval_host's meaning)."""
    def sub(x):
        return _compile(x, total)
    if isinstance(e, Const):
        value = e.value
        return lambda env, load: value
    if isinstance(e, Var):
        name = e.name
        return lambda env, load: env[name]
    if isinstance(e, Bin):
        fa, fb, fn, op = sub(e.a), sub(e.b), value_op(e.op, e.a.ty), e.op

        def binary(env, load):
            v = fn(fa(env, load), fb(env, load))
            if v is None:
                if total:
                    return 0
                raise ZeroDivisionError(op)
            return v
        return binary
    if isinstance(e, Un):
        fa = sub(e.a)
        if e.op == "not":
            return lambda env, load: not fa(env, load)
        return lambda env, load: scalars.wrap(-fa(env, load))
    if isinstance(e, Select):
        fc, fa, fb = sub(e.cond), sub(e.a), sub(e.b)
        return lambda env, load: fa(env, load) if fc(env, load) else fb(env, load)
    if isinstance(e, Call) and e.fn in ("min", "max"):
        fn, args = _FOLD_INT[e.fn], [sub(x) for x in e.args]
        return lambda env, load: fn(*(f(env, load) for f in args))
    if isinstance(e, Call) and e.fn == "b2i":
        fa = sub(e.args[0])
        return lambda env, load: 1 if fa(env, load) else 0
    if isinstance(e, Call) and e.fn == "abs" and e.ty == "int":
        fa = sub(e.args[0])
        return lambda env, load: scalars.wrap(abs(fa(env, load)))
    if isinstance(e, Call) and e.fn == "lo_word":
        fa = sub(e.args[0])

        def lo_word(env, load):
            if load is None:
                raise LookupError("Call")
            return scalars.wrap(fa(env, load))
        return lo_word
    if isinstance(e, Load):
        fi, buf, ty = sub(e.index), e.buf, e.ty

        def read(env, load):
            if load is None:
                raise LookupError("Load")
            return load(buf, ty, fi(env, load))
        return read
    if isinstance(e, Checked):
        fi, fn, site = sub(e.index), sub(e.length), e.site

        def checked(env, load):
            i, n = fi(env, load), fn(env, load)
            if not 0 <= i < n:
                raise CheckFailed(site, i, n)
            return i
        return checked
    name = type(e).__name__

    def unknown(env, load):
        raise LookupError(name)
    return unknown
