"""The one table of primitive type schemes (language.md section 5, paper Fig. 3).

Produces `PRIMITIVES`: name -> (Scheme, note).  Types are written with the
small constructors below; the kinds of type variables follow from where
they stand (under a push array PT, under a pull array GT), except the
overloaded numeric ones, which are declared NUM or FRAC.  Operators
(`+`, `==`, ...) are typed by the inference engine, not listed here.
The hardware parameters are in `HARDWARE_PARAMETERS`.
"""
from __future__ import annotations

from fcl.types.terms import (BOOL, DOUBLE, FLOAT, INT, LSucc, LVarT, LZero, Level, Scheme, TFunT,
                             TLevelFunT, TPairT, TPullT, TPushT, TVarT, Type)
from fcl.types.unify import infer_kinds, level_vars, substitute, type_vars


def fn(*ts: Type) -> Type:
    """`fn(a, b, c)` is `a -> b -> c`."""
    result = ts[-1]
    for t in reversed(ts[:-1]):
        result = TFunT(t, result)
    return result


def pull(t: Type) -> Type:
    return TPullT(t)


def push(t: Type, lv: Level) -> Type:
    return TPushT(t, lv)


def pair(a: Type, b: Type) -> Type:
    return TPairT(a, b)


def close(t: Type) -> Scheme:
    """Quantify every type and free level variable of a written type, with inferred kinds."""
    kinds = infer_kinds(t)
    tmap = {name: TVarT(name, kinds[name]) for name in kinds}
    body = substitute(t, tmap, {})
    return Scheme(tuple(level_vars(body)), tuple(type_vars(body)), body)


a, b, c = TVarT("a"), TVarT("b"), TVarT("c")
n = TVarT("n", "NUM")
f = TVarT("f", "FRAC")
L = LVarT("l")
L1 = LSucc(L)
TLZERO = LZero()
BLOCK = LSucc(LSucc(TLZERO))
GRID = LSucc(BLOCK)
e = TVarT("e", "PT")

_TABLE: list[tuple[str, Type, str]] = [
    ("generate", fn(INT, fn(INT, a), pull(a)), "pull array from an index function"),
    ("lengthPull", fn(pull(a), INT), "the length of a pull array"),
    ("lengthPush", fn(push(a, L), INT), "the length of a push array"),
    ("index", fn(pull(a), INT, a), "out of range is a run-time error"),
    ("mapPull", fn(fn(a, b), pull(a), pull(b)), "fuses; costs nothing by itself"),
    ("mapPush", fn(fn(a, b), push(a, L), push(b, L)), "apply to every element as it is written"),
    ("push", TLevelFunT("l", fn(pull(a), push(a, L))), "attaches an iteration scheme at level l"),
    ("force", fn(push(a, L), pull(a)), "materialises the push array"),
    ("concat", fn(INT, pull(push(a, L)), push(a, L1)), "first argument: length of every part"),
    ("interleave", fn(INT, fn(pair(INT, INT), INT), pull(push(a, L)), push(a, L1)),
     "part i's element j goes to f (i, j)"),
    ("placeConcat", fn(INT, pull(push(pair(INT, a), L)), push(a, L1)),
     "placeConcat n parts: each element (p, x) of a part (n elements each) puts x at position p"),
    ("while", fn(fn(pull(a), BOOL), fn(pull(a), push(a, L)), push(a, L), pull(a)),
     "forces the initial array, then steps while the condition holds"),
    ("foldl", fn(fn(a, b, a), a, pull(b), a), "sequential loop in one thread"),
    ("power", fn(INT, fn(INT, pull(a), push(a, L)), push(a, L), pull(a)),
     "power n f init: forces init, then steps n times; step i gets the iteration number"),
    ("powerDoubleBuffered", fn(INT, fn(INT, pull(a), push(a, L)), push(a, L), pull(a)),
     "as power; a block- or warp-level loop keeps two copies of the local arrays its step "
     "forces and alternates them, one barrier a step fewer"),
    ("seqfor", fn(INT, b, fn(b, INT, pair(b, a)), push(a, TLZERO)),
     "seqfor n s f: one thread, element i is snd (f s_i i), s_(i+1) = fst (f s_i i)"),
    ("seqConcat", fn(INT, INT, b, fn(b, INT, pair(b, push(a, L))), push(a, L)),
     "seqConcat m n s f: n steps on the same units, one after another; step i writes "
     "the m elements of snd (f s_i i) at i*m.., s_(i+1) = fst (f s_i i)"),
    ("scanConcat", fn(INT, INT, fn(e, e, e), e, fn(INT, fn(e, e), push(b, BLOCK)), push(b, GRID)),
     "scanConcat m n op ne f: n block-level parts of m elements, part g = f g prefix, where "
     "prefix x is the combination by op, from ne, of the values the parts before g gave their "
     "prefix, and x is part g's; the parts run in order of g (one kernel: a look-back)"),
    ("packConcat", fn(INT, INT, fn(INT, push(b, BLOCK)), push(b, GRID)),
     "packConcat m n f: the block-level parts f 0 .. f (n-1), each of at most m elements, one "
     "after another (part g starts where part g-1 ends); its length, the sum of theirs, only "
     "the device knows (one kernel: a look-back)"),
    ("packThreads", fn(INT, INT, fn(INT, push(b, TLZERO)), push(b, BLOCK)),
     "packThreads m n f: the thread-level parts f 0 .. f (n-1), each of at most m elements, "
     "part t run by work-item t, one after another (part t starts where part t-1 ends); its "
     "length, the sum of theirs, the block computes (a scan of the lengths in local memory)"),
    ("seqFilter", fn(fn(INT, a, BOOL), pull(a), push(a, TLZERO)),
     "seqFilter p xs: one thread's filter: the elements x at i of xs for which p i x holds, in "
     "order; its length is their count"),
    ("reduceByIndex", fn(INT, fn(a, a, a), a, pull(INT), pull(a), pull(a)),
     "reduceByIndex bins op ne is vs: bin b is the fold of op from ne over the vs[i] with "
     "is[i] = b, in index order; indices outside [0, bins) are dropped"),
    ("scatter", fn(pull(a), pull(INT), pull(a), pull(a)),
     "scatter dest is vs: dest with element is[i] replaced by vs[i]; indices outside dest "
     "dropped; a position written twice is an error"),
    ("zipWithPush", fn(fn(a, b, c), pull(a), push(b, L), push(c, L)),
     "element i of the result is f (a[i]) (b[i]); not expressible with the other primitives"),
    ("sizeOf", fn(TVarT("e", "PT"), INT),
     "bytes a value of this type takes in memory: int and float 4, double 8, bool 1; a pair "
     "the sum of its parts"),
    ("fst", fn(pair(a, b), a), "the first component of a pair"),
    ("snd", fn(pair(a, b), b), "the second component of a pair"),
    ("i2d", fn(INT, DOUBLE), "int to double (exact)"),
    ("d2i", fn(DOUBLE, INT), "double to int, truncating towards zero"),
    ("i2f", fn(INT, FLOAT), "int to float, rounding to nearest"),
    ("f2i", fn(FLOAT, INT), "float to int, truncating towards zero"),
    ("f2d", fn(FLOAT, DOUBLE), "float to double (exact)"),
    ("d2f", fn(DOUBLE, FLOAT), "double to float, rounding to nearest"),
    ("b2i", fn(BOOL, INT), "true is 1, false is 0"),
    ("floatBits", fn(FLOAT, INT), "the bits of a float (IEEE 754 binary32) as an int"),
    ("min", fn(n, n, n), "the smaller of two numbers (int, float or double)"),
    ("max", fn(n, n, n), "the larger of two numbers (int, float or double)"),
    ("abs", fn(n, n), "absolute value (int, float or double)"),
    ("sqrt", fn(f, f), "square root (float or double)"),
    ("exp", fn(f, f), "e to the power x (float or double)"),
    ("log", fn(f, f), "natural logarithm (float or double)"),
    ("sin", fn(f, f), "sine (float or double)"),
    ("cos", fn(f, f), "cosine (float or double)"),
    ("floor", fn(f, f), "round down to a whole number (float or double)"),
    ("fma", fn(f, f, f, f), "fma x y z: x * y + z rounded once, a fused multiply-add (float or double)"),
]

PRIMITIVES: dict[str, tuple[Scheme, str]] = {name: (close(t), note) for name, t, note in _TABLE}

HARDWARE_PARAMETERS = ("#BlockSize", "#WarpSize", "#NumGroups", "#LocalMemory")


def primitive_schemes() -> dict[str, Scheme]:
    """name -> Scheme for every primitive, in table order."""
    return {name: s for name, (s, _) in PRIMITIVES.items()}
