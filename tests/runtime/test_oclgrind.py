"""The generated kernels under Oclgrind: no data races, out-of-bounds accesses,
uninitialised reads or barrier divergence.

Every test block of examples/*.fcl and tests/programs/*.fcl (and a few extra
sizes) runs compiled, in one child process per file, with Oclgrind as the
device and its checks on (`fcl.runtime.oclgrind.run_with_oclgrind`).  A
non-empty Oclgrind log fails the test; so does a result that differs from
the evaluator.  Skipped when the Oclgrind platform is missing.

Two settings keep Oclgrind's own limits out of the way:

* `OCLGRIND_BUILD_OPTIONS=-cl-opt-disable` with `PYOPENCL_NO_CACHE=1`: with
  the optimiser on, clang emits `llvm.abs.i32` (which Oclgrind's interpreter
  cannot run: "Undefined external function") and `freeze` instructions
  (which its uninitialised-value plugin aborts on); the cache must be off, or
  a binary built without the option is reused.
* the child keeps every `pyopencl.Buffer` alive until it exits: Oclgrind's
  uninitialised-value plugin keeps stale shadow memory for a released
  buffer's address and then reports reads of a reused buffer that a previous
  kernel did write (reproduced with plain pyopencl, no FCL involved).
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import OCLGRIND_FILES, OCLGRIND_RUNS, oclgrind_blocks
from fcl.runtime.oclgrind import oclgrind_available, run_with_oclgrind

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = REPO / "tests" / "programs"

pytestmark = pytest.mark.skipif(not oclgrind_available(), reason="no Oclgrind OpenCL platform")

CHILD = r"""
import json, sys
import pyopencl as cl

KEEP = []                      # see the module docstring: never release a buffer


class KeptBuffer(cl.Buffer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        KEEP.append(self)


cl.Buffer = KeptBuffer

import fcl
from fcl.api.literals import format_value, parse_arg, values_equal
from fcl.tools.testblocks import parse_test_blocks

jobs = json.loads(sys.argv[1])
NUM_GROUPS = int(sys.argv[2])
programs, kernels = {}, {}
for job in jobs:
    path, entry, args, bs = job["path"], job["entry"], job["args"], job["bs"]
    if path not in programs:
        programs[path] = fcl.load_file(path)
    prog = programs[path]
    values = [parse_arg(a) for a in args]
    key = (path, entry, bs)
    where = f"{path}:{entry} #BlockSize {bs} {' '.join(a[:40] for a in args)}"
    if job.get("error"):        # an `error:` block: the kernels must report it too
        try:
            if key not in kernels:
                kernels[key] = prog.compile(entry, block_size=bs, num_groups=NUM_GROUPS, device="Oclgrind")
            result = kernels[key](*values)
        except fcl.FCLError as e:
            ok = job["error"].lower() in e.message.lower()
            print(f"ok {where}" if ok else f"MISMATCH {where}: oclgrind reports {e.message}", flush=True)
        else:
            print(f"MISMATCH {where}: oclgrind {format_value(result)[:200]}, evaluator: an error", flush=True)
        continue
    try:
        expected = prog.evaluate(entry, *values, block_size=bs, num_groups=NUM_GROUPS)
        if key not in kernels:
            kernels[key] = prog.compile(entry, block_size=bs, num_groups=NUM_GROUPS, device="Oclgrind")
        result = kernels[key](*values)
    except fcl.FCLError as e:
        print(f"ERROR {where}: {e.message}", flush=True)
        continue
    if values_equal(expected, result):
        print(f"ok {where}", flush=True)
    else:
        print(f"MISMATCH {where}: oclgrind {format_value(result)[:200]}, "
              f"evaluator {format_value(expected)[:200]}", flush=True)
"""


def block_jobs(path: Path, bs: int) -> list[dict]:
    """The first test blocks of each entry of `path` (conftest.oclgrind_blocks; the default
    device runs the others), but for `error: terminate` blocks: those spin until the
    device's guard stops a `while` (plan.MAX_DEVICE_STEPS, 2^20 steps), which Oclgrind
    simulates for minutes (while_guard.fcl's spinThread: 145 s of CI's 15 minutes).  The
    guard's code runs, and is checked here, in every block of a device-side `while`
    (countThread's); tests/codegen/test_while_guard.py stops the spins on the CPU device."""
    from fcl.tools.testblocks import parse_test_blocks
    cases = parse_test_blocks(path.read_text(), str(path))
    return [{"path": str(path), "entry": c.entry, "args": list(c.args), "bs": bs, "error": c.error}
            for c, ours in zip(cases, oclgrind_blocks(cases)) if ours and not (c.error and "terminate" in c.error)]


FILES, RUNS = OCLGRIND_FILES, OCLGRIND_RUNS          # (tests/conftest.py)

# extra sizes, non-powers of two, for programs whose test blocks are tiny
EXTRA = {
    "reverse.fcl": [("revDistribute", ["7", "iota:100"]), ("revGrid", ["iota:130"])],
    "reduce.fcl": [("sumChunks", ["16", "iota:200"]), ("sumSeqTree", ["4", "64", "iota:300"])],
    "scan.fcl": [("scanChunks", ["5", "iota:77"]), ("scanWarpChunks", ["8", "iota:160"]),
                 ("scanAll", ["iota:4103"])],       # chunks of 2048: runs of 4 (int4) and a partial one
    "transpose.fcl": [("transposeTiled", ["4", "12", "8", "iota:96"])],
    "concat_levels.fcl": [("hier", ["3", "9", "45", "iota:100"])],
    "force_levels.fcl": [("forceWarp", ["7", "iota:50"]), ("forceThreadDyn", ["5", "iota:70"])],
    "while_levels.fcl": [("whileWarp", ["iota:130"]), ("whileBlockDyn", ["16", "iota:100"])],
    # a segmented scan over 4 parts (2048 elements at #BlockSize 64), a flag in each: each
    # part reads the status of the part before alone (Oclgrind runs the work-groups one after
    # another, so that part has always published its inclusive prefix; the windows after it
    # are read where parts run at once: on a GPU)
    "irregular.fcl": [("segEvery", ["7", "iota:7000"])],
}


# #NumGroups 64, not the default 4096: a launch whose size only the device knows (a grid
# `push` after a block-level `while`) takes #NumGroups work-groups, which Oclgrind simulates
# one work-item at a time (4096 groups: 77 s for one test block); fewer groups also make
# the grid-stride loops take more rounds.
NUM_GROUPS = 64


def run_id(run):
    return f"{run[0].name}-bs{run[1]}"


@pytest.mark.parametrize("run", RUNS, ids=run_id)
def test_kernels_are_clean_under_oclgrind(run, repo_env):
    path, bs = run
    jobs = block_jobs(path, bs)
    jobs += [{"path": str(path), "entry": e, "args": a, "bs": bs} for e, a in EXTRA.get(path.name, [])]
    assert jobs, f"{path} has no tests to run"
    env = dict(repo_env, OCLGRIND_BUILD_OPTIONS="-cl-opt-disable", PYOPENCL_NO_CACHE="1")
    proc, log = run_with_oclgrind([sys.executable, "-c", CHILD, json.dumps(jobs), str(NUM_GROUPS)], env=env, cwd=str(REPO),
                                  timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    bad = [line for line in lines if not line.startswith("ok ")]
    assert not bad, "\n".join(bad)
    assert len(lines) == len(jobs)
    assert not log, f"Oclgrind reported problems:\n{log[:6000]}"


def test_local_memory_the_device_counts_is_a_located_error(repo_env):
    """Oclgrind counts a kernel's local arrays twice when its unchecked version follows it in
    the program: `evens` (the prelude's filter) at #BlockSize 256, its chunks sized for the
    32 KB that --local-memory claims (#LocalMemory on Oclgrind is half its 32 KB, for that
    count), declares about 19 KB in its one-pass kernel, which FCL's own count lets through;
    an empty input runs the checked version (the unchecked one needs a non-empty input), and
    Oclgrind says twice that.  The launch reports that as FCL's located error, exit status
    1, not as Oclgrind's OUT_OF_RESOURCES.  (segSum of tuples.fcl was the case until its
    kernel needed no checks, so no version.)"""
    env = dict(repo_env, PYOPENCL_NO_CACHE="1", FCL_NO_CACHE="1", PYOPENCL_CTX="Oclgrind")
    proc = subprocess.run([sys.executable, "-m", "fcl.tools.cli", "run", "--device", "Oclgrind",
                           "--local-memory", "32768",
                           "tests/programs/irregular.fcl", "-e", "evens", "[]"],
                          env=env, cwd=str(REPO), timeout=300, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "bytes of local memory as Oclgrind Simulator counts them" in proc.stderr
    assert "prelude.fcl:" in proc.stderr and "Traceback" not in proc.stderr


TAGS_CHILD = """
import numpy as np
import fcl
from fcl.runtime.launch import Launcher
Launcher.exact_claims = lambda self: 0      # the tags, as on every other device
weave = fcl.load_file("tests/programs/runtime_errors.fcl").compile("weavePerm", block_size=64, num_groups=4)
print([int(x) for x in weave(np.array([0, 2, 4, 6, 1, 3, 5, 7], dtype=np.int32), np.arange(8, dtype=np.int32))])
(tags,) = [b.name for b in weave.plan.buffers if b.role == "tags"]
check = [s.kernel for s in weave.plan.launches() if tags in s.uses.buffers][-1]
print(check in [name for name, _ in weave.last_profile.kernels])
sort = fcl.load_file("bench/programs.fcl").compile("sortInts", block_size=64, num_groups=4)
a = np.random.default_rng(1).integers(-1000, 1000, 203).astype(np.int32)
print([int(x) for x in sort(a)] == sorted(a.tolist()))
"""


def test_tags_of_a_grid_interleave_are_clean_under_oclgrind(repo_env):
    """Oclgrind runs a grid-level interleave's atomic claims (two tags of one place written at
    once, in a program that writes a place twice, would be a race); the tags and their check
    kernel, which every other device runs first, are clean for programs that write each place
    once: a data-dependent interleave and the prelude's radix sort."""
    env = dict(repo_env, OCLGRIND_BUILD_OPTIONS="-cl-opt-disable", PYOPENCL_NO_CACHE="1", FCL_NO_CACHE="1")
    proc, log = run_with_oclgrind([sys.executable, "-c", TAGS_CHILD], env=env, cwd=str(REPO), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == ["[0, 4, 1, 5, 2, 6, 3, 7]", "True", "True"]
    assert not log, f"Oclgrind reported problems:\n{log[:6000]}"


DOUBLE_CHILD = """
import numpy as np
import fcl
sums = fcl.load_file("tests/programs/irregular.fcl")
for n in (12, 20):
    xs = np.arange(n, dtype=np.int32) - 5
    got = sums.compile("tiledSums", block_size=32, num_groups=4, with_pass=("double_buffer",))(xs)
    print(bool(np.array_equal(got, sums.evaluate("tiledSums", xs, block_size=32))))
mm = fcl.load_file("examples/matmul.fcl")
a = np.arange(9 * 70, dtype=np.float32) % 7 - 3
b = np.arange(70 * 5, dtype=np.float32) % 5 - 2
got = mm.compile("matmulPipelined", block_size=64, num_groups=4)(9, 70, 5, a, b)
print(bool(np.array_equal(got, (a.reshape(9, 70) @ b.reshape(70, 5)).ravel())))
"""


def test_double_buffered_loops_are_clean_under_oclgrind(repo_env):
    """The `double_buffer` pass with the `barriers` pass after it: one barrier a step in a
    loop over pairs of steps on two copies of the tiles, and the odd step after it.  Oclgrind
    finds no race between a step's reads of one copy and the next step's writes of the other,
    for odd and even step counts (tiledSums, the pass named: 3 and 5 steps; matmulPipelined, a
    `powerDoubleBuffered` the pass takes unnamed: 70 / 16 + 1 = 6 K steps), and the results
    are the evaluator's (integers in floats: exact)."""
    env = dict(repo_env, OCLGRIND_BUILD_OPTIONS="-cl-opt-disable", PYOPENCL_NO_CACHE="1", FCL_NO_CACHE="1")
    proc, log = run_with_oclgrind([sys.executable, "-c", DOUBLE_CHILD], env=env, cwd=str(REPO), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == ["True", "True", "True"]
    assert not log, f"Oclgrind reported problems:\n{log[:6000]}"
