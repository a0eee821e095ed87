"""The on-disk cache of parsed files (fcl/syntax/cache.py): a hit gives the tree a parse
gives, a changed text or parser is parsed again, and no cache problem is the user's."""
import os
import subprocess
import sys

import pytest

import fcl
from fcl.base.errors import ParseError
from fcl.syntax import cache
from fcl.syntax.parser import parse_program

TEXT = "fun dbl x = x + x\nfun quad x = dbl (dbl x)\n"


@pytest.fixture
def cache_dir(fcl_cache):
    return fcl_cache / "ast"


def _no_parse(monkeypatch):
    def refuse(text, name="<string>"):
        raise AssertionError("parsed, not read from the cache")
    monkeypatch.setattr(cache, "parse_program", refuse)


def test_second_parse_reads_the_same_tree(cache_dir, monkeypatch):
    first = cache.parse_file(TEXT, "a.fcl")
    assert first == parse_program(TEXT, "a.fcl")
    assert len(list(cache_dir.glob("*.pickle"))) == 1
    _no_parse(monkeypatch)
    again = cache.parse_file(TEXT, "a.fcl")
    assert again == first
    assert again.decls[1].span.location() == "a.fcl:2:1"      # spans keep their file and lines


def test_other_text_or_path_is_parsed(cache_dir):
    cache.parse_file(TEXT, "a.fcl")
    changed = cache.parse_file(TEXT.replace("x + x", "2 * x"), "a.fcl")
    assert "2" in repr(changed.decls[0])
    cache.parse_file(TEXT, "b.fcl")
    assert len(list(cache_dir.glob("*.pickle"))) == 3


def test_a_changed_parser_is_a_miss(cache_dir, monkeypatch):
    cache.parse_file(TEXT, "a.fcl")
    monkeypatch.setattr(cache, "_parser_digest", lambda: b"another parser")
    cache.parse_file(TEXT, "a.fcl")
    assert len(list(cache_dir.glob("*.pickle"))) == 2


def test_switched_off(cache_dir, monkeypatch):
    monkeypatch.setenv("FCL_NO_CACHE", "1")
    assert cache.parse_file(TEXT, "a.fcl") == parse_program(TEXT, "a.fcl")
    assert not cache_dir.exists()


def test_unwritable_folder_only_costs_the_parse(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("FCL_CACHE_DIR", str(blocker))
    assert cache.parse_file(TEXT, "a.fcl") == parse_program(TEXT, "a.fcl")


def test_damaged_entry_is_parsed_again(cache_dir):
    cache.parse_file(TEXT, "a.fcl")
    (entry,) = cache_dir.glob("*.pickle")
    entry.write_bytes(b"\x80\x05 not a pickle")
    assert cache.parse_file(TEXT, "a.fcl") == parse_program(TEXT, "a.fcl")
    assert entry.read_bytes() != b"\x80\x05 not a pickle"          # written again


def test_errors_are_never_kept(cache_dir):
    bad = "fun f x = (x +\n"
    for _ in range(2):
        with pytest.raises(ParseError) as err:
            cache.parse_file(bad, "bad.fcl")
        assert err.value.span.location().startswith("bad.fcl:")
    assert not list(cache_dir.glob("*.pickle"))


def test_oldest_entries_go(cache_dir, monkeypatch):
    monkeypatch.setattr(cache, "KEEP", 3)
    for k in range(5):
        cache.parse_file(f"val v = {k}\n", "a.fcl")
        newest = max(cache_dir.glob("*.pickle"), key=os.path.getmtime)
        os.utime(newest, ns=(k * 10**9, k * 10**9))       # distinct write times, in order
    assert len(list(cache_dir.glob("*.pickle"))) == 3
    _no_parse(monkeypatch)
    cache.parse_file("val v = 4\n", "a.fcl")            # the newest stays


def test_files_and_includes_go_through_it(cache_dir, tmp_path, monkeypatch):
    (tmp_path / "lib.fcl").write_text("fun inc x = x + 1\n")
    main = tmp_path / "main.fcl"
    main.write_text('include "lib.fcl"\nfun twice x = inc (inc x)\n')
    assert fcl.load_file(str(main)).evaluate("twice", 1) == 3
    _no_parse(monkeypatch)
    assert fcl.load_file(str(main)).evaluate("twice", 5) == 7


def test_cli_in_a_fresh_process(cache_dir, tmp_path):
    """Two `fclc check` processes: the second reads the prelude and the file back."""
    path = tmp_path / "p.fcl"
    path.write_text(TEXT)
    env = dict(os.environ)
    for _ in range(2):
        out = subprocess.run([sys.executable, "-m", "fcl.tools.cli", "check", str(path)], env=env,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert "quad : int -> int" in out.stdout
    assert len(list(cache_dir.glob("*.pickle"))) == 2               # the prelude and p.fcl
