"""The REPL (interface.md, "The REPL"): `Session.handle` for each command,
declarations then use, located errors without tracebacks, the multi-line
continuation rule, and `fclc repl` fed through a pipe."""
import subprocess
import sys
from pathlib import Path

import pytest

from fcl.tools.repl import Session, needs_more, piped, split_args

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = str(REPO / "examples" / "reverse.fcl")


@pytest.fixture
def session():
    return Session()


def _has_cpu_device() -> bool:
    try:
        from fcl.runtime.platforms import all_devices, is_oclgrind
        return any(not is_oclgrind(d) for d in all_devices())
    except Exception:
        return False


# ---------------------------------------------------------------- expressions and :type

def test_expression_is_evaluated(session):
    assert session.handle("iota 5") == "[0, 1, 2, 3, 4]"
    assert session.handle("(1 + 2, 2.5f)") == "(3, 2.5f)"


def test_push_array_is_forced(session):
    assert session.handle("push <grid> (mapPull (fn x => x * x) (iota 4))") == "[0, 1, 4, 9]"


def test_function_prints_its_type(session):
    assert session.handle("fn x => x + 1") == "<function> : int -> int"
    assert session.handle("id").startswith("<function> : forall 'a. 'a -> 'a")


def test_type_command(session):
    assert session.handle(":type iota") == "iota : int -> [int]"
    assert session.handle(":t fn x => (x, 1)") == "fn x => (x, 1) : forall 'a. 'a -> ('a, int)"


def test_cost_command(session):
    out = session.handle(":cost mapPull (fn x => x + 1) (iota 10)")
    value, table = out.split("\n", 1)
    assert value == "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
    assert "work" in table and "barriers" in table
    grid = next(line for line in table.splitlines() if line.startswith("grid"))
    assert grid.split()[1] == "10"


def test_hardware_parameters_reach_the_evaluator():
    assert Session(hw={"#BlockSize": 64, "#WarpSize": 16, "#NumGroups": 4}).handle("#BlockSize") == "64"


# ---------------------------------------------------------------- declarations

def test_declarations_then_use(session):
    assert session.handle("fun inc x = x + 1") == "inc : int -> int"
    assert session.handle("inc 41") == "42"
    assert session.handle("val xs = mapPull inc (iota 3)") == "xs : [int]"
    assert session.handle("xs") == "[1, 2, 3]"
    assert "inc" in session.names() and "xs" in session.names()


def test_redeclaration_shadows(session):
    session.handle("val k = 1")
    session.handle("fun f x = x + k")
    assert session.handle("val k = true") == "k : bool"
    assert session.handle(":type k") == "k : bool"
    assert session.handle("f 1") == "2"      # f still sees the k it was declared with


def test_sig_alone_waits_for_its_declaration(session):
    assert "waits" in session.handle("sig dbl : int -> int")
    assert session.handle("fun dbl x = 2 * x") == "dbl : int -> int"
    assert session.handle("dbl 21") == "42"


def test_sig_and_fun_in_one_block(session):
    assert session.handle("sig two : int\nval two = 2") == "two : int"
    out = session.handle("sig bad : bool\nval bad = 1")
    assert "error" in out and "bad" not in session.names()


def test_no_prelude_session():
    s = Session(prelude=False)
    assert "iota" not in s.names()
    assert "unbound name `iota`" in s.handle("iota 3")
    assert s.handle("generate 3 (fn i => i)") == "[0, 1, 2]"


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("text, message, col", [
    ("iota true", "wrong type", 6),
    ("nosuch 3", "unbound name `nosuch`", 1),
    ("1 +", "unexpected end of input", 4),
    ("fun f x = x + true", "error", None),
])
def test_errors_are_located_and_not_tracebacks(session, text, message, col):
    out = session.handle(text)
    assert "Traceback" not in out
    assert message in out
    if col is not None:
        assert out.startswith(f"<input>:1:{col}: error:")
        assert "^" in out


def test_runtime_error_is_rendered(session):
    out = session.handle("index (iota 3) 7")
    assert "error" in out and "Traceback" not in out


def test_failed_declaration_leaves_session_unchanged(session):
    session.handle("fun g x = x + 1")
    assert "error" in session.handle("fun g x = x && true\nfun h y = nosuch")
    assert session.handle("g 1") == "2"
    assert "h" not in session.names()


def test_unknown_and_ambiguous_commands(session):
    assert "unknown command `:frob`" in session.handle(":frob")
    assert "ambiguous" in session.handle(":r")
    assert "needs EXPR" in session.handle(":type")


def test_help_and_quit(session):
    text = session.handle(":help")
    for command in ("type", "load", "reload", "opencl", "run", "cost", "help", "quit"):
        assert f":{command}" in text
    assert not session.done
    assert session.handle(":quit") == ""
    assert session.done


# ---------------------------------------------------------------- files

def test_load_and_reload(tmp_path, session):
    path = tmp_path / "m.fcl"
    path.write_text("fun three u = 3\n")
    assert session.handle(f":load {path}") == f"loaded {path} (1 declaration)"
    assert session.handle("three 0") == "3"
    session.handle("val typed = 1")
    path.write_text("fun three u = 33\nfun four u = 4\n")
    assert session.handle(":reload") == f"loaded {path} (2 declarations)"
    assert session.handle("three 0") == "33"
    assert "typed" not in session.names()


def test_load_replaces_the_file(tmp_path, session):
    session.handle(f":load {EXAMPLE}")
    assert "revGrid" in session.names()
    other = tmp_path / "o.fcl"
    other.write_text("val seven = 7\n")
    session.handle(f":load {other}")
    assert "revGrid" not in session.names() and session.handle("seven") == "7"


def test_failed_load_keeps_the_session(tmp_path, session):
    session.handle(f":load {EXAMPLE}")
    bad = tmp_path / "bad.fcl"
    bad.write_text("fun oops x = x +\n")
    out = session.handle(f":load {bad}")
    assert out.startswith(f"{bad}:") and "error" in out
    assert session.handle("revGrid [1, 2, 3]") == "[3, 2, 1]"
    assert "cannot find" in session.handle(":load /no/such/file.fcl")


def test_reload_without_file(session):
    assert "no file loaded" in session.handle(":reload")


def test_file_given_at_start():
    s = Session(EXAMPLE)
    assert s.startup_message.startswith("loaded")
    assert s.handle("revGrid (iota 4)") == "[3, 2, 1, 0]"


# ---------------------------------------------------------------- OpenCL

def test_opencl_of_session_and_file_declarations():
    s = Session(EXAMPLE)
    s.handle("fun twice xs = mapPull (fn x => 2 * x) xs |> push <grid>")
    source = s.handle(":opencl twice")
    assert "void twice(" in source and "__kernel" in source
    assert "void revGrid(" in s.handle(":opencl revGrid")
    assert "no declaration named `nosuch`" in s.handle(":opencl nosuch")


def test_opencl_follows_redeclaration(session):
    session.handle("fun f xs = mapPull (fn x => x + 1) xs |> push <grid>")
    first = session.handle(":opencl f")
    session.handle("fun f xs = mapPull (fn x => x * 7) xs |> push <grid>")
    second = session.handle(":opencl f")
    assert first != second and "7" in second


@pytest.mark.skipif(not _has_cpu_device(), reason="no OpenCL device")
def test_run_on_device(session):
    session.handle("fun twice xs = mapPull (fn x => 2 * x) xs |> push <grid>")
    assert session.handle(":run twice [1, 2, 3]") == "[2, 4, 6]"
    assert "takes 1 argument" in session.handle(":run twice [1] [2]")


def test_split_args():
    assert split_args("[1, 2, 3] (1, [2, 3])  5 ") == ["[1, 2, 3]", "(1, [2, 3])", "5"]
    assert split_args("") == []


# ---------------------------------------------------------------- multi-line input

@pytest.mark.parametrize("text", [
    "fun f x =", "fn x =>", "1 +", "xs |>", "let a = 1 in", "if true then", "if true then 1 else",
    "(1,", "[1, 2", "f (g", "let a = 1", "if c then 1", "1 \\", "a mod", "sig f : int ->",
    "x == y &&", "(* unclosed comment", ":type fn x =>", ":run f [1,",
])
def test_needs_more(text):
    assert needs_more(text)


@pytest.mark.parametrize("text", [
    "", "iota 5", "fun f x = x", "let a = 1 in a", "if c then 1 else 2", "(1, 2)",
    "push <grid> xs", "sig step : <lvl> -> [a] -> [a]<lvl>", "push <1 + lvl>",
    "f x -- a comment ending in =", "f (* = *) x", "1 + 1)", ":load ../x/",
    ":help", "include \"a-(.fcl\"",
])
def test_does_not_need_more(text):
    assert not needs_more(text)


def test_backslash_continuation(session):
    assert session.handle("1 + \\\n  2") == "3"


def test_multi_line_declaration(session):
    text = "fun f x =\n  let y = x * 2\n  in y + 1"
    assert not needs_more(text) and needs_more(text.rsplit("\n", 1)[0])
    assert session.handle(text) == "f : int -> int"
    assert session.handle("f 4") == "9"


def test_piped_lines(capsys, session):
    piped(session, ["fun f x =\n", "  x + 1\n", "\n", "f 1\n", "let a = 2\n", "\n", "f 2\n",
                    ":quit\n", "f 3\n"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "f : int -> int"
    assert lines[1] == "2"
    assert "error" in lines[2]          # an empty line ends the unfinished `let`
    assert lines[-1] == "3" and "4" not in lines


# ---------------------------------------------------------------- the command line

def test_fclc_repl_through_a_pipe():
    fclc = REPO / ".venv" / "bin" / "fclc"
    exe = [str(fclc)] if fclc.exists() else [sys.executable, "-m", "fcl.tools.cli"]
    text = ":type iota\nfun sq x =\n  x * x\nmapPull sq (iota 4)\niota true\n:quit\n"
    proc = subprocess.run(exe + ["repl", EXAMPLE], input=text, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0].startswith("loaded ") and out[1] == "iota : int -> [int]"
    assert out[2] == "sq : int -> int" and out[3] == "[0, 1, 4, 9]"
    assert out[4].startswith("<input>:1:6: error:")
    assert "Traceback" not in proc.stdout + proc.stderr


def test_completion_of_names_and_commands(session):
    from prompt_toolkit.document import Document
    from fcl.tools.repl import completer
    session.handle("fun myInc x = x + 1")
    c = completer(session)

    def complete(text):
        return sorted(x.text for x in c.get_completions(Document(text), None))
    assert complete("mapPull myI") == ["myInc"]
    assert complete(":rel") == [":reload"]
    assert complete("f ") == []


def test_history_falls_back_to_memory(monkeypatch, tmp_path):
    from prompt_toolkit.history import FileHistory, InMemoryHistory
    import fcl.tools.repl as repl
    monkeypatch.setattr(repl, "HISTORY", tmp_path / "missing-dir" / ".fcl_history")
    assert isinstance(repl.open_history(), InMemoryHistory)
    monkeypatch.setattr(repl, "HISTORY", tmp_path / ".fcl_history")
    assert isinstance(repl.open_history(), FileHistory)


def test_bad_file_at_start_can_be_fixed_and_reloaded(tmp_path):
    path = tmp_path / "late.fcl"
    path.write_text("val five = 5 +\n")
    s = Session(str(path))
    assert s.startup_message.startswith(f"{path}:") and "error" in s.startup_message
    path.write_text("val five = 5\n")
    assert s.handle(":reload").startswith("loaded") and s.handle("five") == "5"


# ---------------------------------------------------------------- :browse and :doc

def test_browse_lists_every_name_with_its_type_by_origin(session):
    session.handle("fun twice x = 2 * x")
    out = session.handle(":browse")
    titles = [line for line in out.splitlines() if line.startswith("-- ")]
    assert titles == ["-- primitives", "-- hardware parameters", "-- prelude", "-- typed at the prompt"]
    assert "generate : forall 'a. int -> (int -> 'a) -> ['a]" in out
    assert "iota : int -> [int]" in out
    assert "#BlockSize : int = 256" in out
    assert out.rstrip().endswith("twice : int -> int")
    for name in session.names():
        assert f"\n{name} : " in out


def test_browse_with_text_filters(session):
    out = session.handle(":browse zipW")
    assert out.splitlines() == [
        "-- primitives", "zipWithPush : forall <l> 'a 'b 'c. ('a -> 'b -> 'c) -> ['a] -> ['b]<l> -> ['c]<l>",
        "-- prelude", "zipWith : forall 'a 'b 'c. ('a -> 'b -> 'c) -> ['a] -> ['b] -> ['c]"]
    assert session.handle(":browse nothingLikeThis") == "no name in scope contains `nothingLikeThis`"


def test_browse_names_the_loaded_file():
    s = Session(EXAMPLE)
    out = s.handle(":browse rev")
    assert f"-- {EXAMPLE}\nrevBlock : " in out


def test_doc_of_primitive_prelude_file_and_session_names(session):
    assert session.handle(":doc generate").splitlines() == [
        "generate : forall 'a. int -> (int -> 'a) -> ['a]", "pull array from an index function",
        "a primitive (built in)"]
    halve = session.handle(":doc halve").splitlines()
    assert halve[0] == "halve : forall 'a. ['a] -> (['a], ['a])"
    assert halve[1] == "the first half has n / 2 elements"
    assert halve[2].startswith("declared at ") and "prelude.fcl:" in halve[2]
    assert session.handle(":doc #WarpSize").startswith("#WarpSize : int = 32\n")
    session.handle("-- doubles its argument\nfun twice x = 2 * x")
    assert session.handle(":doc twice").splitlines() == [
        "twice : int -> int", "doubles its argument", "declared at the prompt"]


def test_doc_of_file_declaration_uses_the_comment_above_its_sig():
    s = Session(EXAMPLE)
    lines = s.handle(":doc revGrid").splitlines()
    assert lines[1] == "the whole array with one grid-level iteration scheme (no chunking)"
    assert lines[2] == f"declared at {EXAMPLE}:15"


def test_doc_of_unknown_name_suggests(session):
    out = session.handle(":doc revers")
    assert "no declaration named `revers`" in out and "`reverse`" in out
    assert session.handle(":doc").startswith("error: :doc needs NAME")


def test_every_primitive_and_prelude_name_has_a_description(session):
    undocumented = [n for n in session.names() if "no description" in session.handle(f":doc {n}")]
    assert not undocumented, f"write a `--` comment above the sig of {undocumented} in prelude.fcl"


# ---------------------------------------------------------------- pending sig, hints, :cost

def test_pending_sig_then_unrelated_declaration_keeps_the_declaration(session):
    assert session.handle("sig f : int -> int") == "(sig f waits for its `fun f ...` or `val f = ...`)"
    out = session.handle("fun g x = x + 1")
    assert out.splitlines() == ["(the pending `sig f` was dropped: the next declaration defines `g`, not `f`)",
                                "g : int -> int"]
    assert session.handle("g 2") == "3"
    assert session.handle("val a = 1") == "a : int"      # the sig does not linger


def test_pending_sig_replaced_by_another_sig(session):
    session.handle("sig f : int -> int")
    out = session.handle("sig h : int -> bool")
    assert out.splitlines()[0] == "(the pending `sig f` was replaced by `sig h`)"
    assert session.handle("fun h x = x > 0") == "h : int -> bool"


def test_pending_sig_still_applies_to_its_declaration(session):
    session.handle("sig f : [int] -> [int]")
    assert session.handle("fun f x = x") == "f : [int] -> [int]"


def test_command_line_argument_syntax_gets_a_hint(session):
    out = session.handle("reverse iota:16")
    assert "error:" in out
    assert "note: `iota:16` is command-line argument syntax" in out and "write `iota 16`" in out
    out = session.handle(":cost reverse random:8:double")
    assert "`random:8:double` is command-line argument syntax" in out


def test_cost_says_whether_arguments_are_global_buffers(session):
    out = session.handle(":cost mapPull (fn x => x + 1) (iota 4)")
    assert out.splitlines()[-1].startswith("note: arrays written in the expression")
    assert "not global buffers" in out and "--cost" in out


# ---------------------------------------------------------------- the facade: Program.extend

def test_program_extend_checks_against_earlier_declarations_and_keeps_the_original():
    import fcl
    from fcl.syntax import parse_program
    base = fcl.load("fun inc x = x + 1", "<a>")
    assert base.evaluate("inc", 1) == 2
    more = base.extend(parse_program("fun inc2 x = inc (inc x)\nsig k : double\nval k = 2.0", "<b>").decls)
    assert more.names() == ["inc", "inc2", "k"]
    assert more.type_of("k") == "double"
    assert more.evaluate("inc2", 1) == 3
    assert base.names() == ["inc"] and base.evaluate("inc", 5) == 6
    with pytest.raises(fcl.FCLError):
        base.scheme("inc2")
    with pytest.raises(fcl.TypeCheckError):
        more.extend(parse_program("val bad = inc true", "<c>").decls)
    assert more.evaluate("inc2", 2) == 4


def test_program_extend_shadowing_keeps_earlier_meaning():
    import fcl
    from fcl.syntax import parse_program
    p = fcl.load("val k = 1\nfun f x = x + k", "<a>")
    q = p.extend(parse_program("val k = 10", "<b>").decls)
    assert q.evaluate("f", 1) == 2 and q.evaluate("k") == 10


# ---------------------------------------------------------------- Ctrl-C

def test_ctrl_c_aborts_one_evaluation_and_keeps_the_session():
    import signal
    import time
    exe = [sys.executable, "-m", "fcl.tools.cli"]
    proc = subprocess.Popen(exe + ["repl"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO)
    proc.stdin.write("fun inc x = x + 1\nfoldl (fn a => fn b => a + b) 0 (iota 200000000)\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == "inc : int -> int\n"
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate("inc 41\n", timeout=60)
    assert out.splitlines() == ["interrupted (the session keeps everything declared before this input)", "42"]
    assert proc.returncode == 0 and "Traceback" not in err
