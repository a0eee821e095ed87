"""reduceByIndex (fcl.codegen.lower.scatter): which operators compile to atomics, where the
bins live, and the located refusals of what the device cannot combine in any order.  The
values of tests/programs/reduce_by_index.fcl are checked on every device by test_codegen,
test_interp and test_oclgrind."""
import pytest

import fcl
from fcl.base.errors import CompilerLimitation

SOURCE = """
fun byOp bins xs = reduceByIndex bins (fn a => fn b => a {op} b) 0 xs xs
fun byCall bins xs = reduceByIndex bins {call} 0 xs xs
fun local256 xs = reduceByIndex 256 (fn a => fn b => a + b) 0 (mapPull (fn x => x & 255) xs) xs
fun sliced op xs = reduceByIndex 20000 (fn a => fn b => if op == 0 then a + b else max a b)
                               (if op == 0 then 0 else 0 - 2147483647 - 1) (mapPull (fn x => x % 20100) xs) xs
fun notIdentity xs = reduceByIndex 256 (fn a => fn b => a + b) 5 (mapPull (fn x => x & 255) xs) xs
fun doubles bins xs = reduceByIndex bins (fn a => fn b => a + b) 0.0 (mapPull d2i xs) xs
fun nested xs = push <grid> (mapPull (fn x => index (reduceByIndex 4 max 0 (iota 4) (iota 4)) 0) xs)
fun nestedScatter xs = push <grid> (mapPull (fn x => index (scatter xs (iota 2) (iota 2)) 0) xs)
fun reversed xs = scatter xs (generate (lengthPull xs) (fn i => lengthPull xs - 1 - i)) xs
fun floats xs = reduceByIndex 4 (fn a => fn b => a + b) 0.0f xs (mapPull i2f xs)
fun floatMax xs = reduceByIndex 4 max 0.0f xs (mapPull i2f xs)
fun pairs xs = reduceByIndex 4 (fn a => fn b => (fst a + fst b, snd a)) (0, 0) xs (mapPull (fn x => (x, x)) xs)
"""


def program(op="+", call="max"):
    return fcl.load(SOURCE.format(op=op, call=call))


def opencl(entry: str, **kw) -> str:
    return program(**kw).compile(entry).opencl_source


@pytest.mark.parametrize("op, atomic", [("+", "add"), ("&", "and"), ("|", "or"), ("^", "xor")])
def test_int_operators_become_atomics(op, atomic):
    assert f"atomic_{atomic}(" in opencl("byOp", op=op)


@pytest.mark.parametrize("call, atomic", [("min", "min"), ("max", "max"), ("(fn a => fn b => max b a)", "max")])
def test_min_and_max_become_atomics(call, atomic):
    assert f"atomic_{atomic}(" in opencl("byCall", call=call)


def test_constant_bins_with_the_identity_are_combined_in_local_memory_first():
    src = opencl("local256")
    assert "__local int" in src and src.count("atomic_add(&g") == 1       # one global atomic a bin
    assert "int4" in src            # the grid-stride loop strip-mined: combining atomics in any order
    assert "__local int" not in opencl("notIdentity")     # 5 is not +'s identity


def test_local_bins_take_at_most_1024_work_groups():
    """Each work-group merges its copy with an atomic a bin: the launch stops at 1024 of them
    (the default #NumGroups, 4096, would make four times the merges for no more reading)."""
    kernel = program().compile("local256")
    assert "launch local256_k1 on min(#NumGroups, max(1, min((lengthPull xs + 255) / 256, 1024)))" \
        in kernel.explain()
    xs = [(7 * i) % 300 for i in range(5000)]
    assert list(kernel(xs)) == list(program().evaluate("local256", xs))


@pytest.mark.parametrize("op", [0, 1])
def test_bins_past_local_memory_are_combined_in_slices_of_it(op):
    """20000 bins: three slices of 8192 (the last partial), a work-group a slice and range of
    the elements, its slice's bins merged with an atomic a bin that changed; the values of
    the evaluator (indices past the bins and negative ones dropped), for + and max."""
    import numpy as np
    kernel = program().compile("sliced", static={"op": op}, block_size=64)
    src = kernel.opencl_source
    assert "__local int" in src and "[8192]" in src and src.count("atomic_add(&g" if op == 0 else "atomic_max(&g") == 1
    rng = np.random.default_rng(5)
    for n in (0, 1, 300, 5003, 40000):
        xs = rng.integers(-30000, 30000, n, dtype=np.int32)
        keys = np.fmod(xs, 20100)                   # FCL's %: the sign of the dividend
        keep = (keys >= 0) & (keys < 20000)
        want = np.zeros(20000, np.int64) if op == 0 else np.full(20000, np.iinfo(np.int32).min, np.int64)
        (np.add if op == 0 else np.maximum).at(want, keys[keep], xs[keep])
        want = want.astype(np.int32)
        if n <= 300:
            assert np.array_equal(np.asarray(program().evaluate("sliced", op, xs)), want)
        assert np.array_equal(np.asarray(kernel(op, xs)), np.asarray(want)), n


@pytest.mark.parametrize("op", ["-", "*"])
def test_an_operator_without_an_atomic_is_a_located_refusal(op):
    with pytest.raises(CompilerLimitation) as e:
        opencl("byOp", op=op)
    assert e.value.what == "combining-operator"
    assert e.value.span.line == 2
    assert list(program(op=op).evaluate("byOp", 2, [1, 1, 0])) == ([0, -2] if op == "-" else [0, 0])


def test_doubles_are_refused_and_the_evaluator_still_runs_them():
    with pytest.raises(CompilerLimitation, match="combines doubles"):
        opencl("doubles")
    assert list(program().evaluate("doubles", 2, [0.5, 1.5, 1.0])) == [0.5, 2.5]


def test_inside_per_element_work_is_a_located_refusal():
    with pytest.raises(CompilerLimitation) as e:
        opencl("nested")
    assert e.value.what == "grid-nesting"


def test_a_scatter_claims_each_place_and_returns_its_copy():
    src = opencl("reversed")
    assert "atomic_xchg(&claims" in src and "_k2" not in src      # two kernels: copy, writes
    with pytest.raises(CompilerLimitation) as e:
        opencl("nestedScatter")
    assert e.value.what == "grid-nesting"


def test_float_addition_is_a_compare_and_swap_loop_in_local_then_global_memory():
    src = opencl("floats")
    assert "fcl_fadd_local(" in src and "fcl_fadd_global(" in src and "atomic_cmpxchg" in src


@pytest.mark.parametrize("entry, words", [("floatMax", "combines floats"), ("pairs", "combines pairs")])
def test_other_float_operators_and_pairs_are_located_refusals(entry, words):
    with pytest.raises(CompilerLimitation, match=words) as e:
        opencl(entry)
    assert e.value.what == "combining-operator" and e.value.span is not None
