"""The primitives of language.md section 5, as functions of the machine.

Each entry of `PRIMS` is a `Prim`: its parameter kinds ("l" a level, "v" a
value, in order) and an implementation ``impl(machine, span, *args)``.  The
span is that of the application that supplied the last argument (or of the
primitive's name when it is passed around unapplied); errors point there.
The rules that evaluate (force, delayed concatenation, while) live in
machine.py; these functions build values and check arguments.
"""
from __future__ import annotations

from dataclasses import dataclass

from fcl.base import scalars
from fcl.base.errors import EvalError
from fcl.base.hw import STORAGE_DTYPES
from fcl.eval.values import (ConcatDelay, InterleaveDelay, MapPush, Pull, Push, PackConcatDelay, PackThreadsDelay, PushOf,
                              ScanChain, ScanConcatDelay, SeqFilterPush,
                             SeqConcatPush, SeqForPush, ZipWithPush, describe)


@dataclass(frozen=True)
class Prim:
    name: str
    params: str
    impl: object


def _need_int(name: str, what: str, v, span) -> int:
    if type(v) is not int:
        raise EvalError(f"{name}: {what} must be an int, got {describe(v)}", span)
    return v


def _need_pull(name: str, v, span) -> Pull:
    if not isinstance(v, Pull):
        raise EvalError(f"{name} expects a pull array, got {describe(v)}", span)
    return v


def _need_push(name: str, v, span) -> Push:
    if not isinstance(v, Push):
        raise EvalError(f"{name} expects a push array, got {describe(v)}", span)
    return v


def _need_fn(name: str, v, span):
    if not callable(v):
        raise EvalError(f"{name} expects a function, got {describe(v)}", span)
    return v


def _need_size(name: str, what: str, v, span) -> int:
    _need_int(name, what, v, span)
    if v < 0:
        raise EvalError(f"{name}: {what} must not be negative, got {v}", span)
    return v


# ---------------------------------------------------------------- arrays

def p_generate(m, span, n, f):
    """generate n f: the pull array [f 0, ..., f (n-1)] (nothing is evaluated yet)."""
    return Pull(_need_size("generate", "the length", n, span), _need_fn("generate", f, span))


def p_length_pull(m, span, a):
    return _need_pull("lengthPull", a, span).n


def p_length_push(m, span, p):
    return _need_push("lengthPush", p, span).length


def p_index(m, span, a, i):
    """index a i; out of range is a run-time error naming the index and the length."""
    _need_pull("index", a, span)
    _need_int("index", "the index", i, span)
    if not 0 <= i < a.n:
        raise EvalError(f"index {i} out of range for an array of length {a.n}", span)
    return a.get(i)


def p_map_pull(m, span, f, a):
    """mapPull f a (rule 36): fused into the index function."""
    get = _need_pull("mapPull", a, span).get
    _need_fn("mapPull", f, span)
    return Pull(a.n, lambda i: f(get(i)))


def p_map_push(m, span, f, p):
    """mapPush f p (rule 37): applied to each element when p is forced."""
    return MapPush(_need_fn("mapPush", f, span), _need_push("mapPush", p, span))


def p_zip_with_push(m, span, f, a, p):
    """zipWithPush f a p: f a[i] applied to the element written to position i."""
    return ZipWithPush(_need_fn("zipWithPush", f, span), _need_pull("zipWithPush", a, span), _need_push("zipWithPush", p, span))


def p_push(m, span, level, a):
    return PushOf(level, _need_pull("push", a, span))


def p_force(m, span, p):
    return m.force(_need_push("force", p, span), span)


def p_concat(m, span, n, parts):
    """concat n parts (rule 38): a delayed concatenation."""
    _need_size("concat", "the part length", n, span)
    return ConcatDelay(n, _need_pull("concat", parts, span), span)


def p_scan_concat(m, span, part, n, op, ne, f):
    """scanConcat m n op ne f: n parts of m elements, part g = f g prefix, in order of g, each
    exchanging a value for the combination of those of the parts before it."""
    _need_size("scanConcat", "the part length", part, span)
    return ScanConcatDelay(part, ScanChain(_need_size("scanConcat", "the number of parts", n, span),
                                           _need_fn("scanConcat", op, span), ne,
                                           _need_fn("scanConcat", f, span), span), span)


def _packed_parts(name: str, span, part, n, f) -> tuple[list, list]:
    """The parts f 0 .. f (n-1) of a `packConcat` or `packThreads` (push arrays of at most
    `part` elements each) and their starts, then the length of the whole."""
    _need_size(name, "the part length", part, span)
    _need_size(name, "the number of parts", n, span)
    f = _need_fn(name, f, span)
    parts, offsets = [], [0]
    for g in range(n):
        x = f(g)
        if not isinstance(x, Push):
            raise EvalError(f"{name}: part {g} is {describe(x)}, not a push array", span)
        if x.length > part:
            raise EvalError(f"{name}: part {g} has {x.length} elements, more than the part length {part}", span)
        parts.append(x)
        offsets.append(offsets[-1] + x.length)
    return parts, offsets


def p_pack_concat(m, span, part, n, f):
    """packConcat m n f: the parts f 0 .. f (n-1), each at most m elements, one after another."""
    return PackConcatDelay(part, *_packed_parts("packConcat", span, part, n, f), span)


def p_pack_threads(m, span, part, n, f):
    """packThreads m n f: the thread-level parts f 0 .. f (n-1), each at most m elements,
    one after another, a block-level array."""
    return PackThreadsDelay(*_packed_parts("packThreads", span, part, n, f), span)


def p_seq_filter(m, span, p, xs):
    """seqFilter p xs: the elements x at i of xs for which p i x holds, in order (one thread)."""
    p = _need_fn("seqFilter", p, span)
    xs = _need_pull("seqFilter", xs, span)
    kept = []
    for i in range(xs.n):
        x = xs.get(i)
        keep = p(i)(x)
        if type(keep) is not bool:
            raise EvalError(f"seqFilter: the test gave {describe(keep)}, not a bool", span)
        if keep:
            kept.append(x)
    return SeqFilterPush(kept, xs.n)


def p_interleave(m, span, n, f, parts):
    _need_size("interleave", "the part length", n, span)
    return InterleaveDelay(n, _need_fn("interleave", f, span), _need_pull("interleave", parts, span), span)


def p_place_concat(m, span, n, parts):
    _need_size("placeConcat", "the part length", n, span)
    return InterleaveDelay(n, None, _need_pull("placeConcat", parts, span), span)


def p_while(m, span, cond, step, init):
    return m.run_while(_need_fn("while", cond, span), _need_fn("while", step, span), _need_push("while", init, span), span)


def p_foldl(m, span, f, acc, a):
    return m.run_foldl(_need_fn("foldl", f, span), acc, _need_pull("foldl", a, span), span)


def p_reduce_by_index(m, span, bins, op, ne, idx, vals):
    """reduceByIndex bins op ne is vs: a combining scatter into `bins` bins."""
    _need_size("reduceByIndex", "the number of bins", bins, span)
    return m.run_reduce_by_index(bins, _need_fn("reduceByIndex", op, span), ne,
                                 _need_pull("reduceByIndex", idx, span),
                                 _need_pull("reduceByIndex", vals, span), span)


def p_scatter(m, span, dest, idx, vals):
    """scatter dest is vs: dest with element is[i] replaced by vs[i]."""
    return m.run_scatter(_need_pull("scatter", dest, span), _need_pull("scatter", idx, span),
                         _need_pull("scatter", vals, span), span)


def p_power(m, span, n, step, init, name="power"):
    """power n step init: n counted steps, step i gets the iteration number i
    (powerDoubleBuffered the same: its two copies of the step's tiles are the compiler's)."""
    _need_int(name, "the number of steps", n, span)
    return m.run_power(n, _need_fn(name, step, span), _need_push(name, init, span), span, name)


def p_power_double_buffered(m, span, n, step, init):
    return p_power(m, span, n, step, init, "powerDoubleBuffered")


def p_seqfor(m, span, n, state, f):
    """seqfor n s f: a thread-level push array of n elements with a carried state."""
    return SeqForPush(_need_size("seqfor", "the length", n, span), state, _need_fn("seqfor", f, span), span)


def p_seq_concat(m, span, part, n, state, f):
    """seqConcat m n s f: n steps of m elements each, one after another, a carried state."""
    return SeqConcatPush(_need_size("seqConcat", "the length of every part", part, span),
                         _need_size("seqConcat", "the number of steps", n, span), state,
                         _need_fn("seqConcat", f, span), span)


def p_size_of(m, span, v):
    """sizeOf v: the bytes v's scalar type takes in device memory (int, float 4; double 8; bool 1);
    a pair's, the sum of its components'."""
    if type(v) is tuple:
        return p_size_of(m, span, v[0]) + p_size_of(m, span, v[1])
    kind = scalars.kind_of(v)
    if kind is None:
        raise EvalError(f"sizeOf: {describe(v)} is not a scalar", span)
    return STORAGE_DTYPES[kind].itemsize


def p_fst(m, span, p):
    if type(p) is not tuple:
        raise EvalError(f"fst expects a pair, got {describe(p)}", span)
    return p[0]


def p_snd(m, span, p):
    if type(p) is not tuple:
        raise EvalError(f"snd expects a pair, got {describe(p)}", span)
    return p[1]


# ---------------------------------------------------------------- scalar primitives

def _scalar(name: str, table: dict):
    """A scalar primitive of any arity from its table (keyed by the type of the operands,
    which must all have that type)."""
    def impl(m, span, *args):
        fn = table.get(type(args[0]))
        if fn is None or any(type(x) is not type(args[0]) for x in args):
            raise EvalError(f"{name} is not defined on {' and '.join(describe(x) for x in args)}", span)
        return fn(*args)
    return impl


PRIMS: dict[str, Prim] = {p.name: p for p in [
    Prim("generate", "vv", p_generate),
    Prim("lengthPull", "v", p_length_pull),
    Prim("lengthPush", "v", p_length_push),
    Prim("index", "vv", p_index),
    Prim("mapPull", "vv", p_map_pull),
    Prim("mapPush", "vv", p_map_push),
    Prim("zipWithPush", "vvv", p_zip_with_push),
    Prim("push", "lv", p_push),
    Prim("force", "v", p_force),
    Prim("concat", "vv", p_concat),
    Prim("interleave", "vvv", p_interleave),
    Prim("placeConcat", "vv", p_place_concat),
    Prim("scanConcat", "vvvvv", p_scan_concat),
    Prim("packConcat", "vvv", p_pack_concat),
    Prim("packThreads", "vvv", p_pack_threads),
    Prim("seqFilter", "vv", p_seq_filter),
    Prim("while", "vvv", p_while),
    Prim("foldl", "vvv", p_foldl),
    Prim("power", "vvv", p_power),
    Prim("powerDoubleBuffered", "vvv", p_power_double_buffered),
    Prim("reduceByIndex", "vvvvv", p_reduce_by_index),
    Prim("scatter", "vvv", p_scatter),
    Prim("seqfor", "vvv", p_seqfor),
    Prim("seqConcat", "vvvv", p_seq_concat),
    Prim("fst", "v", p_fst),
    Prim("snd", "v", p_snd),
    Prim("sizeOf", "v", p_size_of),
]}
for arity, table in ((1, scalars.PRIM1), (2, scalars.PRIM2), (3, scalars.PRIM3)):
    PRIMS.update({name: Prim(name, "v" * arity, _scalar(name, t)) for name, t in table.items()})
