"""scanConcat (fcl.codegen.lower.lookback): where a part may call its prefix function, and
the located errors of a part that calls it twice or never, in the evaluator and the
compiler alike.  The values of tests/programs/scan_concat.fcl (ints, floats, doubles,
bools, pairs; a non-commutative operator; more parts than the look-back window) are
checked on every device by test_codegen, test_interp and test_oclgrind."""
import pytest

import fcl
from fcl.base.errors import CompileError, CompilerLimitation, EvalError

SOURCE = """
fun chained n body = force (scanConcat 1 n (fn a => fn b => a + b) 0 body)
fun underIf n = chained n (fn g => fn prefix =>
  push <block> (generate 1 (fn j => if g > 0 then prefix 1 else 0)))
fun inElements n = chained n (fn g => fn prefix => push <block> (generate 1 (fn j => prefix j)))
fun never n = chained n (fn g => fn prefix => push <block> (generate 1 (fn j => g)))
fun twice n = chained n (fn g => fn prefix =>
  let a = prefix 1 in let b = prefix 2 in push <block> (generate 1 (fn j => a + b)))
fun counts n = chained n (fn g => fn prefix => let c = prefix (g + 1) in push <block> (generate 1 (fn j => c)))
"""


def program():
    return fcl.load(SOURCE)


def test_the_parts_get_the_fold_of_the_values_before_them_in_order():
    assert list(program().evaluate("counts", 5)) == [0, 1, 3, 6, 10]
    assert list(program().compile("counts")(5)) == [0, 1, 3, 6, 10]


@pytest.mark.parametrize("entry", ["underIf", "inElements"])
def test_prefix_off_the_parts_top_is_a_located_refusal(entry):
    with pytest.raises(CompilerLimitation) as e:
        program().compile(entry).opencl_source
    assert e.value.what == "scan-prefix" and "at the top of the part" in str(e.value)
    assert e.value.span is not None


def test_a_part_that_never_calls_prefix_is_an_error_in_both():
    with pytest.raises(EvalError, match="part 0 never calls its prefix function"):
        program().evaluate("never", 3)
    with pytest.raises(CompileError, match="never calls its prefix function") as e:
        program().compile("never").opencl_source
    assert e.value.span.line == 2


def test_a_part_that_calls_prefix_twice_is_an_error_in_both():
    with pytest.raises(EvalError, match="part 0 calls its prefix function twice"):
        program().evaluate("twice", 3)
    with pytest.raises(CompileError, match="calls its prefix function twice"):
        program().compile("twice").opencl_source


def test_no_parts_run_nothing():
    assert list(program().evaluate("counts", 0)) == list(program().compile("counts")(0)) == []


def test_the_length_of_a_pack_concat_is_taken_after_it_is_forced():
    src = fcl.load("""
fun parts n = packConcat 2 n (fn g => push <block> (generate (g % 2) (fn j => g)))
fun early n = lengthPush (parts n)
fun late n = lengthPull (force (parts n))
""")
    with pytest.raises(CompilerLimitation, match="force it, then take `lengthPull`") as e:
        src.compile("early").opencl_source
    assert e.value.what == "device-length" and e.value.span.line == 3
    assert src.evaluate("early", 5) == src.evaluate("late", 5) == 2
    assert src.compile("late")(5) == 2


def test_a_forced_pack_concat_is_the_result_itself():
    """An entry that returns a grid-level force hands back its buffer (the first length elements
    of room for the most), on the host and on the device: no kernel copies it."""
    src = fcl.load("fun kept a = filter (fn x => x < 50) a\n")
    a = [(37 * i) % 100 for i in range(10000)]
    want = [x for x in a if x < 50]
    host = src.compile("kept")
    assert list(host(a)) == want == list(src.evaluate("kept", a))
    # the status words' zeroing and the pass; the host reads the length from the last status word
    assert "result: array in g" in host.explain() and "kept: 2 kernels" in host.explain()
    device = src.compile("kept", result="device")
    assert list(device(a).get()) == want


def test_a_pack_concat_forced_twice_zeroes_its_status_before_each_run():
    src = fcl.load("""
fun parts n = packConcat 2 n (fn g => push <block> (generate (g % 2) (fn j => g)))
fun twice n = let p = parts n in let a = force p in let b = force p in (lengthPull a + lengthPull b, index b 2)
""")
    assert src.evaluate("twice", 9) == (8, 5)
    assert tuple(src.compile("twice")(9)) == (8, 5)


def test_a_length_from_the_part_number_says_so_in_the_programs_terms():
    src = fcl.load("""
fun bad a = force (scanConcat 2 3 (fn x => fn y => x + y) 0 (fn g => fn prefix =>
  let b = prefix g in push <block> (take 2 (force (push <block> (generate (g + 2) (fn j => b + j)))))))
""")
    assert list(src.evaluate("bad", [1])) == [0, 1, 0, 1, 1, 2]
    with pytest.raises(CompilerLimitation, match="the number of a part of the scanConcat at .*:2, which its "
                                                 "work-group takes as it runs") as e:
        src.compile("bad").opencl_source
    assert e.value.what == "device-length"


ABSORBING = """
fun seg op flags xs = force (scan (fn a => fn b => (fst a || fst b, if fst b then snd b else op (snd a) (snd b)))
                                  (false, 0) (zipWith (fn f => fn x => (f, x)) flags xs))
fun segs flags xs = seg (fn a => fn b => a + b) flags xs
fun both flags xs = force (scan (fn a => fn b => (fst a && fst b, snd a + snd b)) (true, 0)
                                (zipWith (fn f => fn x => (f, x)) flags xs))
"""


def test_a_part_whose_value_absorbs_what_comes_before_publishes_it_as_its_inclusive_prefix():
    """A segmented scan's part that holds a flag: op y x = x for any y, so its status says
    inclusive at once (the parts after it look back no further), and a part first reads the
    nearest one's status alone (where it is inclusive, no window is read); an operator whose
    result still depends on y (a conjunction of the flags) keeps the aggregate's flag and
    reads windows only.  Many parts, flagged and not (the nearest inclusive or not), agree
    with the evaluator."""
    p = fcl.load(ABSORBING)
    published = [line for line in p.compile("segs").opencl_source.splitlines() if "atom_xchg" in line]
    assert any("? 2 : 1" in line for line in published), published
    assert "the nearest part's status is read" in p.compile("segs").opencl_source
    plain = [line for line in p.compile("both").opencl_source.splitlines() if "atom_xchg" in line]
    assert plain and not any("? 2 : 1" in line for line in plain), plain
    assert "the nearest part's status is read" not in p.compile("both").opencl_source
    import numpy as np
    rng = np.random.default_rng(7)
    n = 70001
    flags = rng.random(n) < 1 / 5000              # chunks with flags and chunks without
    xs = rng.integers(-50, 50, n).astype(np.int32)
    got = [snd for _, snd in p.compile("segs")(flags, xs)]
    want = [snd for _, snd in p.evaluate("segs", list(map(bool, flags)), list(map(int, xs)))]
    assert got == want
