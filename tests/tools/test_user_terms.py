"""Messages in the user's terms and inputs that mean what they say: array lengths the host
cannot compute named as FCL (`d2i d`, `index arr 0`), local memory by what is stored, a
signature mismatch located at the expression that causes it, a level error at the `concat`
that raises it, argument files, `-e` and `-o` mistakes, `fclc eval --device`, the warning
when `fclc bench`'s runs scatter, `random:N` seeded by default, `fclc compile --type`, and
one Tab completing a single REPL candidate."""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fcl
from fcl.base.errors import ArgumentError, CompileError, TypeCheckError
from fcl.tools.cli import main

from conftest import needs_device  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
REVERSE = str(REPO / "examples" / "reverse.fcl")
INTERNAL = re.compile(r"\b(in\d+_\d+|arg\d+|n\d+|part\d+|check#|sh\d+|l\d+)\b|\bbuffer\b")

SIZES = """\
sig byElem : [int] -> [int]<grid>
fun byElem arr =
  splitUp 8 arr
  |> mapPull (fn c => push <block> (force (push <block> (take (index c 0) c))))
  |> concat 8

sig byDouble : double -> [int] -> [int]<grid>
fun byDouble d arr =
  splitUp 8 arr
  |> mapPull (fn c => push <block> (force (push <block> (take (d2i d) c))))
  |> concat 8

sig result : [int] -> [int]<grid>
fun result arr = push <grid> (take (index arr 0) arr)

sig byOwnDouble : double -> [int] -> [int]<grid>
fun byOwnDouble d arr =
  splitUp 8 arr
  |> mapPull (fn c => push <block> (force (push <block> (take (d2i (d * i2d (index c 0))) c))))
  |> concat 8
"""


def fclc(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def compile_error(name: str) -> CompileError:
    with pytest.raises(CompileError) as info:
        fcl.load(SIZES, "sizes.fcl").compile(name).opencl_source
    return info.value


# ---------------------------------------------------------------- lengths and local memory

def test_a_length_from_a_conversion_of_a_double_argument_is_read_back():
    """The host computes int arithmetic only: `d2i d` is computed by a kernel and read back."""
    plan = fcl.load(SIZES, "sizes.fcl").compile("byDouble").explain()
    assert "read size" in plan and "computed on the device" in plan


def test_a_length_from_a_work_item_s_own_values_names_them():
    err = compile_error("byOwnDouble")
    assert (err.span.line, err.span.col) == (19, 37)                     # the force
    assert "the length of the array this force stores depends on" in err.message
    assert "computed inside the kernel" not in err.message and not INTERNAL.search(err.message), err.message


def test_a_length_from_an_array_element_names_the_argument():
    err = compile_error("byElem")
    assert "depends on an element of argument 1 (`arr`), which only the kernels read" in err.message
    assert not INTERNAL.search(err.render()), err.render()


@needs_device
def test_a_result_length_from_an_element_is_read_back():
    prog = fcl.load(SIZES, "sizes.fcl")
    kernel = prog.compile("result")
    assert "read size" in kernel.explain()
    arr = np.array([3, 7, 8, 9, 10], dtype=np.int32)
    assert list(kernel(arr)) == [3, 7, 8] == list(prog.evaluate("result", arr))


def test_a_nested_array_result_is_refused_where_it_is_returned():
    prog = fcl.load("fun parts arr = splitUp 4 arr\n", "parts.fcl")
    with pytest.raises(CompileError) as info:
        prog.compile("parts").opencl_source
    err = info.value
    assert (err.span.line, err.span.col) == (1, 5) and "returns an array of arrays ([[int]])" in err.message


def test_local_memory_says_what_is_stored():
    from fcl.codegen import kir as K
    from fcl.runtime.launch import local_words
    buf = K.Buffer("l5", "local", "double", K.cint(100000), "force at comp.fcl:4", "force")
    assert local_words(buf, 100000, 1, 800000, 800000) == \
        "the force at comp.fcl:4 stores its array of 100000 doubles there (800000 bytes)"
    warp = K.Buffer("l7", "local", "int", K.cint(64), "force at comp.fcl:9", "force", per="warp")
    assert local_words(warp, 64, 8, 2048, 3072) == (
        "the force at comp.fcl:9 stores its array of 64 ints there for each of the 8 warps of a "
        "work-group (2048 bytes, with 1024 bytes of the kernel's other local arrays)")


@needs_device
def test_too_much_local_memory_names_no_buffer(tmp_path, monkeypatch):
    from fcl.runtime import launch as L
    original = L.Launcher.local_sizes

    def small(self, *args, **kwargs):
        self.limits = dict(self.limits, local_mem_size=1000)
        return original(self, *args, **kwargs)
    monkeypatch.setattr(L.Launcher, "local_sizes", small)
    path = tmp_path / "comp.fcl"
    path.write_text("fun big arr =\n  splitUp 512 arr\n"
                    "  |> mapPull (fn c => push <block> (force (push <block> c)))\n  |> concat 512\n")
    with pytest.raises(CompileError) as info:
        fcl.load_file(path).compile("big")(np.zeros(1024, dtype=np.int32))
    message = info.value.message
    assert "more than" in message and f"the force at {path}:3 stores its array of 512 ints there" in message
    assert "buffer" not in message and not re.search(r"\bl\d+\b", message)


# ---------------------------------------------------------------- where type errors point

def test_signature_mismatch_points_at_the_literal_that_fixed_the_type():
    text = ("sig scale : [int] -> [int]<grid>\nfun scale arr =\n  let k = 1.5 in\n"
            "  push <grid> (mapPull (fn x => x * k) arr)\n")
    with pytest.raises(TypeCheckError) as info:
        fcl.load(text, "sig.fcl")
    err = info.value
    assert (err.span.line, err.span.col) == (3, 11) and "does not match its definition" in err.message
    assert "without `1.5` (a double), the definition would have the signature's type" in err.notes
    assert [(t, s.line, s.col) for t, s in err.related] == [("the signature of `scale`", 1, 1)]


def test_the_tutorials_level_error_points_at_concat(capsys):
    code, _, err = fclc(capsys, "check", str(REPO / "docs" / "tutorial" / "wrong_level.fcl"))
    assert code == 1
    assert err.splitlines()[0].endswith("wrong_level.fcl:7:6: error: this use of `concat` would build a "
                                        "push array at level 1+grid, but grid is the highest level")
    assert err.splitlines()[1] == "   7 |   |> concat c"


# ---------------------------------------------------------------- arguments, -e, -o, --device

def test_missing_argument_file_in_plain_words(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = fclc(capsys, "eval", REVERSE, "-e", "revGrid", "@nofile.npy")
    assert code == 1 and "Errno" not in err
    assert err.strip() == f"error: could not read argument 1 `@nofile.npy`: there is no file nofile.npy " \
                          f"(looked in {tmp_path})"
    (tmp_path / "t.npy").write_text("not numpy")
    _, _, err = fclc(capsys, "eval", REVERSE, "-e", "revGrid", "@t.npy")
    assert "t.npy is not a NumPy .npy file" in err and "pickle" not in err


def test_unknown_entry_lists_the_declarations(capsys):
    code, _, err = fclc(capsys, "eval", REVERSE, "-e", "nme", "iota:3")
    assert code == 1
    assert err.strip() == "error: no declaration named `nme`; the program declares `revBlock`, " \
                          "`revDistribute`, `revGrid`"
    _, _, err = fclc(capsys, "run", REVERSE, "-e", "revgrid", "iota:3")
    assert "did you mean `revGrid`?" in err


def test_output_must_be_a_npy_file(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "D").mkdir()
    code, _, err = fclc(capsys, "eval", REVERSE, "-e", "revGrid", "iota:4", "-o", "D")
    assert code == 1 and "D is a folder; give a file name ending in .npy, e.g. -o D/result.npy" in err
    code, _, err = fclc(capsys, "eval", REVERSE, "-e", "revGrid", "iota:4", "-o", "x.txt")
    assert code == 1 and "in a file whose name ends in .npy; give one, e.g. -o x.npy" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["D"]            # nothing written
    assert fclc(capsys, "eval", REVERSE, "-e", "revGrid", "iota:4", "-o", "x.npy")[0] == 0
    assert np.load(tmp_path / "x.npy").tolist() == [3, 2, 1, 0]


@pytest.mark.skipif(not os.path.exists("/proc/version"), reason="no /proc")
def test_unwritable_output_says_why(capsys):
    code, _, err = fclc(capsys, "compile", REVERSE, "-e", "revGrid", "-o", "/proc/version")
    assert code == 1 and "No such file" not in err
    assert err.strip().splitlines()[-1] in ("error: -o /proc/version: cannot write it: /proc/version exists and cannot be "
                           "overwritten (Input/output error)",
                           "error: -o /proc/version: cannot write it: you have no permission to write "
                           "/proc/version")
    code, _, err = fclc(capsys, "eval", REVERSE, "-e", "revGrid", "iota:4", "-o", "/proc/x.npy")
    assert code == 1 and "cannot write it: no file can be created in the folder /proc" in err


def test_eval_rejects_a_device(capsys):
    code, out, err = fclc(capsys, "eval", REVERSE, "-e", "revGrid", "iota:4", "--device", "pocl")
    assert code == 1 and out == ""
    assert "`fclc eval` runs the reference evaluator on the CPU, not on an OpenCL device" in err
    assert "fclc run --device pocl" in err


# ---------------------------------------------------------------- bench

def row(times):
    from fcl.tools.bench import summary

    class Device:
        name, platform = "cpu", type("P", (), {"name": "pocl"})
    return summary("f", "arguments", ["iota:8"], Device, times, 64)


def test_bench_warns_when_the_median_is_unreliable():
    from fcl.tools.bench import spread_warning
    scattered = row([1.0, 1.6, 0.5, 2.0, 0.9, 1.3, 0.6, 1.8, 1.1, 0.7])
    warning = spread_warning(scattered)
    assert warning.startswith("f iota:8: the run times scatter so much")
    assert "--repeat 100" in warning and "quieter machine" in warning
    assert spread_warning(row([1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.01, 0.99, 1.0])) is None
    # one slow run among twenty: the median does not move
    assert spread_warning(row([1.0, 1.01, 0.99] * 6 + [1.0, 9.0])) is None
    assert spread_warning(row([1.0])) is None


@needs_device
def test_bench_prints_the_warning_on_stderr(capsys, monkeypatch):
    import fcl.tools.bench as B
    monkeypatch.setattr(B, "time_runs", lambda *a, **k: [1e-3, 3e-3, 1e-3, 2e-3, 5e-3])
    code, out, err = fclc(capsys, "bench", REVERSE, "-e", "revGrid", "iota:64", "--repeat", "5")
    assert code == 0 and "over 5 runs" in out and "warning" not in out
    assert err.startswith("fclc: warning: revGrid iota:64: the run times scatter so much")


# ---------------------------------------------------------------- random inputs

def test_random_inputs_have_a_default_seed(capsys):
    from fcl.api.literals import parse_arg
    a = parse_arg("random:50", position=1)
    assert np.array_equal(a, parse_arg("random:50", position=1))
    assert np.array_equal(a, parse_arg("random:50", seed=1, position=1))
    assert not np.array_equal(a, parse_arg("random:50", seed=2, position=1))
    first = fclc(capsys, "eval", REVERSE, "-e", "revGrid", "random:6")[1]
    assert first == fclc(capsys, "eval", REVERSE, "-e", "revGrid", "random:6")[1]
    assert first != fclc(capsys, "eval", REVERSE, "-e", "revGrid", "random:6", "--seed", "2")[1]
    code, _, err = fclc(capsys, "eval", REVERSE, "-e", "revGrid", "random:6", "--seed", "-1")
    assert code == 1 and "--seed -1 is negative" in err


@needs_device
def test_eval_and_run_see_the_same_random_input(capsys, tmp_path):
    evaluated = fclc(capsys, "eval", REVERSE, "-e", "revGrid", "random:20:double")[1]
    assert evaluated == fclc(capsys, "run", REVERSE, "-e", "revGrid", "random:20:double")[1]
    # a test block with a random input and the output the evaluator gives for it passes
    expected = fclc(capsys, "eval", REVERSE, "-e", "revGrid", "random:5")[1].strip()
    blocks = tmp_path / "r.fcl"
    blocks.write_text("fun rev arr = push <grid> (reverse arr)\n-- == entry: rev\n"
                      f"-- input {{ random:5 }} output {{ {expected} }}\n")
    code, out, _ = fclc(capsys, "test", str(blocks))
    assert code == 0 and out.splitlines()[-1] == "1 passed, 0 failed", out


# ---------------------------------------------------------------- compile --type

def test_compile_says_which_types_it_built_and_takes_others(capsys, tmp_path):
    out_py = tmp_path / "rev.py"
    code, _, err = fclc(capsys, "compile", REVERSE, "-e", "revGrid", "--emit", "py", "-o", str(out_py))
    assert code == 0
    assert err == ("fclc: note: `revGrid : ['a] -> ['a]<grid>` is built for 'a = int, the default; "
                   "`fclc compile --type a=double` (or float, bool) builds for another element type\n")
    assert "(built for 'a = int, the default;" in out_py.read_text()
    code, _, err = fclc(capsys, "compile", REVERSE, "-e", "revGrid", "--type", "a=double", "--emit", "py",
                        "-o", str(out_py))
    text = out_py.read_text()
    assert code == 0 and err == ""
    assert "(built for 'a = double)" in text and "arr : [double] -- a 1-D array of float64" in text
    code, out, _ = fclc(capsys, "compile", REVERSE, "-e", "revGrid", "--type", "'a=float")
    assert code == 0 and "__global const float*" in out
    code, _, err = fclc(capsys, "compile", REVERSE, "-e", "revGrid", "--type", "b=double")
    assert code == 1 and "no entry compiled here has a type variable 'b" in err
    code, _, err = fclc(capsys, "compile", REVERSE, "-e", "revDistribute", "--type", "a=dbl")
    assert code == 1 and "expected VAR=TYPE with TYPE int, float, double or bool" in err


def test_python_api_builds_the_chosen_types():
    prog = fcl.load("sig twice : ['a] -> ['a]<grid>\nfun twice arr = push <grid> (mapPull (fn x => x + x) arr)\n")
    assert "double" in prog.compile("twice", types={"a": "double"}).opencl_source
    with pytest.raises(ArgumentError, match="the type variable stands for int or float or double"):
        prog.compile("twice", types={"a": "bool"})
    with pytest.raises(ArgumentError, match="has no type variable 'c"):
        prog.compile("twice", types={"c": "int"})


@needs_device
def test_emitted_module_of_another_element_type_runs(tmp_path):
    out_py = tmp_path / "revd.py"
    assert main(["compile", REVERSE, "-e", "revGrid", "--type", "a=double", "--emit", "py",
                 "-o", str(out_py)]) == 0
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[1]); import revd; "
            "print(revd.Kernels().revGrid(np.array([1.5, 2.5])).tolist())")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                          timeout=300)
    assert proc.stdout.strip() == "[2.5, 1.5]", proc.stderr


# ---------------------------------------------------------------- the REPL's Tab

def repl_session():
    from fcl.tools.repl import Session
    s = Session()
    s.handle("fun myInc x = x + 1")
    return s


def test_one_tab_completes_a_single_candidate():
    from prompt_toolkit.buffer import Buffer
    from fcl.tools.repl import completer, tab_complete
    names = completer(repl_session())
    buf = Buffer(completer=names)
    buf.insert_text("mapPull myI")
    tab_complete(buf, names)
    assert buf.text == "mapPull myInc"
    buf = Buffer(completer=names)
    buf.insert_text(":rel")
    tab_complete(buf, names)
    assert buf.text == ":reload"


def test_a_quick_tab_then_enter_runs_the_completed_word(monkeypatch, tmp_path):
    """Typed at once (as a quick typist or a paste does), `myI`, Tab and Enter must run `myInc`:
    prompt_toolkit's own Tab only opened the menu while the completion begun by typing ran."""
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput
    import fcl.tools.repl as R
    monkeypatch.setattr(R, "HISTORY", tmp_path / ".fcl_history")
    s = repl_session()
    ran = []

    def handle(text):
        ran.append(text)
        s.done = True
        return ""
    monkeypatch.setattr(s, "handle", handle)
    with create_pipe_input() as keys:
        keys.send_text("myI\t\r")
        R.interactive(s, input=keys, output=DummyOutput())
    assert ran == ["myInc"]
