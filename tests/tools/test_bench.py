"""The benchmark suite's correctness checks (bench/run.py), never its timings.

Every row of bench/suite.py runs at tiny, odd sizes on the default OpenCL
device and must match NumPy; the hand-written kernels' work-group caps are
lowered so that their grid-stride loops, several tiles per scan interval,
both reduction passes and the single-pass scan's look-back over several
tiles run.  The hand-written kernels run again under Oclgrind (no races, out-of-bounds or uninitialised reads).
The checks themselves must reject a wrong result.
"""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import fcl
from bench import run as R
from bench import suite as S
from conftest import needs_device
from fcl.runtime import device as D
from fcl.runtime.oclgrind import oclgrind_available, run_with_oclgrind

SMALL_CAPS = {"MAX_GROUPS": 2, "REDUCE_GROUPS": 2, "SCAN_GROUPS": 2, "SCAN1_ITEMS": 4, "SEGSCAN_ITEMS": 8, "SEGSCAN1_ITEMS": 4, "COMPACT_ITEMS": 4, "SORT_ITEMS": 4, "SORT_GROUPS": 2}


def has_mako() -> bool:
    try:
        import mako  # noqa: F401
        return True
    except ImportError:
        return False


@needs_device
def test_every_row_matches_numpy(monkeypatch):
    """On the default device only: a second PoCL device (its pthread driver) builds with the
    same compiler, and this test took 100 s of CI's 15 minutes there."""
    for name, value in SMALL_CAPS.items():
        monkeypatch.setattr(S, name, value)
    device = D.choose_device(None, notes=False)
    args = R.parse_args(["--tiny", "--check-only", "--device", R.spec_for(device)])
    records = R.run(args, out=lambda line: None)
    assert {r["device"] for r in records} == {D.describe_device(device)}
    assert len(records) == sum(len(S.TINY_SIZES[row.bench]) for row in S.ROWS)
    checked = {(r["benchmark"], r["variant"]) for r in records if r["status"] == "ok"}
    present = [row for row in S.FCL_ROWS if R.declares(fcl.load_file(str(R.ROOT / row.file)), row.entry)]
    assert {(row.bench, row.variant) for row in present + S.HAND_ROWS} <= checked
    for r in records:
        where = f"{r['benchmark']} {r['impl']} {r['variant']} {r['size']}: {r.get('note')}"
        if r["impl"] == "fcl" and r["status"] == "skipped":
            assert r["note"].startswith("needs") or "has no entry" in r["note"], where
        elif r["impl"] == "pyopencl" and (not has_mako() or r["status"] == "skipped"):
            assert r["status"] == "skipped" and (not has_mako() or r["note"].startswith(("needs", "GPU only"))), where
        else:
            assert r["status"] == "ok" and r["correct"] is True, where


def test_ablated_fcl_rows_match_numpy():
    """--ablate: the FCL rows built at -O0, with each optimising pass off, without static arguments,
    without bounds checks."""
    args = R.parse_args(["--tiny", "--check-only", "--ablate", "--impl", "fcl", "--only", "transpose"])
    records = R.run(args, out=lambda line: None)
    ablated = [r for r in records if "ablation" in r]
    assert len(ablated) == len(S.ablations(S.FCL_ROWS[0])) * len(records) // (1 + len(S.ablations(S.FCL_ROWS[0])))
    assert {"opt_level", "dynamic", "no_pass", "bounds_checks"} == {k for r in ablated for k in r["ablation"]}
    for r in records:
        assert r["status"] == "ok" or (r["status"] == "skipped" and r["note"].startswith("needs")), r


FLOAT_ONLY = {"spmv"}          # benchmarks whose inputs are floats whatever the row's kind


@pytest.mark.parametrize("name", list(S.BENCHMARKS))
def test_checks_reject_a_wrong_result(name):
    bench = S.BENCHMARKS[name]
    dims = S.parse_dims(name, S.TINY_SIZES[name][0])
    kinds = ("float",) if name in FLOAT_ONLY else ("int", "float") if bench.tolerance else ("int",)
    for kind in kinds:
        inputs = bench.make(dims, kind, np.random.default_rng(1))
        ref = bench.reference(inputs, dims)
        out = ref.astype(np.float32 if kind == "float" else np.int32)
        assert bench.check(out, inputs, dims, ref)
        wrong = out.copy()
        wrong[len(wrong) // 2] += 1
        assert not bench.check(wrong, inputs, dims, ref)
        assert not bench.check(out[:-1], inputs, dims, ref)


def test_sizes_options():
    args = R.parse_args(["--sizes", "2^10,1000", "--sizes", "transpose=64x32,matmul=8"])
    assert args.dims["copy"] == [(1024,), (1000,)]
    assert args.dims["transpose"] == [(64, 32)]
    assert args.dims["matmul"] == [(8, 8, 8)]
    assert args.dims["matvec"] == [(8192, 8192)]          # the GPU default
    assert args.dims["histogram"] == [(1 << 26, 256), (1 << 26, 65536)]
    assert R.parse_args(["--sizes", "histogram=2^10x7"]).dims["histogram"] == [(1024, 7)]
    assert S.format_dims("histogram", (1 << 26, 256)) == "2^26x256"
    assert S.format_dims("copy", (1 << 26,)) == "2^26"
    assert S.format_dims("matmul", (4096,) * 3) == "4096"
    with pytest.raises(SystemExit):
        R.parse_args(["--only", "shuffle"])
    assert (R.parse_args([]).rounds, R.parse_args(["--quick"]).rounds) == (5, 1)
    with pytest.raises(SystemExit):
        R.parse_args(["--rounds", "0"])


def test_json_records(tmp_path, cl_device, capsys):
    path = tmp_path / "out.json"
    status = R.main(["--device", R.spec_for(cl_device), "--only", "copy,matmul", "--impl", "hand",
                     "--sizes", "4096,matmul=16", "--runs", "2", "--rounds", "3", "--warmup", "0",
                     "--json", str(path)])
    assert status == 0
    records = json.loads(path.read_text())
    assert [(r["benchmark"], r["impl"]) for r in records] == [("copy", "hand"), ("matmul", "hand"),
                                                             ("matmul", "hand")]
    for r in records:
        assert {"benchmark", "impl", "variant", "size", "median_ms", "min_ms", "correct", "device"} <= set(r)
        assert r["correct"] is True and (r["runs"], r["rounds"]) == (6, 3)
        assert r["min_ms"] <= r["median_ms"]
        assert ("GBps" in r) == (r["benchmark"] == "copy") and ("GFLOPs" in r) == (r["benchmark"] == "matmul")
    capsys.readouterr()
    assert R.main(["--from-json", str(path), "--markdown"]) == 0
    table = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| ")]
    assert len(table) == 2 + len(records) and "| copy | hand |" in table[2]


# Oclgrind keeps stale shadow memory for a released buffer's address (see
# tests/runtime/test_oclgrind.py): the child keeps every buffer until it exits.
CHILD = r"""
import sys
import pyopencl as cl

KEEP = []


class KeptBuffer(cl.Buffer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        KEEP.append(self)


cl.Buffer = KeptBuffer
from bench import run as R, suite as S
for name, value in CAPS.items():
    setattr(S, name, value)
sys.exit(R.main(["--device", "Oclgrind", "--check-only", "--impl", "hand", "--sizes", SIZES]))
"""

# Oclgrind takes seconds per work-group of the register-blocked matmul: one
# work-group, two steps along k; a grid-stride loop in every 1-D kernel, two
# partial sums, a scan interval of a tile and one of a partial tile, a
# single-pass scan of three tiles of 1024 (ITEMS 4) that look back (2051
# elements: 4099, five tiles, took Oclgrind 75 s of CI's CPU for every row).
OCLGRIND_CAPS = {"MAX_GROUPS": 1, "REDUCE_GROUPS": 2, "SCAN_GROUPS": 2, "SCAN1_ITEMS": 4, "SEGSCAN_ITEMS": 8, "SEGSCAN1_ITEMS": 4, "COMPACT_ITEMS": 4, "SORT_ITEMS": 4, "SORT_GROUPS": 2}
OCLGRIND_SIZES = ("2051,histogram=2051x300,histogram=999x5000,transpose=37x45,matvec=19x70,matmul=20x17x9,"
                  "spmv=37")


@pytest.mark.skipif(not oclgrind_available(), reason="no Oclgrind OpenCL platform")
def test_hand_written_kernels_are_clean_under_oclgrind(repo_env):
    env = dict(repo_env, OCLGRIND_BUILD_OPTIONS="-cl-opt-disable", PYOPENCL_NO_CACHE="1")
    child = CHILD.replace("CAPS", repr(OCLGRIND_CAPS)).replace("SIZES", repr(OCLGRIND_SIZES))
    proc, log = run_with_oclgrind([sys.executable, "-c", child], env=env, cwd=str(R.ROOT), timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("correct (not timed)") == len(S.HAND_ROWS) + 1, proc.stdout    # 2 histogram sizes
    assert not log, f"Oclgrind reported problems:\n{log[:6000]}"


def test_compile_time_reports_first_and_cached_compiles(capsys, monkeypatch, tmp_path):
    """bench/compile_time.py times each entry with nothing cached, with the parse cached and
    with the kernels cached too, and leaves no cache behind (the times themselves are never
    asserted)."""
    from bench import compile_time
    import os
    monkeypatch.setenv("FCL_CACHE_DIR", str(tmp_path))          # main sets its own; undone after
    assert compile_time.main(["--repeat", "1", "--files", "examples/reverse.fcl"]) == 0
    assert not os.path.exists(os.environ["FCL_CACHE_DIR"])
    out = capsys.readouterr().out
    assert "reverse.fcl:revGrid" in out and "reverse.fcl:revDistribute" in out
    assert "first: 2 entries" in out and "parsed before: 2 entries" in out and "again: 2 entries" in out


def test_plot_from_json(tmp_path, capsys):
    """--from-json FILE --plot FILE.png draws the chart of a kept GPU run (matplotlib, as CI installs)."""
    pytest.importorskip("matplotlib")
    png = tmp_path / "chart.png"
    kept = Path(__file__).resolve().parents[2] / "bench" / "results" / "h100-2026-11-26-02ae72b.json"
    assert R.main(["--from-json", str(kept), "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10000
    assert "sumAll (prelude reduce)" in capsys.readouterr().out

