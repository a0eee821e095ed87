"""`fclc tune`: the coordinate-descent search (on a made-up cost), its options, the record
`fclc run` takes its #BlockSize from, and end to end on the default device."""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fcl
from conftest import needs_device
from fcl.base.errors import ArgumentError
from fcl.runtime.tuned import Tuned
from fcl.tools import tune as T

REPO = Path(__file__).resolve().parents[2]
TRANSPOSE = str(REPO / "examples" / "transpose.fcl")
REVERSE = str(REPO / "examples" / "reverse.fcl")


class Costs:
    """A runner whose settings cost a separable function with its minimum at a=3, #BlockSize 128,
    and where a = 5 changes the result."""

    def __init__(self):
        self.measured = []

    def measure(self, setting, positions):
        self.measured.append(dict(setting))
        if setting["a"] == 5:
            return T.Trial(setting, why="its result differs from the default setting's")
        return T.Trial(setting, 1.0 + abs(setting["a"] - 3) + abs(setting["#BlockSize"] - 128) / 64)


def test_coordinate_descent_finds_the_minimum_trying_fewer_than_all():
    space = T.Space({"a": (1, 2, 3, 4, 5, 6), "#BlockSize": (32, 64, 128, 256, 512, 1024)}, {"a": 0})
    runner = Costs()
    trials = T.coordinate_descent(space, runner, budget=60, report=lambda t: None)
    best = T.best_of(trials)
    assert best.setting == {"a": 3, "#BlockSize": 128}
    assert len(trials) < 36 and len({tuple(sorted(s.items())) for s in runner.measured}) == len(trials)
    assert any(t.why for t in trials if t.setting["a"] == 5)      # tried, not taken


def test_the_budget_stops_the_search():
    space = T.Space({"a": (1, 2, 3, 4, 5, 6), "#BlockSize": (32, 64, 128)}, {"a": 0})
    trials = T.coordinate_descent(space, Costs(), budget=0, report=lambda t: None)
    assert len(trials) == 1 and T.best_of(trials) is trials[0]


def test_a_default_that_does_not_run_starts_from_one_that_does():
    class Large:
        def measure(self, setting, positions):
            if setting["#BlockSize"] > 128:
                return T.Trial(setting, why="too much local memory")
            return T.Trial(setting, 1.0 if setting["#BlockSize"] == 128 else 2.0)
    trials = T.coordinate_descent(T.Space({"#BlockSize": (256, 64, 128)}, {}), Large(), 60, lambda t: None)
    assert trials[0].why and T.best_of(trials).setting == {"#BlockSize": 128}


def test_no_setting_that_runs_is_an_error():
    class Broken:
        def measure(self, setting, positions):
            return T.Trial(setting, why="too much local memory")
    with pytest.raises(ArgumentError, match="too much local memory"):
        T.coordinate_descent(T.Space({"#BlockSize": (32, 64)}, {}), Broken(), 60, lambda t: None)


def test_vary_options():
    names, values = ["tileDim", "cols", "mat"], [32, 64, [1, 2]]
    space, positions = T.parse_vary(["tileDim=8,16", "#BlockSize=64,128"], names, values)
    assert space == {"tileDim": (8, 16), "#BlockSize": (64, 128)} and positions == {"tileDim": 0}
    assert T.parse_vary(["2=1,2"], names, values)[1] == {"cols": 1}
    for bad, words in (("tile=8", "no parameter tile"), ("mat=1,2", "not an int"), ("tileDim", "NAME=V1,V2"),
                       ("tileDim=a,b", "NAME=V1,V2")):
        with pytest.raises(ArgumentError, match=words):
            T.parse_vary([bad], names, values)


def test_the_search_space_starts_at_the_command_line_values():
    space = T.search_space({"tileDim": (8, 16, 32)}, {"tileDim": 0}, [16, 64], {"#BlockSize": 256}, 512)
    assert space.values == {"tileDim": (16, 8, 32), "#BlockSize": (256, 32, 64, 128, 512),
                            "--pass double_buffer": (0, 1)}
    on = T.search_space({}, {}, [], {"#BlockSize": 64, "--pass double_buffer": 1}, 128)   # fclc tune --pass double_buffer
    assert on.values == {"#BlockSize": (64, 32, 128), "--pass double_buffer": (1, 0)}


def test_reproduce_names_the_flags():
    line = T.reproduce("t.fcl", "f", ["16", "64", "iota:9"], {"tileDim": 8, "#BlockSize": 64}, {"tileDim": 0})
    assert line == "fclc run t.fcl -e f --block-size 64 --static tileDim=8 64 iota:9"
    paired = {"#BlockSize": 256, "--pass double_buffer": 1}
    assert T.reproduce("t.fcl", "f", ["iota:9"], paired, {}) == "fclc run t.fcl -e f --block-size 256 --pass double_buffer iota:9"
    assert T.describe(paired) == "#BlockSize 256, --pass double_buffer on"
    assert Tuned(paired, 1.0, 2.0, "d", "").hardware == {"block_size": 256, "with_pass": ("double_buffer",)}
    assert Tuned({**paired, "--pass double_buffer": 0}, 1.0, 2.0, "d", "").hardware == {"block_size": 256}


def fclc(*args, env):
    return subprocess.run([sys.executable, "-m", "fcl.tools.cli", *args], capture_output=True, text=True,
                          env=env, timeout=600)


@needs_device
def test_tune_keeps_a_setting_that_run_bench_and_the_api_take(repo_env, tmp_path, monkeypatch):
    env = {**repo_env, "FCL_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("FCL_NO_CACHE", None)
    args = [TRANSPOSE, "-e", "transposeTiled", "8", "64", "64", "iota:4096"]
    done = fclc("tune", *args, "--vary", "tileDim=8,16", "--vary", "#BlockSize=32,64", "--repeat", "1", env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("tuning transposeTiled on ") and "tileDim in 8, 16" in lines[0]
    best = next(l for l in lines if l.startswith("best: "))
    assert next(l for l in lines if l.startswith("reproduce: fclc run ")).count("--static tileDim=") == 1
    block = int(best.split("#BlockSize ")[1].split(":")[0])
    plain = fclc("run", *args, "--full", env=env)
    assert plain.returncode == 0 and f"#BlockSize {block}, as `fclc tune` found" in plain.stderr
    given = fclc("run", *args, "--full", "--block-size", "32", env=env)
    assert given.returncode == 0 and "fclc tune" not in given.stderr and given.stdout == plain.stdout
    monkeypatch.setenv("FCL_CACHE_DIR", env["FCL_CACHE_DIR"])
    monkeypatch.delenv("FCL_NO_CACHE", raising=False)
    prog = fcl.load_file(TRANSPOSE)
    mat = np.arange(4096, dtype=np.int32)
    assert prog.tuned("transposeTiled", 8, 64, 64, mat) == {"block_size": block}
    assert prog.tuned("transposeTiled", 8, 32, 128, mat) == {}          # another shape: none
    kernel = prog.compile("transposeTiled", **prog.tuned("transposeTiled", 8, 64, 64, mat))
    assert np.array_equal(kernel(8, 64, 64, mat), mat.reshape(64, 64).T.reshape(-1))


@needs_device
def test_a_setting_that_changes_the_result_is_not_taken(repo_env, tmp_path):
    env = {**repo_env, "FCL_CACHE_DIR": str(tmp_path / "cache")}
    done = fclc("tune", REVERSE, "-e", "revDistribute", "4", "iota:10", "--vary", "1=4,3",
                "--vary", "#BlockSize=32", "--repeat", "1", env=env)
    assert done.returncode == 0, done.stderr
    assert re.search(r"chunkSize 3, #BlockSize \d+: not taken: its result differs from the default setting's",
                     done.stdout), done.stdout


@needs_device
def test_tune_mistakes_are_located_errors(repo_env, tmp_path):
    env = {**repo_env, "FCL_CACHE_DIR": str(tmp_path / "cache")}
    done = fclc("tune", REVERSE, "-e", "revDistribute", "4", "iota:10", "--vary", "size=1,2", env=env)
    assert done.returncode == 1 and "no parameter size" in done.stderr and "Traceback" not in done.stderr


@needs_device
def test_tune_tries_an_optional_pass_where_it_changes_the_kernels(repo_env, tmp_path):
    """tiledSums (a block-level force in each step of a loop): `--pass double_buffer` is a
    dimension of the search, each setting off and on; transposeTiled, which it leaves alone:
    not searched."""
    env = {**repo_env, "FCL_CACHE_DIR": str(tmp_path / "cache")}
    done = fclc("tune", str(REPO / "tests" / "programs" / "irregular.fcl"), "-e", "tiledSums", "iota:64",
                "--vary", "#BlockSize=32,64", "--repeat", "1", env=env)
    assert done.returncode == 0, done.stderr
    assert "--pass double_buffer in 0, 1" in done.stdout.splitlines()[0]
    assert re.search(r"#BlockSize \d+, --pass double_buffer on: ", done.stdout), done.stdout
    plain = fclc("tune", TRANSPOSE, "-e", "transposeTiled", "8", "64", "64", "iota:4096", "--vary",
                 "#BlockSize=32,64", "--repeat", "1", env=env)
    assert plain.returncode == 0 and "double_buffer" not in plain.stdout, plain.stdout + plain.stderr
