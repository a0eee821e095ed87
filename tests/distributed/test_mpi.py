"""Distributed runs through MPI (docs/distributed.md): `mpiexec` with the CPU device, every
result checked against the evaluator on the whole data."""
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fcl
from fcl import distributed as dist
from fcl.base.errors import ArgumentError

pytest.importorskip("mpi4py", reason="the [test] extras install mpi4py and MPICH")
MPIEXEC = shutil.which("mpiexec") or pytest.skip("no mpiexec (the [test] extras install MPICH)", allow_module_level=True)
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples/distributed.fcl"
STENCIL = ROOT / "examples/stencil.fcl"


def mpiexec(ranks: int, *command, timeout=240) -> subprocess.CompletedProcess:
    return subprocess.run([MPIEXEC, "-n", str(ranks), *map(str, command)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, stdin=subprocess.DEVNULL)


def fclc(*args) -> list[str]:
    return [sys.executable, "-m", "fcl.tools.cli", *map(str, args)]


def test_every_rank_count_and_block_shape_gives_the_evaluators_result():
    """3 ranks: uneven blocks, empty blocks (2 and 0 elements), halos wider than a block, an
    operator that is not commutative, blocks already on the device."""
    out = mpiexec(3, sys.executable, ROOT / "tests/distributed/ranks.py", EXAMPLE, STENCIL)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split()
    assert "MISMATCH" not in lines and lines.count("ok") == 22, out.stdout


def test_fclc_run_distributed_prints_what_the_single_run_prints(tmp_path):
    a = np.where(np.arange(10007) % 97 == 3, np.arange(10007) - 5000, 0).astype(np.int32)
    np.save(tmp_path / "a.npy", a)
    single = subprocess.run(fclc("run", EXAMPLE, "-e", "firstNonZero", f"@{tmp_path / 'a.npy'}"),
                            capture_output=True, text=True, cwd=ROOT)
    out = mpiexec(2, *fclc("run", "--distributed", EXAMPLE, "-e", "firstNonZero", f"@{tmp_path / 'a.npy'}"))
    assert out.returncode == 0 and out.stdout == single.stdout == "[-4997]\n", out.stderr
    # -o: each rank writes its block of the scan into one file
    out = mpiexec(2, *fclc("run", "--distributed", EXAMPLE, "-e", "prefixSums", "iota:10007",
                           "-o", tmp_path / "s.npy"))
    assert out.returncode == 0, out.stderr
    assert np.array_equal(np.load(tmp_path / "s.npy"), np.cumsum(np.arange(10007), dtype=np.int32))
    # a stencil, declared local: its blocks' ends take their neighbours' elements
    np.save(tmp_path / "f.npy", np.linspace(-3, 5, 1001, dtype=np.float32) ** 2)
    single = subprocess.run(fclc("run", STENCIL, "-e", "stencilNaive", f"@{tmp_path / 'f.npy'}", "--full"),
                            capture_output=True, text=True, cwd=ROOT)
    out = mpiexec(2, *fclc("run", "--distributed", STENCIL, "-e", "stencilNaive", "--halo", 1,
                           f"@{tmp_path / 'f.npy'}", "--full"))
    assert out.returncode == 0 and out.stdout == single.stdout, out.stderr


def test_an_entry_that_cannot_be_distributed_is_one_located_error():
    out = mpiexec(2, *fclc("run", "--distributed", EXAMPLE, "-e", "scaled", "iota:10"))
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.count("error:") == 1 and "distributed.fcl:31:" in out.stderr, out.stderr
    assert "--halo h" in out.stderr and "Traceback" not in out.stderr


def test_distribution_reads_the_body_of_the_entry():
    prog = fcl.load_file(str(EXAMPLE))
    d = dist.distribution(prog, "firstNonZeros")
    assert (d.kind, d.split) == ("scan", (0, 1))
    assert dist.distribution(prog, "scaled", halo=0).kind == "local"
    bad = fcl.load("""
sig lookupSum : [int] -> [int] -> [int]<grid>
fun lookupSum t a = reduce addi 0 (mapPull (fn i => index t i) a)
sig rev : [int] -> [int]<grid>
fun rev a = reduce addi 0 (reverse a)
sig byWhole : [int] -> [int]<grid>
fun byWhole a = reduce addi 0 (mapPull (fn x => x + index a 0) a)
""")
    assert dist.distribution(bad, "lookupSum", replicate=["t"]).split == (1,)
    for entry, replicate in (("rev", ()), ("firstNonZeros", ["b"])):     # b whole beside a's blocks
        with pytest.raises(ArgumentError, match="must be a split argument, or `mapPull`/`zipWith`"):
            dist.distribution(bad if entry == "rev" else prog, entry, replicate=replicate)
    with pytest.raises(ArgumentError, match="reads the split argument `a` whole"):
        dist.distribution(bad, "byWhole")
    with pytest.raises(ArgumentError, match="no array parameter to split"):
        dist.distribution(prog, "total", replicate=["a"])
    assert [dist.blocks(10, 3)[r] for r in range(3)] == [(0, 3), (3, 6), (6, 10)]
