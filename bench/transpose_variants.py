"""Experiment: what limits the tiled transpose? Times variants on one device.

    python3 bench/transpose_variants.py --device NVIDIA [--log 26] [--repeat 20]

Variants: every int argument passed at run time (`dynamic=True`: run-time
divisions in the index arithmetic and a host-sized tile), only the tile size
static (`static={"tileDim": 32}`), every int argument static (the default
policy), the tile size written in the source (`transpose32`), and the naive
transpose dynamic and static; each with and without the skewed local layout
(`no_pass=("skew",)`).  Every result is checked against numpy.
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


VARIANTS = (
    ("transposeTiled", "dynamic", {"dynamic": True}),
    ("transposeTiled", "tile static", {"static": {"tileDim": 32}, "dynamic": ["cols", "rows"]}),
    ("transposeTiled", "all static", {}),
    ("transpose32", "tile in source", {"dynamic": True}),
    ("transposeNaive", "dynamic", {"dynamic": True}),
    ("transposeNaive", "all static", {}),
)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=None)
    ap.add_argument("--log", type=int, default=26)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--num-groups", type=int, nargs="*", default=[1024])
    a = ap.parse_args()
    n = 1 << a.log
    side = 1 << (a.log // 2)
    x = np.arange(n, dtype=np.int32)
    expected = x.reshape(n // side, side).T.ravel()
    prog = fcl.load(SRC, "variants.fcl")
    for skew, groups in [(s, g) for s in (True, False) for g in a.num_groups]:
        for entry, label, how in VARIANTS:
            args = ((32,) if entry == "transposeTiled" else ()) + (side, n // side, x)
            k = prog.compile(entry, device=a.device, num_groups=groups, no_pass=() if skew else ("skew",), **how)
            ok = np.array_equal(k(*args), expected)
            t = statistics.median(k.time(*args, repeat=a.repeat))
            print(f"skew={skew!s:5} groups={groups:6d} {entry:15s} {label:15s} {'ok' if ok else 'WRONG'} "
                  f"{t * 1e6:9.1f} us {8 * n / t / 1e9:7.2f} GB/s")


if __name__ == "__main__":
    main()
