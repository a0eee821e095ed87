"""Device bounds checks: an `index` out of range in a compiled kernel is the
evaluator's located error (exit 1 from `fclc run`), never a read of garbage or
of memory outside the array; the checks the range analysis proves are gone
from the benchmark kernels; `--no-bounds-checks` drops them all."""
import subprocess
import sys

import numpy as np
import pytest

import fcl
from fcl.base.errors import EvalError
from fcl.codegen import kir as K
from fcl.runtime.oclgrind import oclgrind_available, run_with_oclgrind
from conftest import needs_device

PROGRAM = "tests/programs/bounds.fcl"
# (entry, arguments, where the evaluator reports the index, the message)
CASES = [("shiftGrid", [1, [1, 2, 3]], (5, 71), "index 3 out of range for an array of length 3"),
         ("shiftBlock", [1, list(range(1, 9))], (10, 70), "index 4 out of range for an array of length 4"),
         ("windowThread", [2, [1, 2, 3, 4]], (16, 32), "out of range for an array of length 4"),
         ("sizedHost", [2, [5, 6, 7]], (19, 46), "index 2 out of range for an array of length 2")]


def fclc(repo_env, *args):
    return subprocess.run([sys.executable, "-m", "fcl.tools.cli", *args], env=repo_env, capture_output=True,
                          text=True, timeout=300)


def located(e: EvalError):
    return (e.span.line, e.span.col)


@pytest.mark.parametrize("entry, args, where, message", CASES)
def test_the_kernel_ir_interpreter_reports_the_evaluators_error(entry, args, where, message):
    prog = fcl.load_file(PROGRAM)
    with pytest.raises(EvalError) as evaluated:
        prog.evaluate(entry, *args)
    with pytest.raises(EvalError) as emulated:
        prog.compile(entry, block_size=8, warp_size=4).emulate(*args)
    assert located(emulated.value) == located(evaluated.value) == where
    assert message in emulated.value.message and message in evaluated.value.message


def test_in_range_indexes_are_not_reported():
    prog = fcl.load_file(PROGRAM)
    kernel = prog.compile("shiftBlock", block_size=8, warp_size=4)
    assert list(kernel.emulate(0, list(range(1, 9)))) == [4, 3, 2, 1, 8, 7, 6, 5]


def test_the_device_reports_it_located_with_exit_1(repo_env):
    pytest.importorskip("pyopencl")
    for entry, args, (line, col), message in CASES[:3]:
        run = fclc(repo_env, "run", PROGRAM, "-e", entry, *(str(a).replace(" ", "") for a in args))
        assert run.returncode == 1, run.stderr
        assert run.stderr.startswith(f"{PROGRAM}:{line}:{col}: error: ") and message in run.stderr
        assert "Traceback" not in run.stderr


@needs_device
def test_flags_set_by_one_run_never_reach_the_next():
    """A launcher keeps its bounds and while-guard flag buffers from run to run and zeroes
    them only after a kernel may have set one (launch.Launcher.flags): after a failed bounds
    check, a `while` stopped on the device, or a run stopped between its launch and its
    check, the next run of the same build starts from clear flags."""
    arr = np.array([1, 2, 3], np.int32)
    shift = fcl.load_file(PROGRAM).compile("shiftGrid", dynamic=True)         # one build for every k
    chunks = fcl.load_file("examples/reduce.fcl").compile("sumChunks", dynamic=True)
    for _ in range(2):
        with pytest.raises(EvalError, match="index 3 out of range for an array of length 3"):
            shift(1, arr)
        assert list(shift(0, arr)) == [1, 2, 3]
        with pytest.raises(EvalError, match="while never terminates"):
            chunks(1, np.array([3, 1, 4], np.int32))
        assert list(chunks(2, np.array([3, 1, 4, 1], np.int32))) == [4, 5]
    launcher = shift.launcher(shift.coerce((1, arr)))
    assert len(shift._launchers) == 1 and list(launcher._flags) == ["bounds"]

    def stopped(s, st):
        raise KeyboardInterrupt
    launcher.do_CheckBounds = stopped
    with pytest.raises(KeyboardInterrupt):
        shift(1, arr)
    del launcher.do_CheckBounds
    assert list(shift(0, arr)) == [1, 2, 3]


def test_the_api_and_the_emitted_module_report_it(repo_env, tmp_path):
    pytest.importorskip("pyopencl")
    with pytest.raises(EvalError, match="index 3 out of range for an array of length 3"):
        fcl.load_file(PROGRAM).compile("shiftGrid")(1, np.array([1, 2, 3], np.int32))
    out = tmp_path / "shifted.py"
    assert fclc(repo_env, "compile", PROGRAM, "-e", "shiftGrid", "--emit", "py", "-o", str(out)).returncode == 0
    script = ("import numpy as np, shifted\nk = shifted.Kernels()\nprint(k.shiftGrid(0, np.arange(3)).tolist())\n"
              "try:\n    k.shiftGrid(1, np.arange(3))\nexcept IndexError as e:\n    print(e)\n")
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=repo_env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        "[0, 1, 2]",
        f"{PROGRAM}:5:71: index 3 out of range for an array of length 3 "
        "(found by the device's bounds check for these arguments)"]


# The benchmark rows as bench/run.py builds them at their first GPU size (bench/checks.py),
# and how many bounds checks each runs where its kernels' unchecked versions apply (lengths
# and host sizes at most 2^30, inputs at least as long as the static sizes read).  scanAll
# keeps 3, none in a loop over elements: its one-block scan of the work-groups' totals reads
# them (two checks, about 4 reads a work-item), and each work-group reads its offset (one
# check).  Their length is a host scalar set from another (the parts a group takes), and
# the range analysis knows nothing of such a scalar (`Ranges.for_plan` reads each host
# scalar's expression with the params' intervals only).
BENCH_ROWS = {"revDistribute 1024": 0, "sumAll (prelude reduce)": 0, "scanAll (prelude scan)": 3,
              "transposeTiled 32": 0, "matvecF (prelude: a work-group per row)": 0,
              "matvecWarp (a warp per row)": 0, "matmulF (prelude: 8x8 a work-item, 128x128 tiles)": 0}


def test_benchmark_kernels_keep_only_the_checks_they_need():
    from bench import checks, suite
    for row in suite.FCL_ROWS:
        if row.variant in BENCH_ROWS:
            left = sum(checks.check_counts(row, checks.first_dims(row.bench, None)).values())
            assert left <= BENCH_ROWS[row.variant], row.variant


def test_an_unchecked_version_falls_back_to_the_checks_where_its_facts_fail():
    """transposeNaive at 64 x 64 reads up to index 4095 of its input: the unchecked version
    needs 4095 < the input's length, tested once; a shorter input runs the checked version
    and gets the evaluator's located error, a long enough one the right result."""
    prog = fcl.load_file("examples/transpose.fcl")
    kernel = prog.compile("transposeNaive", static={"cols": 64, "rows": 64})
    assert "(4095 lt n" in kernel.kir() and "unchecked version of" in kernel.kir()
    short = np.arange(64 * 64 - 5, dtype=np.int32)
    with pytest.raises(EvalError) as evaluated:
        prog.evaluate("transposeNaive", 64, 64, short)
    with pytest.raises(EvalError) as emulated:
        kernel.emulate(64, 64, short)
    assert located(emulated.value) == located(evaluated.value)
    assert "out of range for an array of length 4091" in emulated.value.message
    full = np.arange(64 * 64, dtype=np.int32)
    assert list(kernel.emulate(64, 64, full)) == list(full.reshape(64, 64).T.reshape(-1))


@needs_device
def test_a_kernel_with_barriers_has_its_version_picked_by_the_host(monkeypatch):
    """The unchecked version is a kernel of its own that the host launches where its facts
    hold, so no barrier stands under a branch (PoCL's optimised builds ran paper.fcl's
    transposeTiled wrongly when the test was an `if` at the kernel's top)."""
    monkeypatch.setenv("FCL_BUILD_OPTIONS", "")
    prog = fcl.load_file("examples/transpose.fcl")
    kernel = prog.compile("transposeTiled", static={"tileDim": 32, "cols": 96, "rows": 64})
    launch = next(s for s in kernel.plan.launches())
    assert launch.fast and "barrier" in kernel.kir().lower()
    fast = kernel.plan.kernel(launch.fast)
    assert not any(isinstance(x, K.Checked) for s in K.walk_stmts(fast.body) for e in K.stmt_exprs(s)
                   for x in K.walk_expr(e))
    a = np.arange(64 * 96, dtype=np.int32)
    assert list(kernel(32, 96, 64, a)) == list(prog.evaluate("transposeTiled", 32, 96, 64, a))
    assert [name for name, _ in kernel.run(32, 96, 64, a)[1]] == [launch.fast]
    with pytest.raises(EvalError) as failed:            # too short: the checked kernel's error
        kernel(32, 96, 64, a[:-1])
    assert "out of range" in failed.value.message


def test_no_bounds_checks_leaves_them_all_out():
    prog = fcl.load_file(PROGRAM)
    assert "fcl_check(" in prog.compile("shiftGrid").opencl_source
    unchecked = prog.compile("shiftGrid", bounds_checks=False)
    assert "fcl_check(" not in unchecked.opencl_source and unchecked.plan.check_count() == 0


@pytest.mark.skipif(not oclgrind_available(), reason="no Oclgrind OpenCL platform")
def test_a_failing_read_stays_inside_memory_under_oclgrind(repo_env):
    env = dict(repo_env, OCLGRIND_BUILD_OPTIONS="-cl-opt-disable", PYOPENCL_NO_CACHE="1")
    proc, log = run_with_oclgrind([sys.executable, "-m", "fcl.tools.cli", "run", PROGRAM, "-e", "shiftBlock",
                                   "--block-size", "8", "--warp-size", "4", "3", "[1,2,3,4,5,6,7,8]"],
                                  env=env, timeout=300)
    assert proc.returncode == 1 and "index 6 out of range for an array of length 4" in proc.stderr, proc.stderr
    assert log == ""


def test_no_unchecked_version_on_facts_that_cannot_hold():
    """An index bound above every length the version allows (sumStride's strided loop, bounded
    only by 2^30 plus a part) keeps its check instead of a test that is always false."""
    kernel = fcl.load_file("bench/programs.fcl").compile("sumStride")
    for s in kernel.plan.launches():
        if s.fast:
            assert "value=False" not in repr(s.when), s.when


def test_host_scalars_are_the_same_only_where_every_launch_sees_them_equal():
    from fcl.codegen import kir as K
    from fcl.codegen import plan as P
    from fcl.codegen.analysis.ranges import _aliases
    size = K.binop("mul", K.cint(256), K.Var("int", "n"))
    body = (P.SetVar("a", size), P.SetVar("b", size))
    assert _aliases(body, {"a": 1, "b": 1}, {}) == {"b": "a"}
    moved = (P.SetVar("a", size), P.SetVar("n", K.cint(3)), P.SetVar("b", size))   # n changed between
    assert _aliases(moved, {"a": 1, "b": 1, "n": 1}, {}) == {}
    twice = body + (P.SetVar("b", K.cint(1)),)                                        # b set again later
    assert _aliases(twice, {"a": 1, "b": 2}, {}) == {}


WHOLE_CHUNKS = """
sig sums : int -> [int] -> [int]<grid>
fun sums n arr =
  let c = 2048
  in generate (lengthPull arr / c) (fn p =>
       push <block> (generate 32 (fn l =>
         let counted = fn keep => foldl (fn st => fn q => foldl (fn st => fn x =>
                                   let g = p * c + q * 128 + 4 * l + x
                                   in if keep g then st + index arr g else st) st (iota 4)) 0 (iota 16)
         in if p * c <= lengthPull arr - c && p * c <= n - c then counted (fn g => true)
            else counted (fn g => g < n))))
     |> concat 32
"""


@needs_device
def test_a_branch_that_tests_a_whole_chunk_reads_it_unchecked():
    """The branch of a scalar `if` keeps its own `let`s (its result leaves through variables),
    so the range analysis reads `p * c <= length - c` beside the index `p * c + ...`: no
    check is left in either branch (the sort's upsweep: 0.139 ms a pass on an H200 at 2^26
    with its 64 checks a lane, 0.088 without).  Before, the branch's names were variables
    declared before the `if`, which the analysis knows nothing of."""
    prog = fcl.load(WHOLE_CHUNKS)
    kernel = prog.compile("sums", dynamic=True)
    assert kernel.plan.check_count() == 0, kernel.kir()
    arr = np.arange(3 * 2048, dtype=np.int32) % 7
    for n in (0, 5000, 3 * 2048):
        want = np.asarray(prog.evaluate("sums", n, arr))
        assert np.array_equal(kernel(n, arr), want), n


def test_no_unchecked_version_that_only_a_length_of_the_cap_runs():
    """sortByKey's first pass reads its zipped input at min i (n - 1): the capped facts bound
    that index by 2^30 - 1, and `2^30 - 1 < n0` as a fact made an unchecked version that only
    an input of 2^30 elements would run; the index keeps its check and the version runs."""
    from fcl.codegen.passes.bounds import CAP
    kernel = fcl.load_file("bench/programs.fcl").compile("sortPairs")
    ints = np.arange(5000, dtype=np.int32)
    plan = kernel.build_for(ints, ints).plan
    whens = [K.format_expr(s.when) for s in plan.launches() if s.fast]
    assert whens and not [w for w in whens if f"{CAP - 1} lt" in w], whens
