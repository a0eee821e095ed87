"""`fclc bench`: time an entry point's kernels on the OpenCL device.

`bench_command(args, program, compile options)` runs each dataset (the command line's
arguments, or else the inputs of the file's test blocks for that entry)
once to warm up, then `--repeat` times, or until `--timeout` seconds have
passed (at least one timed run).  Times are the kernels' own, from
profiling events, all kernels of one run summed.  Prints, per dataset, the
device, the median with a unit that fits (µs, ms, s), the spread (min, max,
relative standard deviation) and the effective bandwidth (bytes of the
array arguments and result over the median); `--json` prints the same as
JSON.  On a terminal a progress line on stderr counts the runs.  Run times that scatter
too much for the median to mean much (its 95% confidence interval, from the ranks of
the runs, reaching more than 5% from it) get a warning on stderr saying what to do
(and a `warning` in the JSON, null otherwise, beside `median_interval_s`).  It does not
compare with other implementations (bench/run.py does).
"""
from __future__ import annotations

import json
import math
import statistics
import sys
import time

import numpy as np

from fcl.api.literals import parse_arg, rejoin
from fcl.base.errors import ArgumentError
from fcl.runtime.device import choose_device
from fcl.tools.testblocks import parse_test_blocks


def format_seconds(seconds: float) -> str:
    """0.000812 -> `812 µs`, 0.00341 -> `3.41 ms`, 1.2 -> `1.20 s` (three significant digits)."""
    unit, scale = next((u, s) for u, s in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6))
                       if seconds >= s or u == "µs")
    value = seconds / scale
    digits = 0 if value >= 100 else 1 if value >= 10 else 2
    return f"{value:.{digits}f} {unit}"


def datasets(args, path: str) -> list[tuple[str, list[str]]]:
    """(label, argument texts) to time: the command line's, else the test blocks' inputs."""
    if args.args:
        return [("arguments", rejoin(args.args))]
    with open(path, encoding="utf-8") as f:
        cases = parse_test_blocks(f.read(), path)
    found = [(f"{path}:{c.line}", list(c.args)) for c in cases if c.entry == args.entry and c.error is None]
    if not found:
        raise ArgumentError(f"no arguments given and {path} has no test block inputs for `{args.entry}`; "
                            f"give the arguments: fclc bench {path} -e {args.entry} ARG ...")
    return found


def time_runs(kernel, values: list, repeat: int, timeout: float | None, progress) -> list[float]:
    """Warm up once, then kernel seconds of up to `repeat` runs within `timeout` seconds."""
    kernel.run(*values)
    times: list[float] = []
    start = time.monotonic()
    while len(times) < repeat:
        times.append(sum(t for _, t in kernel.run(*values)[1]))
        progress(len(times), repeat)
        if timeout is not None and time.monotonic() - start > timeout:
            break
    return times


def moved_bytes(values: list, result) -> int:
    arrays = [v for v in values if isinstance(v, np.ndarray)] + [np.asarray(result)]
    return int(sum(a.nbytes for a in arrays))


def bench_command(args, program, options: dict) -> int:
    if args.repeat < 1:
        raise ArgumentError(f"--repeat {args.repeat}: give at least 1 run")
    kernel = program.compile(args.entry, **options)
    terminal = sys.stderr.isatty() and not args.json
    rows = []
    for label, texts in datasets(args, args.file):
        values = kernel.full_args([parse_arg(t, seed=args.seed, position=k + 1)
                                   for k, t in enumerate(texts)])
        result = kernel(*values)

        def progress(done, total, label=label):
            if terminal:
                print(f"\r{args.entry} ({label}): run {done}/{total}", end="", file=sys.stderr, flush=True)
        times = time_runs(kernel, values, args.repeat, args.timeout, progress)
        if terminal:
            print("\r\033[K", end="", file=sys.stderr, flush=True)
        device = choose_device(options.get("device"))
        rows.append(summary(args.entry, label, texts, device, times, moved_bytes(values, result)))
    for row in rows:
        row["warning"] = spread_warning(row)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            print(describe(row))
    sys.stdout.flush()
    for row in rows:
        if row["warning"]:
            print(f"fclc: warning: {row['warning']}", file=sys.stderr)
    return 0


UNRELIABLE = 0.05     # the median's 95% interval reaching further than this fraction: say so


def median_interval(times: list[float]) -> tuple[float, float]:
    """A 95% confidence interval of the median of the distribution `times` are drawn from
    (by order statistics, no assumption on its shape): runs ranked n/2 -+ 0.98 sqrt(n)."""
    t = sorted(times)
    k = max(0, math.floor((len(t) - 1.96 * math.sqrt(len(t))) / 2))
    return t[k], t[len(t) - 1 - k]


def spread_warning(row: dict) -> str | None:
    """What to do when the run times scatter so much that the median is uncertain: its 95%
    interval reaches further than UNRELIABLE of it from it.  One slow run among many does not
    count (the median ignores it); a wide scatter or too few runs do."""
    median, (low, high) = row["median_s"], row["median_interval_s"]
    if row["runs"] < 2 or median <= 0 or max(median - low, high - median) <= UNRELIABLE * median:
        return None
    args = row["arguments"] if len(row["arguments"]) <= 60 else row["arguments"][:57] + "..."
    more = max(100, 5 * row["runs"])
    off = 100 * max(median - low, high - median) / median
    return (f"{row['entry']} {args}: the run times scatter so much (±{100 * row['stdev_s'] / median:.0f}%) "
            f"that the median of {row['runs']} runs may be off by up to {off:.0f}% (95% interval "
            f"{format_seconds(low)} to {format_seconds(high)}); time more runs (--repeat {more}), on a "
            f"quieter machine (nothing else using the device or the CPU), or with a larger input, "
            f"whose runs take longer")


def summary(entry: str, label: str, texts: list[str], device, times: list[float], moved: int) -> dict:
    median = statistics.median(times)
    return {"entry": entry, "dataset": label, "arguments": " ".join(texts),
            "device": f"{device.name.strip()} ({device.platform.name.strip()})",
            "runs": len(times), "median_s": median, "min_s": min(times), "max_s": max(times),
            "stdev_s": statistics.stdev(times) if len(times) > 1 else 0.0,
            "median_interval_s": list(median_interval(times)),
            "bytes": moved, "gb_per_s": moved / median / 1e9 if median > 0 else None}


def describe(row: dict) -> str:
    spread = f"±{100 * row['stdev_s'] / row['median_s']:.1f}%" if row["median_s"] > 0 else "±0%"
    bandwidth = f"{row['gb_per_s']:.2f} GB/s" if row["gb_per_s"] is not None else "n/a GB/s"
    args = row["arguments"] if len(row["arguments"]) <= 60 else row["arguments"][:57] + "..."
    return (f"{row['entry']} {args} on {row['device']}: median {format_seconds(row['median_s'])} "
            f"over {row['runs']} run{'s' * (row['runs'] != 1)} (min {format_seconds(row['min_s'])}, "
            f"max {format_seconds(row['max_s'])}, {spread}), {bandwidth} effective "
            f"({row['bytes']} bytes read and written)")
