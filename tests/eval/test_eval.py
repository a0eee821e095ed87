"""The reference evaluator on whole programs.

* every test block of examples/*.fcl and of the paper's conformance file,
  under #BlockSize 32, 64 and 256; the expected outputs of the examples are
  recomputed here with NumPy (so a wrong test block fails too), and entries
  whose result depends on #BlockSize are checked against NumPy at each size;
* the cost model on the paper's programs (exact figures, derived in
  docs/evaluator.md);
* speed: the paper's reduction and the tiled transpose stay fast;
* the Python API: argument and result conversion, argument errors.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from fcl.api.literals import coerce_arg, parse_arg, values_equal
from fcl.base.errors import ArgumentError, EvalError
from fcl.eval import Evaluator, evaluator_for_file, evaluator_for_source, prelude_decls
from fcl.syntax import load_program, parse_expr, parse_program
from fcl.tools.testblocks import parse_test_blocks
from fcl.types import check_program

import evaluations

REPO = Path(__file__).resolve().parents[2]
PAPER = Path("/work/shared/conformance/paper.fcl")
if not PAPER.exists():
    PAPER = REPO / "tests" / "conformance" / "paper.fcl"
EXAMPLES = sorted((REPO / "examples").glob("*.fcl"))
FILES = EXAMPLES + ([PAPER] if PAPER.exists() else [])
BLOCK_SIZES = (32, 64, 256)


# ---------------------------------------------------------------- NumPy references

def _wrap(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64).astype(np.int32)


def _first_non_zeros(a) -> list:
    """The running first non-zero element (0 until there is one)."""
    out, acc = [], 0
    for x in a:
        acc = acc if acc != 0 else int(x)
        out.append(acc)
    return out


def _chunks(a, c):
    a = np.asarray(a)
    return a[: len(a) // c * c].reshape(-1, c)


def _chunk_sums(a, c):
    a = np.asarray(a)
    ch = _chunks(a, c)
    if a.dtype == np.float64:
        return ch.sum(axis=1)
    return _wrap(ch.astype(np.int64).sum(axis=1))


def _transpose(cols, rows, a):
    return np.asarray(a).reshape(rows, cols).T.ravel()


def _matvec(cols, rows, m, x):
    m, x = np.asarray(m), np.asarray(x)
    if m.dtype == np.float64:
        return m.reshape(rows, cols) @ x
    return _wrap(m.astype(np.int64).reshape(rows, cols) @ x.astype(np.int64))


def _matmul(n, k, m, a, b):
    prod = np.asarray(a, np.int64).reshape(n, k) @ np.asarray(b, np.int64).reshape(k, m)
    return _wrap(prod.ravel())


def _matmul_tiled(t, n, k, m, a, b):
    rows = n // t * t
    if rows == 0 or m < t:
        return np.zeros(0, np.int32)
    if m % t:
        return None
    return _matmul(n, k, m, a, b)[: rows * m]


def _scan(c, a):
    return _wrap(np.cumsum(_chunks(a, c).astype(np.int64), axis=1).ravel())


def _scan_warps(c, a, bs):
    per_block = bs // 32
    chunks = _chunks(a, c)
    keep = len(chunks) // per_block * per_block
    return _wrap(np.cumsum(chunks[:keep].astype(np.int64), axis=1).ravel())


def _affine(f, g):
    """Composition of the maps x -> a x + b (mod 251) packed as a * 256 + b (reduce.fcl)."""
    fa, fb, ga, gb = f // 256, f % 256, g // 256, g % 256
    return (ga * fa) % 251 * 256 + (ga * fb + gb) % 251


def _affine_maps(n):
    return [((i * 7) % 250 + 1) * 256 + (i * 13) % 251 for i in range(n)]


def _compose_prefixes(n):
    out, acc = [], 256
    for x in _affine_maps(n):
        acc = _affine(acc, x)
        out.append(acc)
    return out


def _reduce(a, op, ne, dtype):
    acc = ne
    for x in np.asarray(a, dtype=dtype):
        acc = op(acc, x)
    return np.asarray([acc], dtype=dtype)


def _scan_float(a, op, dtype):
    out, acc = [], None
    for x in np.asarray(a, dtype=dtype):
        acc = x if acc is None else op(acc, x)
        out.append(acc)
    return np.asarray(out, dtype=dtype)


def _stencil(a):
    a = np.asarray(a, np.float32)
    if len(a) == 0:
        return a
    left, right = np.r_[a[:1], a[:-1]], np.r_[a[1:], a[-1:]]
    return (np.float32(0.25) * left + np.float32(0.5) * a + np.float32(0.25) * right).astype(np.float32)


def _sobol(dirs, i):
    g, x = i ^ (i >> 1), 0
    for j, v in enumerate(dirs):
        if (g >> j) & 1:
            x ^= int(v)
    return x / 2.0 ** 30


def _matvec_f(cols, rows, m, x):
    return (np.asarray(m, np.float64).reshape(rows, cols) @ np.asarray(x, np.float64)).astype(np.float32)


def _matmul_f(n, k, m, a, b):
    prod = np.asarray(a, np.float64).reshape(n, k) @ np.asarray(b, np.float64).reshape(k, m)
    return prod.ravel().astype(np.float32)


def _dot(a, b, dtype):
    n = min(len(a), len(b))
    prod = np.asarray(a[:n], np.float64 if dtype != np.int32 else np.int64) * np.asarray(b[:n])
    return (_wrap([prod.sum()]) if dtype == np.int32 else np.asarray([prod.sum()], dtype=dtype))


# (file stem, entry) -> f(args, block_size) -> expected value (None: no reference)
def _compose_all(a, bs):
    return _wrap([_reduce(_affine_maps(a[0]), _affine, 256, np.int64)[0]])


REFERENCES = {
    ("reduce", "sumAll"): lambda a, bs: _wrap([np.asarray(a[0], np.int64).sum()]),
    ("reduce", "sumAllD"): lambda a, bs: _reduce(a[0], lambda x, y: x + y, 0.0, np.float64),
    ("reduce", "maxAllF"): lambda a, bs: np.asarray([np.max(a[0])], np.float32),
    ("reduce", "composeAll"): _compose_all,
    ("reduce", "composeOneBlock"): _compose_all,
    ("scan", "scanAll"): lambda a, bs: _wrap(np.cumsum(np.asarray(a[0], np.int64))),
    ("scan", "scanAllD"): lambda a, bs: _scan_float(a[0], lambda x, y: x + y, np.float64),
    ("scan", "scanAllF"): lambda a, bs: _scan_float(a[0], lambda x, y: x * y, np.float32),
    ("scan", "composePrefixSum"): lambda a, bs: _wrap([sum(_compose_prefixes(a[0]))]),
    ("scan", "scanSum"): lambda a, bs: _wrap([np.cumsum(np.asarray(a[0], np.int64)).sum()]),
    ("matvec", "matvecF"): lambda a, bs: _matvec_f(*a),
    ("matmul", "matmulF"): lambda a, bs: _matmul_f(*a),
    ("matmul", "matmulReg"): lambda a, bs: _matmul_f(*a),
    ("matmul", "matmulCached"): lambda a, bs: _matmul_f(*a),
    ("matmul", "matmulPrefetch"): lambda a, bs: _matmul_f(*a),
    ("matmul", "matmulPipelined"): lambda a, bs: _matmul_f(*a),
    ("matvec", "matvecWarp"): lambda a, bs: _matvec_f(*a),
    ("matmul", "matmulStaged"): lambda a, bs: _matmul_f(*a),
    ("reduce", "sumAllBy"): lambda a, bs: _wrap([np.asarray(a[1], np.int64).sum()]),
    ("reduce", "sumStride"): lambda a, bs: _wrap([np.asarray(a[0], np.int64).sum()]),
    ("scan", "scanAllBy"): lambda a, bs: _wrap(np.cumsum(np.asarray(a[1], np.int64))),
    ("scan", "composePrefixSumBy"): lambda a, bs: _wrap([sum(_compose_prefixes(a[1]))]),
    ("scan", "scanAllLookback"): lambda a, bs: _wrap(np.cumsum(np.asarray(a[1], np.int64))),
    ("scan", "composeLookback"): lambda a, bs: _wrap([sum(_compose_prefixes(a[1]))]),
    ("matmul", "matmulTiledK"): lambda a, bs: _matmul(*a[1:]),
    ("dot", "dotF"): lambda a, bs: _dot(a[0], a[1], np.float32),
    ("dot", "dotD"): lambda a, bs: _dot(a[0], a[1], np.float64),
    ("dot", "dotI"): lambda a, bs: _dot(a[0], a[1], np.int32),
    ("distributed", "total"): lambda a, bs: _wrap([np.asarray(a[0], np.int64).sum()]),
    ("distributed", "sumSquares"): lambda a, bs: _reduce(np.asarray(a[0], np.float32) ** 2, lambda x, y: x + y,
                                                         np.float32(0), np.float32),
    ("distributed", "firstNonZero"): lambda a, bs: _wrap([_first_non_zeros(a[0])[-1] if len(a[0]) else 0]),
    ("distributed", "prefixSums"): lambda a, bs: _wrap(np.cumsum(np.asarray(a[0], np.int64))),
    ("distributed", "firstNonZeros"): lambda a, bs: _wrap(_first_non_zeros(np.asarray(a[0], np.int64)
                                                                           * np.asarray(a[1], np.int64))),
    ("distributed", "scaled"): lambda a, bs: _wrap(2 * np.asarray(a[0], np.int64) + 1),
    ("stencil", "stencilNaive"): lambda a, bs: _stencil(a[0]),
    ("stencil", "stencilTiled"): lambda a, bs: _stencil(a[0]),
    ("sobol", "sobolIndep"): lambda a, bs: np.asarray([_sobol(a[1], i) for i in range(a[0])]),
    ("sobol", "sobolRec"): lambda a, bs: np.asarray([_sobol(a[2], i) for i in range(a[1])]),
    # reversing each chunk and the order of the chunks reverses the kept prefix
    ("reverse", "revDistribute"): lambda a, bs: _chunks(a[1], a[0]).ravel()[::-1] if a[0] else None,
    ("reverse", "revGrid"): lambda a, bs: np.asarray(a[0])[::-1],
    ("transpose", "transposeNaive"): lambda a, bs: _transpose(*a),
    ("transpose", "transposeTiled"): lambda a, bs: _transpose(*a[1:]),
    ("reduce", "sumGrid"): lambda a, bs: _chunk_sums(a[0], 2 * bs),
    ("reduce", "sumChunks"): lambda a, bs: _chunk_sums(a[1], a[0]) if a[0] > 1 else None,
    ("reduce", "maxChunks"): lambda a, bs: _chunks(a[1], a[0]).max(axis=1),
    ("reduce", "sumChunksD"): lambda a, bs: _chunk_sums(a[1], a[0]),
    ("reduce", "sumSeqTree"): lambda a, bs: _chunk_sums(a[2], a[1]),
    ("scan", "scanChunks"): lambda a, bs: _scan(*a),
    ("scan", "scanWarpChunks"): lambda a, bs: _scan_warps(a[0], a[1], bs),
    ("matvec", "matvec"): lambda a, bs: _matvec(*a),
    ("matvec", "matvecD"): lambda a, bs: _matvec(*a),
    ("matvec", "matvecBlock"): lambda a, bs: _matvec(*a),
    ("matmul", "matmul"): lambda a, bs: _matmul(*a),
    ("matmul", "matmulTiled"): lambda a, bs: _matmul_tiled(*a),
    ("paper", "revDistribute"): lambda a, bs: _chunks(a[1], a[0]).ravel()[::-1],
    ("paper", "transposeTiled"): lambda a, bs: _transpose(*a[1:]),
    ("paper", "sumGrid"): lambda a, bs: _chunk_sums(a[0], 2 * bs),
}


# ---------------------------------------------------------------- test blocks

_checked_cache: dict[Path, object] = {}


def _checked(path: Path):
    if path not in _checked_cache:
        program = load_program(str(path))
        _checked_cache[path] = (program, check_program(program))
    return _checked_cache[path]


def _cases():
    for path in FILES:
        for case in parse_test_blocks(path.read_text(), str(path)):
            yield pytest.param(path, case, id=f"{path.stem}:{case.line}:{case.entry}")


_evaluators: dict[tuple[Path, int], Evaluator] = {}


def _evaluator(path: Path, bs: int) -> Evaluator:
    key = (path, bs)
    if key not in _evaluators:
        program, _ = _checked(path)
        _evaluators[key] = Evaluator(prelude_decls() + tuple(program.decls), {"#BlockSize": bs})
    return _evaluators[key]


def _args(path: Path, case) -> list:
    _, checked = _checked(path)
    ty = checked.env.lookup(case.entry).body        # the file's declaration or the prelude's
    args = []
    for k, text in enumerate(case.args, start=1):
        args.append(coerce_arg(parse_arg(text, position=k), ty.arg, k))
        ty = ty.res
    return args


def test_every_example_has_a_description_and_tests():
    assert {p.stem for p in EXAMPLES} >= {"reverse", "transpose", "reduce", "scan", "matvec",
                                          "matmul"}
    for path in EXAMPLES:
        text = path.read_text()
        assert text.startswith("-- "), f"{path.name}: first line must describe the file"
        assert parse_test_blocks(text, str(path)), f"{path.name} has no test blocks"


@pytest.mark.parametrize("path,case", list(_cases()))
def test_block_expected_output_matches_numpy(path, case):
    """The outputs written in the examples' test blocks are what NumPy computes (#BlockSize 256)."""
    ref = REFERENCES.get((path.stem, case.entry))
    assert ref is not None, f"no NumPy reference for {path.stem}.{case.entry}"
    if case.error is not None:
        return
    expected = ref(_args(path, case), 256)
    assert expected is not None
    assert values_equal(parse_arg(case.expected), expected), (case.expected, expected)


@pytest.mark.parametrize("bs", BLOCK_SIZES)
@pytest.mark.parametrize("path,case", list(_cases()))
def test_block_under_evaluator(path, case, bs):
    args = _args(path, case)
    if case.error is not None:
        with pytest.raises(EvalError) as info:
            _evaluator(path, bs).run(case.entry, args)
        assert case.error in info.value.message
        assert info.value.span is not None
        return
    result = evaluations.evaluated(str(path), case.entry, args, block_size=bs)   # = ev.run's, once a run
    ref = REFERENCES[(path.stem, case.entry)](args, bs)
    assert values_equal(ref, result), (ref, result)
    if bs == 256:
        assert values_equal(parse_arg(case.expected), result)


@pytest.mark.parametrize("bs", BLOCK_SIZES)
def test_examples_on_larger_random_inputs(bs):
    rng = np.random.default_rng(bs)
    ev = {p.stem: _evaluator(p, bs) for p in EXAMPLES}
    a = rng.integers(-1000, 1000, 4096).astype(np.int32)
    m = rng.integers(-50, 50, 32 * 24).astype(np.int32)
    x = rng.integers(-50, 50, 24).astype(np.int32)
    d = rng.random(32 * 24)
    checks = [
        ("reverse", "revDistribute", [64, a]),
        ("transpose", "transposeTiled", [8, 64, 64, a]),
        ("transpose", "transposeNaive", [32, 128, a]),
        ("reduce", "sumGrid", [a]),
        ("reduce", "maxChunks", [128, a]),
        ("reduce", "sumSeqTree", [8, 512, a]),
        ("scan", "scanChunks", [32, a[:1024]]),
        ("scan", "scanWarpChunks", [16, a[:1024]]),
        ("matvec", "matvec", [24, 32, m, x]),
        ("matvec", "matvecBlock", [24, 32, m, x]),
        ("matvec", "matvecD", [24, 32, d, d[:24]]),
        ("matmul", "matmul", [8, 24, 4, m[:192], m[:96]]),
        ("matmul", "matmulTiled", [4, 8, 24, 4, m[:192], m[:96]]),
    ]
    for stem, entry, args in checks:
        result, _ = ev[stem].run(entry, args)
        assert values_equal(REFERENCES[(stem, entry)](args, bs), result), (stem, entry)


# ---------------------------------------------------------------- cost model

def _paper(bs=256):
    return _evaluator(PAPER, bs)


def test_cost_of_sum_grid():
    """8 blocks of 512: a first step of 256 during the load, then 8 halving steps."""
    _, cost = _paper().run("sumGrid", [np.arange(4096, dtype=np.int32)], cost=True)
    block = cost["block"]
    assert block["work"] == 8 * (256 + 128 + 64 + 32 + 16 + 8 + 4 + 2 + 1 + 1)
    assert block["span"] == 10            # 9 forces of one parallel step, then the final write
    assert block["global_reads"] == 4096
    assert block["global_writes"] == 8    # one partial sum per block
    assert block["local_writes"] == 8 * 511
    assert block["local_reads"] == 8 * (2 * 255 + 1)
    assert block["barriers"] == 8 * 9
    assert cost.kernels == 1
    assert cost.while_iterations["block"] == 8 * 8
    assert cost.total["work"] == block["work"]
    assert cost["grid"]["work"] == 0 and cost["thread"]["work"] == 0


def test_cost_of_sum_grid_small_blocks_is_virtualised():
    """#BlockSize 32: 64 elements per block; with #NumGroups 2 the 64 blocks run 32 each on 2 groups."""
    ev = Evaluator(prelude_decls() + tuple(load_program(str(PAPER)).decls),
                   {"#BlockSize": 32, "#NumGroups": 2})
    _, cost = ev.run("sumGrid", [np.arange(4096, dtype=np.int32)], cost=True)
    # per block: 6 forces (32, 16, 8, 4, 2, 1 elements; one parallel step each) + the final write
    assert cost["block"]["span"] == 32 * 7
    assert cost["block"]["barriers"] == 64 * 6


def test_cost_of_reverse_and_tiled_transpose():
    a = np.arange(4096, dtype=np.int32)
    _, cost = _paper().run("revDistribute", [256, a], cost=True)
    assert cost["block"]["global_reads"] == 4096 and cost["block"]["global_writes"] == 4096
    assert cost.total["local_reads"] == cost.total["local_writes"] == 0
    assert cost["block"]["span"] == 1 and cost.total["barriers"] == 0

    _, cost = _paper().run("transposeTiled", [16, 64, 64, a], cost=True)
    b = cost["block"]
    assert (b["global_reads"], b["local_writes"], b["local_reads"], b["global_writes"]) == \
        (4096, 4096, 4096, 4096)
    assert b["work"] == 2 * 4096 and b["barriers"] == 16 and b["span"] == 2

    _, cost = _paper(32).run("transposeTiled", [16, 64, 64, a], cost=True)
    assert cost["block"]["span"] == 2 * (256 // 32)   # 256 elements on 32 threads, twice


def test_cost_of_thread_level_and_grid_level_loops():
    ev = evaluator_for_source("""
fun seq arr = push <grid> (generate 4 (fn i =>
  index (force (push <thread> (mapPull (fn x => x + i) arr))) 0))
fun halveGrid arr =
  while (fn a => lengthPull a > 1)
        (fn a => push <grid> (generate (lengthPull a / 2) (fn i => index a (2 * i) + index a (2 * i + 1))))
        (push <grid> arr)
  |> push <grid>
""")
    r, cost = ev.run("seq", [[10, 20, 30]], cost=True)
    assert list(r) == [10, 11, 12, 13]
    t = cost["thread"]
    assert t["work"] == 12 and t["private_writes"] == 12 and t["global_reads"] == 12
    # the reads of the forced arrays are made by the grid-level elements
    assert cost["grid"]["private_reads"] == 4 and t["private_reads"] == 0
    assert t["span"] == 3            # the slowest thread forces 3 elements one after another
    assert cost["grid"]["span"] == 1 and cost.total["barriers"] == 0

    r, cost = ev.run("halveGrid", [list(range(8))], cost=True)
    assert list(r) == [28]
    assert cost.while_iterations["grid"] == 3
    assert cost["grid"]["barriers"] == 4       # the initial force and 3 steps: kernel boundaries
    assert cost.kernels == 5
    assert cost["grid"]["global_writes"] == 8 + 4 + 2 + 1 + 1


def test_cost_report_format_and_dict():
    _, cost = _paper().run("sumGrid", [np.arange(1024, dtype=np.int32)], cost=True)
    text = cost.format()
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["level", "work", "span"]
    assert [ln.split()[0] for ln in lines[2:7]] == ["thread", "warp", "block", "grid", "total"]
    assert "kernels: 1" in text
    d = cost.as_dict()
    assert d["levels"]["block"]["work"] == cost["block"]["work"]
    assert d["total"]["global_reads"] == 1024 and d["kernels"] == 1
    _, none = _paper().run("sumGrid", [np.arange(1024, dtype=np.int32)])
    assert none is None


def test_costs_do_not_leak_between_runs():
    a = np.arange(1024, dtype=np.int32)
    _, c1 = _paper().run("sumGrid", [a], cost=True)
    _, c2 = _paper().run("sumGrid", [a], cost=True)
    assert c1.as_dict() == c2.as_dict()


# ---------------------------------------------------------------- speed

def test_paper_programs_are_fast():
    a = np.arange(4096, dtype=np.int32)
    for name, args in [("sumGrid", [a]), ("transposeTiled", [16, 64, 64, a]),
                       ("transposeTiled", [8, 64, 64, a])]:
        start = time.perf_counter()
        _paper().run(name, args, cost=True)
        assert time.perf_counter() - start < 3.0, name


# ---------------------------------------------------------------- the Python API

@pytest.fixture(scope="module")
def api():
    return evaluator_for_source("""
fun ident x = x
fun add x y = x + y
fun pairUp a b = (a, b)
fun toGrid arr = push <grid> arr
fun nested n = generate n (fn i => generate i (fn j => j))
fun curried x = fn y => x * y
fun levelled <l> arr = push <l> arr
val answer = 42
fun halfF x = x / 2.0f
""")


def test_scalar_arguments_and_results(api):
    assert api.run("add", [2, 3])[0] == 5 and type(api.run("add", [2, 3])[0]) is int
    assert api.run("add", [np.int32(2147483647), 1])[0] == -2147483648
    r = api.run("add", [0.5, 0.25])[0]
    assert r == 0.75 and type(r) is float
    r = api.run("halfF", [np.float32(3.0)])[0]
    assert r == np.float32(1.5) and type(r) is np.float32
    assert api.run("ident", [True])[0] is True
    assert api.run("answer", [])[0] == 42
    assert api.run("curried", [6, 7])[0] == 42


def test_array_arguments_and_results(api):
    for data, dtype in [([1, 2, 3], np.int32), ([1.5, 2.5], np.float64),
                        (np.array([1, 2], np.float32), np.float32), ([True, False], np.bool_)]:
        r = api.run("toGrid", [data])[0]
        assert isinstance(r, np.ndarray) and r.dtype == dtype and list(r) == list(data)
    r = api.run("ident", [np.arange(5, dtype=np.int32)])[0]
    assert isinstance(r, np.ndarray) and list(r) == [0, 1, 2, 3, 4]
    r = api.run("nested", [4])[0]
    assert isinstance(r, list) and [list(x) for x in r] == [[], [0], [0, 1], [0, 1, 2]]
    r = api.run("pairUp", [1, [2, 3]])[0]
    assert r[0] == 1 and list(r[1]) == [2, 3]
    r = api.run("ident", [(1, (2.5, False))])[0]
    assert r == (1, (2.5, False))
    r = api.run("ident", [[[1, 2], [3]]])[0]
    assert [list(x) for x in r] == [[1, 2], [3]]


def test_argument_errors(api):
    with pytest.raises(ArgumentError, match="takes 2 arguments but 3 were given"):
        api.run("add", [1, 2, 3])
    with pytest.raises(ArgumentError, match="needs more than the 1 argument"):
        api.run("add", [1])
    with pytest.raises(ArgumentError, match="level"):
        api.run("levelled", [[1]])
    with pytest.raises(ArgumentError, match="no declaration named 'nope'"):
        api.run("nope", [])
    with pytest.raises(ArgumentError, match="32-bit"):
        api.run("ident", [2 ** 40])
    with pytest.raises(ArgumentError):
        api.run("ident", ["text"])
    with pytest.raises(ArgumentError):
        api.run("ident", [(1, 2, 3)])
    with pytest.raises(EvalError, match="function"):
        api.eval_expr(parse_expr("fn x => x"))


def test_eval_expr_and_add_decls():
    ev = evaluator_for_source("fun f x = x + 1\nfun g x = f x * 10")
    assert ev.eval_expr(parse_expr("g 4"))[0] == 50
    ev.add_decls(parse_program("fun f x = x + 2").decls)
    # g still sees the f declared before it; new expressions see the new f
    assert ev.eval_expr(parse_expr("g 4"))[0] == 50
    assert ev.eval_expr(parse_expr("f 4"))[0] == 6
    r, cost = ev.eval_expr(parse_expr("push <block> (iota 3)"), cost=True)
    assert list(r) == [0, 1, 2] and cost["block"]["work"] == 3
    assert "iota" in ev.names() and "g" in ev.names()


def test_declarations_see_earlier_ones_only():
    ev = evaluator_for_source("fun x y = 1\nfun h y = x y\nfun x y = 2", prelude=False)
    assert ev.run("h", [0])[0] == 1 and ev.run("x", [0])[0] == 2
    with pytest.raises(EvalError, match="unbound name 'later'"):
        evaluator_for_source("fun a y = later y\nfun later y = y", prelude=False).run("a", [1])


def test_hardware_parameters_are_visible():
    ev = evaluator_for_source("val hw = (#BlockSize, (#WarpSize, (#NumGroups, #LocalMemory)))",
                              hw={"#BlockSize": 64, "#NumGroups": 8})
    assert ev.run("hw", [])[0] == (64, (32, (8, 49152)))
    with pytest.raises(ArgumentError):
        Evaluator([], {"#BlockSize": 0})


def test_evaluator_for_file_matches_check(tmp_path):
    (tmp_path / "lib.fcl").write_text("fun twice x = 2 * x\n")
    (tmp_path / "main.fcl").write_text('include "lib.fcl"\nfun main x = twice (twice x)\n')
    assert evaluator_for_file(tmp_path / "main.fcl").run("main", [5])[0] == 20
