"""Argument literals, result printing, type-directed coercion and comparison."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from fcl.api.literals import EMPTY, coerce_arg, format_value, parse_arg, values_equal
from fcl.base.errors import ArgumentError
from fcl.types.terms import (BOOL, DOUBLE, FLOAT, GRID, INT, TFunT, TLevelFunT, TPairT,
                             TPullT, TPushT, TVarT)


def same(a, b):
    """Exact equality including NumPy dtypes and nesting."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
                and a.dtype == b.dtype and np.array_equal(a, b))
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


# ---------------------------------------------------------------- parse_arg

@pytest.mark.parametrize("text, value", [
    ("17", 17),
    ("-3", -3),
    ("2.5", 2.5),
    ("-1.0", -1.0),
    ("1e-3", 0.001),
    ("2.5f", np.float32(2.5)),
    ("true", True),
    ("false", False),
    ("[1, 2, 3]", np.array([1, 2, 3], dtype=np.int32)),
    ("[1.5, 2.5]", np.array([1.5, 2.5])),
    ("[1.5f, 2]", np.array([1.5, 2], dtype=np.float32)),
    ("[1, 2.5]", np.array([1.0, 2.5])),
    ("[true, false]", np.array([True, False])),
    ("[[1, 2], [3, 4]]", [np.array([1, 2], dtype=np.int32), np.array([3, 4], dtype=np.int32)]),
    ("(1, [2, 3])", (1, np.array([2, 3], dtype=np.int32))),
    ("((1, 2.5f), true)", ((1, np.float32(2.5)), True)),
    ("[(1, 2), (3, 4)]", [(1, 2), (3, 4)]),
    ("  [ 1 ,2 ]  ", np.array([1, 2], dtype=np.int32)),
    ("(7)", 7),
    ("2147483647", 2147483647),
    ("-2147483648", -2147483648),
    ("iota:4", np.arange(4, dtype=np.int32)),
    ("iota:0", np.arange(0, dtype=np.int32)),
])
def test_parse_literals(text, value):
    assert same(parse_arg(text), value)


def test_empty_array_is_untyped():
    assert parse_arg("[]") is EMPTY
    assert same(parse_arg("[[], [1]]"), [EMPTY, np.array([1], dtype=np.int32)])


@pytest.mark.parametrize("text, message", [
    ("[1, 2", "could not read argument 3 `[1, 2`: expected `,` or `]`"),
    ("(1, 2", "expected `)`"),
    ("[1, true]", "mix bool and int"),
    ("[1.5, 2.5f]", "mix double and float"),
    ("[1, [2]]", "mix scalars, arrays and pairs"),
    ("2147483648", "does not fit in a 32-bit int"),
    ("foo", "found `foo`"),
    ("truex", "found `truex`"),
    ("1 2", "expected the end of the argument"),
    ("", "found the end"),
    ("iota:x", "expected `iota:N`"),
    ("random:4:string", "unknown element type `string`"),
    ("random:", "expected `random:N`"),
])
def test_parse_errors_name_the_argument(text, message):
    with pytest.raises(ArgumentError) as info:
        parse_arg(text, position=3)
    assert message in info.value.message
    assert f"argument 3 `{text}`" in info.value.message


@pytest.mark.parametrize("spec, dtype, low, high", [
    ("random:500", np.int32, 0, 99),
    ("random:500:int", np.int32, 0, 99),
    ("random:500:double", np.float64, 0.0, 1.0),
    ("random:500:float", np.float32, 0.0, 1.0),
    ("random:500:bool", np.bool_, False, True),
])
def test_random_generators(spec, dtype, low, high):
    a = parse_arg(spec, seed=7, position=1)
    assert a.dtype == dtype and a.shape == (500,)
    assert a.min() >= low and a.max() <= high
    assert same(a, parse_arg(spec, seed=7, position=1))            # seeded: reproducible
    assert not np.array_equal(a, parse_arg(spec, seed=8, position=1))
    assert not np.array_equal(a, parse_arg(spec, seed=7, position=2))  # one stream per position


def test_random_ints_cover_the_range():
    a = parse_arg("random:20000", seed=1)
    assert set(np.unique(a)) == set(range(100))


@pytest.mark.parametrize("dtype, element", [
    (np.int32, "int"), (np.float32, "float"), (np.float64, "double"), (np.bool_, "bool")])
def test_npy_files(tmp_path, dtype, element):
    data = np.array([1, 0, 1, 1], dtype=dtype)
    path = tmp_path / "a.npy"
    np.save(path, data)
    loaded = parse_arg(f"@{path}")
    assert same(loaded, data)
    assert format_value(loaded).startswith("[")


def test_npy_errors(tmp_path):
    np.save(tmp_path / "i64.npy", np.arange(3, dtype=np.int64))
    np.save(tmp_path / "twod.npy", np.zeros((2, 2), dtype=np.int32))
    with pytest.raises(ArgumentError, match="dtype int64 is not supported"):
        parse_arg(f"@{tmp_path / 'i64.npy'}", position=1)
    with pytest.raises(ArgumentError, match="expected a 1-D array"):
        parse_arg(f"@{tmp_path / 'twod.npy'}")
    with pytest.raises(ArgumentError, match="could not read argument 2"):
        parse_arg(f"@{tmp_path / 'missing.npy'}", position=2)


# ---------------------------------------------------------------- format_value

@pytest.mark.parametrize("value, text", [
    (42, "42"),
    (-7, "-7"),
    (np.int32(5), "5"),
    (0.1, "0.1"),
    (3.0, "3.0"),
    (1e20, "1e+20"),
    (np.float64(2.5), "2.5"),
    (np.float32(2.5), "2.5f"),
    (np.float32(0.1), "0.1f"),
    (True, "true"),
    (np.bool_(False), "false"),
    (np.array([1, 2, 3], dtype=np.int32), "[1, 2, 3]"),
    (np.array([0.1, 2.0]), "[0.1, 2.0]"),
    (np.array([0.1, 1.5], dtype=np.float32), "[0.1f, 1.5f]"),
    (np.array([True, False]), "[true, false]"),
    (np.zeros(0, dtype=np.int32), "[]"),
    (EMPTY, "[]"),
    ([np.array([1, 2]), np.array([3])], "[[1, 2], [3]]"),
    (np.array([[1, 2], [3, 4]], dtype=np.int32), "[[1, 2], [3, 4]]"),
    ((1, 2), "(1, 2)"),
    ((1, (np.float32(0.5), np.array([1.5]))), "(1, (0.5f, [1.5]))"),
    ([(1, True), (2, False)], "[(1, true), (2, false)]"),
])
def test_format_value(value, text):
    assert format_value(value) == text


def test_format_rejects_non_values():
    with pytest.raises(TypeError):
        format_value("text")


scalars = st.one_of(
    st.integers(-2 ** 31, 2 ** 31 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(width=32, allow_nan=False, allow_infinity=False).map(np.float32),
    st.booleans(),
)
arrays = st.one_of(
    st.lists(st.integers(-2 ** 31, 2 ** 31 - 1), min_size=1).map(lambda l: np.array(l, dtype=np.int32)),
    st.lists(st.floats(allow_nan=False), min_size=1).map(np.array),
    st.lists(st.floats(width=32, allow_nan=False), min_size=1).map(lambda l: np.array(l, dtype=np.float32)),
)
values = st.recursive(st.one_of(scalars, arrays),
                      lambda inner: st.tuples(inner, inner), max_leaves=6)


@given(values)
def test_format_then_parse_round_trips(v):
    assert same(parse_arg(format_value(v)), v)


# ---------------------------------------------------------------- coerce_arg

@pytest.mark.parametrize("value, ty, result", [
    (3, INT, 3),
    (np.int32(3), INT, 3),
    (3, DOUBLE, 3.0),
    (3, FLOAT, np.float32(3)),
    (2.5, FLOAT, np.float32(2.5)),
    (np.float32(2.5), DOUBLE, 2.5),
    (True, BOOL, True),
    (np.array([1, 2], dtype=np.int32), TPullT(DOUBLE), np.array([1.0, 2.0])),
    (np.array([1, 2], dtype=np.int32), TPullT(FLOAT), np.array([1, 2], dtype=np.float32)),
    (np.array([0.5, 2]), TPullT(FLOAT), np.array([0.5, 2], dtype=np.float32)),
    (np.arange(3), TPullT(INT), np.arange(3, dtype=np.int32)),       # int64 from the Python API
    ([1, 2, 3], TPullT(INT), np.array([1, 2, 3], dtype=np.int32)),    # Python list from the API
    ([1.5, 2.5], TPullT(DOUBLE), np.array([1.5, 2.5])),
    (EMPTY, TPullT(INT), np.zeros(0, dtype=np.int32)),
    (EMPTY, TPullT(DOUBLE), np.zeros(0, dtype=np.float64)),
    (EMPTY, TPullT(TPullT(INT)), []),
    (EMPTY, TPullT(TVarT("a")), np.zeros(0, dtype=np.int32)),
    ([], TPullT(BOOL), np.zeros(0, dtype=np.bool_)),
    ((1, [2, 3]), TPairT(DOUBLE, TPullT(INT)), (1.0, np.array([2, 3], dtype=np.int32))),
    ([[1, 2], [3]], TPullT(TPullT(DOUBLE)), [np.array([1.0, 2.0]), np.array([3.0])]),
    (np.array([[1, 2], [3, 4]], dtype=np.int32), TPullT(TPullT(INT)),
     [np.array([1, 2], dtype=np.int32), np.array([3, 4], dtype=np.int32)]),
    ([(1, 2)], TPullT(TPairT(INT, DOUBLE)), [(1, 2.0)]),
    # a type variable keeps the argument's own type
    (np.array([1.5, 2.5]), TPullT(TVarT("a")), np.array([1.5, 2.5])),
    (np.array([True]), TPullT(TVarT("a")), np.array([True])),
    (np.float32(1), TVarT("a"), np.float32(1)),
    ((1, 2.5), TVarT("a"), (1, 2.5)),
    (7, TVarT("n", "NUM"), 7),
])
def test_coerce_accepts(value, ty, result):
    assert same(coerce_arg(value, ty, 1), result)


@pytest.mark.parametrize("value, ty, message", [
    (2.5, INT, "argument 2: expected int, found a double"),
    (True, INT, "argument 2: expected int, found a bool"),
    (1, BOOL, "argument 2: expected bool, found an int"),
    (np.array([1.5]), TPullT(INT), "argument 2: expected [int], found a double array"),
    (np.array([1], dtype=np.int32), TPullT(BOOL), "expected [bool], found an int array"),
    (3, TPullT(INT), "expected [int], found an int"),
    (np.array([1], dtype=np.int32), INT, "expected int, found an int array"),
    ([[1]], TPullT(INT), "expected [int], found an array of arrays"),
    ([np.array([1.5])], TPullT(TPullT(INT)), "expected [int], found a double array (inside [[int]])"),
    ((1, 2), TPullT(INT), "found a pair"),
    (np.array([1]), TPairT(INT, INT), "expected (int, int), found an int array"),
    (np.array([2 ** 40]), TPullT(INT), "do not fit in 32-bit ints"),
    (2 ** 40, INT, "does not fit in a 32-bit int"),
    (np.array([True]), TVarT("n", "NUM"), "expected a number"),
    (np.array([1], dtype=np.int32), TVarT("b", "BT"), "expected a scalar"),
    ("text", INT, "a Python str is not an FCL value"),
    ((1, 2, 3), TVarT("a"), "3-tuples"),
    (1, TFunT(INT, INT), "a parameter of type int -> int cannot be given from outside"),
    (EMPTY, TPushT(INT, GRID), "[int]<grid> cannot be given"),
    (1, TLevelFunT("l", INT), "cannot be given"),
])
def test_coerce_rejects(value, ty, message):
    with pytest.raises(ArgumentError) as info:
        coerce_arg(value, ty, 2)
    assert message in info.value.message


# ---------------------------------------------------------------- values_equal

@pytest.mark.parametrize("expected, actual", [
    (3, 3),
    (3, np.int32(3)),
    (True, np.bool_(True)),
    (1.0, 1.0 + 1e-9),
    (1e6, 1e6 + 0.5),
    (0.0, 1e-13),
    (np.float32(0.1), 0.1),
    (float("nan"), float("nan")),
    (np.array([1, 2], dtype=np.int32), np.array([1, 2], dtype=np.int64)),
    (np.array([1.0, 2.0]), np.array([1.0000001, 2.0], dtype=np.float32)),
    (np.array([8, 7]), np.array([8.0, 7.0])),
    (EMPTY, np.zeros(0, dtype=np.float32)),
    ([np.array([1]), np.array([2, 3])], [np.array([1]), np.array([2, 3])]),
    (np.array([[1, 2]]), [np.array([1, 2])]),
    ((1, [2.0]), (1, np.array([2.0]))),
])
def test_values_equal(expected, actual):
    assert values_equal(expected, actual)


@pytest.mark.parametrize("expected, actual", [
    (3, 4),
    (1, True),
    (1.0, 1.00001),
    (0.0, 1e-9),
    (1.0, float("nan")),
    (np.array([1, 2]), np.array([1, 2, 3])),
    (np.array([1, 2]), np.array([2, 1])),
    (np.array([1.0, 2.0]), np.array([1.0, 2.01])),
    (np.array([True]), np.array([1])),
    (EMPTY, np.array([1])),
    (3, np.array([3])),
    ((1, 2), (1, 3)),
    ((1, 2), np.array([1, 2])),
    ([np.array([1])], [np.array([2])]),
    ("text", "text"),
])
def test_values_differ(expected, actual):
    assert not values_equal(expected, actual)


def test_values_equal_tolerance_is_a_parameter():
    assert values_equal(1.0, 1.001, rel_tol=1e-2)
    assert not values_equal(1.0, 1.001)
