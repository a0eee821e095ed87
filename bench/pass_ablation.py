"""What each kernel-IR pass buys: every benchmark with all passes, with -O0, and with each pass off.

    python3 bench/pass_ablation.py --device NVIDIA [--log 26] [--repeat 20] [--only transpose32]

Rows: reverse (`revDistribute 1024`), the tiled transpose with its tile as an
argument and bound to 32 in source, the naive transpose, the block reduction
(`sumGrid`), matrix-vector (`matvecBlock`).  Each variant is checked against
NumPy before it is timed (median kernel time from OpenCL profiling events,
one warm-up); GB/s counts bytes read plus written.  Not a unit test.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import fcl  # noqa: E402
from fcl.codegen.passes import PIPELINE  # noqa: E402

EXTRA = """
fun transpose32 cols rows mat = transposeTiled 32 cols rows mat
"""


def cases(log: int):
    n = 1 << log
    x = np.random.default_rng(1).integers(0, 100, n).astype(np.int32)
    side = 1 << (log // 2)
    t = x.reshape(n // side, side).T.ravel()
    rows = 1 << (log // 2)
    m = x[: rows * rows]
    v = np.random.default_rng(2).integers(0, 10, rows).astype(np.int32)
    return [
        ("reverse.fcl", "revDistribute", (1024, x), x[::-1], 8 * n),
        ("transpose.fcl", "transposeTiled", (32, side, n // side, x), t, 8 * n),
        ("transpose.fcl", "transpose32", (side, n // side, x), t, 8 * n),
        ("transpose.fcl", "transposeNaive", (side, n // side, x), t, 8 * n),
        ("reduce.fcl", "sumGrid", (x,), x.reshape(-1, 512).sum(axis=1), 4 * n + 4 * (n // 512)),
        ("matvec.fcl", "matvecBlock", (rows, rows, m, v), (m.reshape(rows, rows).astype(np.int64) @ v).astype(np.int32),
         4 * rows * rows + 8 * rows),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=None)
    ap.add_argument("--log", type=int, default=26)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--only", default=None, help="run only entries containing this text")
    a = ap.parse_args()
    variants = [("all passes", {}), ("-O0", {"opt_level": 0})]
    variants += [(f"no {p.name}", {"no_pass": [p.name]}) for p in PIPELINE if p.optimising]
    for file, entry, args, expected, moved in cases(a.log):
        if a.only and a.only not in entry:
            continue
        path = ROOT / "examples" / file
        prog = fcl.load(path.read_text() + (EXTRA if file == "transpose.fcl" else ""), str(path))
        if entry not in dict(prog.declarations()):
            print(f"{entry}: not in {file}, skipped")
            continue
        for label, options in variants:
            k = prog.compile(entry, device=a.device, **options)
            ok = np.array_equal(np.asarray(k(*args)), expected)
            t = statistics.median(k.time(*args, repeat=a.repeat))
            print(f"{entry:15s} {label:18s} {'ok' if ok else 'WRONG'} {t * 1e6:9.1f} us {moved / t / 1e9:8.1f} GB/s",
                  flush=True)


if __name__ == "__main__":
    main()
