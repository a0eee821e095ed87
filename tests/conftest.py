"""Shared test fixtures.

* `cl_device`: a test that takes it runs once on every OpenCL device present
  except Oclgrind (pyopencl's PYOPENCL_TEST habit); on a device that cannot
  build kernels (the probe of fcl.runtime.device) it is skipped with the
  reason, and it is skipped when there is no device.  Oclgrind runs go through `fcl.runtime.oclgrind`.
* `--update-golden`: golden-file tests rewrite their expected files instead
  of comparing (fixture `update_golden`).
* Every compilation in the suite runs the kernel-IR verifier after each pass
  (FCL_VERIFY_PASSES=1), and kernels are built with -cl-opt-disable
  (FCL_BUILD_OPTIONS; `FCL_BUILD_OPTIONS= pytest` builds them optimised).
* The longest tests run first (LONG_FIRST), so pytest-xdist's workers share them.
* The evaluator's results are shared by the tests of a run (tests/evaluations.py), in a
  directory made here, before pytest-xdist starts its workers, and removed at the end.
"""
import os
import shutil
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("FCL_VERIFY_PASSES", "1")
# PoCL builds unoptimised kernels about ten times faster (a cold build is seconds
# otherwise, and the suite builds about two thousand); test_codegen's
# test_optimised_builds_agree and `bench/run.py --quick` in CI build optimised.
os.environ.setdefault("FCL_BUILD_OPTIONS", "-cl-opt-disable")


def device_available() -> bool:
    """An OpenCL device that runs programs is present (`fclc devices`' choice)."""
    try:
        from fcl.runtime.device import choose_device
        choose_device(None)
        return True
    except Exception:
        return False


needs_device = pytest.mark.skipif(not device_available(), reason="no OpenCL device")


def default_device_env() -> dict:
    """os.environ for a child process that runs on the default device (no PYOPENCL_CTX): the one
    `fclc devices` marks, whichever CPU runtime that is on this machine."""
    return {k: v for k, v in os.environ.items() if k != "PYOPENCL_CTX"}


def pytest_configure(config):
    if not hasattr(config, "workerinput") and "FCL_TEST_EVALS" not in os.environ:
        config._fcl_evals = os.environ["FCL_TEST_EVALS"] = tempfile.mkdtemp(prefix="fcl-test-evals-")


def pytest_unconfigure(config):
    made = getattr(config, "_fcl_evals", None)
    if made:
        shutil.rmtree(made, ignore_errors=True)
        del os.environ["FCL_TEST_EVALS"]


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite golden files instead of comparing with them")


@pytest.fixture
def update_golden(request) -> bool:
    return request.config.getoption("--update-golden")


def _test_devices() -> list:
    """Every device except Oclgrind, each a pytest.param skipped with the reason
    when it cannot build kernels (fcl.runtime.device.usable)."""
    try:
        from fcl.runtime import device as dev
        devices = [d for d in dev.all_devices() if not dev._is_oclgrind(d)]
    except Exception:
        return []
    out = []
    for d in devices:
        why = dev.usable(d)
        marks = [pytest.mark.skip(reason=f"{dev.describe_device(d)} cannot build kernels: {why}")] if why else []
        out.append(pytest.param(d, marks=marks, id=d.name.strip()))
    return out


# The longest tests (10 to 30 s each: Oclgrind's simulations, the fuzz runs, every benchmark
# row, the builds with each pass off) start first: pytest-xdist deals the first quarter of
# the tests out to its workers at once, so both workers take long ones side by side instead of
# one finishing them alone at the end while the other waits (CI has 2 cores and 15 minutes).
LONG_FIRST = ("test_oclgrind.py::", "test_bench.py::test_every_row", "test_bench.py::test_hand_written",
              "test_fuzz.py::", "test_interp.py::test_each_pass_off_alone", "test_cli_process.py::",
              "test_parser.py::test_fuzz", "test_cli.py::test_test_in_parallel")


def pytest_collection_modifyitems(session, config, items):
    items.sort(key=lambda item: not any(long in item.nodeid for long in LONG_FIRST))    # stable


def pytest_generate_tests(metafunc):
    if "cl_device" in metafunc.fixturenames:
        devices = _test_devices()
        if devices:
            metafunc.parametrize("cl_device", devices)
        else:
            metafunc.parametrize("cl_device", [pytest.param(
                None, marks=pytest.mark.skip(reason="no OpenCL device"))])


@pytest.fixture
def repo_env():
    """os.environ for a child process that must import this checkout's `fcl`."""
    import os
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


@pytest.fixture
def fcl_cache(tmp_path, monkeypatch) -> Path:
    """FCL's disk cache (fcl/diskcache.py) switched on, in a fresh folder: its root."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("FCL_CACHE_DIR", str(folder))
    monkeypatch.delenv("FCL_NO_CACHE", raising=False)
    return folder


# What tests/runtime/test_oclgrind.py runs on Oclgrind (tests/codegen/test_codegen.py leaves
# those files' #BlockSize 64 cases to it where Oclgrind is present).
OCLGRIND_FILES = sorted((REPO / "examples").glob("*.fcl")) + sorted((REPO / "tests" / "programs").glob("*.fcl"))

# #BlockSize 64: two warps per work-group, so races between warps can show;
# the examples also at 32 (one warp per group, more groups), but for the three
# whose runs take longest (10 to 16 s each on Oclgrind): CI's time is bounded.
SLOW_AT_32 = {"matmul.fcl", "reduce.fcl", "scan.fcl"}
OCLGRIND_RUNS = [(f, 64) for f in OCLGRIND_FILES] + [(f, 32) for f in sorted((REPO / "examples").glob("*.fcl"))
                                            if f.name not in SLOW_AT_32]

# Of each entry's first two test blocks Oclgrind runs the one with the longer arguments (an
# empty input, often first, exercises little), and also one that expects an error (the
# run-time checks' paths: Oclgrind found uninitialised values copied out after a failed
# check there). Races and uninitialised reads show in any block, and its simulation is
# slow: matmul.fcl's 24 blocks took 50 s of CI's 15 minutes, and with the first two blocks
# of each entry CI took 14m28 on a clean clone, 2026-11-28. test_codegen runs the others
# on the default device.
OCLGRIND_BLOCKS = 2        # the blocks of an entry Oclgrind chooses among


def oclgrind_blocks(cases) -> list[bool]:
    """Which of a file's test blocks, in order, Oclgrind runs: of each entry's first
    OCLGRIND_BLOCKS blocks, the one with the longest arguments of those that expect a value
    (the first of equals), and those that expect an error."""
    chosen: dict[str, int] = {}
    picked: set[int] = set()
    seen: dict[str, int] = {}
    for i, c in enumerate(cases):
        seen[c.entry] = seen.get(c.entry, 0) + 1
        if seen[c.entry] > OCLGRIND_BLOCKS:
            continue
        if c.error is not None:
            picked.add(i)
        elif c.entry not in chosen or len(" ".join(c.args)) > len(" ".join(cases[chosen[c.entry]].args)):
            chosen[c.entry] = i
    picked |= set(chosen.values())
    return [i in picked for i in range(len(cases))]
