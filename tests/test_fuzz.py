"""The random differential tester (fcl.fuzz) in CI, with fixed seeds.

* 240 generated programs (every level, push/pull, force, concat, interleave,
  while, odd sizes, warp sizes that are not powers of two, small block and
  group counts) run on the evaluator and compiled on the default device:
  ints equal, floats within 1e-6, refusals located; no crash, hang or
  worker death.  Two workers; budget about 2 minutes on 2 cores (the cases
  not started by then are reported, and at least 200 must have run).
* A sample of 8 of them under Oclgrind: its log stays empty.
* The generator's own programs type-check, and the same seed gives the same program.
"""
from pathlib import Path

import pytest

import fcl
from fcl.fuzz.gen import Case, generate_case
from fcl.fuzz.runner import PASSING, run_many
from fcl.runtime.oclgrind import oclgrind_available

SEEDS = range(240)
MIN_CASES = 200
BUDGET_S = 150
ORACLE_SAMPLE = (1, 2, 5, 11, 24, 33, 47, 60)


def _device_available() -> bool:
    try:
        from fcl.runtime.device import choose_device
        choose_device(None)
        return True
    except Exception:
        return False


def failures_text(results) -> str:
    lines = []
    for case, r in results:
        if r["status"] not in PASSING:
            lines.append(f"seed {case.seed}: {r['status']}: {r['detail'][:600]}\n{case.program_text()}")
    return "\n".join(lines)


def test_generator_is_deterministic_and_well_typed():
    for seed in range(0, 400, 7):
        a, b = generate_case(seed), generate_case(seed)
        assert a == b
        fcl.load(a.source)          # raises ParseError/TypeCheckError on a generator bug


def test_generator_covers_every_construct():
    features = set()
    for seed in SEEDS:
        features.update(generate_case(seed).features)
    for level in ("thread", "warp", "block", "grid"):
        assert f"force {level}" in features
        assert f"while {level}" in features
    for level in ("warp", "block", "grid"):
        assert f"concat {level}" in features and f"interleave {level}" in features
    assert {"foldl", "array literal", "generate"} <= features


@pytest.mark.skipif(not _device_available(), reason="no OpenCL device")
def test_random_programs_agree_with_the_evaluator():
    results = run_many((generate_case(s) for s in SEEDS), jobs=2, timeout=30, budget=BUDGET_S)
    assert len(results) >= MIN_CASES, f"only {len(results)} cases ran in {BUDGET_S} s"
    assert all(r["status"] in PASSING for _, r in results), failures_text(results)
    assert sum(r["status"] == "ok" for _, r in results) >= len(results) // 2


@pytest.mark.skipif(not oclgrind_available(), reason="no Oclgrind OpenCL platform")
def test_random_programs_under_oclgrind():
    results = run_many((generate_case(s) for s in ORACLE_SAMPLE), jobs=2, timeout=60, oclgrind=True)
    assert all(r["status"] in PASSING for _, r in results), failures_text(results)


REGRESSIONS = Path(__file__).resolve().parent / "programs" / "fuzz_regressions.fcl"


@pytest.mark.skipif(not oclgrind_available(), reason="no Oclgrind OpenCL platform")
def test_warp_level_barrier_under_a_condition_on_oclgrind():
    """Class 4 needs several warps per block (test blocks run with #WarpSize 32): the
    barrier of a warp-level force inside a per-warp `if` is reached by every warp."""
    source = REGRESSIONS.read_text()
    cases = [Case(0, source, "warpIfForce", [arg], bs, ws, ng, [])
             for arg in ("iota:64", "iota:96") for ws, bs, ng in ((4, 8, 1), (3, 12, 2), (8, 32, 3))]
    results = run_many(cases, jobs=2, timeout=60, oclgrind=True)
    assert all(r["status"] == "ok" for _, r in results), failures_text(results)


def test_nested_lets_and_maps_compile_to_small_code():
    """Class 10: a value used twice at each of 30 levels (lets at a kernel's top, maps
    in per-element code) is named once per level, not copied: 3^30 copies otherwise."""
    depth = 30
    lets = "let s0 = index arr 0 in " + " ".join(f"let s{k} = s{k - 1} * s{k - 1} + s{k - 1} in"
                                                  for k in range(1, depth + 1))
    maps = "arr"
    for _ in range(depth):
        maps = f"mapPull (fn x => x * x + x) ({maps})"
    prog = fcl.load(f"fun chainTop arr = {lets} push <grid> (generate 4 (fn i => s{depth} + i))\n"
                    f"fun chainMap arr = push <grid> ({maps})\n")
    for entry in ("chainTop", "chainMap"):
        source = prog.compile(entry).opencl_source
        assert len(source) < 20000, (entry, len(source))
