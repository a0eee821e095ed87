"""What the benchmark suite measures: benchmarks, their NumPy references, and the rows.

A `Benchmark` makes inputs for a shape (`dims`), computes the NumPy
reference, checks an output against it and says how many bytes (or
floating-point operations) the work must move.  A row is one implementation
of one benchmark: an FCL entry point (`Fcl`, one table entry in `FCL_ROWS`),
a hand-written OpenCL kernel from bench/kernels/ (`Hand`, launched by a small
function that sizes the grid) or one of pyopencl's library kernels
(`Library`).  bench/run.py prepares each row on a device, checks it, then
times it.  Nothing here imports pyopencl at module level.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "bench" / "kernels"
BS = 256                      # work-group size of the 1-D hand-written kernels
MAX_GROUPS = 65536            # grid-stride loops beyond this many work-groups


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


# ---------------------------------------------------------------- benchmarks

@dataclass(frozen=True)
class Benchmark:
    """One computation: dims -> inputs -> reference; bytes or flops per run."""
    name: str
    shape: str                                   # how dims read: "n", "rows x cols", "m x k x n"
    make: Callable[[tuple, str, np.random.Generator], dict]
    reference: Callable[[dict, tuple], np.ndarray]
    amount: Callable[[tuple], int]               # bytes read + written, or flops
    unit: str = "GB/s"                           # or "GFLOP/s"
    tolerance: Callable | None = None            # (inputs, dims) -> per-element bound, for floats

    def elements(self, dims: tuple) -> int:
        """Elements of the main input (what % of copy compares with)."""
        return int(np.prod(dims[:2]))

    def check(self, out, inputs: dict, dims: tuple, ref: np.ndarray) -> bool:
        out = np.atleast_1d(np.asarray(out))
        if out.shape != ref.shape:
            return False
        if self.tolerance is None or ref.dtype.kind in "iub":
            return bool(np.array_equal(out, ref))
        return bool(np.all(np.abs(out.astype(np.float64) - ref) <= self.tolerance(inputs, dims)))


def ints(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, 100, n, dtype=np.int32)


def vector_inputs(dims, kind, rng):
    return {"a": ints(dims[0], rng)}


def matrix_inputs(dims, kind, rng):
    """Float matrices in [-1, 1); int ones in [-4, 4], small enough that the float64
    product below is exact (and no int32 sum wraps)."""
    m, k, n = dims if len(dims) == 3 else (*dims, 1)
    shapes = {"A": m * k, "B": k * n}
    if kind == "int":
        return {k: rng.integers(-4, 5, n, dtype=np.int32) for k, n in shapes.items()}
    return {k: rng.random(n, dtype=np.float32) * 2 - 1 for k, n in shapes.items()}


def product(inputs: dict, dims: tuple, absolute: bool = False) -> np.ndarray:
    """A @ B in float64 (A m x k, B k x n; matvec: n = 1), or |A| @ |B|."""
    m, k, n = dims if len(dims) == 3 else (*dims, 1)
    a = inputs["A"].reshape(m, k).astype(np.float64)
    b = inputs["B"].reshape(k, n).astype(np.float64)
    if absolute:
        a, b = np.abs(a), np.abs(b)
    return (a @ b).ravel()


def product_reference(inputs, dims):
    exact = product(inputs, dims)
    return exact.astype(np.int32) if inputs["A"].dtype == np.int32 else exact


def product_tolerance(inputs, dims):
    """Float32 sums in any order: 1e-4 of the sum of the magnitudes of the terms."""
    return 1e-4 * product(inputs, dims, absolute=True) + 1e-30


def segscan_inputs(dims, kind, rng):
    """Segment starts with probability 1/64 (segments of 64 on average), ints in [0, 100)."""
    return {"flags": rng.random(dims[0]) < 1 / 64, "vals": ints(dims[0], rng)}


def segscan_reference(inputs, dims):
    """Inclusive sums that start again at every flagged element (int32, wrapping)."""
    vals, flags = inputs["vals"].astype(np.int64), inputs["flags"].copy()
    if len(flags):
        flags[0] = True
    total = np.cumsum(vals)
    starts = np.flatnonzero(flags)
    before = (total - vals)[starts]                      # the sum before each segment
    return (total - np.repeat(before, np.diff(np.append(starts, len(vals))))).astype(np.int32)


CSR_NNZ = (32, 64)            # non-zeros a row of the SpMV benchmark: uniform in [32, 64]


def csr_inputs(dims, kind, rng):
    """A square sparse float matrix in compressed rows, 32 to 64 non-zeros a row in random
    columns, values and x in [-1, 1)."""
    rows = dims[0]
    counts = rng.integers(CSR_NNZ[0], CSR_NNZ[1] + 1, rows)
    start = np.zeros(rows + 1, dtype=np.int32)
    np.cumsum(counts, out=start[1:])
    nnz = int(start[-1])
    return {"rowStart": start, "cols": rng.integers(0, rows, nnz, dtype=np.int32),
            "vals": rng.random(nnz, dtype=np.float32) * 2 - 1, "x": rng.random(rows, dtype=np.float32) * 2 - 1}


def csr_product(inputs, absolute: bool = False) -> np.ndarray:
    start, cols, vals, x = (inputs[k] for k in ("rowStart", "cols", "vals", "x"))
    terms = vals.astype(np.float64) * x.astype(np.float64)[cols]
    if absolute:
        terms = np.abs(terms)
    sums = np.concatenate([[0.0], np.cumsum(terms)])
    return sums[start[1:]] - sums[start[:-1]]


def csr_reference(inputs, dims):
    return csr_product(inputs)


def csr_tolerance(inputs, dims):
    return 1e-4 * csr_product(inputs, absolute=True) + 1e-30


def csr_bytes(dims) -> int:
    """Row starts, each non-zero's column and value and the x it reads, the result (the
    average of 48 non-zeros a row)."""
    rows, nnz = dims[0], dims[0] * sum(CSR_NNZ) // 2
    return 4 * (rows + 1) + 12 * nnz + 4 * rows


BENCHMARKS = {b.name: b for b in [
    Benchmark("copy", "n", vector_inputs, lambda i, d: i["a"].copy(), lambda d: 8 * d[0]),
    Benchmark("reverse", "n", vector_inputs, lambda i, d: i["a"][::-1].copy(), lambda d: 8 * d[0]),
    Benchmark("transpose", "rows x cols",
              lambda d, kind, rng: {"a": ints(d[0] * d[1], rng)},
              lambda i, d: i["a"].reshape(d).T.ravel(), lambda d: 8 * d[0] * d[1]),
    Benchmark("reduce", "n", vector_inputs,
              lambda i, d: np.array([i["a"].sum(dtype=np.int32)]), lambda d: 4 * d[0]),
    Benchmark("scan", "n", vector_inputs,
              lambda i, d: np.cumsum(i["a"], dtype=np.int32), lambda d: 8 * d[0]),
    Benchmark("histogram", "n x bins", lambda d, kind, rng: {"a": rng.integers(0, d[1], d[0], dtype=np.int32)},
              lambda i, d: np.bincount(i["a"], minlength=d[1]).astype(np.int32), lambda d: 4 * d[0] + 4 * d[1]),
    Benchmark("compact", "n", vector_inputs, lambda i, d: i["a"][i["a"] < 50], lambda d: 6 * d[0]),
    Benchmark("sort", "n", lambda d, kind, rng: {"a": rng.integers(-2**31, 2**31, d[0], dtype=np.int32)},
              lambda i, d: np.sort(i["a"]), lambda d: 8 * d[0]),
    Benchmark("sortpairs", "n", lambda d, kind, rng: {"a": rng.integers(-2**31, 2**31, d[0], dtype=np.int32),
                                                      "b": np.arange(d[0], dtype=np.int32)},
              lambda i, d: i["b"][np.argsort(i["a"], kind="stable")], lambda d: 16 * d[0]),
    Benchmark("segscan", "n", segscan_inputs, segscan_reference, lambda d: 9 * d[0]),
    Benchmark("spmv", "rows", csr_inputs, csr_reference, csr_bytes, tolerance=csr_tolerance),
    Benchmark("matvec", "rows x cols", matrix_inputs, product_reference,
              lambda d: 4 * (d[0] * d[1] + d[1] + d[0]), tolerance=product_tolerance),
    Benchmark("matmul", "m x k x n", matrix_inputs, product_reference,
              lambda d: 2 * d[0] * d[1] * d[2], unit="GFLOP/s", tolerance=product_tolerance),
]}


def format_dims(bench: str, dims: tuple) -> str:
    """`2^26`, `1000`, `8192x8192`, `4096` (a square matmul)."""
    if len(dims) == 1:
        n = dims[0]
        return f"2^{n.bit_length() - 1}" if n > 1 and n & (n - 1) == 0 else str(n)
    if bench == "histogram":
        return f"{format_dims('copy', dims[:1])}x{dims[1]}"
    if len(set(dims)) == 1 and bench == "matmul":
        return str(dims[0])
    return "x".join(map(str, dims))


def parse_dims(bench: str, text: str) -> tuple:
    """`2^26`, `1<<20`, `1000` for n; `R` or `RxC` for a matrix; `N` or `MxKxN` for matmul."""
    parts = [parse_int(p) for p in text.lower().split("x")]
    want = {"copy": 1, "reverse": 1, "reduce": 1, "scan": 1, "histogram": 2, "transpose": 2, "matvec": 2,
            "matmul": 3, "compact": 1, "sort": 1, "sortpairs": 1, "segscan": 1, "spmv": 1}[bench]
    if len(parts) == 1:
        parts = parts * want
    if len(parts) != want or min(parts) < 1:
        raise ValueError(f"{bench} takes a size {BENCHMARKS[bench].shape} of positive numbers, not {text!r}")
    return tuple(parts)


def parse_int(text: str) -> int:
    text = text.strip()
    if "^" in text:
        base, exp = text.split("^")
        return int(base) ** int(exp)
    if "<<" in text:
        base, shift = text.split("<<")
        return int(base) << int(shift)
    return int(text)


# ---------------------------------------------------------------- FCL rows

def always(dims) -> str | None:
    return None


def multiple_of(k: int, *which: int):
    def need(dims):
        bad = [dims[i] for i in which if dims[i] % k]
        return f"needs multiples of {k}" if bad else None
    return need


def power_of_two(dims) -> str | None:
    n = dims[0]
    return None if n > 1 and n & (n - 1) == 0 else "needs a power-of-two length"


@dataclass(frozen=True)
class Fcl:
    """An FCL entry point as a row.  `args(inputs, dims)` are its arguments; `kind` the
    element type of its inputs; `needs(dims)` says why it cannot run at dims (or None).
    A row whose file has no such entry (an example not written yet) is skipped."""
    bench: str
    variant: str
    file: str                       # relative to the repository root
    entry: str
    args: Callable[[dict, tuple], tuple]
    kind: str = "int"
    needs: Callable[[tuple], str | None] = always
    options: tuple = ()             # (name, value) pairs for Program.compile the row always uses: block_size
    compile_options: tuple = ()     # what an ablation row turns off: opt_level, no_pass, dynamic
    quick: bool = True              # False: left out of --quick (register blocking for a GPU, whose
                                    # optimising PoCL build takes 25-41 s of CI's 15 minutes)
    impl: str = field(default="fcl", init=False)


def rows_cols(i, d):
    return (d[1], d[0], i["a"])


def scan_chunk(n: int) -> int:
    """scanLevels's chunk: the largest power of two up to 1024 whose square is at most n."""
    return min(1024, 1 << max(0, (n.bit_length() - 1) // 2))


def scan_all_fits(dims) -> str | None:
    c = scan_chunk(dims[0])
    return None if dims[0] % (c * c) == 0 else f"needs a multiple of chunk^2 = {c * c}"


FCL_ROWS = [
    Fcl("copy", "copyGrid", "bench/programs.fcl", "copyGrid", lambda i, d: (i["a"],)),
    Fcl("reverse", "revDistribute 1024", "examples/reverse.fcl", "revDistribute",
        lambda i, d: (1024, i["a"]), needs=multiple_of(1024, 0)),
    Fcl("reverse", "revGrid", "examples/reverse.fcl", "revGrid", lambda i, d: (i["a"],)),
    Fcl("transpose", "transposeTiled 32", "examples/transpose.fcl", "transposeTiled",
        lambda i, d: (32, *rows_cols(i, d)), needs=multiple_of(32, 0, 1)),
    Fcl("transpose", "transposeNaive", "examples/transpose.fcl", "transposeNaive", rows_cols),
    Fcl("histogram", "histogram (prelude, reduceByIndex)", "bench/programs.fcl", "histogramOf",
        lambda i, d: (d[1], i["a"])),
    Fcl("compact", "filter (prelude packWhere: one pass, runs staged by packThreads)", "bench/programs.fcl", "keepBelow50",
        lambda i, d: (i["a"],)),
    Fcl("sort", "sort (prelude: radix sort, 4 bits a pass)", "bench/programs.fcl", "sortInts",
        lambda i, d: (i["a"],)),
    Fcl("sortpairs", "sortByKey (prelude: radix sort of (key, value) pairs), the values", "bench/programs.fcl",
        "sortPairs", lambda i, d: (i["a"], i["b"])),
    Fcl("segscan", "segScan (prelude: scan over (flag, value) pairs)", "bench/programs.fcl", "segSums",
        lambda i, d: (i["flags"], i["vals"])),
    Fcl("spmv", "spmv (prelude: a warp a row)", "bench/programs.fcl", "spmvOf",
        lambda i, d: (i["rowStart"], i["cols"], i["vals"], i["x"]), kind="float"),
    Fcl("spmv", "spmvThread (a row a work-item)", "bench/programs.fcl", "spmvThread",
        lambda i, d: (i["rowStart"], i["cols"], i["vals"], i["x"]), kind="float"),
    Fcl("reduce", "sumAll (prelude reduce)", "examples/reduce.fcl", "sumAll", lambda i, d: (i["a"],)),
    Fcl("reduce", "sumPasses (sumSeqTree passes)", "bench/programs.fcl", "sumPasses",
        lambda i, d: (i["a"],), needs=power_of_two),
    Fcl("reduce", "sumAllBy 16 (reduceBy, runs of 16)", "examples/reduce.fcl", "sumAllBy",
        lambda i, d: (16, i["a"])),
    Fcl("reduce", "sumAllBy 32 (reduceBy, runs of 32)", "examples/reduce.fcl", "sumAllBy",
        lambda i, d: (32, i["a"])),
    Fcl("reduce", "sumAllReg 8 (reduceReg, registers)", "bench/programs.fcl", "sumAllReg",
        lambda i, d: (8, i["a"])),
    Fcl("reduce", "sumAllReg 32 (reduceReg, registers)", "bench/programs.fcl", "sumAllReg",
        lambda i, d: (32, i["a"])),
    Fcl("reduce", "sumStride (prelude reduceComm, grid-stride, runs of 4)", "examples/reduce.fcl", "sumStride",
        lambda i, d: (i["a"],)),
    Fcl("scan", "scanAll (prelude scan: scanLookback, one pass)", "examples/scan.fcl", "scanAll",
        lambda i, d: (i["a"],)),
    Fcl("scan", "scanAllBy 4096 (scanBy, reduce-then-scan)", "examples/scan.fcl", "scanAllBy",
        lambda i, d: (4096, i["a"])),
    Fcl("scan", "scanLevels (3 levels of scanChunks)", "bench/programs.fcl", "scanLevels",
        lambda i, d: (scan_chunk(d[0]), i["a"]), needs=scan_all_fits),
    Fcl("matvec", "matvecF (prelude: a work-group per row)", "examples/matvec.fcl", "matvecF",
        lambda i, d: (d[1], d[0], i["A"], i["B"]), kind="float"),
    Fcl("matvec", "matvecRows4 (runs of 4 columns: float4 loads)", "bench/programs.fcl", "matvecRows4",
        lambda i, d: (d[1], d[0], i["A"], i["B"]), kind="float"),
    Fcl("matvec", "matvecWarp (a warp per row)", "examples/matvec.fcl", "matvecWarp",
        lambda i, d: (d[1], d[0], i["A"], i["B"]), kind="float"),
    Fcl("matvec", "matvecBlock (int)", "examples/matvec.fcl", "matvecBlock",
        lambda i, d: (d[1], d[0], i["A"], i["B"])),
    Fcl("matvec", "matvec (int, a thread per row)", "examples/matvec.fcl", "matvec",
        lambda i, d: (d[1], d[0], i["A"], i["B"])),
    Fcl("matmul", "matmulReg (4x4 per work-item)", "examples/matmul.fcl", "matmulReg",
        lambda i, d: (*d, i["A"], i["B"]), kind="float", quick=False),
    Fcl("matmul", "matmulF (prelude: 8x8 a work-item, 64x256 tiles, split-K or double-buffered where they are few)", "examples/matmul.fcl", "matmulF",
        lambda i, d: (*d, i["A"], i["B"]), kind="float", quick=False),
    Fcl("matmul", "matmulF at #BlockSize 128 (64x128 tiles)", "examples/matmul.fcl", "matmulF",
        lambda i, d: (*d, i["A"], i["B"]), kind="float", options=(("block_size", 128),), quick=False),
    Fcl("matmul", "matmulPrefetch at #BlockSize 128 (the next K-tile loaded during the multiply-adds)",
        "examples/matmul.fcl", "matmulPrefetch", lambda i, d: (*d, i["A"], i["B"]), kind="float",
        options=(("block_size", 128),), quick=False),
    Fcl("matmul", "matmulStaged (32x32 tiles through local memory)", "examples/matmul.fcl", "matmulStaged",
        lambda i, d: (*d, i["A"], i["B"]), kind="float"),
    Fcl("matmul", "matmulCached (8x8 per work-item, no local memory)", "examples/matmul.fcl", "matmulCached",
        lambda i, d: (*d, i["A"], i["B"]), kind="float"),
    Fcl("matmul", "matmul (int, naive)", "examples/matmul.fcl", "matmul",
        lambda i, d: (*d, i["A"], i["B"])),
    Fcl("matmul", "matmulTiled 16 (int)", "examples/matmul.fcl", "matmulTiled",
        lambda i, d: (16, *d, i["A"], i["B"]), needs=multiple_of(16, 0, 2)),
]


def ablations(row: Fcl) -> list[Fcl]:
    """The row built without what the compiler does by default, one thing at a time:
    all optimising passes (-O0), each optimising pass, static arguments, device bounds checks."""
    from fcl.codegen.passes import PIPELINE
    offs = [("-O0", (("opt_level", 0),)), ("dynamic args", (("dynamic", True),)),
            ("no checks", (("bounds_checks", False),))]
    offs += [(f"no {p.name}", (("no_pass", (p.name,)),)) for p in PIPELINE if p.optimising]
    return [replace(row, variant=f"{row.variant} [{label}]", compile_options=opts) for label, opts in offs]


# ---------------------------------------------------------------- hand-written rows

@dataclass(frozen=True)
class Launch:
    """One kernel launch: the kernel's name in its .cl file, its arguments (buffers and
    numpy scalars; held here so that the buffers live as long as the launch), global
    and local sizes."""
    kernel: str
    args: tuple
    global_size: tuple
    local_size: tuple


@dataclass(frozen=True)
class Hand:
    """A hand-written kernel as a row.  `setup(alloc, bufs, dims, out)` returns the
    launches, in order: `bufs` are the inputs on the device, `out` the result buffer
    (of `out_len(dims)` elements), `alloc(nbytes)` makes a scratch buffer.  `defines()`
    gives the macros the source is built with (read when the row runs, so that tests can
    lower a module constant)."""
    bench: str
    variant: str
    source: str                     # file in bench/kernels/
    setup: Callable
    out_len: Callable[[tuple], int]
    kind: str = "int"
    defines: Callable[[], dict] = dict
    finish: Callable | None = None  # the result from the output buffer's contents (a compaction's
                                    # first out[n] elements), where it is not all of them
    impl: str = field(default="hand", init=False)


def groups_for(work: int, per_group: int) -> int:
    return max(1, min(MAX_GROUPS, ceil_div(work, per_group)))


def setup_copy(alloc, bufs, dims, out):
    n = dims[0]
    return [Launch("copy", (bufs["a"], out, np.int32(n)), (groups_for(n // 4, BS) * BS,), (BS,))]


def setup_reverse(alloc, bufs, dims, out):
    n = dims[0]
    return [Launch("reverse", (bufs["a"], out, np.int32(n)), (groups_for(n, 4 * BS) * BS,), (BS,))]


def setup_transpose(alloc, bufs, dims, out):
    rows, cols = dims
    return [Launch("transpose", (bufs["a"], out, np.int32(rows), np.int32(cols)),
                   (ceil_div(cols, 32) * 32, ceil_div(rows, 32) * 8), (32, 8))]


REDUCE_GROUPS = 1024


def setup_reduce(alloc, bufs, dims, out):
    """Pass 1: G work-groups, each work-item adding >= 4 elements (int4 loads); pass 2:
    one work-group over the G partial sums."""
    n = dims[0]
    groups = max(1, min(REDUCE_GROUPS, ceil_div(n, 4 * BS)))
    partial = alloc(4 * groups)
    return [Launch("reduce", (bufs["a"], partial, np.int32(n)), (groups * BS,), (BS,)),
            Launch("reduce", (partial, out, np.int32(groups)), (BS,), (BS,))]


SCAN_TILE = 256 * 8           # TILE in scan.cl
SCAN_GROUPS = 1024            # at most one tile of interval sums for the middle pass


def setup_scan(alloc, bufs, dims, out):
    """Reduce-then-scan: G intervals of whole tiles; sums, scan of the sums, rescan."""
    n = dims[0]
    tiles = ceil_div(n, SCAN_TILE)
    interval = ceil_div(tiles, min(SCAN_GROUPS, tiles)) * SCAN_TILE
    groups = ceil_div(n, interval)
    sums, carries = alloc(4 * groups), alloc(4 * groups)
    return [Launch("interval_sums", (bufs["a"], sums, np.int32(n), np.int32(interval)), (groups * BS,), (BS,)),
            Launch("scan_intervals", (sums, carries, np.int32(groups), np.int32(SCAN_TILE), sums, np.int32(0)),
                   (BS,), (BS,)),
            Launch("scan_intervals", (bufs["a"], out, np.int32(n), np.int32(interval), carries, np.int32(1)),
                   (groups * BS,), (BS,))]


SCAN1_ITEMS = 32              # ITEMS in scan_onepass.cl: a tile is BS x ITEMS elements (the tests
                              # take 4: tiles of 1024, so that their small sizes look back)


def setup_scan_onepass(alloc, bufs, dims, out):
    """Single pass with decoupled look-back: a work-group per tile.  Every run needs the
    ticket counter and the tiles' status words zeroed first: scan_onepass_init, a launch
    of the row (so it is timed with the scan)."""
    n = dims[0]
    tiles = ceil_div(n, BS * SCAN1_ITEMS)
    status, counter = alloc(8 * tiles), alloc(4)
    return [Launch("scan_onepass_init", (status, counter, np.int32(tiles)), (ceil_div(tiles, BS) * BS,), (BS,)),
            Launch("scan_onepass", (bufs["a"], out, np.int32(n), status, counter), (tiles * BS,), (BS,))]


HIST_LOCAL_BINS = 4096        # bins that hist_local keeps in local memory (16 KiB)
HIST_SLICE_BINS = 8192        # SLICE_BINS in histogram.cl: bins of a slice (32 KiB of local memory)
HIST_RANGES = 99              # input ranges of hist_sliced: 792 work-groups at 8 slices, one wave on a
                              # 132-unit H100/H200 (6 of 32 KiB a unit); on an H200 at 2^26 x 65536:
                              # 0.293 ms at 99 ranges, 0.297 at 198 (one int4 in flight instead of
                              # two: 0.36 at 99, 0.40 at 264; 16-bit counters, 0.23, need a guard
                              # against overflow that holds only in practice: not a baseline)


def setup_histogram(alloc, bufs, dims, out):
    """The bins cleared, then counted: a local copy per work-group (1024 groups, grid-stride)
    where they fit, else in slices of HIST_SLICE_BINS bins, a work-group per slice and
    input range (HIST_RANGES ranges at most, fewer where n is small)."""
    n, bins = dims
    zero = Launch("hist_zero", (out, np.int32(bins)), (groups_for(bins, BS) * BS,), (BS,))
    if bins > HIST_LOCAL_BINS:
        groups = ceil_div(bins, HIST_SLICE_BINS) * max(1, min(HIST_RANGES, ceil_div(n, 4 * BS)))
        return [zero, Launch("hist_sliced", (bufs["a"], out, np.int32(n), np.int32(bins)), (groups * BS,), (BS,))]
    groups = max(1, min(1024, ceil_div(n, 4 * BS)))
    return [zero, Launch("hist_local", (bufs["a"], out, np.int32(n), np.int32(bins)), (groups * BS,), (BS,))]


COMPACT_ITEMS = 32            # ITEMS in compact.cl: a tile is BS x ITEMS elements (the tests take 4)


def setup_compact(alloc, bufs, dims, out):
    """Single-pass stream compaction with decoupled look-back: a work-group per tile, the
    kept elements at out[0 .. count - 1] and the count at out[n].  Every run needs the
    ticket counter and the tiles' status words zeroed first: compact_init, a launch of the
    row (so it is timed with the compaction).  At least one tile, so that n = 0 stores
    its count too; exactly that many (an extra one would also take itself for the last)."""
    n = dims[0]
    tiles = max(1, ceil_div(n, BS * COMPACT_ITEMS))
    status, counter = alloc(8 * tiles), alloc(4)
    return [Launch("compact_init", (status, counter, np.int32(tiles)), (ceil_div(tiles, BS) * BS,), (BS,)),
            Launch("compact", (bufs["a"], out, np.int32(n), status, counter), (tiles * BS,), (BS,))]


SORT_ITEMS = 16               # ITEMS in radix_sort.cl: a tile is BS x SORT_ITEMS keys (tests: 4)
SORT_GROUPS = 1024            # most work-groups a pass (more tiles: several a work-group)
SORT_BITS, SORT_PASSES = 4, 8


def radix_sort_grid(n):
    """(tiles a work-group, work-groups) of every pass."""
    tiles = max(1, ceil_div(n, BS * SORT_ITEMS))
    per_group = ceil_div(tiles, SORT_GROUPS)
    return per_group, ceil_div(tiles, per_group)


def setup_radix_sort(alloc, bufs, dims, out):
    """LSD radix sort, 4 bits a pass: 8 passes of upsweep (digit counts of each work-group's
    tiles), scan (one work-group) and downsweep (rank in local memory, scatter); the input,
    then the scratch buffer and `out` in turn, the last pass writing `out`."""
    return radix_passes(alloc, bufs, dims, out, pairs=False)


def setup_radix_sort_pairs(alloc, bufs, dims, out):
    """The keys bufs["a"] sorted as setup_radix_sort, each moving its value from bufs["b"]
    with it: `out` gets the values in the keys' sorted order (stable: equal keys keep their
    values' order), a scratch buffer the sorted keys."""
    return radix_passes(alloc, bufs, dims, out, pairs=True)


def radix_passes(alloc, bufs, dims, out, pairs: bool):
    """The launches of setup_radix_sort (pairs: of setup_radix_sort_pairs)."""
    n = dims[0]
    per_group, groups = radix_sort_grid(n)
    nbytes = 4 * max(1, n)
    hist = alloc(4 * 16 * groups)
    if pairs:
        keys_out, kscratch, vscratch = alloc(nbytes), alloc(nbytes), alloc(nbytes)
    else:
        keys_out, kscratch, vscratch = out, alloc(nbytes), None
    launches, src, vsrc = [], bufs["a"], bufs.get("b")
    for p in range(SORT_PASSES):
        dst, vdst = (keys_out, out) if p % 2 else (kscratch, vscratch)
        shift = np.int32(SORT_BITS * p)
        down = (("radix_pairs_downsweep", (src, dst, vsrc, vdst)) if pairs else ("radix_downsweep", (src, dst)))
        launches += [
            Launch("radix_upsweep", (src, hist, np.int32(n), shift, np.int32(per_group)), (groups * BS,), (BS,)),
            Launch("radix_scan", (hist, np.int32(16 * groups)), (BS,), (BS,)),
            Launch(down[0], down[1] + (hist, np.int32(n), shift, np.int32(per_group)), (groups * BS,), (BS,))]
        src, vsrc = dst, vdst
    return launches


SEGSCAN_ITEMS = 32            # ITEMS in segscan.cl: a tile is BS x ITEMS elements (Oclgrind tests: 8,
                              # since 32 takes 38 KB of local memory, more than Oclgrind's 32 KB)
SEGSCAN1_ITEMS = 32           # ITEMS in segscan_onepass.cl: a tile is BS x ITEMS elements (the tests
                              # take 4: tiles of 1024, so that their small sizes look back)


def setup_segscan(alloc, bufs, dims, out):
    """Reduce-then-scan over (flag, value) pairs: G intervals of whole tiles; each
    interval's pair, the segmented scan of the pairs, rescan of the intervals."""
    n = dims[0]
    tile = BS * SEGSCAN_ITEMS
    tiles = ceil_div(n, tile)
    interval = ceil_div(tiles, min(SCAN_GROUPS, tiles)) * tile
    groups = ceil_div(n, interval)
    pair_flags, pair_vals, carries = alloc(groups), alloc(4 * groups), alloc(4 * groups)
    return [Launch("seg_interval_pairs", (bufs["flags"], bufs["vals"], pair_flags, pair_vals, np.int32(n),
                                          np.int32(interval)), (groups * BS,), (BS,)),
            Launch("seg_scan_intervals", (pair_flags, pair_vals, carries, np.int32(groups),
                                          np.int32(tile), pair_vals, np.int32(0)), (BS,), (BS,)),
            Launch("seg_scan_intervals", (bufs["flags"], bufs["vals"], out, np.int32(n), np.int32(interval),
                                          carries, np.int32(1)), (groups * BS,), (BS,))]


def setup_segscan_onepass(alloc, bufs, dims, out):
    """Single pass with decoupled look-back over (flag, value) pairs: a work-group per
    tile.  Every run needs the ticket counter and the tiles' status words zeroed first:
    segscan_onepass_init, a launch of the row (so it is timed with the scan).  At least
    one tile, so that n = 0 launches something."""
    n = dims[0]
    tiles = max(1, ceil_div(n, BS * SEGSCAN1_ITEMS))
    status, counter = alloc(8 * tiles), alloc(4)
    return [Launch("segscan_onepass_init", (status, counter, np.int32(tiles)), (ceil_div(tiles, BS) * BS,), (BS,)),
            Launch("segscan_onepass", (bufs["flags"], bufs["vals"], out, np.int32(n), status, counter),
                   (tiles * BS,), (BS,))]


SPMV_LANES = 32               # LANES in spmv.cl: work-items a row


def setup_spmv(alloc, bufs, dims, out):
    """CSR-vector: SPMV_LANES work-items a row, BS / SPMV_LANES rows a work-group at a time
    (grid-stride past MAX_GROUPS work-groups)."""
    rows = dims[0]
    groups = max(1, min(MAX_GROUPS, ceil_div(rows, BS // SPMV_LANES)))
    return [Launch("spmv", (bufs["rowStart"], bufs["cols"], bufs["vals"], bufs["x"], out, np.int32(rows)),
                   (groups * BS,), (BS,))]


def setup_matvec(alloc, bufs, dims, out):
    rows, cols = dims
    return [Launch("matvec", (bufs["A"], bufs["B"], out, np.int32(rows), np.int32(cols)),
                   (min(rows, MAX_GROUPS) * BS,), (BS,))]


def setup_matmul(name: str, tile: int):
    """Launch of a matmul kernel whose work-groups of 16 x 16 cover `tile` x `tile` of C."""
    def setup(alloc, bufs, dims, out):
        m, k, n = dims
        return [Launch(name, (bufs["A"], bufs["B"], out, np.int32(m), np.int32(n), np.int32(k)),
                       (ceil_div(n, tile) * 16, ceil_div(m, tile) * 16), (16, 16))]
    return setup


def whole(dims):
    return int(np.prod(dims))


HAND_ROWS = [
    Hand("copy", "int4 loads, grid-stride", "copy.cl", setup_copy, whole),
    Hand("reverse", "local-memory tiles of 1024", "reverse.cl", setup_reverse, whole),
    Hand("transpose", "padded 32x32 tiles", "transpose.cl", setup_transpose, whole),
    Hand("reduce", "two passes, sequential phase + tree", "reduce.cl", setup_reduce, lambda d: 1),
    Hand("scan", "single pass, decoupled look-back, 32 items a work-item", "scan_onepass.cl",
         setup_scan_onepass, whole, defines=lambda: {"ITEMS": SCAN1_ITEMS}),
    Hand("scan", "reduce-then-scan, 3 kernels", "scan.cl", setup_scan, whole),
    Hand("histogram", "local-atomic bins per work-group (past 4096 bins: a slice of 8192 each)", "histogram.cl",
         setup_histogram, lambda d: d[1]),
    Hand("compact", "single pass, decoupled look-back, 32 items a work-item", "compact.cl", setup_compact,
         lambda d: d[0] + 1, defines=lambda: {"ITEMS": COMPACT_ITEMS}, finish=lambda h: h[:h[-1]]),
    Hand("sort", "LSD radix, 4 bits a pass, upsweep/scan/downsweep", "radix_sort.cl", setup_radix_sort, whole,
         defines=lambda: {"ITEMS": SORT_ITEMS}),
    Hand("sortpairs", "LSD radix, 4 bits a pass, keys and values moved together", "radix_sort.cl",
         setup_radix_sort_pairs, whole, defines=lambda: {"ITEMS": SORT_ITEMS}),
    Hand("segscan", "single pass, decoupled look-back over (flag, value) pairs, 32 items a work-item",
         "segscan_onepass.cl", setup_segscan_onepass, whole, defines=lambda: {"ITEMS": SEGSCAN1_ITEMS}),
    Hand("segscan", "reduce-then-scan over (flag, value) pairs, 3 kernels", "segscan.cl", setup_segscan, whole,
         defines=lambda: {"ITEMS": SEGSCAN_ITEMS}),
    Hand("spmv", "CSR-vector, 32 work-items a row (float)", "spmv.cl", setup_spmv, lambda d: d[0], kind="float",
         defines=lambda: {"LANES": SPMV_LANES}),
    Hand("matvec", "work-group per row (float)", "matvec.cl", setup_matvec, lambda d: d[0], kind="float"),
    Hand("matmul", "128x128 tiles, K-tile 16, 8x8 per item, float4, double-buffered (float)", "matmul.cl",
         setup_matmul("matmul_reg8x8", 128), lambda d: d[0] * d[2], kind="float"),
    Hand("matmul", "16x16 local tiles (float)", "matmul.cl",
         setup_matmul("matmul_tile16", 16), lambda d: d[0] * d[2], kind="float"),
]


# ---------------------------------------------------------------- pyopencl's library kernels

@dataclass(frozen=True)
class Library:
    """A pyopencl library kernel as a row: `make(context)` builds a callable
    `(queue, device array) -> device array` that enqueues the whole computation (or
    `-> (device array, count)`: the result is the array's first `count` elements)."""
    bench: str
    variant: str
    make: Callable
    kind: str = "int"
    needs: Callable[[tuple], str | None] = always
    cpu: bool = True                # False: skipped on CPU devices (copy_if took over 5 minutes at 2^18
                                    # on PoCL, 2026-11-27)
    impl: str = field(default="pyopencl", init=False)


def reduction_kernel(context):
    from pyopencl.reduction import ReductionKernel
    knl = ReductionKernel(context, np.int32, neutral="0", reduce_expr="a + b", map_expr="in[i]",
                          arguments="__global const int *in")
    return lambda queue, x: knl(x, queue=queue)


def inclusive_scan_kernel(context):
    from pyopencl.scan import InclusiveScanKernel
    knl = InclusiveScanKernel(context, np.int32, "a + b", neutral="0")
    return lambda queue, x: knl(x, output_ary="new", queue=queue)


def copy_if_kernel(context):
    """pyopencl.algorithm.copy_if keeping the elements below 50: (its result, as long as the
    input, and the count of kept elements at its front), read only after the timed runs (a
    read inside one would wait on the queue the timing holds back)."""
    from pyopencl.algorithm import copy_if
    return lambda queue, x: copy_if(x, "ary[i] < 50", queue=queue)[:2]


def radix_sort_kernel(context):
    """pyopencl.algorithm.RadixSort of the ints, the key their bits with the sign flipped
    (its keys are unsigned)."""
    from pyopencl.algorithm import RadixSort
    knl = RadixSort(context, "int *ary", key_expr="((unsigned) ary[i]) ^ 0x80000000u",
                    sort_arg_names=["ary"], key_dtype=np.uint32)
    return lambda queue, x: knl(x, key_bits=32, queue=queue)[0][0]


def bitonic_sort_kernel(context):
    """pyopencl.bitonic_sort.BitonicSort, which sorts in place: a copy of the input each run
    (timed with it)."""
    from pyopencl.bitonic_sort import BitonicSort
    knl = BitonicSort(context)

    def call(queue, x):
        y = x.copy(queue=queue)
        knl(y, queue=queue)
        return y
    return call


LIBRARY_ROWS = [
    Library("reduce", "ReductionKernel", reduction_kernel),
    Library("scan", "InclusiveScanKernel", inclusive_scan_kernel),
    Library("compact", "copy_if", copy_if_kernel, cpu=False),
    Library("sort", "RadixSort", radix_sort_kernel),
    Library("sort", "BitonicSort (a copy, then in place)", bitonic_sort_kernel, needs=power_of_two),
]

ROWS = [*FCL_ROWS, *HAND_ROWS, *LIBRARY_ROWS]


# ---------------------------------------------------------------- sizes

GPU_SIZES = {"copy": ["2^26", "2^28"], "reverse": ["2^26", "2^28"], "reduce": ["2^26", "2^28"],
             "histogram": ["2^26x256", "2^26x65536"], "compact": ["2^26"], "sort": ["2^26"], "sortpairs": ["2^26"],
             "segscan": ["2^26"], "spmv": ["2^20"],
             "scan": ["2^26", "2^28"], "transpose": ["8192"], "matvec": ["8192"], "matmul": ["4096"]}
QUICK_SIZES = {"copy": ["2^18"], "reverse": ["2^18"], "reduce": ["2^18"], "scan": ["2^18"], "histogram": ["2^18x256"],
               "compact": ["2^18"], "sort": ["2^16"], "sortpairs": ["2^16"], "segscan": ["2^18"], "spmv": ["2^12"],
               "transpose": ["512"], "matvec": ["512"], "matmul": ["128"]}
# odd sizes (partial tiles, vector tails, more than one tile of the register-blocked
# matmul), then sizes the FCL rows that need multiples or powers of two can take
TINY_SIZES = {"copy": ["5003", "2^12"], "reverse": ["5003", "2^12"], "reduce": ["5003", "2^12"],
              "histogram": ["5003x256", "2^12x5000", "5003x20000"], "compact": ["5003", "2^12"], "sort": ["5003", "2^12"], "sortpairs": ["5003"],
              "segscan": ["5003", "2^12"], "spmv": ["37", "2^10"],
              "scan": ["5003", "2^12"], "transpose": ["37x45", "64x96"], "matvec": ["19x70"],
              "matmul": ["130x21x133", "32x24x48"]}
