"""The benchmark suite: FCL programs beside hand-written OpenCL and pyopencl's library kernels.

    python bench/run.py [--device NAME] [--quick] [--only copy,reduce] [--impl fcl,hand]
                        [--sizes 2^26,2^28,transpose=8192] [--json FILE] [--plot FILE.png]

For each benchmark and size (bench/suite.py says which rows there are), every
row is first run once and its result compared with NumPy; a correct row is
then timed with OpenCL profiling events: `--rounds` rounds in which the
hand-written and FCL rows of the benchmark and size take `--warmup` untimed
and `--runs` timed runs in turn (so a drift of the device's clocks or
temperature falls on every row alike), then pyopencl's library rows, all
their runs at once; the median and minimum of all of a row's runs.  Program builds and host transfers are not timed;
a plan of several kernels counts the sum of its kernels.  pyopencl's
library kernels give no per-kernel events: they are timed from the end of a
marker kernel to the start of another enqueued after them, everything held
back by a user event until it is all queued, less the same span measured
with nothing in between (so their figure includes the gaps between their own
kernels).  Prints per row the size, median and minimum ms, GB/s (bytes that
must be read plus written) or GFLOP/s, % of the hand-written copy at the
nearest size, and the hand-written time over this row's time (FCL / hand
as a speed ratio).  Exit status 0 when every row that ran was correct, 1
when one was not, 2 for a problem with the environment (no device).
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import statistics
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import suite as S  # noqa: E402
from fcl.base.errors import CompileError, CompilerBug, EnvironmentProblem  # noqa: E402
from fcl.runtime import device as D  # noqa: E402
from fcl.runtime import platforms  # noqa: E402

IMPLS = ("hand", "pyopencl", "fcl")          # the order rows run and print in, per benchmark and size


# ---------------------------------------------------------------- rows made ready to run


def declares(program, entry: str) -> bool:
    """Whether `entry` is declared in `program`'s file or in the prelude."""
    import fcl
    try:
        program.scheme(entry)
        return True
    except fcl.FCLError:
        return False

class Skip(Exception):
    """A row that cannot run at these sizes or on this installation (not a failure)."""


@dataclass
class Ready:
    """A row prepared on a device: `output()` runs it once and returns the result;
    `seconds()` runs it once and returns its kernel time."""
    output: callable
    seconds: callable


class Rig:
    """The device, its context and queue, loaded FCL programs and built hand kernels."""

    def __init__(self, device, spec: str):
        import pyopencl as cl
        self.cl = cl
        self.device = device
        self.spec = spec
        self.context = D.get_context(device)
        self.queue = D.get_queue(device)
        self.programs: dict = {}
        self.bracket_gap: float | None = None

    def prepare(self, row, inputs: dict, dims: tuple) -> Ready:
        return {"fcl": self.fcl, "hand": self.hand, "pyopencl": self.library}[row.impl](row, inputs, dims)

    # ------------------------------------------------------------ FCL

    def fcl(self, row: S.Fcl, inputs: dict, dims: tuple) -> Ready:
        import fcl
        reason = row.needs(dims)
        if reason:
            raise Skip(reason)
        if row.file not in self.programs:
            self.programs[row.file] = fcl.load_file(str(ROOT / row.file))
        if not declares(self.programs[row.file], row.entry):
            raise Skip(f"{row.file} has no entry {row.entry} in this checkout")
        # as the hand-written rows: inputs on the device once, results left there (a timed run
        # copies nothing back, so runs follow each other as the hand-written kernels' do)
        kernel = self.programs[row.file].compile(row.entry, device=self.spec, result="device",
                                                 **dict(row.options + row.compile_options))
        import pyopencl.array as cla
        args = row.args({k: cla.to_device(self.queue, v) for k, v in inputs.items()}, dims)

        def run():
            try:
                return kernel.run(*args)
            except CompileError as e:      # e.g. more local memory than the device has
                raise Skip(e.message) from None

        def output():
            result = run()[0]
            return result.get() if isinstance(result, cla.Array) else result
        return Ready(output, lambda: sum(t for _, t in run()[1]))

    # ------------------------------------------------------------ hand-written OpenCL

    def build(self, source: str, defines: dict | None = None):
        options = D.build_options(self.device) + tuple(f"-D{k}={v}" for k, v in (defines or {}).items())
        try:        # FCL's own options (FCL_BUILD_OPTIONS too): both sides are built alike
            return D.build_program(self.context, (S.KERNELS / source).read_text(), options)
        except CompilerBug as e:       # its message says "generated OpenCL C"; this is ours
            raise RuntimeError(f"bench/kernels/{source} does not build on "
                               f"{D.describe_device(self.device)}:{str(e).split('build log:', 1)[-1]}") from None

    def hand(self, row: S.Hand, inputs: dict, dims: tuple) -> Ready:
        cl = self.cl
        mf = cl.mem_flags
        program = self.build(row.source, row.defines())
        bufs = {k: cl.Buffer(self.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=v) for k, v in inputs.items()}
        dtype = np.dtype(np.float32 if row.kind == "float" else np.int32)
        n = row.out_len(dims)
        out = cl.Buffer(self.context, mf.READ_WRITE, max(1, n) * dtype.itemsize)
        launches = row.setup(lambda nbytes: cl.Buffer(self.context, mf.READ_WRITE, nbytes), bufs, dims, out)
        kernels = [cl.Kernel(program, x.kernel) for x in launches]
        for k, x in zip(kernels, launches):
            k.set_args(*x.args)

        def events():
            evs = [cl.enqueue_nd_range_kernel(self.queue, k, x.global_size, x.local_size)
                   for k, x in zip(kernels, launches)]
            evs[-1].wait()
            return evs

        def output():
            events()
            host = np.empty(n, dtype=dtype)
            cl.enqueue_copy(self.queue, host, out)
            return row.finish(host) if row.finish else host
        return Ready(output, lambda: sum(e.profile.end - e.profile.start for e in events()) * 1e-9)

    # ------------------------------------------------------------ pyopencl's library kernels

    def library(self, row: S.Library, inputs: dict, dims: tuple) -> Ready:
        reason = row.needs(dims)
        if reason:
            raise Skip(reason)
        if not row.cpu and self.device.type & self.cl.device_type.CPU:
            raise Skip("GPU only: this library kernel takes minutes on a CPU device")
        try:
            import mako  # noqa: F401 (pyopencl's library kernels are mako templates)
        except ImportError:
            raise Skip("pyopencl's library kernels need mako: pip install mako (or '.[bench]')") from None
        from pyopencl import array as cl_array
        with warnings.catch_warnings():     # compiler chatter, as fcl.runtime.device.build_program
            warnings.simplefilter("ignore", self.cl.CompilerWarning)
            call = row.make(self.context)
            x = cl_array.to_device(self.queue, inputs["a"])
            call(self.queue, x)             # builds what the constructor left to the first call
        if self.bracket_gap is None:
            self.bracket_gap = statistics.median(self.bracketed(lambda: None) for _ in range(10))

        def output():
            result = call(self.queue, x)
            if isinstance(result, tuple):           # (array, count of its elements that count)
                return result[0].get()[:int(result[1].get())]
            return result.get()
        return Ready(output,
                     lambda: max(0.0, self.bracketed(lambda: call(self.queue, x)) - self.bracket_gap))

    def bracketed(self, enqueue) -> float:
        """Seconds from the end of a marker kernel to the start of the next one, with
        `enqueue()`'s commands between them; all held back until all are queued."""
        cl = self.cl
        if "mark" not in self.programs:
            prg = D.build_program(self.context, "__kernel void mark(void) {}")
            self.programs["mark"] = cl.Kernel(prg, "mark")
        mark = self.programs["mark"]
        gate = cl.UserEvent(self.context)
        first = cl.enqueue_nd_range_kernel(self.queue, mark, (1,), (1,), wait_for=[gate])
        enqueue()
        last = cl.enqueue_nd_range_kernel(self.queue, mark, (1,), (1,))
        gate.set_status(cl.command_execution_status.COMPLETE)
        last.wait()
        return (last.profile.start - first.profile.end) * 1e-9


# ---------------------------------------------------------------- measuring

def check(rig: Rig, row, dims: tuple, data) -> tuple[dict, Ready | None]:
    """A row's record once it is checked against NumPy, and what times it where it is correct."""
    bench = S.BENCHMARKS[row.bench]
    rec = {"benchmark": row.bench, "impl": row.impl, "variant": row.variant,
           "size": S.format_dims(row.bench, dims), "dims": list(dims), "device": D.describe_device(rig.device)}
    if getattr(row, "compile_options", ()):
        rec["ablation"] = dict(row.compile_options)          # built without something (--ablate)
    try:
        inputs, ref = data(row.kind)
        ready = rig.prepare(row, inputs, dims)
        rec["correct"] = bench.check(ready.output(), inputs, dims, ref)
    except Skip as e:
        return {**rec, "correct": None, "status": "skipped", "note": str(e)}, None
    except Exception as e:          # one broken row must not stop the rest of the run
        text = str(e).strip() or type(e).__name__
        return {**rec, "correct": False, "status": "error", "note": text}, None
    if not rec["correct"]:
        return {**rec, "status": "wrong", "note": "result differs from NumPy"}, None
    return {**rec, "status": "ok"}, ready


def time_rows(checked: list, warmup: int, runs: int, rounds: int):
    """Time the correct rows of one benchmark and size: `rounds` rounds, in each of which
    every hand-written and FCL row takes `warmup` untimed and `runs` timed runs in turn, so
    that a drift of the device's clocks or temperature falls on every row alike; then
    pyopencl's library rows, each with all its runs at once (their kernels allocate
    temporaries on every call, which slowed the row after them in a round). Each record
    gets the median and minimum of all its runs."""
    times: dict[int, list] = {k: [] for k, (_, ready) in enumerate(checked) if ready is not None}
    library = [k for k in times if checked[k][0]["impl"] == "pyopencl"]

    def take(k: int, timed: int):
        ready = checked[k][1]
        for _ in range(warmup):
            ready.seconds()
        times[k] += [ready.seconds() for _ in range(timed)]
    for _ in range(rounds):
        for k in times:
            if k not in library:
                take(k, runs)
    for k in library:
        take(k, runs * rounds)
    for k, ts in times.items():
        rec = checked[k][0]
        bench = S.BENCHMARKS[rec["benchmark"]]
        med = statistics.median(ts)
        rec.update(runs=runs * rounds, rounds=rounds, median_ms=med * 1e3, min_ms=min(ts) * 1e3)
        key = "GBps" if bench.unit == "GB/s" else "GFLOPs"
        rec[key] = bench.amount(tuple(rec["dims"])) / med / 1e9


def relate(records: list[dict]):
    """Fill in `pct_of_copy` (of the hand-written copy at the nearest size) and
    `vs_hand` (the first hand-written row's median over this row's)."""
    copies = [r for r in records if r["benchmark"] == "copy" and r["impl"] == "hand" and "GBps" in r]
    for r in records:
        if "GBps" in r and copies:
            n = S.BENCHMARKS[r["benchmark"]].elements(tuple(r["dims"]))
            near = min(copies, key=lambda c: abs(np.log2(c["dims"][0]) - np.log2(n)))
            r["pct_of_copy"] = 100 * r["GBps"] / near["GBps"]
        hand = [h for h in records if h["benchmark"] == r["benchmark"] and h["dims"] == r["dims"]
                and h["impl"] == "hand" and "median_ms" in h]
        if hand and "median_ms" in r:
            r["vs_hand"] = hand[0]["median_ms"] / r["median_ms"]


# ---------------------------------------------------------------- printing

COLUMNS = [("benchmark", 9), ("impl", 8), ("variant", 52), ("size", 10), ("median ms", 10),
           ("min ms", 9), ("GB/s|GFLOP/s", 12), ("% copy", 7), ("vs hand", 7)]


def line(cells) -> str:
    return "  ".join(f"{c:<{w}}" if i < 4 else f"{c:>{w}}" for i, (c, (_, w)) in enumerate(zip(cells, COLUMNS)))


def format_record(r: dict) -> str:
    if r["status"] != "ok" or "median_ms" not in r:
        tail = {"ok": "correct (not timed)", "skipped": f"skipped: {r.get('note')}",
                "wrong": "WRONG: result differs from NumPy", "error": f"ERROR: {r.get('note')}"}[r["status"]]
        return line([r["benchmark"], r["impl"], r["variant"][:52], r["size"], ""])[:-2] + tail
    rate = f"{r['GBps']:.1f}" if "GBps" in r else f"{r['GFLOPs']:.1f} GF"
    pct = f"{r['pct_of_copy']:.0f}%" if "pct_of_copy" in r else "-"
    ratio = f"{r['vs_hand']:.2f}" if "vs_hand" in r else "-"
    return line([r["benchmark"], r["impl"], r["variant"][:52], r["size"], f"{r['median_ms']:.4f}",
                 f"{r['min_ms']:.4f}", rate, pct, ratio])


def markdown(records: list[dict]) -> str:
    """The timed records as a Markdown table (for bench/README.md)."""
    rows = ["| benchmark | impl | variant | size | median ms | min ms | GB/s or GFLOP/s | % of copy | vs hand |",
            "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in records:
        if "median_ms" not in r:
            rows.append(f"| {r['benchmark']} | {r['impl']} | {r['variant']} | {r['size']} | "
                        f"{r['status']}: {r.get('note', '')} | | | | |")
            continue
        rate = f"{r['GBps']:.1f} GB/s" if "GBps" in r else f"{r['GFLOPs']:.2f} GFLOP/s"
        pct = f"{r['pct_of_copy']:.0f}%" if "pct_of_copy" in r else "–"
        ratio = f"{r['vs_hand']:.2f}" if "vs_hand" in r else "–"
        rows.append(f"| {r['benchmark']} | {r['impl']} | {r['variant']} | {r['size']} | {r['median_ms']:.3f} | "
                    f"{r['min_ms']:.3f} | {rate} | {pct} | {ratio} |")
    return "\n".join(rows)


# ---------------------------------------------------------------- the chart

def plot(records: list[dict], path: str, device: str):
    """Figure-2 style: per benchmark and size, the best hand-written, library and FCL
    rows side by side; the hand-written copy bandwidth as a dashed line."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    timed = [r for r in records if "median_ms" in r and "ablation" not in r]
    groups = list(dict.fromkeys((r["benchmark"], r["size"]) for r in timed))
    bw = [g for g in groups if g[0] != "matmul"]
    mm = [g for g in groups if g[0] == "matmul"]
    fig, axes = plt.subplots(1, 2 if mm else 1, figsize=(max(6, 1.3 * len(bw)) + (3 if mm else 0), 4.5),
                             gridspec_kw={"width_ratios": [max(1, len(bw)), max(1, len(mm))]} if mm else None,
                             squeeze=False)
    colours = {"hand": "#4c72b0", "pyopencl": "#999999", "fcl": "#dd8452"}
    labels = {"hand": "hand-written OpenCL", "pyopencl": "pyopencl library", "fcl": "FCL"}
    for ax, gs, key, unit in ((axes[0][0], bw, "GBps", "GB/s"), (axes[0][-1], mm, "GFLOPs", "GFLOP/s")):
        if not gs:
            continue
        width, bars = 0.27, []
        for x, (bench, size) in enumerate(gs):
            here = [r for r in timed if (r["benchmark"], r["size"]) == (bench, size)]
            impls = [i for i in IMPLS if any(r["impl"] == i for r in here)]
            for k, impl in enumerate(impls):
                best = max((r for r in here if r["impl"] == impl), key=lambda r: r[key])
                pos = x + (k - (len(impls) - 1) / 2) * width
                ax.bar(pos, best[key], width, color=colours[impl], label=labels[impl])
                bars.append((pos, best["variant"].split(",")[0].split(" (")[0][:28]))
            copy = here[0].get("pct_of_copy")
            if key == "GBps" and copy:
                line_at = here[0]["GBps"] * 100 / copy
                ax.plot([x - 0.45, x + 0.45], [line_at] * 2, "k--", linewidth=1,
                        label="hand-written copy")
        ax.set_xticks(range(len(gs)), [f"{b}\n{s}" for b, s in gs], fontsize=8)
        ax.set_ylabel(unit)
        top = ax.get_ylim()[1] * 1.2
        ax.set_ylim(0, top)
        for pos, text in bars:            # which variant each bar is, written up from its foot
            ax.text(pos, top * 0.01, text, rotation=90, ha="center", va="bottom", fontsize=6)
        handles, names = ax.get_legend_handles_labels()
        unique = dict(zip(names, handles))
        ax.legend(unique.values(), unique.keys(), fontsize=7, loc="upper right")
    fig.suptitle(f"FCL beside hand-written OpenCL on {device}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


# ---------------------------------------------------------------- command line

def choose(args) -> tuple:
    """(device, the --device text that selects it for FCL)."""
    if args.device:
        return D.choose_device(args.device), args.device
    if args.quick:
        for d in platforms.candidates(D.all_devices()):
            if D.kind_of(d) == "CPU" and D.usable(d) is None:
                return d, spec_for(d)
        raise EnvironmentProblem(f"--quick runs on a CPU OpenCL device and there is none: "
                                 f"install one with `{D.INSTALL_HINT}`")
    return D.choose_device(None), None


def spec_for(device) -> str:
    """A --device text that selects `device` and no device before it: its platform's
    name when the platform has no other device, else its own name."""
    return (device.platform.name if len(device.platform.get_devices()) == 1 else device.name).strip()


def sizes(args) -> dict:
    """Benchmark -> list of dims, from --quick/--tiny/defaults and --sizes."""
    base = S.TINY_SIZES if args.tiny else S.QUICK_SIZES if args.quick else S.GPU_SIZES
    table = {b: list(v) for b, v in base.items()}
    given_n = []
    for item in (s for text in args.sizes for s in text.split(",") if s.strip()):
        if "=" in item:
            name, value = item.split("=", 1)
            if name not in S.BENCHMARKS:
                raise ValueError(f"--sizes: no benchmark named {name!r}")
            table.setdefault(f"={name}", []).append(value)
        else:
            given_n.append(item)
    for name in S.BENCHMARKS:
        chosen = table.pop(f"={name}", None)
        if chosen:
            table[name] = chosen
        elif given_n and S.BENCHMARKS[name].shape == "n":
            table[name] = given_n
    return {b: [S.parse_dims(b, t) for t in table[b]] for b in S.BENCHMARKS}


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="bench/run.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", help="substring of an OpenCL device, platform or vendor name")
    ap.add_argument("--quick", action="store_true", help="small sizes on the CPU device (what CI runs)")
    ap.add_argument("--tiny", action="store_true", help="tiny, odd sizes (correctness only, for tests and Oclgrind)")
    ap.add_argument("--sizes", action="append", default=[], metavar="LIST",
                    help="comma-separated: N for copy/reverse/reduce/scan (2^26, 1000), "
                         "NAME=DIMS for one benchmark (transpose=8192, matvec=4096x1000, matmul=1024)")
    ap.add_argument("--only", default="", help="comma-separated benchmarks: " + ",".join(S.BENCHMARKS))
    ap.add_argument("--impl", default="", help="comma-separated: " + ",".join(IMPLS))
    ap.add_argument("--variants", default="", metavar="LIST",
                    help="comma-separated: only the FCL rows whose label begins with one of these words "
                         "(e.g. sumAll,sumStride,'sumAllBy 16'; hand-written and library rows all run)")
    ap.add_argument("--runs", type=int, default=None, help="timed runs per row (default 20, --quick 10)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed runs before timing (default 2)")
    ap.add_argument("--rounds", type=int, default=None,
                    help="timing rounds: the hand-written and FCL rows of a benchmark and size take their "
                         "warm-up and --runs in turn, this many times over; library rows after "
                         "(default 5, --quick and --tiny 1)")
    ap.add_argument("--check-only", action="store_true", help="check every row against NumPy, time nothing")
    ap.add_argument("--ablate", action="store_true",
                    help="each FCL row also at -O0, with each optimising pass off, and with no static arguments")
    ap.add_argument("--json", metavar="FILE", help="write the records as a JSON list")
    ap.add_argument("--plot", metavar="FILE.png", help="write a bar chart (needs matplotlib)")
    ap.add_argument("--markdown", action="store_true", help="also print the results as a Markdown table")
    ap.add_argument("--from-json", metavar="FILE",
                    help="run nothing: print (and --plot) the records of an earlier --json")
    args = ap.parse_args(argv)
    small = args.quick or args.tiny
    args.runs = (10 if small else 20) if args.runs is None else args.runs
    args.rounds = (1 if small else 5) if args.rounds is None else args.rounds
    if args.runs < 1 or args.rounds < 1 or args.warmup < 0:
        ap.error("--runs and --rounds must be at least 1 and --warmup at least 0")
    for opt, allowed in (("only", S.BENCHMARKS), ("impl", IMPLS)):
        chosen = [x for x in getattr(args, opt).split(",") if x]
        bad = [x for x in chosen if x not in allowed]
        if bad:
            ap.error(f"--{opt}: unknown {', '.join(bad)}; choose from {', '.join(allowed)}")
        setattr(args, opt, chosen or list(allowed))
    args.variants = [v for v in args.variants.split(",") if v]
    try:
        args.dims = sizes(args)
    except ValueError as e:
        ap.error(str(e))
    return args


def run(args, out=print) -> list[dict]:
    """Check and time every selected row; print each as it finishes; the records."""
    device, spec = choose(args)
    rig = Rig(device, spec)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out(f"device: {D.describe_device(device)}; {date}; "
        + ("correctness only" if args.check_only else
           f"{args.rounds} rounds of {args.warmup} warm-up + {args.runs} timed runs per row, the hand-written and "
           f"FCL rows of a size in turn, library rows after; kernel time from OpenCL profiling events"))
    out(line([c for c, _ in COLUMNS]))
    records = []
    rng = np.random.default_rng(2016)
    for bench_name in args.only:
        bench = S.BENCHMARKS[bench_name]
        for dims in args.dims[bench_name]:
            cache = {}

            def data(kind, bench=bench, dims=dims, cache=cache):
                if kind not in cache:
                    inputs = bench.make(dims, kind, rng)
                    cache[kind] = (inputs, bench.reference(inputs, dims))
                return cache[kind]
            rows = []
            for impl in IMPLS:
                if impl not in args.impl:
                    continue
                mine = [r for r in S.ROWS if r.bench == bench_name and r.impl == impl]
                if impl == "fcl" and args.variants:
                    mine = [r for r in mine if any(r.variant == v or r.variant.startswith(v + " ")
                                                   for v in args.variants)]
                if args.quick:      # rows marked quick=False in bench/suite.py (and why)
                    mine = [r for r in mine if getattr(r, "quick", True)]
                if args.ablate and impl == "fcl":
                    mine = [x for r in mine for x in (r, *S.ablations(r))]
                rows += mine
            checked = [check(rig, row, dims, data) for row in rows]
            if not args.check_only:
                time_rows(checked, args.warmup, args.runs, args.rounds)
            for rec, _ in checked:
                records.append(rec)
                relate(records)
                out(format_record(rec))
    for r in records:
        r["date"] = date
    return records


def replay(path: str, out=print) -> list[dict]:
    """The records of an earlier --json, printed as run() printed them."""
    records = json.loads(Path(path).read_text())
    if records:
        out(f"device: {records[0]['device']}; {records[0].get('date', '')}; from {path}")
    out(line([c for c, _ in COLUMNS]))
    for r in records:
        out(format_record(r))
    return records


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        print("error: --plot needs matplotlib: pip install matplotlib (or '.[bench]'); "
              "or write --json here and plot elsewhere with --from-json FILE --plot FILE.png", file=sys.stderr)
        return 2
    if args.from_json:
        try:
            records = replay(args.from_json)
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"error: --from-json {args.from_json}: not a file of bench/run.py records ({e})",
                  file=sys.stderr)
            return 1
    else:
        try:
            records = run(args, lambda s: print(s, flush=True))
        except EnvironmentProblem as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        if args.json:
            Path(args.json).write_text(json.dumps(records, indent=1) + "\n")
    if args.markdown:
        print(markdown(records))
    if args.plot:
        plot(records, args.plot, records[0]["device"] if records else "")
    bad = [r for r in records if r["status"] in ("wrong", "error")]
    if bad:
        print(f"{len(bad)} row{'s' * (len(bad) != 1)} failed: "
              + "; ".join(f"{r['benchmark']} {r['impl']} {r['variant']} {r['size']}" for r in bad), file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
