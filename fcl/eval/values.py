"""Run-time values of the reference evaluator, and conversion from/to Python.

The values of paper section 5.2, in an environment-based representation:

* base values: Python ``int`` (int), ``float`` (double), ``numpy.float32``
  (float), ``bool``; pairs are Python 2-tuples;
* pull arrays ``[e1, ..., en]``: `Pull` -- a length and an index function
  ``get(i)`` that evaluates element ``i`` on demand (never cached, except in
  a `Buffer`, the result of ``force``, whose ``get`` reads memory and counts
  the read);
* push arrays ``[e1, ..., en]<lvl>``: `PushOf` (``push <lvl> a``) and
  `MapPush` (rule 37, applied element-wise when the array is forced);
* delayed concatenation ``concatDelay e1 e2``: `ConcatDelay` (rule 38) and
  its generalisation `InterleaveDelay`; their level is one above their
  parts' and is learnt when the first part is evaluated (see machine.py);
* functions: Python callables of one argument; level abstractions:
  `LevelFn` (a callable of one level, 0 = thread ... 3 = grid).

This module does not evaluate anything; closures.py (expressions) and
machine.py (the force rules) do.
"""
from __future__ import annotations

import numpy as np

from fcl.base.errors import ArgumentError, EvalError
from fcl.base.hw import VALUE_DTYPES
from fcl.base.scalars import F32, INT_MAX, INT_MIN, KIND_OF_TYPE
from fcl.eval.cost import GLOBAL

class EmptyArray:
    """The literal `[]`: an array of length 0 whose element type is not known yet."""

    _instance: "EmptyArray | None" = None

    def __new__(cls) -> "EmptyArray":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __len__(self) -> int:
        return 0

    def __iter__(self):
        return iter(())

    def __repr__(self) -> str:
        return "EMPTY"


EMPTY = EmptyArray()


# ---------------------------------------------------------------- pull arrays

class Pull:
    """A pull array: length `n` and index function `get` (0 <= i < n assumed)."""

    __slots__ = ("n", "get")

    def __init__(self, n: int, get):
        self.n = n
        self.get = get

    def describe(self) -> str:
        return f"pull array of length {self.n}"


class Buffer(Pull):
    """A materialised array: `data` in memory `space`; `get` counts one read.

    Elements that are not scalars (nested arrays, pairs) are descriptors, not
    memory cells, so reading them is not counted.
    """

    __slots__ = ("data", "space")

    def __init__(self, data: list, space: str, machine, count_reads: bool = True):
        self.data = data
        self.space = space
        if count_reads:
            counter = machine.cost.reads[space]

            def get(i, data=data, counter=counter, m=machine):
                counter[m.ctx] += 1
                return data[i]
        else:
            get = data.__getitem__
        super().__init__(len(data), get)

    def describe(self) -> str:
        return f"array of length {self.n} in {self.space} memory"


# ---------------------------------------------------------------- push arrays

class Push:
    """A push array; `level` is 0..3, or None for a delayed concatenation not yet probed."""

    __slots__ = ("level", "length")


class PushOf(Push):
    """``push <level> pull``: element i is ``pull.get(i)``, written to position i."""

    __slots__ = ("pull",)

    def __init__(self, level: int, pull: Pull):
        self.level = level
        self.length = pull.n
        self.pull = pull


class MapPush(Push):
    """``mapPush f inner`` (rule 37): f is applied to each element as it is written."""

    __slots__ = ("f", "inner")

    def __init__(self, f, inner: Push):
        self.level = inner.level
        self.length = inner.length
        self.f = f
        self.inner = inner


class ZipWithPush(Push):
    """``zipWithPush f a p``: the element written to position i becomes ``f a[i] v``;
    the length is the shorter one's (writes beyond it are dropped)."""

    __slots__ = ("f", "pull", "inner")

    def __init__(self, f, pull: Pull, inner: Push):
        self.level = inner.level
        self.length = min(pull.n, inner.length)
        self.f = f
        self.pull = pull
        self.inner = inner


class SeqForPush(Push):
    """``seqfor n s f``: one thread, element i is ``snd (f s_i i)`` and the state
    goes on as ``s_(i+1) = fst (f s_i i)`` (a thread-level push array)."""

    __slots__ = ("state", "f", "span")

    def __init__(self, n: int, state, f, span):
        self.level = 0
        self.length = n
        self.state = state
        self.f = f
        self.span = span


class SeqConcatPush(Push):
    """``seqConcat m n s f``: n steps on the same units, one after another; step i is
    ``f s_i i = (s_(i+1), part)`` and part's m elements go to i*m, i*m + 1, ...  The
    level is the parts' (learnt from step 0, kept in `pending` for the run that follows)."""

    __slots__ = ("part", "steps", "state", "f", "span", "pending")

    def __init__(self, part: int, steps: int, state, f, span):
        self.level = None
        self.length = part * steps
        self.part = part
        self.steps = steps
        self.state = state
        self.f = f
        self.span = span
        self.pending = None


class ConcatDelay(Push):
    """``concatDelay chunk parts`` (rule 38): part i's element j goes to i*chunk + j.

    `pending` holds part 0 (and the cost accumulator it was evaluated under)
    between the probe that learns the level and the force that uses it.
    """

    __slots__ = ("chunk", "parts", "span", "pending")

    def __init__(self, chunk: int, parts: Pull, span):
        self.level = None
        self.length = chunk * parts.n
        self.chunk = chunk
        self.parts = parts
        self.span = span
        self.pending = None


class InterleaveDelay(ConcatDelay):
    """``interleave chunk f parts``: part i's element j goes to ``f (i, j)``; ``placeConcat
    chunk parts`` (f None): each element is a pair (position, value), the value going there."""

    __slots__ = ("f",)

    def __init__(self, chunk: int, f, parts: Pull, span):
        super().__init__(chunk, parts, span)
        self.f = f


class ScanConcatDelay(ConcatDelay):
    """``scanConcat chunk n op ne f``: a concatenation of n parts, part g being ``f g prefix``;
    `prefix x` gives the combination (op, from ne) of the values the parts before g gave
    theirs, and x becomes part g's.  `parts` gives the parts in order of g only (`ScanChain`)."""

    __slots__ = ("chain",)

    def __init__(self, chunk: int, chain, span):
        super().__init__(chunk, Pull(chain.n, chain.part), span)
        self.chain = chain


class PackConcatDelay(ConcatDelay):
    """``packConcat m n f``: the parts ``f 0`` .. ``f (n-1)`` (push arrays of at most m
    elements each) one after another; part g starts at `offsets[g]`, the sum of the lengths
    before it.  The parts are applied when it is made (their lengths make its length)."""

    __slots__ = ("offsets",)

    def __init__(self, chunk: int, parts: list, offsets: list, span):
        """`offsets`: the start of each part, then the length of the whole."""
        super().__init__(chunk, Pull(len(parts), parts.__getitem__), span)
        self.length = offsets[-1]
        self.offsets = offsets[:-1]


class SeqFilterPush(Push):
    """``seqFilter p xs``: one thread's filter, the elements x at i of xs for which ``p i x``
    holds, in order (a thread-level push array; its length is their count).  The test runs
    when it is made: `items` holds the kept elements, `scanned` the elements tested."""

    __slots__ = ("items", "scanned")

    def __init__(self, items: list, scanned: int):
        self.level = 0
        self.length = len(items)
        self.items = items
        self.scanned = scanned


class PackThreadsDelay(Push):
    """``packThreads m n f``: the thread-level parts ``f 0`` .. ``f (n-1)`` (at most m elements
    each), part t run by work-item t, one after another: part t starts at `offsets[t]`, the
    sum of the lengths before it (a block-level push array)."""

    __slots__ = ("parts", "offsets", "span")

    def __init__(self, parts: list, offsets: list, span):
        """`offsets`: the start of each part, then the length of the whole."""
        self.level = 2
        self.length = offsets[-1]
        self.parts = parts
        self.offsets = offsets[:-1]
        self.span = span


class ScanChain:
    """The n parts of a `scanConcat`, ``f g prefix`` in order of g, each with its own `prefix`
    function, and the running combination of the values the parts gave theirs."""

    def __init__(self, n: int, op, ne, f, span):
        self.op, self.carry, self.f, self.span = op, ne, f, span
        self.n = n
        self.next = 0
        self.calls = 1            # prefix calls of part next - 1 (none before part 0)

    def part(self, g: int):
        if g != self.next:
            raise EvalError(f"scanConcat: part {g} was asked for before part {self.next}", self.span)
        self.finished()
        self.next, self.calls = g + 1, 0

        def prefix(x):
            self.calls += 1
            if self.calls > 1:
                raise EvalError(f"scanConcat: part {g} calls its prefix function twice; each part gives "
                                "its value once", self.span)
            before = self.carry
            self.carry = self.op(before)(x)
            return before
        return self.f(g)(prefix)

    def finished(self):
        """The last part applied called its prefix function (the parts after it wait for it)."""
        if self.calls == 0:
            raise EvalError(f"scanConcat: part {self.next - 1} never calls its prefix function; every part "
                            "must give its value once (the parts after it wait for it)", self.span)


# ---------------------------------------------------------------- functions

class LevelFn:
    """A level abstraction ``fn <l> => e``: `fn` takes a level number."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn


def is_function(v) -> bool:
    return callable(v) or isinstance(v, LevelFn)


def describe(v) -> str:
    """A short phrase naming the kind of a value, for error messages."""
    if isinstance(v, bool):
        return "a bool"
    if isinstance(v, int):
        return "an int"
    if isinstance(v, F32):
        return "a float"
    if isinstance(v, float):
        return "a double"
    if isinstance(v, tuple):
        return "a pair"
    if isinstance(v, Pull):
        return "a pull array"
    if isinstance(v, Push):
        return "a push array"
    if isinstance(v, LevelFn):
        return "a level abstraction"
    if callable(v):
        return "a function"
    return type(v).__name__


# ---------------------------------------------------------------- Python -> FCL

_DTYPE_CONVERT = {
    np.dtype(np.int32): lambda a: a.tolist(),
    np.dtype(np.bool_): lambda a: a.tolist(),
    np.dtype(np.float64): lambda a: a.tolist(),
    np.dtype(np.float32): lambda a: [F32(x) for x in a],
}


def from_python(v, machine, where: str = "argument"):
    """Convert a Python/NumPy argument to an evaluator value (arrays live in global memory)."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        x = int(v)
        if not INT_MIN <= x <= INT_MAX:
            raise ArgumentError(f"{where}: {x} does not fit in a 32-bit int")
        return x
    if isinstance(v, np.float32):
        return F32(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    if isinstance(v, tuple):
        if len(v) != 2:
            raise ArgumentError(f"{where}: a tuple of {len(v)} elements; FCL has pairs only")
        return (from_python(v[0], machine, where), from_python(v[1], machine, where))
    if isinstance(v, np.ndarray):
        return _from_ndarray(v, machine, where)
    if isinstance(v, list):
        elems = [from_python(x, machine, where) for x in v]
        _check_homogeneous(elems, where)
        scalar = not elems or not isinstance(elems[0], (Pull, tuple))
        return Buffer(elems, GLOBAL, machine, count_reads=scalar)
    if isinstance(v, (Pull, Push)):
        return v
    if isinstance(v, EmptyArray):
        return Buffer([], GLOBAL, machine)
    raise ArgumentError(f"{where}: cannot pass a Python {type(v).__name__} to an FCL program")


def _from_ndarray(a: np.ndarray, machine, where: str):
    if a.ndim == 0:
        return from_python(a[()], machine, where)
    if a.ndim > 1:
        return Buffer([_from_ndarray(row, machine, where) for row in a], GLOBAL, machine,
                      count_reads=False)
    conv = _DTYPE_CONVERT.get(a.dtype)
    if conv is None:
        if a.dtype.kind in "iu":
            if a.size and (a.min() < INT_MIN or a.max() > INT_MAX):
                raise ArgumentError(f"{where}: array values do not fit in a 32-bit int")
            return Buffer(a.astype(np.int64).tolist(), GLOBAL, machine)
        raise ArgumentError(f"{where}: arrays of dtype {a.dtype} are not supported "
                            "(use int32, float32, float64 or bool)")
    return Buffer(conv(a), GLOBAL, machine)


def _check_homogeneous(elems: list, where: str) -> None:
    if len(elems) > 1:
        t = type(elems[0])
        for x in elems:
            if type(x) is not t and not (isinstance(x, Pull) and issubclass(t, Pull)):
                raise ArgumentError(f"{where}: array elements of different types "
                                    f"({describe(elems[0])} and {describe(x)})")


# ---------------------------------------------------------------- FCL -> Python

_RESULT_DTYPE = {py: VALUE_DTYPES[kind] for py, kind in KIND_OF_TYPE.items()}


def to_python(v, machine, span=None):
    """Convert a result: scalars as they are, arrays of scalars to 1-D numpy arrays,
    other arrays to lists, pairs to tuples.  Push arrays are forced at their own
    level as a kernel's final result (global memory); a pull array is materialised
    as if pushed at the grid level.  Functions are an error."""
    if isinstance(v, (bool, int, float, F32)):
        return v
    if isinstance(v, tuple):
        return tuple(to_python(x, machine, span) for x in v)
    if isinstance(v, Push):
        return _array_to_python(machine.force(v, span, final=True).data, machine, span)
    if isinstance(v, Pull):
        if isinstance(v, Buffer):
            return _array_to_python(list(v.data), machine, span)
        return _array_to_python(machine.force(PushOf(3, v), span, final=True).data, machine, span)
    if is_function(v):
        raise EvalError("the result is a function, not a value: apply it to all its arguments", span)
    raise EvalError(f"cannot convert {describe(v)} to a Python value", span)


def _array_to_python(data: list, machine, span):
    if not data:
        return np.zeros(0, dtype=np.int32)
    dtype = _RESULT_DTYPE.get(type(data[0]))
    if dtype is not None:
        return np.array(data, dtype=dtype)
    if _pairs_of_scalars(data[0]):      # an array of pairs: a structured array, as kernels give
        return _zipped([x[0] for x in data], [x[1] for x in data], machine, span)
    return [to_python(x, machine, span) for x in data]


def _pairs_of_scalars(v) -> bool:
    """Whether `v` is a pair of scalars or of such pairs (what push arrays hold)."""
    if isinstance(v, tuple):
        return all(_pairs_of_scalars(x) for x in v)
    return type(v) in _RESULT_DTYPE


def _zipped(first: list, second: list, machine, span) -> np.ndarray:
    """The structured array (fields f0, f1) of the pairs of `first` and `second`."""
    a, b = _array_to_python(first, machine, span), _array_to_python(second, machine, span)
    out = np.empty(len(a), dtype=[("f0", a.dtype), ("f1", b.dtype)])
    out["f0"], out["f1"] = a, b
    return out
