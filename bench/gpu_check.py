"""Run the examples on an OpenCL device and compare with the evaluator and NumPy.

    python3 bench/gpu_check.py [--device NVIDIA] [--log 20]

1. Every test block of examples/*.fcl, tests/programs/*.fcl and (if present) ../shared/conformance/paper.fcl:
   evaluator and device must both give the expected value (fcl.tools.testrun).
2. The paper's three programs at 2^LOG int32 elements on the device against a
   NumPy reference, with median kernel time (OpenCL profiling events) and
   effective bandwidth, next to a hand-written OpenCL copy kernel.
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
from fcl.runtime import device as D  # noqa: E402
from fcl.tools.testrun import run_test_files  # noqa: E402

COPY = """
__kernel void copy(__global const int* restrict a, __global int* restrict b, const int n) {
  for (int i = get_global_id(0); i < n; i += get_global_size(0)) b[i] = a[i];
}
"""


def copy_time(device, n: int, repeat: int) -> float:
    import pyopencl as cl
    ctx, queue = D.get_context(device), D.get_queue(device)
    prg = D.build_program(ctx, COPY)
    a = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=np.arange(n, dtype=np.int32))
    b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * n)
    k = cl.Kernel(prg, "copy")
    k.set_args(a, b, np.int32(n))
    times = []
    for r in range(repeat + 1):
        ev = cl.enqueue_nd_range_kernel(queue, k, (min(n, 1024 * 1024),), (256,))
        ev.wait()
        if r:
            times.append((ev.profile.end - ev.profile.start) * 1e-9)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=None)
    ap.add_argument("--log", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--num-groups", type=int, default=None)
    a = ap.parse_args()
    device = D.choose_device(a.device)
    print("device:", D.describe_device(device))
    files = sorted(str(p) for p in (ROOT / "examples").glob("*.fcl"))
    files += sorted(str(p) for p in (ROOT / "tests" / "programs").glob("*.fcl"))
    paper = ROOT.parent / "shared" / "conformance" / "paper.fcl"
    if paper.exists():
        files.append(str(paper))
    status = 0
    print("--- test blocks (#BlockSize 256, as their expected values assume)")
    status |= run_test_files(files, device=a.device or "")
    n = 1 << a.log
    x = np.random.default_rng(1).integers(0, 100, n).astype(np.int32)
    side = 1 << (a.log // 2)
    cases = [
        ("reverse.fcl", "revDistribute", (256, x), x[::-1], 2 * 4 * n),
        ("transpose.fcl", "transposeTiled", (32, side, n // side, x), x.reshape(n // side, side).T.ravel(), 2 * 4 * n),
        ("reduce.fcl", "sumGrid", (x,), x.reshape(-1, 512).sum(axis=1), 4 * n + 4 * (n // 512)),
    ]
    copy = copy_time(device, n, a.repeat)
    print(f"--- 2^{a.log} int32 on {device.name.strip()}: hand-written copy {copy * 1e6:.1f} us, "
          f"{2 * 4 * n / copy / 1e9:.1f} GB/s")
    for file, entry, args, expected, moved in cases:
        prog = fcl.load_file(str(ROOT / "examples" / file))
        k = prog.compile(entry, device=a.device, num_groups=a.num_groups)
        out = k(*args)
        ok = np.array_equal(out, expected)
        status |= not ok
        t = statistics.median(k.time(*args, repeat=a.repeat))
        print(f"{entry:16s} {'ok  ' if ok else 'FAIL'} median {t * 1e6:9.1f} us  {moved / t / 1e9:8.1f} GB/s  "
              f"{copy / t * 100:5.1f}% of copy")
    return status


if __name__ == "__main__":
    sys.exit(main())
