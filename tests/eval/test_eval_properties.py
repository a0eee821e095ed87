"""Properties of the evaluator on random inputs, scalar semantics against
reference implementations, and every run-time error with its location."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fcl.base import scalars
from fcl.base.errors import EvalError
from fcl.eval import evaluator_for_source

INT32 = st.integers(-2 ** 31, 2 ** 31 - 1)
SMALL = st.integers(-1000, 1000)
ARRAYS = st.lists(SMALL, max_size=40)
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

ALGEBRA = """
fun f x = x * 3 - 7
fun g x = x / 2 + x % 5
fun fusedTwice arr = push <grid> (mapPull f (mapPull g arr))
fun fusedOnce arr = push <grid> (mapPull (f . g) arr)
fun splitConcat n arr = concat n (mapPull (push <block>) (splitUp n arr))
fun splitConcatWarp n arr = concat n (mapPull (push <thread>) (splitUp n arr))
fun revRev arr = push <grid> (reverse (reverse arr))
fun halveZip arr = let h = halve arr in push <grid> (zipWith (fn a => fn b => a - b) (fst h) (snd h))
fun forcedTwice arr = push <grid> (force (push <block> (force (push <warp> arr))))
fun mapPushed arr = mapPush f (push <grid> arr)
fun zipPush arr = zipWithPush (fn a => fn b => a * b) arr (push <grid> (reverse arr))
fun evenOddSum arr = let eo = evenOdds arr in push <grid> (zipWith (fn a => fn b => a + b) (fst eo) (snd eo))
fun interleaved n arr =
  let parts = splitUp n arr
  in interleave n (fn ij => snd ij * lengthPull parts + fst ij) (mapPull (push <block>) parts)
"""


@pytest.fixture(scope="module")
def alg():
    return evaluator_for_source(ALGEBRA, "algebra.fcl")


def _c_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _f(x):
    return scalars.wrap(x * 3 - 7)


def _g(x):
    return scalars.wrap(_c_div(x, 2) + int(math.fmod(x, 5)))


# ---------------------------------------------------------------- array algebra

@SETTINGS
@given(ARRAYS)
def test_map_pull_fusion(alg, xs):
    a = alg.run("fusedTwice", [xs])[0]
    b = alg.run("fusedOnce", [xs])[0]
    assert list(a) == list(b) == [_f(_g(x)) for x in xs]


@SETTINGS
@given(st.integers(1, 8), st.integers(0, 6), st.data())
def test_split_up_then_concat_is_identity(alg, n, parts, data):
    xs = data.draw(st.lists(SMALL, min_size=n * parts, max_size=n * parts))
    assert list(alg.run("splitConcat", [n, xs])[0]) == xs
    assert list(alg.run("splitConcatWarp", [n, xs])[0]) == xs


@SETTINGS
@given(ARRAYS)
def test_reverse_reverse_is_identity(alg, xs):
    assert list(alg.run("revRev", [xs])[0]) == xs


@SETTINGS
@given(ARRAYS)
def test_halve_and_zip_with(alg, xs):
    h = len(xs) // 2
    expected = [scalars.wrap(xs[i] - xs[h + i]) for i in range(h)]
    assert list(alg.run("halveZip", [xs])[0]) == expected


@SETTINGS
@given(ARRAYS)
def test_even_odds_zip(alg, xs):
    expected = [xs[2 * i] + xs[2 * i + 1] for i in range(len(xs) // 2)]
    assert list(alg.run("evenOddSum", [xs])[0]) == expected


@SETTINGS
@given(ARRAYS)
def test_force_is_identity_on_values(alg, xs):
    assert list(alg.run("forcedTwice", [xs])[0]) == xs


@SETTINGS
@given(ARRAYS)
def test_map_push_and_zip_with_push(alg, xs):
    assert list(alg.run("mapPushed", [xs])[0]) == [_f(x) for x in xs]
    assert list(alg.run("zipPush", [xs])[0]) == [scalars.wrap(x * y) for x, y in zip(xs, xs[::-1])]


@SETTINGS
@given(st.integers(1, 6), st.integers(0, 6), st.data())
def test_interleave_transposes_parts(alg, n, parts, data):
    xs = data.draw(st.lists(SMALL, min_size=n * parts, max_size=n * parts))
    expected = np.array(xs, dtype=np.int64).reshape(parts, n).T.ravel().tolist() if xs else []
    assert list(alg.run("interleaved", [n, xs])[0]) == expected


# ---------------------------------------------------------------- scalars vs references

def _np_i32(op, a, b):
    with np.errstate(all="ignore"):
        return int(op(np.array([a], np.int32), np.array([b], np.int32))[0])


@given(INT32, INT32)
def test_int_wraps_like_int32(a, b):
    assert scalars.int_add(a, b) == _np_i32(np.add, a, b)
    assert scalars.int_sub(a, b) == _np_i32(np.subtract, a, b)
    assert scalars.int_mul(a, b) == _np_i32(np.multiply, a, b)
    assert scalars.int_neg(a) == _np_i32(np.subtract, 0, a)
    assert scalars.int_and(a, b) == a & b and scalars.int_xor(a, b) == _np_i32(np.bitwise_xor, a, b)


@given(INT32, INT32)
def test_int_division_truncates(a, b):
    if b == 0:
        with pytest.raises(EvalError, match="division by zero"):
            scalars.int_div(a, b)
        with pytest.raises(EvalError, match="division by zero"):
            scalars.int_rem(a, b)
        return
    q, r = scalars.int_div(a, b), scalars.int_rem(a, b)
    assert q == scalars.wrap(int(a / b) if abs(a) < 2 ** 52 else _c_div(a, b))
    assert q == scalars.wrap(_c_div(a, b))
    assert r == int(math.fmod(a, b))
    assert scalars.wrap(q * b + r) == a       # C's identity (a/b)*b + a%b == a


def test_int_division_corner_cases():
    m = scalars.INT_MIN
    assert scalars.int_div(m, -1) == m and scalars.int_rem(m, -1) == 0
    assert scalars.int_div(-7, 2) == -3 and scalars.int_rem(-7, 2) == -1
    assert scalars.int_div(7, -2) == -3 and scalars.int_rem(7, -2) == 1
    assert scalars.int_abs(m) == m


@given(INT32, st.integers(-100, 100))
def test_shifts_mask_the_count(a, b):
    s = b & 31
    assert scalars.int_shl(a, b) == _np_i32(np.left_shift, a, s)
    assert scalars.int_shr(a, b) == _np_i32(np.right_shift, a, s)


FLOATS32 = st.floats(width=32, allow_nan=True, allow_infinity=True)


@given(FLOATS32, FLOATS32)
def test_float_is_ieee_single(a, b):
    x, y = np.float32(a), np.float32(b)
    with np.errstate(all="ignore"):
        for mine, ref in [(scalars.float_add, np.add), (scalars.float_sub, np.subtract),
                          (scalars.float_mul, np.multiply), (scalars.float_div, np.divide)]:
            got, want = mine(x, y), ref(x, y)
            assert type(got) is np.float32
            assert (np.isnan(got) and np.isnan(want)) or got == want, (mine.__name__, x, y)
        want = np.sqrt(x)
        got = scalars.float_sqrt(x)
        assert (np.isnan(got) and np.isnan(want)) or got == want


def _rounded_once(r, exact: Fraction, dtype) -> bool:
    """r is `exact` rounded to nearest (ties to even) in dtype."""
    r = dtype(r)
    here = abs(Fraction(float(r)) - exact)
    bits = r.view(np.uint32 if dtype is np.float32 else np.uint64)
    for way in (-np.inf, np.inf):
        there = abs(Fraction(float(np.nextafter(r, dtype(way)))) - exact)
        if there < here or there == here and bits & 1:
            return False
    return True


BOUNDED32 = st.floats(-2.0 ** 60, 2.0 ** 60, width=32)


@given(BOUNDED32, BOUNDED32, BOUNDED32)
def test_fma_rounds_the_exact_result_once(a, b, c):
    x, y, z = np.float32(a), np.float32(b), np.float32(c)
    exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
    got = scalars.float_fma(x, y, z)
    assert type(got) is np.float32 and _rounded_once(got, exact, np.float32), (x, y, z)
    assert _rounded_once(scalars.double_fma(float(x), float(y), float(z)), exact, np.float64)


def test_fma_corner_cases():
    e = np.float32(1 + 2 ** -12)
    # e * e = 1 + 2^-11 + 2^-24 is halfway between two floats; 2^-60 more puts it above, but
    # rounded to double first it is the halfway point again (which ties to even, down)
    assert scalars.float_fma(e, e, np.float32(2.0 ** -60)) == np.float32(1 + 2 ** -11 + 2 ** -23)
    assert scalars.float_fma(e, e, np.float32(0)) == np.float32(1 + 2 ** -11)
    assert scalars.float_mul(e, e) == np.float32(1 + 2 ** -11)           # unfused: rounded twice
    assert scalars.double_fma(1e300, 1e300, -math.inf) == -math.inf      # the product does not overflow
    assert math.isnan(scalars.double_fma(math.inf, 0.0, 1.0))
    assert scalars.double_fma(1e300, 1e300, -1e300) == math.inf
    assert math.copysign(1, scalars.double_fma(-0.0, 1.0, -0.0)) == -1
    assert math.copysign(1, scalars.double_fma(3.0, 0.5, -1.5)) == 1     # an exact zero is +0
    assert scalars.double_fma(1 + 2 ** -30, 1 - 2 ** -30, -1.0) == -2.0 ** -60


@given(st.floats(allow_nan=True, allow_infinity=True), st.floats(allow_nan=True, allow_infinity=True))
def test_double_division_never_raises(a, b):
    r = scalars.double_div(a, b)
    if b != 0:
        assert (math.isnan(r) and (math.isnan(a / b))) or r == a / b
    elif a == 0 or math.isnan(a):
        assert math.isnan(r)
    else:
        assert math.isinf(r)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_d2i_truncates_and_saturates(x):
    r = scalars.d2i(x)
    if math.isnan(x):
        assert r == 0
    elif x >= 2 ** 31:
        assert r == scalars.INT_MAX
    elif x <= -2 ** 31 - 1:
        assert r == scalars.INT_MIN
    else:
        assert r == math.trunc(x)
    assert scalars.INT_MIN <= r <= scalars.INT_MAX


def test_conversions():
    assert scalars.i2f(16777217) == np.float32(16777216.0)
    assert type(scalars.d2f(1e300)) is np.float32 and np.isinf(scalars.d2f(1e300))
    assert scalars.f2i(np.float32(-2.75)) == -2
    assert scalars.b2i(True) == 1 and scalars.b2i(False) == 0
    assert scalars.double_floor(-0.5) == -1.0
    assert math.isnan(scalars.double_log(-1.0)) and scalars.double_exp(1000.0) == math.inf


@pytest.fixture(scope="module")
def ops():
    return evaluator_for_source("""
fun idiv a b = a / b
fun imod a b = a % b
fun ishl a b = a << b
fun ishr a b = a >> b
fun fadd a b = a + b
fun ddiv a b = a / b
fun shortAnd a = a > 0 && 10 / a > 1
fun shortOr a = a == 0 || 10 / a > 1
fun conv x = (d2i x, (i2f (d2i x), f2d (d2f x)))
""", "ops.fcl")


@SETTINGS
@given(INT32, INT32.filter(lambda b: b != 0))
def test_operators_in_programs_follow_scalars(ops, a, b):
    assert ops.run("idiv", [a, b])[0] == scalars.int_div(a, b)
    assert ops.run("imod", [a, b])[0] == scalars.int_rem(a, b)
    assert ops.run("ishl", [a, b])[0] == scalars.int_shl(a, b)
    assert ops.run("ishr", [a, b])[0] == scalars.int_shr(a, b)


def test_float_and_double_in_programs(ops):
    r = ops.run("fadd", [np.float32(0.1), np.float32(0.2)])[0]
    assert type(r) is np.float32 and r == np.float32(0.1) + np.float32(0.2)
    assert ops.run("ddiv", [1.0, 0.0])[0] == math.inf
    assert ops.run("conv", [-3.9])[0] == (-3, (np.float32(-3.0), float(np.float32(-3.9))))
    assert ops.run("conv", [float("nan")])[0][0] == 0


def test_logic_short_circuits(ops):
    assert ops.run("shortAnd", [0])[0] is False
    assert ops.run("shortOr", [0])[0] is True
    assert ops.run("shortAnd", [3])[0] is True


# ---------------------------------------------------------------- run-time errors with locations

ERRORS = """
fun outOfRange arr = push <grid> (generate 3 (fn i => index arr (i + 5)))
fun divide a b = a / b
fun conflict arr = interleave 2 (fn ij => snd ij) (mapPull (push <block>) (splitUp 2 arr))
fun holes arr = interleave 3 (fn ij => 3 * fst ij + snd ij) (mapPull (push <block>) (splitUp 2 arr))
fun outside arr = interleave 2 (fn ij => 100) (mapPull (push <block>) (splitUp 2 arr))
fun shortParts arr = concat 3 (mapPull (push <block>) (splitUp 2 arr))
fun longParts arr = concat 1 (mapPull (push <block>) (splitUp 2 arr))
fun grow arr = while (fn a => lengthPull a < 100) (fn a => push <block> (generate (lengthPull a + 1) (fn i => 0))) (push <block> arr) |> push <grid>
fun loopForever arr = while (fn a => true) (fn a => push <block> a) (push <block> arr) |> push <grid>
fun negative n = push <grid> (generate n (fn i => i))
fun negConcat n arr = concat n (mapPull (push <block>) (splitUp 1 arr))
fun wrongLevel arr = push <thread> (generate 2 (fn i => index (force (push <block> arr)) i))
fun tooHigh arr = concat 1 (mapPull (fn x => push <grid> (generate 1 (fn i => x))) arr)
fun notAFunction x = 3 x
"""


@pytest.fixture(scope="module")
def err():
    return evaluator_for_source(ERRORS, "errors.fcl")


def _fails(ev, name, args, *fragments, at: str, line: int):
    with pytest.raises(EvalError) as info:
        ev.run(name, args)
    e = info.value
    for frag in fragments:
        assert frag in e.message, (frag, e.message)
    assert e.span is not None, e.message
    assert e.span.line == line, (e.span.line, e.message)
    assert e.span.source.text[e.span.start:e.span.end].startswith(at), \
        (e.span.source.text[e.span.start:e.span.end], at)
    assert e.render().startswith(f"errors.fcl:{line}:")
    return e


def test_index_out_of_range(err):
    _fails(err, "outOfRange", [[1, 2, 3, 4, 5, 6]], "index 6", "length 6",
           at="index arr (i", line=2)


def test_division_by_zero(err):
    _fails(err, "divide", [7, 0], "division by zero", at="a / b", line=3)


def test_interleave_write_conflict(err):
    _fails(err, "conflict", [[1, 2, 3, 4]], "position 0", "written twice", "part 0", "part 1",
           at="interleave", line=4)


def test_interleave_holes(err):
    _fails(err, "holes", [[1, 2, 3, 4]], "never written", "positions 2, 5",
           at="interleave", line=5)
    _fails(err, "outside", [[1, 2]], "position 100", "outside", at="interleave", line=6)


def test_concat_parts_of_the_wrong_length(err):
    _fails(err, "shortParts", [[1, 2, 3, 4]], "part 0 has 2 elements", "never written",
           at="concat", line=7)
    _fails(err, "longParts", [[1, 2, 3, 4]], "part 0 has 2 elements", "written twice",
           at="concat", line=8)


def test_while_never_grows(err):
    _fails(err, "grow", [[1, 2]], "arrays never grow in while", "length 3",
           at="while", line=9)


def test_while_that_cannot_terminate(err):
    _fails(err, "loopForever", [[1, 2]], "never terminates", at="while", line=10)


def test_negative_sizes(err):
    _fails(err, "negative", [-3], "must not be negative", "-3", at="generate", line=11)
    _fails(err, "negConcat", [-1, [1]], "must not be negative", at="concat", line=12)


def test_force_at_a_lower_level(err):
    _fails(err, "wrongLevel", [[1, 2]], "block-level array inside a thread-level",
           at="force", line=13)


def test_no_level_above_grid(err):
    _fails(err, "tooHigh", [[1, 2]], "no level above grid", at="concat", line=14)


def test_applying_a_non_function(err):
    _fails(err, "notAFunction", [1], "not a function", at="3 x", line=15)
