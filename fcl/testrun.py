"""`fclc test`: run the test blocks written in .fcl files.

Each `input`/`output` pair runs on the reference evaluator and, unless told
otherwise, compiled on the OpenCL device; both must give the expected value
(doubles and floats within 1e-6 relative).  An `error:` test expects a program
error from the evaluator whose message contains the text.  Prints one line per
test and a closing `N passed, N failed` line; returns the exit status.  A problem
with the device itself (EnvironmentProblem: none usable, out of memory) is not a
failed test: it stops the run, and fclc reports it once and exits 2.
"""
from __future__ import annotations

import sys

from fcl.errors import CompilerBug, EnvironmentProblem, FCLError


def run_test_files(files, prelude=True, device=None, hw=None, seed=None, out=sys.stdout) -> int:
    """Run every test of `files`; `device` None = evaluator only, "" = default device."""
    passed = failed = 0
    for path in files:
        p, f = run_file(path, prelude, device, hw or {}, seed, out)
        passed, failed = passed + p, failed + f
    print(f"{passed} passed, {failed} failed", file=out)
    return 0 if failed == 0 else 1


def run_file(path, prelude, device, hw, seed, out) -> tuple[int, int]:
    import fcl
    from fcl.testblocks import parse_test_blocks
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        cases = parse_test_blocks(text, path)
        prog = fcl.load_file(path, prelude=prelude)
    except FCLError as e:
        print(f"FAIL {path}: {e.render()}", file=out)
        return 0, 1
    except OSError as e:
        print(f"FAIL {path}: cannot read it ({e.strerror})", file=out)
        return 0, 1
    passed = failed = 0
    kernels: dict = {}
    for case in cases:
        ok, detail = run_case(prog, case, device, hw, seed, kernels)
        print(f"{'ok  ' if ok else 'FAIL'} {path}:{case.line} {case.entry} {detail}", file=out)
        passed, failed = passed + ok, failed + (not ok)
    return passed, failed


def run_case(prog, case, device, hw, seed, kernels) -> tuple[bool, str]:
    from fcl.values import format_value, parse_arg, values_equal
    try:
        args = [parse_arg(a, seed=seed, position=k + 1) for k, a in enumerate(case.args)]
    except FCLError as e:
        return False, f"bad input: {e.message}"
    if case.error is not None:
        try:
            result = prog.evaluate(case.entry, *args, **hw)
        except FCLError as e:
            if case.error.lower() in e.message.lower():
                return True, f"(error: {case.error})"
            return False, f"expected an error containing '{case.error}', got: {e.message}"
        return False, f"expected an error containing '{case.error}', got {short(format_value(result))}"
    expected = parse_arg(case.expected)
    where = ["evaluator"]
    try:
        result = prog.evaluate(case.entry, *args, **hw)
    except FCLError as e:
        return False, f"evaluator: {e.message}"
    if not values_equal(expected, result):
        return False, f"evaluator gave {short(format_value(result))}, expected {short(case.expected)}"
    if device is not None:
        try:
            key = case.entry
            if key not in kernels:
                kernels[key] = prog.compile(case.entry, device=device or None, **hw)
            result = kernels[key](*args)
        except FCLError as e:
            return False, f"device: {e.message}"
        except EnvironmentProblem:
            raise           # the device, not this test: fclc reports it once and exits 2
        except CompilerBug as e:
            return False, f"device: internal compiler error (a bug in FCL): {short(str(e), 300)}"
        except Exception as e:  # noqa: BLE001 - one broken test must not stop the others
            return False, f"device: internal error (a bug in FCL): {type(e).__name__}: {short(str(e), 300)}"
        if not values_equal(expected, result):
            return False, f"device gave {short(format_value(result))}, expected {short(case.expected)}"
        where.append("device")
    return True, f"({', '.join(where)})"


def short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + " ..."
