"""Scalar operations of FCL, defined once, exactly as OpenCL C computes them.

Consumes Python scalars in the evaluator's representation and produces the
same:

* ``int``    -> Python ``int`` in [-2**31, 2**31); every operation wraps;
* ``float``  -> ``numpy.float32``; every operation is done in double and
  rounded once to single precision (exact for + - * / and sqrt, since
  double has more than 2*24+2 bits), overflow gives +-inf;
* ``double`` -> Python ``float`` (IEEE double, never a Python exception);
* ``bool``   -> Python ``bool``.

The code generator mirrors each function here in C; tests compare the two.
Division and remainder by zero raise `EvalError` without a span (the
evaluator adds the span of the operator); nothing else raises.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from fcl.base.errors import EvalError

INT_MIN = -(1 << 31)
INT_MAX = (1 << 31) - 1
_MASK = (1 << 32) - 1
_F32_OVERFLOW = 2.0 ** 128 - 2.0 ** 103   # values at or beyond this round to inf
F32 = np.float32
INF = math.inf
NAN = math.nan


# ---------------------------------------------------------------- representation

def wrap(x: int) -> int:
    """Reduce a Python int to a 32-bit two's complement int (C wrap-around)."""
    if INT_MIN <= x <= INT_MAX:
        return x
    return ((x - INT_MIN) & _MASK) + INT_MIN


def f32(x: float) -> np.float32:
    """Round a double to the nearest float (ties to even); overflow to +-inf."""
    if x >= _F32_OVERFLOW:
        return F32(INF)
    if x <= -_F32_OVERFLOW:
        return F32(-INF)
    return F32(x)


def kind_of(v) -> str | None:
    """The FCL base type of a scalar value ("int", "float", "double", "bool"), else None."""
    return KIND_OF_TYPE.get(type(v))


KIND_OF_TYPE = {int: "int", bool: "bool", float: "double", F32: "float"}   # a value's Python type -> its FCL type


# ---------------------------------------------------------------- int

def int_add(a: int, b: int) -> int:
    return wrap(a + b)


def int_sub(a: int, b: int) -> int:
    return wrap(a - b)


def int_mul(a: int, b: int) -> int:
    return wrap(a * b)


def int_neg(a: int) -> int:
    return wrap(-a)


def int_div(a: int, b: int) -> int:
    """Truncating division; INT_MIN / -1 = INT_MIN; by zero is an error."""
    if b == 0:
        raise EvalError(f"integer division by zero ({a} / 0)")
    q = abs(a) // abs(b)
    return wrap(-q if (a < 0) != (b < 0) else q)


def int_rem(a: int, b: int) -> int:
    """Remainder with the sign of the dividend; INT_MIN % -1 = 0; by zero is an error."""
    if b == 0:
        raise EvalError(f"integer division by zero in remainder ({a} % 0)")
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def int_shl(a: int, b: int) -> int:
    """`a << b`, the count masked to its low 5 bits as OpenCL C defines."""
    return wrap(a << (b & 31))


def int_shr(a: int, b: int) -> int:
    """Arithmetic `a >> b` on signed int, count masked to 5 bits."""
    return a >> (b & 31)


def int_and(a: int, b: int) -> int:
    return a & b


def int_or(a: int, b: int) -> int:
    return a | b


def int_xor(a: int, b: int) -> int:
    return a ^ b


def int_abs(a: int) -> int:
    """abs(INT_MIN) = INT_MIN, as in C."""
    return wrap(abs(a))


def int_min(a: int, b: int) -> int:
    return b if b < a else a


def int_max(a: int, b: int) -> int:
    return b if a < b else a


# ---------------------------------------------------------------- double

def double_add(a: float, b: float) -> float:
    return a + b


def double_sub(a: float, b: float) -> float:
    return a - b


def double_mul(a: float, b: float) -> float:
    return a * b


def double_div(a: float, b: float) -> float:
    """IEEE division: x/0 = +-inf, 0/0 = nan (never an error)."""
    if b == 0.0:
        if a != a or a == 0.0:
            return NAN
        return math.copysign(INF, a) * math.copysign(1.0, b)
    return a / b


def double_neg(a: float) -> float:
    return -a


def double_abs(a: float) -> float:
    return abs(a)


def double_min(a: float, b: float) -> float:
    """OpenCL `min`: y < x ? y : x."""
    return b if b < a else a


def double_max(a: float, b: float) -> float:
    """OpenCL `max`: x < y ? y : x."""
    return b if a < b else a


def double_sqrt(a: float) -> float:
    if a != a or a < 0.0:
        return NAN
    return math.sqrt(a)


def double_exp(a: float) -> float:
    try:
        return math.exp(a)
    except OverflowError:
        return INF


def double_log(a: float) -> float:
    if a != a or a < 0.0:
        return NAN
    if a == 0.0:
        return -INF
    return math.log(a)


def double_sin(a: float) -> float:
    return math.sin(a) if math.isfinite(a) else NAN


def double_cos(a: float) -> float:
    return math.cos(a) if math.isfinite(a) else NAN


def double_floor(a: float) -> float:
    if not math.isfinite(a) or a == 0.0:
        return a
    return float(math.floor(a))


def _fma_exact(a: float, b: float, c: float) -> Fraction | None:
    """a * b + c exactly, for finite operands and a product that is not zero; None where
    plain arithmetic already gives the fused result (signs of zero, infinities, NaN)."""
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)) or a == 0.0 or b == 0.0:
        return None
    return Fraction(a) * Fraction(b) + Fraction(c)


def double_fma(a: float, b: float, c: float) -> float:
    """OpenCL `fma`: a * b + c rounded once."""
    if math.isfinite(a) and math.isfinite(b) and math.isinf(c):
        return c                    # a finite product, however large, leaves the infinity
    exact = _fma_exact(a, b, c)
    if exact is None:
        return a * b + c
    try:
        return float(exact)         # exact zero: +0.0, as round-to-nearest gives
    except OverflowError:
        return INF if exact > 0 else -INF


# ---------------------------------------------------------------- float (single precision)

def float_add(a, b) -> np.float32:
    return f32(float(a) + float(b))


def float_sub(a, b) -> np.float32:
    return f32(float(a) - float(b))


def float_mul(a, b) -> np.float32:
    return f32(float(a) * float(b))


def float_div(a, b) -> np.float32:
    return f32(double_div(float(a), float(b)))


def float_neg(a) -> np.float32:
    return F32(-a)


def float_abs(a) -> np.float32:
    return F32(abs(a))


def float_min(a, b) -> np.float32:
    return b if b < a else a


def float_max(a, b) -> np.float32:
    return b if a < b else a


def float_fma(a, b, c) -> np.float32:
    """OpenCL `fma` on floats: a * b + c rounded once to single precision.  Rounding the
    exact value to double first, then to float, differs only where the double lands exactly
    halfway between two floats; the exact value then says which way."""
    a, b, c = float(a), float(b), float(c)
    exact = _fma_exact(a, b, c)
    if exact is None:
        return f32(double_fma(a, b, c))
    d = double_fma(a, b, c)
    r = f32(d)
    if math.isfinite(r) and float(r) != d:
        other = np.nextafter(r, F32(INF if d > float(r) else -INF))
        if float(other) - d == d - float(r) or float(r) - d == d - float(other):
            if exact != Fraction(d):
                r = max(r, other) if exact > Fraction(d) else min(r, other)
    return r


def _lift(fn):
    """A float version of a double function: compute in double, round once."""
    def f(a):
        return f32(fn(float(a)))
    f.__name__ = fn.__name__.replace("double", "float")
    f.__doc__ = f"{fn.__name__} computed in double precision, rounded to float."
    return f


float_sqrt = _lift(double_sqrt)
float_exp = _lift(double_exp)
float_log = _lift(double_log)
float_sin = _lift(double_sin)
float_cos = _lift(double_cos)
float_floor = _lift(double_floor)


# ---------------------------------------------------------------- comparisons (all numeric kinds, bool for ==/!=)

def eq(a, b) -> bool:
    return bool(a == b)


def ne(a, b) -> bool:
    return bool(a != b)


def lt(a, b) -> bool:
    return bool(a < b)


def le(a, b) -> bool:
    return bool(a <= b)


def gt(a, b) -> bool:
    return bool(a > b)


def ge(a, b) -> bool:
    return bool(a >= b)


def bool_not(a: bool) -> bool:
    return not a


# ---------------------------------------------------------------- conversions

def i2d(a: int) -> float:
    return float(a)


def i2f(a: int) -> np.float32:
    """Round to nearest even (exact below 2**24)."""
    return F32(a)


def d2i(a: float) -> int:
    """Truncate toward zero, saturate out of range, NaN -> 0 (convert_int_sat_rtz)."""
    if a != a:
        return 0
    if a >= 2147483648.0:
        return INT_MAX
    if a <= -2147483649.0:
        return INT_MIN
    return int(a)


def f2i(a) -> int:
    return d2i(float(a))


def f2d(a) -> float:
    return float(a)


def float_bits(a) -> int:
    """The bits of float a (IEEE 754 binary32) as an int."""
    return int(np.float32(a).view(np.int32))


def d2f(a: float) -> np.float32:
    return f32(a)


def b2i(a: bool) -> int:
    return 1 if a else 0


# ---------------------------------------------------------------- dispatch tables

_NUM = (int, F32, float)


def _table(int_fn, float_fn, double_fn, bool_fn=None):
    t = {int: int_fn, F32: float_fn, float: double_fn}
    if bool_fn is not None:
        t[bool] = bool_fn
    return t


def _cmp(fn, with_bool=False):
    t = {k: fn for k in _NUM}
    if with_bool:
        t[bool] = fn
    return t


# BINARY[op][python type of the left operand] -> function.  `&&`, `||`,
# `|>` and `.` are not scalar operations and are handled by the machine.
BINARY = {
    "+": _table(int_add, float_add, double_add),
    "-": _table(int_sub, float_sub, double_sub),
    "*": _table(int_mul, float_mul, double_mul),
    "/": _table(int_div, float_div, double_div),
    "div": _table(int_div, float_div, double_div),
    "%": {int: int_rem},
    "mod": {int: int_rem},
    "<<": {int: int_shl},
    ">>": {int: int_shr},
    "&": {int: int_and},
    "|": {int: int_or},
    "^": {int: int_xor},
    "==": _cmp(eq, with_bool=True),
    "!=": _cmp(ne, with_bool=True),
    "<": _cmp(lt),
    "<=": _cmp(le),
    ">": _cmp(gt),
    ">=": _cmp(ge),
}

# Operators that can raise (division by zero); the machine adds their span.
RAISING = frozenset({"/", "div", "%", "mod"})

UNARY = {
    "-": _table(int_neg, float_neg, double_neg),
    "not": {bool: bool_not},
}

# Scalar primitives by name: name -> {python type of the argument: function}.
PRIM1 = {
    "abs": _table(int_abs, float_abs, double_abs),
    "sqrt": {F32: float_sqrt, float: double_sqrt},
    "exp": {F32: float_exp, float: double_exp},
    "log": {F32: float_log, float: double_log},
    "sin": {F32: float_sin, float: double_sin},
    "cos": {F32: float_cos, float: double_cos},
    "floor": {F32: float_floor, float: double_floor},
    "i2d": {int: i2d},
    "i2f": {int: i2f},
    "d2i": {float: d2i},
    "f2i": {F32: f2i},
    "f2d": {F32: f2d},
    "d2f": {float: d2f},
    "b2i": {bool: b2i},
    "floatBits": {F32: float_bits},
}

PRIM2 = {
    "min": _table(int_min, float_min, double_min),
    "max": _table(int_max, float_max, double_max),
}

PRIM3 = {
    "fma": {F32: float_fma, float: double_fma},
}
