"""The host helpers of `--emit py` modules (fcl/runtime/hostlib.py), tested as a module.

Its int arithmetic restates fcl.base.scalars (a printed module imports no fcl): checked
here against it, and the host expressions pymodule prints against `kir.eval_host`, on
many values.  Its argument checks, the errors of failed run-time checks, and the code
pymodule prints from it (standalone: it runs where `import fcl` fails) are checked too.
"""
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, strategies as st

import fcl
from fcl.base import scalars
from fcl.base.errors import ArgumentError, EvalError
from fcl.base.hw import skewed_elements, skewed_index, STORAGE_DTYPES
from fcl.codegen import kir as K
from fcl.codegen.plan import failure_message
from fcl.runtime import hostlib as H
from fcl.runtime.pymodule import NP_TYPES, PY_OPS, emit_module, py_expr

REVERSE = Path(__file__).resolve().parents[2] / "examples" / "reverse.fcl"
EDGES = (0, 1, -1, 2, -2, 31, 32, 33, scalars.INT_MIN, scalars.INT_MAX, scalars.INT_MIN + 1)
ints = st.one_of(st.sampled_from(EDGES), st.integers(scalars.INT_MIN, scalars.INT_MAX))
COMPARISONS = {"lt", "le", "gt", "ge", "eq", "ne"}


# ---------------------------------------------------------------- int arithmetic

@given(st.integers(-2 ** 70, 2 ** 70))
@example(2 ** 31)
@example(-2 ** 31 - 1)
def test_wrap_is_scalars_wrap(x):
    assert H._wrap(x) == scalars.wrap(x)


@given(ints, ints)
@example(scalars.INT_MIN, -1)
def test_div_and_mod_are_scalars_int_div_and_rem(a, b):
    if b == 0:
        for helper, reference in ((H._div, scalars.int_div), (H._mod, scalars.int_rem)):
            with pytest.raises(ZeroDivisionError):
                helper(a, b)
            with pytest.raises(EvalError):
                reference(a, b)
            assert helper(a, b, True) == 0      # a scalar the kernels compute: fcl_div gives 0
        return
    assert H._div(a, b) == scalars.int_div(a, b)
    assert H._mod(a, b) == scalars.int_rem(a, b)
    assert H._div(a, b, True) == scalars.int_div(a, b)


def _host_expr(op: str) -> K.Expr:
    """`a op b` over host scalars a and b (bools for `and` and `or`)."""
    operand = "bool" if op in ("and", "or") else "int"
    result = "bool" if op in COMPARISONS | {"and", "or"} else "int"
    return K.Bin(result, op, K.Var(operand, "a"), K.Var(operand, "b"))


def _run_printed(e: K.Expr, env: dict, total: bool):
    """The value of `py_expr(e)` evaluated with the hostlib helpers, as a printed module does."""
    return eval(py_expr(e, total), {**vars(H), **env})


@given(st.sampled_from(sorted(set(PY_OPS) - {"and", "or"})), ints, ints, st.booleans())
def test_printed_int_operators_compute_as_the_host_evaluator(op, a, b, total):
    e, env = _host_expr(op), {"a": a, "b": b}
    try:
        expected = K.eval_host(e, env, total)
    except ZeroDivisionError:
        with pytest.raises(ZeroDivisionError):
            _run_printed(e, env, total)
        return
    assert _run_printed(e, env, total) == expected


@given(st.sampled_from(["and", "or"]), st.booleans(), st.booleans())
def test_printed_logical_operators_compute_as_the_host_evaluator(op, a, b):
    e, env = _host_expr(op), {"a": a, "b": b}
    assert _run_printed(e, env, False) == K.eval_host(e, env)


@given(st.integers(1, 1 << 20))
def test_skew_holds_every_skewed_index(n):
    last = n - 1
    assert H._skew(n) > skewed_index(last)           # fcl_skew in the kernels
    assert H._skew(n) == skewed_elements(n)          # as the compiler counts it


def test_np_types_are_the_storage_dtypes():
    assert {t: np.dtype(d) for t, d in H.NP_TYPES.items()} == {str(t): d for t, d in STORAGE_DTYPES.items()}
    assert NP_TYPES == {"int": "np.int32", "float": "np.float32", "double": "np.float64", "bool": "np.uint8",
                        "long": "np.int64"}


# ---------------------------------------------------------------- arguments

def test_array_converts_to_a_contiguous_array_of_the_dtype():
    out = H._array([1, 2, 3], np.int32, "int", 1, "xs")
    assert out.dtype == np.int32 and out.flags.c_contiguous and list(out) == [1, 2, 3]
    assert H._array(np.arange(6)[::2], np.float32, "float", 1, "").dtype == np.float32
    assert H._array(np.array([], dtype=np.float64), np.int32, "int", 1, "").size == 0


@pytest.mark.parametrize("value, fcl_type, text", [
    (np.zeros((2, 2)), "int", "argument 2 (`xs`): expected [int], a one-dimensional array, found 2 dimensions"),
    (np.array([1.5]), "int", "argument 2 (`xs`): expected [int], found an array of float64"),
    (np.array([1]), "bool", "expected [bool], found an array of int64"),
    (np.array([2 ** 40]), "int", "array values do not fit in 32-bit ints"),
])
def test_array_names_the_argument_it_rejects(value, fcl_type, text):
    with pytest.raises(ArgumentError) as err:
        H._array(value, np.int32, fcl_type, 2, "xs")
    assert text in str(err.value)


def test_scalar_widens_ints_only():
    assert H._scalar(True, "bool", 1, "") == 1
    assert H._scalar(np.int64(7), "int", 1, "") == 7 and type(H._scalar(np.int64(7), "int", 1, "")) is int
    assert H._scalar(3, "float", 1, "") == np.float32(3) and isinstance(H._scalar(3, "float", 1, ""), np.float32)
    assert H._scalar(3, "double", 1, "") == 3.0 and type(H._scalar(3, "double", 1, "")) is float


@pytest.mark.parametrize("value, fcl_type, text", [
    (2.5, "int", "argument 1 (`k`): expected int, found float"),
    (True, "int", "expected int, found bool"),
    (np.arange(3), "int", "expected int, found an array"),
    (2 ** 31, "int", "2147483648 does not fit in a 32-bit int"),
    (1, "bool", "expected bool, found int"),
])
def test_scalar_names_the_argument_it_rejects(value, fcl_type, text):
    with pytest.raises(ArgumentError) as err:
        H._scalar(value, fcl_type, 1, "k")
    assert text in str(err.value)


def test_what_names_an_argument():
    assert H._what(2, "arr") == "argument 2 (`arr`)" and H._what(3, "") == "argument 3"


# ---------------------------------------------------------------- run-time checks

def test_checked_passes_an_index_in_range_and_locates_one_out_of_range():
    site = ("f.fcl:3:7", "index")
    assert H._checked(4, 5, site) == 4
    with pytest.raises(IndexError) as err:
        H._checked(5, 5, site)
    assert str(err.value) == (f"f.fcl:3:7: {failure_message('index', (5, 5))} "
                              f"(found by the device's bounds check for these arguments)")


@pytest.mark.parametrize("kind, values", [("div", [7]), ("mod", [-3]), ("concat", [1, 2, 4, 3]),
                                          ("interleave-part", [0, 5, 4]), ("length:replicate", [-1])])
def test_failed_words_other_checks_as_the_evaluator(kind, values):
    error = H._failed(("g.fcl:1:1", kind), values)
    assert type(error) is ArithmeticError
    assert str(error) == f"g.fcl:1:1: {failure_message(kind, values)} (found by the device's run-time check " \
                         f"for these arguments)"


def test_kernels_rejects_a_result_kind_before_it_needs_a_device():
    with pytest.raises(ArgumentError, match='result must be "host" or "device", not \'numpy\''):
        H.Kernels(result="numpy")


# ---------------------------------------------------------------- the printed code

def test_printed_helpers_import_no_fcl_and_end_inside_kernels():
    text = H.embeddable()
    assert text.startswith("\n# ---- host helpers: fcl/runtime/hostlib.py ----\nNP_TYPES = ")
    assert "import fcl" not in text and "from fcl" not in text and "def embeddable(" not in text
    assert text.endswith("\n        return out\n") and "\nclass Kernels:" in text


def test_an_emitted_module_runs_where_fcl_cannot_be_imported(monkeypatch):
    k = fcl.load_file(str(REVERSE)).compile("revGrid")
    text = emit_module([k.plan], [k.opencl_source], "examples/reverse.fcl")
    monkeypatch.setitem(sys.modules, "fcl", None)       # `import fcl` now fails
    module = {"__name__": "kmod"}
    exec(compile(text, "kmod.py", "exec"), module)
    assert module["_div"](-7, 2) == -3 and module["_mod"](-7, 2) == -1
    assert module["ArgumentError"] is not ArgumentError
    assert callable(module["Kernels"].revGrid) and callable(module["Kernels"]._revGrid)
    with pytest.raises(module["ArgumentError"], match="result must be"):
        module["Kernels"](result="numpy")
