"""Static arguments: scalar arguments compiled in as constants.

The results must equal the evaluator's with and without them; the builds are
cached by argument types and static values; the default policy makes int and
bool arguments static unless marked dynamic.
"""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

import pytest

import fcl
from fcl.api import kernel as facade
from fcl.base.errors import ArgumentError
from fcl.codegen import plan as P
from fcl.types import terms as T

REPO = Path(__file__).resolve().parents[2]


from conftest import needs_device  # noqa: E402

CASES = [
    ("examples/transpose.fcl", "transposeTiled", (4, 8, 12, np.arange(96, dtype=np.int32)), "tileDim"),
    ("examples/reverse.fcl", "revDistribute", (8, np.arange(40, dtype=np.int32)), "chunkSize"),
    ("examples/reduce.fcl", "sumChunks", (64, np.arange(1000, dtype=np.int32)), "chunk"),
    ("tests/programs/grid_host_while.fcl", "pairSums", (50, np.arange(37, dtype=np.int32)), "bound"),
]


def load(file):
    return fcl.load_file(str(REPO / file))


# ---------------------------------------------------------------- lowering (no device)

@pytest.mark.parametrize("file, entry, args, name", CASES)
def test_a_static_argument_is_a_constant_in_the_plan_and_source(file, entry, args, name):
    k = load(file).compile(entry, static={name: args[0]})
    plan = k.plan
    arg = plan.args[0]
    assert isinstance(arg, P.ScalarArg) and arg.value == args[0] and arg.name == name
    assert "arg0" not in {p.name for p in plan.params}
    assert all("arg0" not in launch.uses.params for launch in plan.launches())
    assert "arg0" not in k.opencl_source
    assert f"{name} int = {args[0]} (static)" in k.explain()


def test_static_tile_removes_runtime_divisions():
    prog = load("examples/transpose.fcl")
    dynamic = prog.compile("transposeTiled").opencl_source
    static = prog.compile("transposeTiled", static={"tileDim": 32}).opencl_source
    # i / tileDim and i % tileDim over a tile's elements: shifts and masks once tileDim is 32
    assert re.search(r"fcl_(?:div|mod)\(\w+, arg0", dynamic)
    assert not re.search(r"fcl_(?:div|mod)\(\w+, 32\)", static) and re.search(r"\w+ & 31", static)
    assert "__local int l6[" in static and "size set by the host" not in static


def test_static_chunk_unrolls_the_reduction_tree():
    prog = load("examples/reduce.fcl")
    assert "for (;;)" in prog.compile("sumChunks").opencl_source
    assert "for (;;)" not in prog.compile("sumChunks", static={"chunk": 512}).opencl_source


def test_static_by_position_and_bool_and_float():
    prog = fcl.load("sig scale : int -> bool -> float -> [float] -> [float]\n"
                    "fun scale k on f xs = mapPull (fn x => if on then x * f + i2f k else x) xs\n", "s.fcl")
    k = prog.compile("scale", static={1: 3, "on": True, 3: 0.5})
    values = {a.name: a.value for a in k.plan.args if isinstance(a, P.ScalarArg)}
    assert values == {"k": 3, "on": True, "f": 0.5}
    assert not k.plan.params[:-1]


def test_static_errors_are_plain_argument_errors():
    prog = load("examples/transpose.fcl")
    with pytest.raises(ArgumentError, match="no parameter named `tile`.*`tileDim`"):
        prog.compile("transposeTiled", static={"tile": 32})
    with pytest.raises(ArgumentError, match="only scalar arguments can be static"):
        prog.compile("transposeTiled", static={"mat": 1})
    with pytest.raises(ArgumentError, match="no parameter 5"):
        prog.compile("transposeTiled", static={5: 1})
    with pytest.raises(ArgumentError, match="expected int"):
        prog.compile("transposeTiled", static={"tileDim": 2.5})
    with pytest.raises(ArgumentError, match="no parameter named `x`"):
        prog.compile("transposeTiled", dynamic=["x"])


def test_source_does_not_depend_on_earlier_calls():
    k = load("examples/transpose.fcl").compile("transposeTiled")
    before = k.opencl_source
    k.build_for(2, 4, 6, np.arange(24, dtype=np.float32))
    k.build_for(4, 8, 8, np.arange(64, dtype=np.int32))
    assert k.opencl_source == before and "arg0" in before


def test_cache_is_keyed_by_types_and_static_values():
    k = load("examples/transpose.fcl").compile("transposeTiled")
    ints, floats = np.arange(96, dtype=np.int32), np.arange(96, dtype=np.float32)
    a = k.build_for(4, 8, 12, ints)
    assert k.build_for(4, 8, 12, ints) is a
    assert k.build_for(4, 8, 12, np.arange(96, dtype=np.int32) + 1) is a       # contents are not in the key
    assert k.build_for(2, 8, 12, ints) is not a
    assert k.build_for(4, 8, 12, floats) is not a
    assert len(k._builds) == 3
    assert set(k._builds) == {((T.INT,) * 3 + (t,), ((0, d), (1, 8), (2, 12)))
                              for t, d in ((T.TPullT(T.INT), 4),
                                           (T.TPullT(T.INT), 2),
                                           (T.TPullT(T.FLOAT), 4))}


def test_dynamic_arguments_share_one_build():
    k = load("examples/transpose.fcl").compile("transposeTiled", dynamic=["cols", "rows"])
    x = np.arange(96, dtype=np.int32)
    assert k.build_for(4, 8, 12, x) is k.build_for(4, 12, 8, x)
    assert k.build_for(4, 8, 12, x).plan.args[1].value is None
    every = load("examples/transpose.fcl").compile("transposeTiled", dynamic=True)
    assert every.build_for(4, 8, 12, x) is every.build_for(2, 8, 12, x)


def test_an_argument_with_many_values_stops_being_static():
    k = load("examples/reverse.fcl").compile("revDistribute")
    x = np.arange(64, dtype=np.int32)
    builds = [k.build_for(c, x) for c in range(1, facade.STATIC_LIMIT + 4)]
    assert len({id(b) for b in builds[:facade.STATIC_LIMIT]}) == facade.STATIC_LIMIT
    assert builds[-1] is builds[-2] and builds[-1].plan.args[0].value is None
    assert k.build_for(1, x) is builds[0]          # values seen early keep their build


def test_pinned_arguments_may_be_left_out_of_a_call():
    k = load("examples/transpose.fcl").compile("transposeTiled", static={"tileDim": 2})
    x = np.arange(24, dtype=np.int32)
    assert k.full_args([4, 6, x])[0] == 2 and len(k.full_args([2, 4, 6, x])) == 4


# ---------------------------------------------------------------- on the device

@needs_device
@pytest.mark.parametrize("file, entry, args, name", CASES)
def test_static_and_dynamic_agree_with_the_evaluator(file, entry, args, name):
    prog = load(file)
    expected = prog.evaluate(entry, *args)
    dynamic = prog.compile(entry, dynamic=True)
    pinned = prog.compile(entry, static={name: args[0]})
    assert np.array_equal(dynamic(*args), expected)
    assert np.array_equal(prog.compile(entry)(*args), expected)          # default policy
    assert np.array_equal(pinned(*args), expected)
    assert np.array_equal(pinned(*args[1:]), expected)                   # pinned value left out
    with pytest.raises(ArgumentError, match=f"`{name}`.*is static {args[0]}"):
        pinned(args[0] + 1, *args[1:])


def run_fclc(*argv):
    code = "import sys; from fcl.tools.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=120)


def test_fclc_static_options():
    p = run_fclc("compile", "examples/transpose.fcl", "-e", "transposeTiled", "--static", "tileDim=32", "--explain")
    assert p.returncode == 0, p.stderr
    assert "tileDim int = 32 (static)" in p.stdout and "local   l6     int[1024]" in p.stdout
    bad = run_fclc("compile", "examples/transpose.fcl", "-e", "transposeTiled", "--static", "tileDim")
    assert bad.returncode == 1 and "expected NAME=VALUE" in bad.stderr and "Traceback" not in bad.stderr
    unknown = run_fclc("compile", "examples/transpose.fcl", "-e", "transposeTiled", "--static", "t=2")
    assert unknown.returncode == 1 and "no parameter named `t`" in unknown.stderr


@needs_device
def test_fclc_run_with_static_and_dynamic():
    want = "[0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23]"
    for extra in (["--static", "tileDim=2", "4", "6"], ["--static", "tileDim=2", "2", "4", "6"],
                  ["--dynamic", "all", "2", "4", "6"], ["--dynamic", "cols", "2", "4", "6"]):
        p = run_fclc("run", "examples/transpose.fcl", "-e", "transposeTiled", *extra, "iota:24")
        assert p.returncode == 0 and p.stdout.strip() == want, (extra, p.stderr)
    p = run_fclc("run", "examples/transpose.fcl", "-e", "transposeTiled", "--static", "tileDim=2", "3", "4", "6",
                 "iota:24")
    assert p.returncode == 1 and "is static 2" in p.stderr
