"""Diagnostics: every independent error of a file, colour only where asked for or
on a terminal, both places of a signature mismatch, did-you-mean for levels, hints for
common mistakes.  `fclc check` runs in-process; the terminal case runs under a pty."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fcl
from fcl.base.errors import ErrorList, TypeCheckError
from fcl.tools.cli import main, use_color

ROOT = Path(__file__).resolve().parents[2]
ESC = "\033["

MULTI = """fun a x = x + true
fun b x = a x + 1
sig c : int -> bool
fun c x = x + 1
fun d x = c x
fun e x = y
val ok = 3
"""


def check(capsys, tmp_path, text, *flags):
    f = tmp_path / "p.fcl"
    f.write_text(text)
    code = main(["check", *flags, str(f)])
    out, err = capsys.readouterr()
    return code, out, err.replace(str(f), "p.fcl")


def test_every_independent_error_is_reported(capsys, tmp_path):
    code, out, err = check(capsys, tmp_path, MULTI)
    assert code == 1 and out == ""
    heads = [line for line in err.splitlines() if ": error: " in line]
    assert [h.split(": error: ")[0] for h in heads] == ["p.fcl:1:15", "p.fcl:3:1", "p.fcl:6:11"]
    assert "unbound name `y`" in heads[2]
    assert err.rstrip().endswith("3 errors")
    # `b` uses the failed `a`, `d` the failed `c`: no cascade of follow-up errors
    assert "p.fcl:2:" not in err and "p.fcl:5:" not in err


def test_error_list_is_a_type_check_error_with_the_first_location():
    with pytest.raises(TypeCheckError) as info:
        fcl.load(MULTI, "m.fcl")
    e = info.value
    assert isinstance(e, ErrorList) and len(e.errors) == 3
    assert e.span.line == 1 and e.message == e.errors[0].message


def test_one_error_renders_as_before(capsys, tmp_path):
    code, _, err = check(capsys, tmp_path, "fun f x = y\n")
    assert code == 1 and err.startswith("p.fcl:1:11: error: unbound name `y`") and "errors" not in err


SYNTAX = """fun f x = x +
fun g y = (y
sig h : int -> int
fun h z = z
(* a comment
fun notADeclaration = ( *)
fun k a = a ]
val ok = 3
"""


def test_every_independent_syntax_error_is_reported(capsys, tmp_path):
    """A syntax error in one declaration does not hide one in a later declaration: the parse
    resumes at the next `fun`/`sig`/`val` at column 1 (not inside a comment)."""
    code, out, err = check(capsys, tmp_path, SYNTAX)
    heads = [line for line in err.splitlines() if ": error: " in line]
    assert code == 1 and out == ""
    assert [h.split(": error: ")[0] for h in heads] == ["p.fcl:2:1", "p.fcl:3:1", "p.fcl:7:13"]
    assert "expected an expression after `+`" in heads[0] and "unmatched `]`" in heads[2]
    assert err.rstrip().endswith("3 errors")
    with pytest.raises(fcl.ParseError) as info:
        fcl.load(SYNTAX, "s.fcl")
    assert len(info.value.errors) == 3 and info.value.span.line == 2


def test_one_syntax_error_renders_as_before(capsys, tmp_path):
    code, _, err = check(capsys, tmp_path, "fun f x = x +\nfun g y = y\n(*\nfun h = (\n*)\n")
    assert code == 1 and "errors" not in err and err.count("error:") == 1
    assert err.startswith("p.fcl:2:1: error: expected an expression after `+`, found keyword `fun`")


def test_signature_mismatch_shows_the_sig_and_the_definition(capsys, tmp_path):
    text = ("sig rev : int -> [int] -> [int]<grid>\n"
            "fun rev c arr =\n"
            "  splitUp c arr\n"
            "  |> mapPull (fn chunk => push <thread> (reverse chunk))\n"
            "  |> concat c\n")
    _, _, err = check(capsys, tmp_path, text)
    lines = err.splitlines()
    # the error is at the written level that makes the parts thread-level, the sig a note
    assert lines[0].startswith("p.fcl:4:27: error: the signature of `rev` does not match its definition")
    assert lines[2] == "     |                           ^~~~~~~~~~~~~"
    assert "expected grid, found warp" in err
    assert "without `push <thread>` (a written level), the definition would have the signature's type" in err
    note = lines.index("p.fcl:1:1: note: the signature of `rev`")
    assert lines[note + 1] == "   1 | sig rev : int -> [int] -> [int]<grid>"
    # with no single expression to blame, both places: the sig, and where the result comes from
    _, _, err = check(capsys, tmp_path, "sig f : int -> bool\nfun f x =\n  x + 1\n")
    lines = err.splitlines()
    assert lines[0].startswith("p.fcl:1:1: error: the signature of `f` does not match its definition")
    note = next(k for k, l in enumerate(lines) if l.startswith("p.fcl:3:3: note: the definition of `f`"))
    assert lines[note + 1] == "   3 |   x + 1"


def test_did_you_mean_for_levels(capsys, tmp_path):
    _, _, err = check(capsys, tmp_path, "fun f a = push <blok> a\n")
    assert "unbound level variable `blok`; did you mean `block`?" in err
    _, _, err = check(capsys, tmp_path, "sig f : [int] -> [int]<gird>\nfun f a = push <grid> a\n")
    assert "`gird` is a level variable here (it stands for any level); did you mean the level `grid`?" in err


@pytest.mark.parametrize("text", ["fun f (a, b) = a + b\n", "val g = fn (a, b) => a\n",
                                  "val h = let f (a, b) = a in f\n"])
def test_hint_for_pair_patterns(capsys, tmp_path, text):
    _, _, err = check(capsys, tmp_path, text)
    assert "note: FCL has no patterns in parameters" in err and "`fst` and `snd`" in err


def test_no_pattern_hint_for_other_parentheses(capsys, tmp_path):
    _, _, err = check(capsys, tmp_path, "val x = (1 + \n")
    assert "error:" in err and "patterns" not in err


def test_colour_only_when_asked_or_on_a_terminal(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    _, _, plain = check(capsys, tmp_path, "fun f x = y\n")
    assert ESC not in plain                             # captured stderr is not a terminal
    _, _, coloured = check(capsys, tmp_path, "fun f x = y\n", "--color", "always")
    assert f"{ESC}1;31merror:{ESC}0m" in coloured and f"{ESC}1mp.fcl:1:11:{ESC}0m" in coloured
    stripped = coloured
    for code in ("1;31m", "1;36m", "1m", "34m", "0m"):
        stripped = stripped.replace(ESC + code, "")
    assert stripped == plain
    _, _, never = check(capsys, tmp_path, "fun f x = y\n", "--color", "never")
    assert never == plain


class FakeTTY:
    def isatty(self):
        return True


def test_auto_colour_respects_no_color_and_dumb_terminals(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert use_color("auto", FakeTTY())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color("auto", FakeTTY()) and use_color("always", FakeTTY())
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("TERM", "dumb")
    assert not use_color("auto", FakeTTY())


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="no pty")
def test_colour_on_a_real_terminal(tmp_path):
    f = tmp_path / "p.fcl"
    f.write_text("fun f x = y\n")
    leader, follower = os.openpty()
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["TERM"] = "xterm"
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-m", "fcl.tools.cli", "check", str(f)], stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=follower, env=env, timeout=60)
    os.close(follower)
    err = os.read(leader, 65536).decode()
    os.close(leader)
    assert proc.returncode == 1 and f"{ESC}1;31merror:" in err


def test_repl_reports_every_error_of_one_input():
    from fcl.tools.repl import Session
    out = Session().handle("fun a x = x + true\nfun b y = z")
    assert out.count("error:") == 2 and out.endswith("2 errors")


# ---------------------------------------------------------------- run-time errors: the call chain

RUNTIME = """fun getAt a i = index a i
fun shift a = generate (lengthPull a) (fn i => getAt a (i + 1))
sig entry : [int] -> [int]<grid>
fun entry a = push <grid> (shift a)
sig lastOf : [int] -> int
fun lastOf a = last a
"""


def test_runtime_error_shows_the_call_chain(capsys, tmp_path):
    f = tmp_path / "rt.fcl"
    f.write_text(RUNTIME)
    code = main(["eval", str(f), "-e", "entry", "[1, 2, 3]"])
    err = capsys.readouterr().err.replace(str(f), "rt.fcl")
    assert code == 1
    assert err.splitlines()[0] == "rt.fcl:1:17: error: index 3 out of range for an array of length 3"
    assert "rt.fcl:2:48: note: called from here\n   2 | fun shift a" in err


def test_runtime_error_in_the_prelude_points_back_to_the_program(tmp_path):
    f = tmp_path / "rt.fcl"
    f.write_text(RUNTIME)
    with pytest.raises(fcl.EvalError) as info:
        fcl.load_file(str(f)).evaluate("lastOf", [])
    e = info.value
    assert e.span.source.name.endswith("prelude.fcl")
    assert [(text, span.line, span.col) for text, span in e.related] == [("called from here", 6, 16)]
    assert e.message == "index -1 out of range for an array of length 0"      # unchanged for `error:` tests
