"""How many device bounds checks (`kir.Checked`) each benchmark's FCL row keeps, per kernel.

    python bench/checks.py [--only reduce,scan] [--size 2^26] [--device-geometry] [--sites]

Every FCL row of bench/suite.py is built as bench/run.py builds it: the same
entry, its int arguments static with the values the row passes at the first
GPU size of its benchmark (the arrays' lengths are run-time values, so tiny
arrays of the right element type stand in for the inputs).  Prints one line a
row: the checks left in all its kernels, then per kernel (on the path taken when
the host facts of a kernel's unchecked version hold at the row's input lengths,
else on its checked version: see passes/bounds.py); `--sites` adds each
check's source site.  `check_counts(row, dims)` is the same as a function
(tests/codegen/test_bounds.py uses it).  No device is needed: this only compiles.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import suite as S  # noqa: E402


def stand_in_inputs(row: S.Fcl) -> dict:
    """Inputs of the row's element type, one element each (their lengths are not compiled in)."""
    dtype = np.float32 if row.kind == "float" else np.int32
    return {name: np.zeros(1, dtype) for name in ("a", "A", "B")}


def build(row: S.Fcl, dims: tuple):
    """The build bench/run.py's row runs at `dims` (its static int arguments at those sizes)."""
    import fcl
    kernel = fcl.load_file(str(ROOT / row.file)).compile(row.entry, **dict(row.options + row.compile_options))
    return kernel.build_for(*row.args(stand_in_inputs(row), dims))


def launched(plan):
    """The kernels the host program launches (not the unchecked versions it may run instead)."""
    names = {s.kernel for s in plan.launches()}
    return [k for k in plan.kernels if k.name in names]


def checked_nodes(plan, k, holds=None):
    """The checks a launch of kernel k runs: those of its unchecked version (bounds pass)
    unless `holds(condition)` says the version's host facts fail at the row's sizes."""
    from fcl.codegen.passes.bounds import checks_in
    version = plan.version(k.name)
    if version is None or holds is not None and holds(version[1]) is False:
        return checks_in(k.body)
    return checks_in(plan.kernel(version[0]).body)


class _LengthsOnly:
    """A random generator whose arrays are one element broadcast to the length asked for
    (the input makers run without filling gigabytes)."""
    @staticmethod
    def integers(lo, hi, n, dtype=np.int64):
        return np.broadcast_to(np.zeros(1, dtype), (n,))

    @staticmethod
    def random(n, dtype=np.float64):
        return np.broadcast_to(np.zeros(1, dtype), (n,))


def host_facts(row: S.Fcl, dims: tuple, plan):
    """holds(condition) -> True/False at the row's real input lengths (host scalars set before
    any host loop computed as the host does), or None where it reads one set in a loop."""
    from fcl.codegen import kir as K
    from fcl.codegen import plan as P
    inputs = S.BENCHMARKS[row.bench].make(dims, row.kind, _LengthsOnly())
    env = {}
    for a, v in zip(plan.args, row.args(inputs, dims)):
        if isinstance(a, P.ArrayArg):
            env[a.length] = len(v)
    for s in plan.body:
        if isinstance(s, P.SetVar) and s.expr.names <= env.keys():
            env[s.var] = K.eval_host(s.expr, env, total=True)
        elif isinstance(s, P.SetVar):
            env.pop(s.var, None)

    def holds(cond):
        return bool(K.eval_host(cond, env, total=True)) if cond.names <= env.keys() else None
    return holds


def check_counts(row: S.Fcl, dims: tuple) -> dict[str, int]:
    """{kernel name: checks it runs} of the row's build at `dims` (its checked version where
    the facts of its unchecked one fail at those sizes)."""
    plan = build(row, dims).plan
    holds = host_facts(row, dims, plan)
    return {k.name: len(checked_nodes(plan, k, holds)) for k in launched(plan)}


def version(plan, k, holds) -> str:
    """How launches of kernel k run at the row's sizes: its unchecked version, the checked
    kernel, or unknown here (facts on a host scalar set in a host loop)."""
    version = plan.version(k.name)
    if version is None:
        return ""
    return {True: " unchecked version", False: " checked version", None: " version ?"}[holds(version[1])]


def first_dims(bench: str, size: str | None) -> tuple:
    return S.parse_dims(bench, size if size else S.GPU_SIZES[bench][0])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="benchmarks, comma-separated (default: all)")
    ap.add_argument("--size", default=None, help="one size for every benchmark (default: the first GPU size)")
    ap.add_argument("--sites", action="store_true", help="print the site of each check left")
    args = ap.parse_args(argv)
    only = {b for b in args.only.split(",") if b}
    total = 0
    for row in S.FCL_ROWS:
        if only and row.bench not in only:
            continue
        dims = first_dims(row.bench, args.size)
        if row.needs(dims):
            print(f"{row.bench:10} {row.variant:40} skipped: {row.needs(dims)}")
            continue
        plan = build(row, dims).plan
        holds = host_facts(row, dims, plan)
        per = {k.name: checked_nodes(plan, k, holds) for k in launched(plan)}
        n = sum(len(v) for v in per.values())
        total += n
        detail = ", ".join(f"{k.name} {len(per[k.name])}{version(plan, k, holds)}" for k in launched(plan))
        print(f"{row.bench:10} {row.variant:40} {n:3} checks  ({detail})")
        if args.sites:
            for name, checks in per.items():
                for c in checks:
                    print(f"    {name}: site {c.site}: index {c.index} < {c.length}")
    print(f"total {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
