"""`fclc test`: run the test blocks written in .fcl files.

Each `input`/`output` pair runs on the reference evaluator and, unless told
otherwise, compiled on the OpenCL device; both must give the expected value
(doubles and floats within 1e-6 relative).  An `error:` test expects a program
error whose message contains the text from the evaluator and, unless told otherwise,
from the compiled program on the device (a value there fails the test).  Prints the device
used, one line per test and a closing `N passed, N failed` line; returns the
exit status.  A problem
with the device itself (EnvironmentProblem: none usable, out of memory) is not a
failed test: it stops the run, and fclc reports it once and exits 2.

Each `-- ==` block is read on its own, so a malformed block fails alone and
the others still run.  A file without test blocks gets a warning on stderr.
A mismatch names both lengths and the first differing index.  `timeout`
fails a test that runs longer (seconds, per test); `jobs` > 1 runs tests in
that many worker processes, printing in file order.
"""
from __future__ import annotations

import ctypes
import re
import signal
import sys
import threading
from dataclasses import dataclass

from fcl.api.literals import EmptyArray, format_value, parse_arg, values_equal
from fcl.api.program import device_local_memory, load_file
from fcl.base.errors import NO_SOURCE, CompilerBug, EnvironmentProblem, FCLError
from fcl.tools.testblocks import parse_test_blocks

BLOCK_START = re.compile(r"^\s*--\s*==")


@dataclass(frozen=True)
class BrokenBlock:
    """A `-- ==` block that could not be read (`line` None: the whole file): it fails alone."""

    line: int | None
    message: str


class CaseTimeout(BaseException):
    """Raised by the timer inside a test that runs too long (BaseException: the evaluator
    turns ordinary exceptions into EvalError)."""


def run_test_files(files, prelude=True, device=None, hw=None, seed=None, out=None,
                   timeout: float | None = None, jobs: int = 1) -> int:
    """Run every test of `files`; `device` None = evaluator only, "" = default device."""
    out = out or sys.stdout
    if device is not None:
        print(f"device: {device_name(device)}", file=out, flush=True)
    tasks = []               # (path, TestCase or BrokenBlock), in file order
    for path in files:
        tasks.extend((path, item) for item in read_tests(path, prelude))
    hw = dict(hw or {})
    if device is not None and hw.get("local_memory") is None:     # the evaluator's too: the same chunks
        hw["local_memory"] = device_local_memory(device or None)
    settings = (prelude, device, hw, seed, timeout)
    passed = failed = 0
    for path, item, (ok, detail) in _results(tasks, settings, jobs):
        where = (f"{path}:{item.line} {item.entry} " if hasattr(item, "entry") else
                 f"{path}:{item.line}: " if item.line is not None else f"{path}: ")
        print(f"{'ok  ' if ok else 'FAIL'} {where}{detail}", file=out, flush=True)
        passed, failed = passed + ok, failed + (not ok)
    print(f"{passed} passed, {failed} failed", file=out)
    return 0 if failed == 0 else 1


def device_name(spec: str) -> str:
    # imported here: it imports pyopencl, which `fclc test --evaluator-only` never loads
    from fcl.runtime.device import choose_device
    d = choose_device(spec or None)
    return f"{d.name.strip()} ({d.platform.name.strip()})"


def read_tests(path: str, prelude: bool) -> list:
    """The test cases and broken blocks of one file, in order (one BrokenBlock for a file that
    cannot be read or does not load)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as e:
        return [BrokenBlock(None, f"cannot read it ({e.strerror})")]
    loaded = program(path, prelude)
    if isinstance(loaded, str):
        return [BrokenBlock(None, loaded)]
    items: list = []
    blocks = split_blocks(text)
    if not blocks:
        print(f"warning: {path} has no test blocks (a block starts with a comment line "
              f"`-- == entry: NAME`, then `-- input {{ ... }} output {{ ... }}`)", file=sys.stderr)
    for first, block_text in blocks:
        try:
            items.extend(parse_test_blocks(block_text, path))
        except FCLError as e:
            items.append(BrokenBlock(e.span.line if e.span else first, f"malformed test block: {e.message}"))
    return items


def split_blocks(text: str) -> list[tuple[int, str]]:
    """File text -> (first line, text with every other block's lines blanked) per `-- ==` block;
    the blanking keeps line numbers."""
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if BLOCK_START.match(line)]
    blocks = []
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        kept = ["" if not start <= i < end else line for i, line in enumerate(lines)]
        blocks.append((start + 1, "\n".join(kept)))
    return blocks


def _results(tasks, settings, jobs):
    """(path, item, (ok, detail)) for each task, in order; in `jobs` processes when > 1."""
    if jobs <= 1 or len(tasks) <= 1:
        for path, item in tasks:
            yield path, item, run_task(path, item, settings)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(run_task, path, item, settings) for path, item in tasks]
        for (path, item), future in zip(tasks, futures):
            yield path, item, future.result()


_PROGRAMS: dict = {}         # per process: (path, prelude) -> Program or the error text
_KERNELS: dict = {}


def run_task(path, item, settings) -> tuple[bool, str]:
    """One test (or broken block, or unreadable file) -> (passed, detail)."""
    prelude, device, hw, seed, timeout = settings
    if isinstance(item, BrokenBlock):
        return False, item.message
    prog = program(path, prelude)
    if isinstance(prog, str):
        return False, prog
    return with_timeout(timeout, lambda: run_case(prog, item, device, hw, seed, _KERNELS))


def program(path: str, prelude: bool):
    key = (path, prelude)
    if key not in _PROGRAMS:
        try:
            _PROGRAMS[key] = load_file(path, prelude=prelude)
        except FCLError as e:
            _PROGRAMS[key] = e.render()
        except OSError as e:
            _PROGRAMS[key] = f"cannot read it ({e.strerror})"
    return _PROGRAMS[key]


def with_timeout(seconds: float | None, action):
    """action() -> its result, or (False, `timed out ...`) after `seconds`.

    In the main thread a SIGALRM timer interrupts the test; in another thread
    (fclc runs commands in a worker so that Ctrl-C stays prompt) a timer thread
    raises CaseTimeout in it asynchronously, at its next Python instruction."""
    if not seconds:
        return action()
    expired = (False, f"timed out after {seconds:g} s (--timeout)")
    stop = _alarm(seconds) if threading.current_thread() is threading.main_thread() else _async_timer(seconds)
    try:
        try:
            return action()
        finally:
            stop()
    except CaseTimeout:
        return expired


def _alarm(seconds: float):
    """Start a SIGALRM timer that raises CaseTimeout; returns the function that stops it."""
    def expire(signum, frame):
        raise CaseTimeout()
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)

    def stop():
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return stop


def _async_timer(seconds: float):
    """Start a timer thread that raises CaseTimeout in this thread; returns its stop function."""
    target, lock, done = threading.get_ident(), threading.Lock(), []

    def expire():
        with lock:
            if not done:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(target), ctypes.py_object(CaseTimeout))
    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()

    def stop():
        with lock:
            done.append(True)
        timer.cancel()
    return stop


def run_case(prog, case, device, hw, seed, kernels) -> tuple[bool, str]:
    try:
        args = [parse_arg(a, seed=seed, position=k + 1) for k, a in enumerate(case.args)]
    except FCLError as e:
        return False, f"bad input: {e.message}"
    if case.error is not None:
        return expect_error(prog, case, args, device, hw, kernels)
    try:
        expected = parse_arg(case.expected)
    except FCLError as e:
        return False, f"bad output: {e.message}"
    where = ["evaluator"]
    try:
        result = prog.evaluate(case.entry, *args, **hw)
    except FCLError as e:
        return False, f"evaluator: {located(e)}"
    if not values_equal(expected, result):
        return False, f"evaluator gave {short(format_value(result))}, expected {short(case.expected)}" \
                      f"{mismatch(expected, result)}"
    if device is not None:
        try:
            result = run_on_device(prog, case, args, device, hw, kernels)
        except FCLError as e:
            return False, f"device: {located(e)}"
        except _DeviceBug as e:
            return False, str(e)
        if not values_equal(expected, result):
            return False, f"device gave {short(format_value(result))}, expected {short(case.expected)}" \
                          f"{mismatch(expected, result)}"
        where.append("device")
    return True, f"({', '.join(where)})"


def expect_error(prog, case, args, device, hw, kernels) -> tuple[bool, str]:
    """An `error:` test: the evaluator and the compiled program (on the device) must both
    report an error whose message contains the text."""
    want = case.error.lower()
    try:
        result = prog.evaluate(case.entry, *args, **hw)
    except FCLError as e:
        if want not in e.message.lower():
            return False, f"expected an error containing '{case.error}', got: {e.message}"
    else:
        return False, f"expected an error containing '{case.error}', got {short(format_value(result))}"
    if device is None:
        return True, f"(error: {case.error})"
    try:
        result = run_on_device(prog, case, args, device, hw, kernels)
    except FCLError as e:
        if want not in e.message.lower():
            return False, f"device: expected an error containing '{case.error}', got: {located(e)}"
        return True, f"(error: {case.error}; evaluator, device)"
    except _DeviceBug as e:
        return False, str(e)
    return False, (f"device gave {short(format_value(result))} where the evaluator reports an error "
                   f"containing '{case.error}'")


class _DeviceBug(Exception):
    """A compiled test that failed through a bug in FCL (the message says so)."""


def run_on_device(prog, case, args, device, hw, kernels):
    """The entry compiled (once per program and entry) and run on the device on `args`:
    the result, or the program's FCLError; _DeviceBug for a bug in FCL."""
    try:
        key = (id(prog), case.entry)
        if key not in kernels:
            kernels[key] = prog.compile(case.entry, device=device or None, **hw)
        return kernels[key](*args)
    except (FCLError, EnvironmentProblem):
        raise           # the program's error; the device's problem, which fclc reports once and exits 2
    except CompilerBug as e:
        raise _DeviceBug(f"device: internal compiler error (a bug in FCL): {short(str(e), 300)}") from None
    except Exception as e:  # noqa: BLE001 - one broken test must not stop the others
        raise _DeviceBug(f"device: internal error (a bug in FCL): {type(e).__name__}: {short(str(e), 300)}") from None


def mismatch(expected, actual, path: str = "") -> str:
    """`; lengths 8 and 7` / `; first difference at index 3: expected 4, got 5` (or '')."""
    seq = (list, tuple) if not isinstance(expected, tuple) else (list,)
    if isinstance(expected, tuple) and isinstance(actual, tuple) and len(expected) == len(actual) == 2:
        for k, part in enumerate(("first", "second")):
            if not values_equal(expected[k], actual[k]):
                return mismatch(expected[k], actual[k], f"{path}in the {part} component, ")
        return ""
    if not _is_array(expected, seq) or not _is_array(actual, seq):
        return ""
    n, m = len(expected), len(actual)
    if isinstance(expected, EmptyArray) or isinstance(actual, EmptyArray):
        return f"; {path}lengths: expected {n}, got {m}" if n != m else ""
    lengths = f"lengths: expected {n}, got {m}; " if n != m else f"length {n}; "
    for i in range(min(n, m)):
        if not values_equal(expected[i], actual[i]):
            return (f"; {path}{lengths}first difference at index {i}: expected "
                    f"{short(format_value(expected[i]), 60)}, got {short(format_value(actual[i]), 60)}")
    return f"; {path}lengths: expected {n}, got {m}" if n != m else ""


def _is_array(v, seq) -> bool:
    import numpy as np
    return isinstance(v, seq) or (isinstance(v, np.ndarray) and v.ndim >= 1)


def located(e: FCLError) -> str:
    """`FILE:LINE:COL: error: message` (as `fclc eval` prints its first line), or the message."""
    if e.span is None or e.span.source is NO_SOURCE:
        return e.message
    return f"{e.span.location()}: error: {e.message}"


def short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + " ..."
