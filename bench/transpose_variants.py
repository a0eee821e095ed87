"""Experiment: what limits the tiled transpose? Times variants on one device.

    python3 bench/transpose_variants.py --device NVIDIA [--log 26]

Variants: the tile size as an argument (run-time divisions in the index
arithmetic) or as a constant, with and without the skewed local layout.
"""
import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import fcl  # noqa: E402

SRC = (ROOT / "examples" / "transpose.fcl").read_text() + """
fun transpose32 cols rows mat = transposeTiled 32 cols rows mat
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=None)
    ap.add_argument("--log", type=int, default=26)
    ap.add_argument("--num-groups", type=int, nargs="*", default=[1024])
    a = ap.parse_args()
    n = 1 << a.log
    side = 1 << (a.log // 2)
    x = np.arange(n, dtype=np.int32)
    expected = x.reshape(n // side, side).T.ravel()
    for skew, groups in [(s, g) for s in (True, False) for g in a.num_groups]:
        prog = fcl.load(SRC, "variants.fcl")
        for entry, args in (("transposeTiled", (32, side, n // side, x)), ("transpose32", (side, n // side, x)),
                            ("transposeNaive", (side, n // side, x))):
            k = prog.compile(entry, device=a.device, num_groups=groups, no_pass=() if skew else ("skew",))
            ok = np.array_equal(k(*args), expected)
            t = statistics.median(k.time(*args, repeat=20))
            print(f"skew={skew!s:5} groups={groups:6d} {entry:15s} {'ok' if ok else 'WRONG'} {t * 1e6:8.1f} us {8 * n / t / 1e9:7.1f} GB/s")


if __name__ == "__main__":
    main()
