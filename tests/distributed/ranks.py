"""Run by tests/distributed/test_mpi.py under `mpiexec -n 3`: fcl.distributed.run on each rank's
block, checked against the evaluator's result for the whole data (printed by rank 0 as `ok
NAME` or `MISMATCH NAME ...`)."""
import sys

import numpy as np

import fcl
from fcl import distributed as dist

comm = dist.mpi_world()
rank, size = comm.Get_rank(), comm.Get_size()
prog = fcl.load_file(sys.argv[1])
stencil = fcl.load_file(sys.argv[2])
rng = np.random.default_rng(7)


def check(name, program, entry, arrays, halo=None, gather=True, **kw):
    """The entry on every rank's blocks of `arrays`, against the evaluator on the whole."""
    n = len(arrays[0])
    lo, hi = dist.blocks(n, size)[rank]
    got = dist.run(program, entry, *(a[lo:hi] for a in arrays), halo=halo, gather=gather, **kw)
    if rank == 0:
        want = np.asarray(program.evaluate(entry, *arrays), dtype=got.dtype if n == 0 else None)
        same = got.dtype == want.dtype and (np.allclose(got, want, rtol=1e-6, atol=0) if got.dtype.kind == "f"
                                            else np.array_equal(got, want))
        print(("ok " if same else "MISMATCH ") + name, flush=True)


ints = rng.integers(-1000, 1000, 1001).astype(np.int32)
sparse = np.where(rng.random(1001) < 0.01, ints, 0).astype(np.int32)
floats = rng.standard_normal(1001).astype(np.float32)
for n in (1001, 2, 0):                  # 2 and 0: ranks with empty blocks
    check(f"total {n}", prog, "total", [ints[:n]])
    check(f"prefixSums {n}", prog, "prefixSums", [ints[:n]])
    check(f"firstNonZero {n}", prog, "firstNonZero", [sparse[:n]])
    check(f"firstNonZeros {n}", prog, "firstNonZeros", [sparse[:n], ints[:n]])
    check(f"scaled {n}", prog, "scaled", [ints[:n]], halo=0)
    check(f"stencilNaive {n}", stencil, "stencilNaive", [floats[:n]], halo=1)
check("sumSquares", prog, "sumSquares", [floats])
check("stencilNaive halo 3", stencil, "stencilNaive", [floats[:5]], halo=3)   # halos wider than blocks
check("stencilNaive halo 2", stencil, "stencilNaive", [floats], halo=2)      # a halo wider than needed

# blocks already on the device: they stay there, and so does the result
import pyopencl.array as cla                 # noqa: E402
from fcl.runtime import device              # noqa: E402
queue = device.get_queue(device.choose_device(None))
lo, hi = dist.blocks(1001, size)[rank]
got = dist.run(prog, "prefixSums", cla.to_device(queue, ints[lo:hi]), result="device")
same = type(got).__name__ == "Array" and np.array_equal(got.get(), np.cumsum(ints, dtype=np.int32)[lo:hi])
if all(comm.allgather(same)) and rank == 0:
    print("ok device blocks", flush=True)
