"""Weak scaling of fcl.distributed.run (docs/distributed.md): under `mpiexec -n R python
bench/distributed_scale.py LOG [DEVICE]`, each rank takes 2^LOG elements already on its device
(DEVICE: a substring of its name, default NVIDIA; '' for the default device); printed: the
median wall time of run() over repeats (a barrier before and after: kernels, the MPI exchange
of partial results, a scan's carry kernel, a stencil's halo pieces) and of the entry's kernel
alone on the rank's block, and whether the results are right."""
import sys
import time

import numpy as np
import pyopencl.array as cla

import fcl
from fcl import distributed as dist

comm = dist.mpi_world()
rank, size = comm.Get_rank(), comm.Get_size()
log = int(sys.argv[1])
n_rank = 1 << log
prog = fcl.load_file("examples/distributed.fcl")
stencil = fcl.load_file("examples/stencil.fcl")
from fcl.distributed.run import rank_device    # noqa: E402
dev = rank_device(comm, (sys.argv[2] if len(sys.argv) > 2 else "NVIDIA") or None)
from fcl.runtime import device as D   # noqa: E402
queue = D.get_queue(dev)
lo = rank * n_rank if log < 30 else 0          # int32 values (the map's check reads them)
ints = cla.arange(queue, lo, lo + n_rank, 1, dtype=np.int32)
ones = cla.zeros(queue, n_rank, np.int32) + 1
floats = ints.astype(np.float32)
names = comm.gather(dev.name + f" #{D.all_devices().index(dev)}", root=0)
if rank == 0:
    from mpi4py import MPI
    print(MPI.Get_library_version().splitlines()[0], flush=True)
    print(f"ranks {size}, {n_rank} elements a rank, devices {names}", flush=True)


def timed(label, program, entry, args, check, halo=None, repeat=10):
    times, local = [], []
    kernel = program.compile(entry, result="device")
    for k in range(repeat + 2):
        comm.Barrier()
        t = time.perf_counter()
        out = dist.run(program, entry, *args, halo=halo, result="device")
        if hasattr(out, "finish"):
            out.finish()
        queue.finish()
        comm.Barrier()
        if k >= 2:
            times.append(time.perf_counter() - t)
        t = time.perf_counter()
        kernel(*args)
        queue.finish()
        if k >= 2:
            local.append(time.perf_counter() - t)
    ok = all(comm.allgather(check(out)))
    if rank == 0:
        print(f"{label:24s} run {np.median(times)*1e3:9.3f} ms   one rank's kernel alone "
              f"{np.median(local)*1e3:9.3f} ms   ok={ok}", flush=True)


total = size * n_rank
timed("reduce (total)", prog, "total", [ones], lambda out: int(out[0]) == np.int32(total % 2**32 if total < 2**31 else total - 2**32))
last = np.int64(rank + 1) * n_rank
timed("scan (prefixSums)", prog, "prefixSums", [ones],
      lambda out: int(out[len(out) - 1:].get()[0]) == int(np.array([last]).astype(np.int32)[0]))
timed("map (scaled, halo 0)", prog, "scaled", [ints], lambda out: int(out[:1].get()[0]) == 2 * lo + 1, halo=0)
timed("stencil (halo 1)", stencil, "stencilNaive", [floats],
      lambda out: abs(float(out[n_rank // 2:n_rank // 2 + 1].get()[0]) - float(np.float32(lo + n_rank // 2))) < 1e3,
      halo=1)
