"""The child process of the differential tester: runs cases, one JSON line each.

Reads a JSON case per line on stdin; for each, prints `phase <name>` lines as
it goes (so the parent can tell a slow evaluator from a compiler that hangs)
and then one `result <json>` line: {"status", "detail"}.  Run in its own
process so that a segfaulting OpenCL driver or a hang costs one case only.
Under Oclgrind (`--oclgrind`) every pyopencl buffer is kept alive (see
tests/runtime/test_oclgrind.py) and the log's growth during a case is its verdict.

A compiled program gives the evaluator's value or the evaluator's located
run-time error.  So a run-time error of the compiled program (a bounds
check, a while that does not end on the device) where the evaluator gives a
value is a `mismatch`, and so is a value where the evaluator reports a
run-time error (division by zero, a part of the wrong length, a negative
length...); where both report one the verdict is `error` (it passes; the
detail says whether the two messages are of the same class).  A located
compile-time error is a refusal either way.  Two more checks on a case that agrees: its OpenCL source stays under
SOURCE_LIMIT characters (code that grows exponentially is `bloat`), and with
`"emulate": true` the compiled plan also runs on the kernel-IR interpreter
(fcl.runtime.emulate), which finds what a CPU device forgives: barriers that
the work-items of a group reach differently, out-of-bounds accesses, reads
of undefined names (`emulator`).  Emulation is bounded by EMULATE_SECONDS
(a case that takes longer passes unchecked).
"""
from __future__ import annotations

import json
import os
import signal
import sys
import traceback

from fcl.api.kernel import value_type
from fcl.api.literals import format_value, parse_arg, values_equal
from fcl.api.program import device_local_memory, load
from fcl.base.errors import NO_SOURCE, CompileError, CompilerBug, EvalError, FCLError, ParseError, TypeCheckError

SOURCE_LIMIT = 400_000      # characters of OpenCL; the generator's programs stay far below
EMULATE_SECONDS = 5.0


class EmulationTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise EmulationTimeout()


def keep_buffers():
    import pyopencl as cl
    kept = []

    class KeptBuffer(cl.Buffer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            kept.append(self)
    cl.Buffer = KeptBuffer


def phase(name: str):
    print(f"phase {name}", flush=True)


def located(e) -> bool:
    return e.span is not None and e.span.source is not NO_SOURCE


# the kinds of run-time error, by message (the device need not report the same error as
# the evaluator when there are several: it runs the elements in another order)
ERROR_CLASSES = (("division by zero", "division by zero"), ("out of range", "index out of range"),
                 ("concat", "part length"), ("interleave", "interleave position"), ("placeConcat", "placeConcat position"),
                 ("must not be negative", "negative length"), ("is negative", "negative length"),
                 ("never written", "position never written"), ("terminat", "while that does not end"),
                 ("while ran", "while that does not end"))


def error_class(message: str) -> str:
    for key, name in ERROR_CLASSES:
        if key in message:
            return name
    return "other"


def run_case(case: dict, device: str | None) -> dict:
    hw = dict(block_size=case["block_size"], warp_size=case["warp_size"], num_groups=case["num_groups"],
              local_memory=device_local_memory(device))     # the evaluator's as the device's
    phase("check")
    try:
        prog = load(case["source"], name=case.get("name", "fuzz.fcl"))
    except (ParseError, TypeCheckError) as e:
        return {"status": "invalid", "detail": e.render()}
    values = [parse_arg(a, position=k + 1) for k, a in enumerate(case["args"])]
    phase("eval")
    failure = None          # the evaluator's run-time error, which the compiled program must report too
    try:
        expected = prog.evaluate(case["entry"], *values, **hw)
    except EvalError as e:
        failure = e
    except FCLError as e:
        return {"status": "skip", "detail": e.render()}
    except RecursionError:
        return {"status": "skip", "detail": "evaluator recursion"}
    phase("compile")
    running = False
    try:
        kernel = prog.compile(case["entry"], device=device, **hw)
        kernel.specialise(tuple(value_type(v) for v in prog.coerce(case["entry"], list(values))))
        phase("run")
        running = True
        try:
            actual = kernel(*values)
        except EvalError as e:
            if failure is not None:
                if not located(e):
                    return {"status": "unlocated", "detail": f"the evaluator reports {failure.render()}\n"
                                                             f"the compiled program {e.render()}"}
                same = error_class(e.message) == error_class(failure.message)
                return {"status": "error",
                        "detail": f"both report a run-time error ({'same class' if same else 'classes differ'}): "
                                  f"evaluator: {failure.message}; compiled: {e.message}"}
            # the evaluator gave a value: a run-time error of the compiled program (a bounds
            # check, a while that does not end) is a disagreement, not a refusal
            return {"status": "mismatch", "detail": f"the compiled program reports an error, the evaluator "
                                                    f"gives {format_value(expected)[:300]}:\n{e.render()}"}
    except CompilerBug as e:
        return {"status": "crash", "detail": f"internal compiler error: {e}"}
    except FCLError as e:
        if not located(e):
            return {"status": "unlocated", "detail": e.render()}
        if failure is not None and running and not isinstance(e, CompileError):
            return {"status": "mismatch", "detail": f"the compiled program reports {type(e).__name__} "
                                                    f"{e.render()}\nwhere the evaluator reports the run-time "
                                                    f"error {failure.render()}"}
        return {"status": "refused", "detail": e.render()}
    except Exception as e:  # noqa: BLE001 - every other exception is a bug to report
        tb = traceback.format_exc(limit=6)
        return {"status": "crash", "detail": f"{type(e).__name__}: {str(e)[:2000]}\n{tb[-3000:]}"}
    if failure is not None:
        return {"status": "mismatch", "detail": f"device returned a value where the evaluator reports: "
                                                f"{failure.render()}\ndevice {format_value(actual)[:400]}"}
    if not values_equal(expected, actual):
        return {"status": "mismatch",
                "detail": f"device {format_value(actual)[:400]}\nevaluator {format_value(expected)[:400]}"}
    size = len(kernel.build_for(*values).source)
    if size > SOURCE_LIMIT:
        return {"status": "bloat", "detail": f"{size} characters of OpenCL (more than {SOURCE_LIMIT})"}
    if case.get("emulate"):
        return emulate(kernel, values, expected)
    return {"status": "ok", "detail": ""}


def emulate(kernel, values, expected) -> dict:
    """The compiled plan on the kernel-IR interpreter, EMULATE_SECONDS at most."""
    phase("emulate")
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, EMULATE_SECONDS)
    try:
        actual = kernel.emulate(*values)
    except EmulationTimeout:
        return {"status": "ok", "detail": f"not emulated: more than {EMULATE_SECONDS:.0f} s"}
    except CompilerBug as e:
        return {"status": "emulator", "detail": f"kernel-IR interpreter: {e}"}
    except Exception as e:  # noqa: BLE001 - the device ran it: any error here is a bug
        tb = traceback.format_exc(limit=6)
        return {"status": "emulator", "detail": f"{type(e).__name__}: {str(e)[:2000]}\n{tb[-3000:]}"}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    if values_equal(expected, actual):
        return {"status": "ok", "detail": ""}
    return {"status": "mismatch",
            "detail": f"emulator {format_value(actual)[:400]}\nevaluator {format_value(expected)[:400]}"}


def main():
    oclgrind = "--oclgrind" in sys.argv
    device = "Oclgrind" if oclgrind else None
    if oclgrind:
        keep_buffers()
    log_path = os.environ.get("OCLGRIND_LOG", "")
    for line in sys.stdin:
        case = json.loads(line)
        before = os.path.getsize(log_path) if oclgrind and os.path.exists(log_path) else 0
        result = run_case(case, device)
        if oclgrind and os.path.exists(log_path) and os.path.getsize(log_path) > before:
            with open(log_path, encoding="utf-8", errors="replace") as f:
                f.seek(before)
                log = f.read().strip()
            if log and result["status"] in ("ok", "mismatch"):
                result = {"status": "oclgrind", "detail": log[:3000]}
        print("result " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
