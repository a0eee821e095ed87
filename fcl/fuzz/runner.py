"""The differential tester: random cases on the evaluator and compiled, compared.

`Runner` keeps one worker process (fcl.fuzz.worker) and sends it cases; a
case that kills the worker (a segfaulting driver) is `died`, one that does
not finish compiling and running within the time limit is `hang`, one whose
evaluation alone exceeds the limit is `slow` (skipped, not a bug).  With
`oclgrind=True` the worker runs on Oclgrind with its checks on; with
`emulate=True` a case that agrees also runs on the kernel-IR interpreter
(divergent barriers, out-of-bounds accesses).

Verdicts: `ok` (the same value), `error` (the evaluator and the compiled
program both report a located run-time error), `refused` (a located
compile-time error) and `skip`/`slow` (the evaluator is too slow) pass; `invalid` (the generator made
an ill-typed program), `crash` (internal error or traceback), `unlocated`
(an error without a position), `mismatch`, `oclgrind`, `emulator`, `bloat`
(an OpenCL source over the worker's SOURCE_LIMIT), `died` and `hang` are
failures.
"""
from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict

from fcl.fuzz.gen import Case
from fcl.runtime.oclgrind import oclgrind_env

PASSING = ("ok", "error", "refused", "skip", "slow")


class Runner:
    def __init__(self, timeout: float = 30.0, oclgrind: bool = False, emulate=False):
        """emulate: True, False, or a predicate of the case (which cases to emulate)."""
        self.timeout = timeout
        self.oclgrind = oclgrind
        self.emulate = emulate
        self.proc = None
        self.tmp = tempfile.TemporaryDirectory(prefix="fcl-fuzz-")
        self.log_path = os.path.join(self.tmp.name, "oclgrind.log")

    def start(self):
        env = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        cmd = [sys.executable, "-m", "fcl.fuzz.worker"]
        if self.oclgrind:
            env = oclgrind_env(self.log_path, env)
            env["OCLGRIND_BUILD_OPTIONS"] = "-cl-opt-disable"
            env["PYOPENCL_NO_CACHE"] = "1"
            cmd.append("--oclgrind")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, text=True, bufsize=1,
                                     cwd=self.tmp.name)   # where a crashing driver leaves its files (PoCL: broken.dot)
        self.pending = b""

    def stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def close(self):
        self.stop()
        self.tmp.cleanup()

    def run(self, case: Case | dict) -> dict:
        """{"status", "detail", "seconds"} for one case."""
        job = asdict(case) if isinstance(case, Case) else dict(case)
        job["emulate"] = bool(self.emulate(case) if callable(self.emulate) else self.emulate)
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        start = time.monotonic()
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        phase = "start"
        deadline = start + self.timeout
        fd = self.proc.stdout.fileno()
        while True:
            if b"\n" not in self.pending:
                left = deadline - time.monotonic()
                ready, _, _ = select.select([fd], [], [], max(0.0, left))
                if not ready:
                    self.stop()
                    status = "slow" if phase in ("start", "check", "eval", "emulate") else "hang"
                    return {"status": status, "detail": f"no answer after {self.timeout:.0f} s (in {phase})",
                            "seconds": time.monotonic() - start}
                chunk = os.read(fd, 1 << 16)
                self.pending += chunk
                if chunk:
                    continue
            raw, _, self.pending = self.pending.partition(b"\n")
            line = raw.decode("utf-8", "replace")
            if not line and not self.pending:
                code = self.proc.wait()
                self.proc = None
                return {"status": "died", "detail": f"the worker died in {phase} (exit status {code})",
                        "seconds": time.monotonic() - start}
            if line.startswith("phase "):
                phase = line.split()[1]
                if phase == "compile":
                    deadline = time.monotonic() + self.timeout
            elif line.startswith("result "):
                result = json.loads(line[len("result "):])
                result["seconds"] = time.monotonic() - start
                return result


def summarize(results: list[tuple[Case, dict]]) -> str:
    counts: dict[str, int] = {}
    for _, r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


def run_many(cases, jobs: int = 1, timeout: float = 30.0, oclgrind: bool = False, budget: float | None = None,
             on_result=None, emulate=False, stop_on_failure: bool = False) -> list[tuple[Case, dict]]:
    """Run cases on `jobs` workers at once, in order; stop starting new ones after
    `budget` seconds, or (`stop_on_failure`) once a case has failed."""
    import threading
    cases = list(cases)
    results: list = [None] * len(cases)
    lock = threading.Lock()
    nxt = [0]
    failed = [False]
    start = time.monotonic()

    def work():
        runner = Runner(timeout, oclgrind, emulate)
        try:
            while True:
                with lock:
                    i = nxt[0]
                    if i >= len(cases) or (budget is not None and time.monotonic() - start > budget) \
                            or failed[0]:
                        return
                    nxt[0] += 1
                r = runner.run(cases[i])
                results[i] = (cases[i], r)
                if stop_on_failure and r["status"] not in PASSING:
                    failed[0] = True
                if on_result is not None:
                    with lock:
                        on_result(cases[i], r)
        finally:
            runner.close()
    threads = [threading.Thread(target=work) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [x for x in results if x is not None]
