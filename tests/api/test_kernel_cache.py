"""The on-disk cache of generated kernels (fcl/codegen/cache.py): a hit gives the build a
compile gives, anything the build depends on changed is a miss, and no cache problem is
the user's."""
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fcl
from fcl.api import kernel_cache as cache
from fcl.api.kernel import Kernel
from fcl.base import diskcache
from fcl.codegen import kir as K

REPO = Path(__file__).resolve().parents[2]
TEXT = "fun twice arr = push <grid> (mapPull (fn x => 2 * x) arr)\n" \
       "fun blockSum arr = reduce (fn a => fn b => a + b) 0 arr\n" \
       "fun copy arr = push <grid> arr\n"


@pytest.fixture
def cache_dir(fcl_cache):
    return fcl_cache / "kernels"


def _entries(folder: Path) -> list:
    return sorted(folder.glob("*.pickle")) if folder.exists() else []


def _no_codegen(monkeypatch):
    def refuse(self, arg_types, static):
        raise AssertionError("generated, not read from the cache")
    monkeypatch.setattr(Kernel, "generate", refuse)


def test_a_second_program_reads_the_same_build(cache_dir, monkeypatch):
    first = fcl.load(TEXT, "p.fcl").compile("blockSum")
    source, dumps = first.opencl_source, first.default_build().dumps
    assert len(_entries(cache_dir)) == 1
    _no_codegen(monkeypatch)
    again = fcl.load(TEXT, "p.fcl").compile("blockSum")
    assert again.opencl_source == source and again.default_build().dumps == dumps
    assert K.format_program(again.plan) == K.format_program(first.plan)


@pytest.mark.parametrize("change", ["text", "name", "entry", "block size", "opt level", "no pass",
                                    "dump", "bounds checks", "types", "static", "compiler"])
def test_whatever_the_build_depends_on_is_a_miss(cache_dir, monkeypatch, change):
    fcl.load(TEXT, "p.fcl").compile("twice").opencl_source
    text, name, entry, options = TEXT, "p.fcl", "twice", {}
    build = lambda k: k.opencl_source                    # noqa: E731
    if change == "text":
        text = TEXT.replace("2 * x", "3 * x")
    elif change == "name":
        name = "q.fcl"                  # the spans of its messages differ
    elif change == "entry":
        entry = "blockSum"
    elif change == "block size":
        options = {"block_size": 64}
    elif change == "opt level":
        options = {"opt_level": 0}
    elif change == "no pass":
        options = {"no_pass": ["vectorize"]}
    elif change == "dump":
        options = {"dump_after": ["simplify"]}
    elif change == "bounds checks":
        options = {"bounds_checks": False}
    elif change == "types":
        fcl.load(text, name).compile("copy").opencl_source          # int elements
        entry, build = "copy", lambda k: k.build_for(np.zeros(8, dtype=np.float32)).source  # noqa: E731
    elif change == "static":
        text = TEXT + "fun scaled c arr = push <grid> (mapPull (fn x => c * x) arr)\n"
        fcl.load(text, name).compile("scaled").build_for(2, np.zeros(8, dtype=np.int32))
        entry, build = "scaled", lambda k: k.build_for(3, np.zeros(8, dtype=np.int32)).source  # noqa: E731
    elif change == "compiler":
        monkeypatch.setattr(cache, "_compiler_digest", lambda: b"another FCL")
    before = len(_entries(cache_dir))
    build(fcl.load(text, name).compile(entry, **options))
    assert len(_entries(cache_dir)) == before + 1


def test_the_verifier_run_is_not_a_verified_build(cache_dir, monkeypatch):
    monkeypatch.setenv("FCL_VERIFY_PASSES", "0")
    fcl.load(TEXT, "p.fcl").compile("twice").opencl_source
    monkeypatch.setenv("FCL_VERIFY_PASSES", "1")
    fcl.load(TEXT, "p.fcl").compile("twice").opencl_source
    assert len(_entries(cache_dir)) == 2


def test_switched_off(cache_dir, monkeypatch):
    monkeypatch.setenv("FCL_NO_CACHE", "1")
    fcl.load(TEXT, "p.fcl").compile("twice").opencl_source
    assert not cache_dir.exists()


def test_unwritable_folder_only_costs_the_compile(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("FCL_CACHE_DIR", str(blocker))
    assert "__kernel" in fcl.load(TEXT, "p.fcl").compile("twice").opencl_source


def test_damaged_entry_is_compiled_again(cache_dir):
    source = fcl.load(TEXT, "p.fcl").compile("twice").opencl_source
    (entry,) = _entries(cache_dir)
    entry.write_bytes(b"\x80\x05 not a pickle")
    assert fcl.load(TEXT, "p.fcl").compile("twice").opencl_source == source
    assert entry.read_bytes() != b"\x80\x05 not a pickle"          # written again


def test_an_entry_of_another_kind_is_compiled_again(cache_dir):
    source = fcl.load(TEXT, "p.fcl").compile("twice").opencl_source
    (entry,) = _entries(cache_dir)
    entry.write_bytes(pickle.dumps({"not": "a build"}))
    assert fcl.load(TEXT, "p.fcl").compile("twice").opencl_source == source


def test_compile_errors_are_never_kept(cache_dir):
    bad = ("fun bad arr = splitUp 8 arr |> mapPull (fn c => push <block> (force (push <block> "
           "(take (index c 0) c)))) |> concat 8\n")
    for _ in range(2):
        with pytest.raises(fcl.CompileError) as err:
            fcl.load(bad, "bad.fcl").compile("bad").opencl_source
        assert err.value.span is not None and err.value.span.line == 1
    assert not _entries(cache_dir)


def test_oldest_entries_go(cache_dir, monkeypatch):
    monkeypatch.setattr(cache, "KEEP", 3)
    for k in range(5):
        fcl.load(TEXT.replace("2 * x", f"{k} * x"), "p.fcl").compile("twice").opencl_source
        newest = max(_entries(cache_dir), key=os.path.getmtime)
        os.utime(newest, ns=(k * 10**9, k * 10**9))       # distinct write times, in order
    assert len(_entries(cache_dir)) == 3
    _no_codegen(monkeypatch)
    fcl.load(TEXT.replace("2 * x", "4 * x"), "p.fcl").compile("twice").opencl_source    # the newest stays


def test_nodes_are_pickled_without_what_they_worked_out():
    """A node keeps its hash, which holds only in its own process: pickling leaves it out."""
    e = K.binop("add", K.Var("int", "x"), K.cint(1))
    hash(e), e.names
    assert "_hash" in e.__dict__ and "names" in e.__dict__
    back = pickle.loads(pickle.dumps(e))
    assert set(back.__dict__) == {"ty", "op", "a", "b"} and back == e


def test_fresh_processes_share_builds_that_run_right(cache_dir, tmp_path, repo_env):
    """Two `fclc run` processes (strings hash differently in each): the second reads the
    build the first kept, and both print the evaluator's result."""
    path = tmp_path / "p.fcl"
    path.write_text(TEXT)
    expected = fcl.load(TEXT).evaluate("blockSum", list(range(100)))
    outs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-m", "fcl.tools.cli", "run", str(path), "-e", "blockSum",
                              str(list(range(100)))], env=repo_env, capture_output=True, text=True, timeout=300)
        if out.returncode == 2 and "device" in out.stderr:
            pytest.skip(out.stderr.strip())
        assert out.returncode == 0, out.stderr
        outs.append(out.stdout)
    assert len(_entries(cache_dir)) == 1
    assert outs[0] == outs[1] and outs[0].strip() == str(expected)


def test_the_parse_cache_shares_the_store(cache_dir):
    """Both caches write through fcl.base.diskcache, into folders of their own."""
    fcl.load_file(str(REPO / "examples" / "reverse.fcl")).compile("revGrid").opencl_source
    assert _entries(cache_dir) and _entries(cache_dir.parent / "ast")
    assert diskcache.enabled()
