"""`fclc bench`: time an entry point's kernels on the OpenCL device.

`bench_command(args, program, compile options)` runs each dataset (the command line's
arguments, or else the inputs of the file's test blocks for that entry)
once to warm up, then `--repeat` times, or until `--timeout` seconds have
passed (at least one timed run).  Times are the kernels' own, from
profiling events, all kernels of one run summed.  Prints, per dataset, the
device, the median with a unit that fits (µs, ms, s), the spread (min, max,
relative standard deviation) and the effective bandwidth (bytes of the
array arguments and result over the median); `--json` prints the same as
JSON.  On a terminal a progress line on stderr counts the runs.  It does not
compare with other implementations (bench/run.py does).
"""
from __future__ import annotations

import json
import statistics
import sys
import time

import numpy as np

from fcl.errors import ArgumentError


def format_seconds(seconds: float) -> str:
    """0.000812 -> `812 µs`, 0.00341 -> `3.41 ms`, 1.2 -> `1.20 s` (three significant digits)."""
    unit, scale = next((u, s) for u, s in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6))
                       if seconds >= s or u == "µs")
    value = seconds / scale
    digits = 0 if value >= 100 else 1 if value >= 10 else 2
    return f"{value:.{digits}f} {unit}"


def datasets(args, path: str) -> list[tuple[str, list[str]]]:
    """(label, argument texts) to time: the command line's, else the test blocks' inputs."""
    from fcl.values import rejoin
    if args.args:
        return [("arguments", rejoin(args.args))]
    from fcl.testblocks import parse_test_blocks
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
    from fcl.runtime.device import choose_device
    from fcl.values import parse_arg
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
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            print(describe(row))
    return 0


def summary(entry: str, label: str, texts: list[str], device, times: list[float], moved: int) -> dict:
    median = statistics.median(times)
    return {"entry": entry, "dataset": label, "arguments": " ".join(texts),
            "device": f"{device.name.strip()} ({device.platform.name.strip()})",
            "runs": len(times), "median_s": median, "min_s": min(times), "max_s": max(times),
            "stdev_s": statistics.stdev(times) if len(times) > 1 else 0.0,
            "bytes": moved, "gb_per_s": moved / median / 1e9 if median > 0 else None}


def describe(row: dict) -> str:
    spread = f"±{100 * row['stdev_s'] / row['median_s']:.1f}%" if row["median_s"] > 0 else "±0%"
    bandwidth = f"{row['gb_per_s']:.2f} GB/s" if row["gb_per_s"] is not None else "n/a GB/s"
    args = row["arguments"] if len(row["arguments"]) <= 60 else row["arguments"][:57] + "..."
    return (f"{row['entry']} {args} on {row['device']}: median {format_seconds(row['median_s'])} "
            f"over {row['runs']} run{'s' * (row['runs'] != 1)} (min {format_seconds(row['min_s'])}, "
            f"max {format_seconds(row['max_s'])}, {spread}), {bandwidth} effective "
            f"({row['bytes']} bytes read and written)")
