"""`python -m fcl.fuzz`: the differential tester for long runs.

    python -m fcl.fuzz --seeds 0:2000 --time 1800 --save failures/
    python -m fcl.fuzz --seeds 17 --show          # print one case's program
    python -m fcl.fuzz --seeds 0:50 --oclgrind    # on Oclgrind, checks on
    python -m fcl.fuzz --seeds 0:240 --emulate --stop   # also on the kernel-IR interpreter; stop at a failure

Prints one line per failing case (seed, verdict, first line of the detail),
then a summary; with --save DIR (or --keep DIR) every failure is minimised and
written as DIR/seedN.fcl, an FCL file with a test block, and printed.  Exit
status 1 when a case failed.  docs/fuzzing.md describes the checks.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from fcl.fuzz.gen import generate_case
from fcl.fuzz.minimize import minimize_failures
from fcl.fuzz.runner import PASSING, Runner, run_many, summarize


def parse_seeds(text: str) -> list[int]:
    seeds = []
    for part in text.split(","):
        if ":" in part:
            a, b = part.split(":")
            seeds.extend(range(int(a), int(b)))
        else:
            seeds.append(int(part))
    return seeds


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fcl.fuzz", description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="0:200", help="A:B (half-open range), or a comma list")
    ap.add_argument("--time", type=float, default=None, help="stop starting cases after this many seconds")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per case (compile and run)")
    ap.add_argument("--jobs", "-j", type=int, default=1, help="worker processes at once")
    ap.add_argument("--oclgrind", action="store_true", help="run on Oclgrind with its checks on")
    ap.add_argument("--emulate", action="store_true",
                    help="also run each agreeing case on the kernel-IR interpreter (divergent barriers, "
                         "out-of-bounds accesses)")
    ap.add_argument("--show", action="store_true", help="print the cases instead of running them")
    ap.add_argument("--save", "--keep", dest="keep", metavar="DIR",
                    help="minimise each failure, print it and write it to DIR/seedN.fcl")
    ap.add_argument("--min-time", type=float, default=300.0,
                    help="seconds of minimising per failure with --save (default 300)")
    ap.add_argument("--stop", action="store_true", help="start no new case once one has failed")
    ap.add_argument("--jsonl", metavar="FILE", help="append every verdict as a JSON line to FILE")
    ap.add_argument("--verbose", "-v", action="store_true", help="print every case's verdict")
    args = ap.parse_args(argv)
    seeds = parse_seeds(args.seeds)
    if args.show:
        for s in seeds:
            c = generate_case(s)
            print(c.program_text())
        return 0
    start = time.monotonic()
    failures = []

    def report(case, r):
        if args.jsonl:
            with open(args.jsonl, "a") as f:
                f.write(json.dumps({"seed": case.seed, "entry": case.entry, "features": case.features, **r}) + "\n")
        if args.verbose or r["status"] not in PASSING:
            first = r["detail"].strip().splitlines()[0][:160] if r["detail"].strip() else ""
            print(f"seed {case.seed}: {r['status']} ({r['seconds']:.1f} s) {first}", flush=True)
        if r["status"] not in PASSING:
            failures.append((case, r))

    results = run_many((generate_case(s) for s in seeds), args.jobs, args.timeout, args.oclgrind,
                       args.time, report, args.emulate, args.stop)
    if args.keep and failures:
        out = Path(args.keep)
        out.mkdir(parents=True, exist_ok=True)
        runner = Runner(args.timeout, args.oclgrind, args.emulate)
        try:
            failures.sort(key=lambda f: f[0].seed)
            texts = minimize_failures(failures, runner, args.min_time * len(failures), args.min_time)
        finally:
            runner.close()
        for (case, _), text in zip(failures, texts):
            (out / f"seed{case.seed}.fcl").write_text(text)
            print(f"\n-- kept as {out / f'seed{case.seed}.fcl'}\n{text}")
    print(f"{len(results)} cases in {time.monotonic() - start:.0f} s: {summarize(results)}")
    return 0 if all(r["status"] in PASSING for _, r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
