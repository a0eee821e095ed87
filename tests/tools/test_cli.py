"""fclc's options: --version, help with examples, flags that belong to a
command, conflicting flags, elided large results, shell-split literals, `fclc bench`
(units, spread, device, --json, --timeout, test-block datasets) and `fclc test` (device
line, warnings, mismatch detail, a malformed block failing alone, --timeout, -j).
Most run `fcl.tools.cli.main` in-process; device tests need an OpenCL device (PoCL)."""
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import needs_device
from fcl.api.literals import format_elided, rejoin
from fcl.tools.bench import format_seconds
from fcl.tools.cli import main
from fcl.tools.testrun import mismatch, split_blocks

ROOT = Path(__file__).resolve().parents[2]
REVERSE = str(ROOT / "examples" / "reverse.fcl")


def fclc(capsys, *argv) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as e:          # argparse: --version, -h, usage errors
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def has_device() -> bool:
    try:
        import pyopencl as cl
        return any("oclgrind" not in p.name.lower() and p.get_devices() for p in cl.get_platforms())
    except Exception:
        return False


device = pytest.mark.skipif(not has_device(), reason="no OpenCL device")


# ---------------------------------------------------------------- version and help

def test_version(capsys):
    code, out, _ = fclc(capsys, "--version")
    assert code == 0 and re.fullmatch(r"fclc \d+\.\d+\.\d+\n", out)


@pytest.mark.parametrize("command", ["check", "eval", "run", "bench", "compile", "test", "repl", "devices"])
def test_every_command_has_help_with_an_example(capsys, command):
    code, out, _ = fclc(capsys, command, "-h")
    assert code == 0
    assert re.search(r"examples?:\n  fclc " + command, out)


def test_argument_help_explains_literals_generators_and_files(capsys):
    _, out, _ = fclc(capsys, "run", "-h")
    for text in ("-e NAME", "iota:N", "random:N[:int|double|float|bool]", "ints in [0, 100)",
                 "@file.npy", "-o OUT.npy", "--full", "'[1, 2, 3]'"):
        assert text in out


def test_check_takes_only_its_flags(capsys):
    code, _, err = fclc(capsys, "check", "--seed", "3", REVERSE)
    assert code == 2 and "unrecognized arguments: --seed" in err
    code, _, err = fclc(capsys, "check", "--block-size", "64", REVERSE)
    assert code == 2 and "--block-size" in err
    code, out, _ = fclc(capsys, "check", "--no-prelude", str(ROOT / "prelude" / "prelude.fcl"))
    assert code == 0 and "iota : int -> [int]" in out


# ---------------------------------------------------------------- conflicting flags

@pytest.mark.parametrize("argv, message", [
    (["compile", REVERSE, "-e", "revGrid", "--explain", "--emit", "py"],
     "--explain and --emit py cannot be used together"),
    (["compile", REVERSE, "-e", "revGrid", "--dump", "kir", "--explain"],
     "--explain and --dump kir cannot be used together"),
    (["compile", REVERSE, "-e", "revGrid", "--explain", "-o", "x.cl"], "-o and --explain cannot be used together"),
    (["eval", REVERSE, "-e", "revGrid", "[1, 2]", "-o", "x.npy", "--full"], "-o and --full cannot be used together"),
    (["test", REVERSE, "--evaluator-only", "--device", "cpu"],
     "--evaluator-only and --device cannot be used together"),
    (["test", REVERSE, "-j", "0"], "the number of jobs must be at least 1"),
])
def test_conflicting_flags_are_errors(capsys, tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    code, out, err = fclc(capsys, *argv)
    assert code == 1 and message in err and out == ""
    assert not list(tmp_path.iterdir())        # nothing was written


# ---------------------------------------------------------------- results

def test_large_results_are_elided_and_full_prints_all(capsys):
    code, out, err = fclc(capsys, "eval", REVERSE, "-e", "revGrid", "iota:5000")
    assert code == 0 and out == "[4999, 4998, 4997, ..., 2, 1, 0]\n"
    assert "5000 elements; --full prints them all" in err
    code, out, err = fclc(capsys, "eval", REVERSE, "-e", "revGrid", "iota:5000", "--full")
    assert out.count(",") == 4999 and err == ""
    code, out, err = fclc(capsys, "eval", REVERSE, "-e", "revGrid", "iota:1000")
    assert "..." not in out and err == ""


def test_format_elided_nested_and_pairs():
    assert format_elided((np.arange(2000, dtype=np.int32), 1.5)) == "([0, 1, 2, ..., 1997, 1998, 1999], 1.5)"
    assert format_elided([np.arange(2, dtype=np.int32)] * 1001) == \
        "[[0, 1], [0, 1], [0, 1], ..., [0, 1], [0, 1], [0, 1]]"
    assert format_elided(np.ones(3, dtype=np.float32)) == "[1.0f, 1.0f, 1.0f]"


def test_output_file_still_saves_everything(capsys, tmp_path):
    target = tmp_path / "out.npy"
    code, out, _ = fclc(capsys, "eval", REVERSE, "-e", "revGrid", "iota:5000", "-o", str(target))
    assert code == 0 and out == ""
    assert np.array_equal(np.load(target), np.arange(5000)[::-1])


def test_shell_split_literals_are_joined(capsys):
    assert rejoin(["2", "[1,", "2,", "-3,", "4]"]) == ["2", "[1, 2, -3, 4]"]
    assert rejoin(["(1,", "[2,", "3])", "7"]) == ["(1, [2, 3])", "7"]
    code, out, err = fclc(capsys, "eval", REVERSE, "-e", "revDistribute", "2", "[1,", "2,", "-3,", "4]")
    assert (code, out) == (0, "[4, -3, 2, 1]\n"), err


def test_mixed_int_double_argument_literal_is_a_stated_promotion(capsys):
    # stated in `fclc run -h`, the README and docs/language.md; inside a program it is an error
    _, out, _ = fclc(capsys, "eval", REVERSE, "-e", "revGrid", "[1, 2.5]")
    assert out == "[2.5, 1.0]\n"
    _, help_text, _ = fclc(capsys, "eval", "-h")
    assert "in an array literal [1, 2.5] the ints become doubles" in help_text


# ---------------------------------------------------------------- bench

def test_seconds_pick_a_unit():
    assert format_seconds(0.000000812) == "0.81 µs"
    assert format_seconds(0.000812) == "812 µs"
    assert format_seconds(0.00341) == "3.41 ms"
    assert format_seconds(0.0341) == "34.1 ms"
    assert format_seconds(1.2) == "1.20 s"


@device
def test_bench_names_device_spread_and_units(capsys):
    code, out, _ = fclc(capsys, "bench", REVERSE, "-e", "revDistribute", "4", "iota:4096", "--repeat", "3")
    assert code == 0
    assert re.fullmatch(r"revDistribute 4 iota:4096 on .+ \(.+\): median [\d.]+ (µs|ms|s) over 3 runs "
                        r"\(min [\d.]+ (µs|ms|s), max [\d.]+ (µs|ms|s), ±[\d.]+%\), [\d.]+ GB/s effective "
                        r"\(32768 bytes read and written\)\n", out), out


@device
def test_bench_json_and_test_block_datasets(capsys):
    code, out, _ = fclc(capsys, "bench", REVERSE, "-e", "revGrid", "--repeat", "2", "--json")
    rows = json.loads(out)
    assert code == 0 and [r["arguments"] for r in rows] == ["[1, 2, 3, 4, 5]", "[2.5f, 1.0f]"]
    assert all(r["runs"] == 2 and r["min_s"] <= r["median_s"] <= r["max_s"] for r in rows)
    assert rows[0]["dataset"].endswith("reverse.fcl:35") and rows[0]["bytes"] == 40


@device
def test_bench_timeout_stops_early(capsys):
    code, out, _ = fclc(capsys, "bench", REVERSE, "-e", "revGrid", "iota:64", "--repeat", "100000",
                        "--timeout", "0.2", "--json")
    runs = json.loads(out)[0]["runs"]
    assert code == 0 and 1 <= runs < 100000


def test_bench_without_arguments_or_test_blocks(capsys, tmp_path):
    f = tmp_path / "p.fcl"
    f.write_text("fun g a = push <grid> (reverse a)\n")
    code, _, err = fclc(capsys, "bench", str(f), "-e", "g")
    assert code == 1 and "no arguments given" in err and "has no test block inputs for `g`" in err


# ---------------------------------------------------------------- fclc test

BLOCKS = """sig inc : [int] -> [int]<grid>
fun inc a = push <grid> (mapPull (fn x => x + 1) a)

sig slow : int -> int
fun slow n = foldl (fn a => fn b => a + b) 0 (iota n)

-- == entry: inc
-- input { [1, 2, 3] } output { [2, 3, 4] }
-- input { [1, 2, 3] } output { [2, 3, 5] }
-- input { [1, 2, 3] } output { [2, 3] }

-- == entry: inc
-- input { [1, 2 } output { [2] }

-- == entry: slow
-- input { 100000000 } output { 0 }
-- input { 3 } output { 3 }
"""


@pytest.fixture
def blocks_file(tmp_path):
    f = tmp_path / "blocks.fcl"
    f.write_text(BLOCKS)
    return str(f)


def test_test_reports_details_and_malformed_block_fails_alone(capsys, blocks_file):
    code, out, _ = fclc(capsys, "test", blocks_file, "--evaluator-only", "--timeout", "3")
    lines = out.splitlines()
    assert code == 1
    assert lines[0] == f"ok   {blocks_file}:8 inc (evaluator)"
    assert lines[1] == (f"FAIL {blocks_file}:9 inc evaluator gave [2, 3, 4], expected [2, 3, 5]; length 3; "
                        f"first difference at index 2: expected 5, got 4")
    assert lines[2].endswith("expected [2, 3]; lengths: expected 2, got 3")
    assert lines[3].startswith(f"FAIL {blocks_file}:13: malformed test block:") and "unclosed `[`" in lines[3]
    assert lines[4] == f"FAIL {blocks_file}:16 slow timed out after 3 s (--timeout)"
    assert lines[5] == f"ok   {blocks_file}:17 slow (evaluator)"
    assert lines[6] == "2 passed, 4 failed"


def test_test_in_parallel_prints_in_order(capsys, blocks_file):
    _, serial, _ = fclc(capsys, "test", blocks_file, REVERSE, "--evaluator-only", "--timeout", "3")
    _, parallel, _ = fclc(capsys, "test", blocks_file, REVERSE, "--evaluator-only", "--timeout", "3", "-j", "2")
    assert parallel == serial and serial.endswith("11 passed, 4 failed\n")


def test_test_warns_about_a_file_without_test_blocks(capsys, tmp_path):
    f = tmp_path / "none.fcl"
    f.write_text("val x = 1\n")
    code, out, err = fclc(capsys, "test", str(f), "--evaluator-only")
    assert code == 0 and out == "0 passed, 0 failed\n"
    assert f"warning: {f} has no test blocks" in err


def test_test_whole_file_failure_is_one_failure(capsys, tmp_path):
    f = tmp_path / "bad.fcl"
    f.write_text("val x = 1 +\n-- == entry: x\n-- input { } output { 1 }\n")
    code, out, _ = fclc(capsys, "test", str(f), "--evaluator-only")
    assert code == 1 and out.startswith(f"FAIL {f}: {f}:1:12: error:") and out.endswith("0 passed, 1 failed\n")


@device
def test_test_prints_the_device(capsys):
    code, out, _ = fclc(capsys, "test", REVERSE)
    assert code == 0 and re.match(r"device: .+ \(.+\)\nok   ", out)
    assert out.endswith("9 passed, 0 failed\n")


def test_mismatch_details():
    a = np.array([1, 2, 3], dtype=np.int32)
    assert mismatch(a, np.array([1, 2, 4], dtype=np.int32)) == \
        "; length 3; first difference at index 2: expected 3, got 4"
    assert mismatch((1, a), (1, a[:2])) == "; in the second component, lengths: expected 3, got 2"
    assert mismatch(1, 2) == ""


def test_split_blocks_keeps_line_numbers():
    blocks = split_blocks("x\n-- == entry: a\n-- input { 1 } output { 1 }\n-- == entry: b\n")
    assert [b[0] for b in blocks] == [2, 4]
    assert blocks[0][1].split("\n")[2] == "-- input { 1 } output { 1 }" and blocks[0][1].split("\n")[3] == ""


def test_fclc_version_as_a_command():
    done = subprocess.run([sys.executable, "-m", "fcl.tools.cli", "--version"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("fclc ")


# ---------------------------------------------------------------- --explain in the program's terms

def test_explain_speaks_the_programs_language():
    import fcl
    text = fcl.load_file(str(ROOT / "examples" / "transpose.fcl")).compile("transposeTiled").explain()
    lines = text.splitlines()
    assert lines[1].startswith("arguments: tileDim int")
    assert "  in3_1      int[lengthPull mat]  input: argument 4" in lines
    assert re.search(r"^  local   l\d+ +int\[tileDim \* tileDim\]  \(block level, force at ", text, re.M)
    assert "  local memory: 4 * (tileDim * tileDim + tileDim * tileDim / 32 + 1) bytes per work-group" in lines
    assert " mul " not in text and " div " not in text and "arg1 " not in text and "check#" not in text


DROPS = """sig pairSums : [int] -> [int]<grid>
fun pairSums a = let h = halve a in push <grid> (zipWith (fn x => fn y => x + y) (fst h) (snd h))
sig twice : [int] -> [int]<grid>
fun twice a = pairSums (mapPull (fn x => 2 * x) a)
sig parts : int -> [int] -> [int]<grid>
fun parts n a = let splitUp = fn k => fn b => b in push <grid> (splitUp n a)
"""


def test_explain_and_cost_note_prelude_functions_that_drop_elements(capsys, tmp_path):
    """A use of `halve` (`splitUp`, `coalesce`, ...) in the entry or a declaration it calls gets a
    located note; a local of the same name does not."""
    f = tmp_path / "d.fcl"
    f.write_text(DROPS)
    code, out, _ = fclc(capsys, "compile", str(f), "-e", "twice", "--explain")
    note = f"{f}:2:26: note: `halve` splits an odd length unevenly"
    assert code == 0 and out.splitlines()[-1].startswith(note), out
    code, out, _ = fclc(capsys, "eval", str(f), "-e", "twice", "[1, 2, 3]", "--cost")
    assert code == 0 and out.startswith("[6]\n") and out.splitlines()[-1].startswith(note)
    code, out, _ = fclc(capsys, "compile", str(f), "-e", "parts", "--explain")
    assert code == 0 and "note:" not in out
    import fcl
    assert fcl.load(DROPS, prelude=True).dropping_notes("parts") == []


def test_explain_local_bytes_count_every_warps_copy():
    import fcl
    text = fcl.load_file(str(ROOT / "examples" / "scan.fcl")).compile("scanWarpChunks", block_size=64).explain()
    line = next(l for l in text.splitlines() if l.startswith("  local memory:"))
    assert line.startswith("  local memory: 4 * (2 * (chunk + 1 - 1 + 1)")   # 64 / 32 = 2 warps


def test_source_printer_parenthesises_only_where_needed():
    from types import SimpleNamespace

    from fcl.codegen import kir as K
    from fcl.codegen.plan import ArrayArg, ScalarArg
    from fcl.codegen.plan.explain import _source_printer
    plan = SimpleNamespace(args=(ScalarArg("arg0", "int"), ArrayArg("in1_1", "n1", "int")))
    show = _source_printer(plan, ["chunk", "arr"])
    x, y, n = K.Var("int", "arg0"), K.Var("int", "y"), K.Var("int", "n1")
    assert show(K.Bin("int", "sub", x, K.Bin("int", "sub", y, n))) == "chunk - (y - lengthPull arr)"
    assert show(K.Bin("int", "sub", K.Bin("int", "sub", x, y), n)) == "chunk - y - lengthPull arr"
    assert show(K.Bin("int", "mul", K.Bin("int", "add", x, y), n)) == "(chunk + y) * lengthPull arr"


@device
def test_explain_prints_the_device_local_memory_limit(capsys):
    code, out, _ = fclc(capsys, "compile", str(ROOT / "examples" / "transpose.fcl"), "-e", "transposeTiled",
                        "--explain")
    assert code == 0 and re.search(r"\nlocal memory limit: \d+ bytes per work-group on .+ \(.+\)\n$", out)


def test_test_reports_a_run_time_error_as_eval_does(capsys, tmp_path):
    f = tmp_path / "rt.fcl"
    f.write_text("fun at a i = index a i\n-- == entry: at\n-- input { [1, 2] 5 } output { 1 }\n")
    _, out, _ = fclc(capsys, "test", str(f), "--evaluator-only")
    code, _, err = fclc(capsys, "eval", str(f), "-e", "at", "[1, 2]", "5")
    first = err.splitlines()[0]
    assert code == 1 and out.splitlines()[0] == f"FAIL {f}:3 at evaluator: {first}"


@device
@pytest.mark.skipif(not hasattr(__import__("os"), "openpty"), reason="no pty")
def test_bench_progress_line_on_a_terminal():
    import os
    leader, follower = os.openpty()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "fcl.tools.cli", "bench", REVERSE, "-e", "revGrid", "iota:64",
                           "--repeat", "3"], stdout=subprocess.PIPE, stderr=follower, env=env, timeout=120)
    os.close(follower)
    err = os.read(leader, 65536).decode()
    os.close(leader)
    assert proc.returncode == 0 and "over 3 runs" in proc.stdout.decode()
    assert "\rrevGrid (arguments): run 1/3" in err and "run 3/3" in err
    progress, cleared, rest = err.rpartition("\r\033[K")
    assert cleared and all(line.startswith("fclc: warning: ") for line in rest.splitlines())


@needs_device
def test_pass_runs_an_optional_pass(capsys):
    """`--pass double_buffer` (off by default) compiles and runs a program the pass rewrites,
    with the evaluator's result (5 steps: a pair loop and the odd one); `compile --passes`
    marks it optional; a pass that runs anyway, or no pass of that name, is a located error."""
    prog = str(ROOT / "tests" / "programs" / "irregular.fcl")
    code, want, _ = fclc(capsys, "eval", prog, "-e", "tiledSums", "iota:20")
    assert code == 0
    code, out, _ = fclc(capsys, "run", prog, "-e", "tiledSums", "--pass", "double_buffer", "iota:20")
    assert (code, out) == (0, want)
    code, out, _ = fclc(capsys, "compile", prog, "-e", "tiledSums", "--pass", "double_buffer")
    assert code == 0 and "_db[" in out and "it" in out
    code, out, _ = fclc(capsys, "compile", "--passes")
    assert code == 0 and re.search(r"^double_buffer\s+optional", out, re.M)
    code, _, err = fclc(capsys, "run", prog, "-e", "tiledSums", "--pass", "barriers", "iota:20")
    assert code == 1 and "runs by default" in err and "Traceback" not in err
    code, _, err = fclc(capsys, "run", prog, "-e", "tiledSums", "--pass", "quadruple", "iota:20")
    assert code == 1 and "unknown pass `quadruple`" in err
