"""How long FCL takes to compile each example: front end plus code generation, no device.

    python bench/compile_time.py [--repeat 5] [--files examples/reduce.fcl,...] [--goal 0.2]

For every entry that a test block of the file names, a fresh `fcl.load_file`
(parse, includes, type check; the prelude's own check is done once a process,
as in `fclc` and the REPL) and `Program.compile(entry).opencl_source` (the
typed core, lowering, every optimising pass, rendering OpenCL C; no OpenCL
build, which the device's compiler does and pyopencl caches on disk), timed
three ways:

* first: nothing cached, the file parsed and its kernels generated (the
  first time FCL sees this text, or with FCL_NO_CACHE=1);
* parsed before: the parse read back from the parse cache
  (fcl/syntax/cache.py), the kernels generated (another entry or other
  options of a file seen before);
* again: both read back, the kernels from the kernel cache
  (fcl/codegen/cache.py): every later `fclc` run of the same text.

The script keeps its caches in a temporary folder.  Prints the median of
`--repeat` fresh compiles per entry: front end cold and warm, code
generation and code generation read back, and the totals; then how many
entries are under `--goal` seconds each way (default 0.2 s).
Exit status 0 always: this reports, it asserts nothing (`tests/` never
times anything).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def entries(path: Path) -> list[str]:
    from fcl.tools.testblocks import parse_test_blocks
    return sorted({c.entry for c in parse_test_blocks(path.read_text(), str(path)) if c.error is None})


def time_entry(path: Path, entry: str, repeat: int) -> dict[str, float]:
    """Median seconds, over `repeat` fresh compiles, of: the front end cold (parsed) and warm
    (read back from the parse cache); code generation, and code generation read back from
    the kernel cache; and the OpenCL source's length."""
    import fcl
    times: dict[str, list] = {"cold": [], "warm": [], "codegen": [], "cached": []}
    size = 0
    for _ in range(repeat):
        os.environ["FCL_NO_CACHE"] = "1"
        t0 = time.perf_counter()
        prog = fcl.load_file(str(path))
        t1 = time.perf_counter()
        size = len(prog.compile(entry).opencl_source)
        t2 = time.perf_counter()
        times["cold"].append(t1 - t0)
        times["codegen"].append(t2 - t1)
        del os.environ["FCL_NO_CACHE"]
        fcl.load_file(str(path)).compile(entry).opencl_source       # in both caches from here on
        t0 = time.perf_counter()
        prog = fcl.load_file(str(path))
        t1 = time.perf_counter()
        prog.compile(entry).opencl_source
        times["warm"].append(t1 - t0)
        times["cached"].append(time.perf_counter() - t1)
    return {k: statistics.median(v) for k, v in times.items()} | {"size": size}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="fresh compiles per entry (median)")
    ap.add_argument("--files", default="", help="comma-separated .fcl files (default: examples/*.fcl)")
    ap.add_argument("--goal", type=float, default=0.2, help="seconds an entry should take at most")
    a = ap.parse_args(argv)
    os.environ["FCL_CACHE_DIR"] = tempfile.mkdtemp(prefix="fcl-compile-time-")
    import fcl
    fcl.load("fun warmUp x = x + 1\n")       # the prelude's check, once a process
    files = [Path(f) for f in a.files.split(",") if f] or sorted((ROOT / "examples").glob("*.fcl"))
    totals: dict[str, list] = {"first": [], "parsed before": [], "again": []}
    print(f"{'entry':<40} {'cold front':>10} {'warm front':>10} {'codegen':>9} {'cached':>8} "
          f"{'first':>9} {'again':>8} {'OpenCL':>8}")
    for path in files:
        for entry in entries(path):
            t = time_entry(path, entry, a.repeat)
            totals["first"].append(t["cold"] + t["codegen"])
            totals["parsed before"].append(t["warm"] + t["codegen"])
            totals["again"].append(t["warm"] + t["cached"])
            print(f"{path.name + ':' + entry:<40} {t['cold'] * 1e3:8.1f}ms {t['warm'] * 1e3:8.1f}ms "
                  f"{t['codegen'] * 1e3:7.1f}ms {t['cached'] * 1e3:6.1f}ms "
                  f"{totals['first'][-1] * 1e3:7.1f}ms {totals['again'][-1] * 1e3:6.1f}ms {t['size']:7d}c")
    shutil.rmtree(os.environ["FCL_CACHE_DIR"], ignore_errors=True)
    for label, values in totals.items():
        if values:
            under = sum(v <= a.goal for v in values)
            print(f"{label}: {len(values)} entries, median {statistics.median(values) * 1e3:.1f} ms, "
                  f"slowest {max(values) * 1e3:.1f} ms; {under} of {len(values)} under {a.goal} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
