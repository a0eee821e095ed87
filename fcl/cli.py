"""`fclc`: the command line (interface.md).  Calls only the facade (fcl.program)
and fcl.values.  A mistake in the user's program or arguments prints a located
diagnostic and exits 1; a problem with the environment exits 2; a bug in FCL
itself prints one line saying so and exits 3.  Never a Python traceback.
"""
from __future__ import annotations

import argparse
import statistics
import sys

import numpy as np

from fcl.errors import CompilerBug, EnvironmentProblem, FCLError


def main(argv=None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        bad = [x for x in extra if x.startswith("-") and not _is_number(x)]
        if bad or getattr(args, "command", None) not in ("eval", "run", "bench"):
            parser.error(f"unrecognized arguments: {' '.join(bad or extra)}")
        args.args = list(args.args) + extra
    if not getattr(args, "command", None):
        parser.print_help()
        return 1
    if args.command in INTERRUPTIBLE:
        return interruptible(lambda: dispatch(args))
    return dispatch(args)


# Commands that wait on OpenCL (builds, kernels): they run in a worker thread so
# that Ctrl-C, which Python sees only in the main thread between bytecodes, stops
# them at once even while a driver call blocks.
INTERRUPTIBLE = ("run", "bench", "test", "devices")


def dispatch(args) -> int:
    """Run the command; map every error to its message and exit status."""
    try:
        status = args.func(args) or 0
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        return broken_pipe()
    except FCLError as e:
        print(e.render(), file=sys.stderr)
        return 1
    except EnvironmentProblem as e:
        print(f"fclc: {e}", file=sys.stderr)
        return 2
    except CompilerBug as e:
        print(f"fclc: internal compiler error (a bug in FCL, please report it): {e}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("fclc: interrupted", file=sys.stderr)
        return 130
    except RecursionError:
        print("fclc: the program nests too deeply for this implementation", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - the last line of defence against tracebacks
        print(f"fclc: internal error (a bug in FCL, please report it): {type(e).__name__}: {e}",
              file=sys.stderr)
        return 3


def broken_pipe() -> int:
    """The reader of our output went away (`fclc eval ... | head`): stop quietly,
    with the status a process killed by SIGPIPE has."""
    import os
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())     # the interpreter's final flush must not fail
        os.close(null)
    except (OSError, ValueError):
        pass
    return 141


def interruptible(work) -> int:
    """work() in a worker thread; Ctrl-C prints one line and ends the process
    with status 130 at once (a running kernel is not waited for)."""
    import os
    import threading
    box = []
    old = threading.stack_size()
    threading.stack_size(256 << 20)        # the evaluator recurses deeply (fcl.eval.machine)
    try:
        worker = threading.Thread(target=lambda: box.append(work()), name="fclc", daemon=True)
        worker.start()
    finally:
        threading.stack_size(old)
    try:
        while worker.is_alive():
            worker.join(0.1)
    except KeyboardInterrupt:
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        print("fclc: interrupted", file=sys.stderr, flush=True)
        os._exit(130)
    return box[0] if box else 3


# ---------------------------------------------------------------- argument parsing

def _is_number(text: str) -> bool:
    try:
        float(text.rstrip("f"))
        return True
    except ValueError:
        return False


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--no-prelude", action="store_true", help="do not load prelude/prelude.fcl")
    common.add_argument("--block-size", type=int, default=None, metavar="N", help="#BlockSize (default 256)")
    common.add_argument("--warp-size", type=int, default=None, metavar="N", help="#WarpSize (default 32)")
    common.add_argument("--num-groups", type=int, default=None, metavar="N",
                        help="#NumGroups, the most work-groups launched (default 1024)")
    common.add_argument("--device", default=None, metavar="SUBSTRING",
                        help="OpenCL device by platform or device name (default: PYOPENCL_CTX, else the first CPU device)")
    common.add_argument("--seed", type=int, default=None, help="seed for random:N arguments")
    passes = argparse.ArgumentParser(add_help=False)
    passes.add_argument("-O", dest="opt_level", type=int, choices=(0, 1), default=None,
                        help="-O0: only the required passes; -O1 (default): every optimising pass")
    passes.add_argument("--no-pass", action="append", default=[], metavar="NAME",
                        help="switch one optimising pass off (repeatable; `fclc compile --passes` lists them)")

    p = argparse.ArgumentParser(prog="fclc", description="FCL: low-level functional GPU kernels")
    sub = p.add_subparsers(dest="command")

    c = sub.add_parser("check", parents=[common], help="parse and type-check; print each declaration's type")
    c.add_argument("file")
    c.set_defaults(func=cmd_check)

    for name, func, text in (("eval", cmd_eval, "run with the reference evaluator"),
                             ("run", cmd_run, "compile and run on an OpenCL device"),
                             ("bench", cmd_bench, "time the compiled kernels (median of runs)")):
        e = sub.add_parser(name, parents=[common] + ([passes] if name != "eval" else []), help=text)
        e.add_argument("file")
        e.add_argument("-e", "--entry", required=True, metavar="NAME")
        e.add_argument("args", nargs="*", metavar="ARG")
        e.add_argument("-o", "--output", metavar="OUT.npy", help="write an array result to a .npy file")
        if name == "eval":
            e.add_argument("--cost", action="store_true", help="also print work, span, memory traffic, barriers")
        if name == "bench":
            e.add_argument("--repeat", type=int, default=20, help="timed runs (default 20)")
        if name != "eval":
            static_options(e, dynamic=True)
        e.set_defaults(func=func)

    k = sub.add_parser("compile", parents=[common, passes], help="compile to OpenCL C")
    k.add_argument("file", nargs="?")
    k.add_argument("-e", "--entry", metavar="NAME", action="append")
    k.add_argument("--passes", action="store_true", help="list the kernel-IR passes in order and exit")
    k.add_argument("-o", "--output", metavar="OUT")
    k.add_argument("--emit", choices=("cl", "py", "json"), default="cl")
    k.add_argument("--explain", action="store_true", help="print the launch plan")
    k.add_argument("--dump", metavar="WHAT", type=dump_choice,
                   help="print an intermediate form: ast, types, kir (after every pass), "
                        "kir-after=NAME (after pass NAME; kir-after=lower: before any pass) or cl")
    static_options(k, dynamic=False)
    k.set_defaults(func=cmd_compile)

    t = sub.add_parser("test", parents=[common], help="run the test blocks of FILEs")
    t.add_argument("files", nargs="+", metavar="FILE")
    t.add_argument("--evaluator-only", action="store_true", help="do not run on the OpenCL device")
    t.set_defaults(func=cmd_test)

    d = sub.add_parser("devices", parents=[common],
                       help="list the OpenCL devices, whether each builds kernels, and the default")
    d.set_defaults(func=cmd_devices)

    r = sub.add_parser("repl", parents=[common], help="interactive session")
    r.add_argument("file", nargs="?")
    r.set_defaults(func=cmd_repl)
    return p


def dump_choice(text: str) -> str:
    if text in ("ast", "types", "kir", "cl") or text.startswith("kir-after="):
        return text
    raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from ast, types, kir, kir-after=NAME, cl)")


def static_options(p: argparse.ArgumentParser, dynamic: bool):
    p.add_argument("--static", action="append", default=[], metavar="NAME=VALUE",
                   help="compile parameter NAME (or 1-based position) in as the constant VALUE (repeatable)")
    if dynamic:
        p.add_argument("--dynamic", action="append", default=[], metavar="NAME",
                       help="pass int/bool parameter NAME at run time instead of compiling its value in "
                            "(repeatable; `all` for every parameter)")


# ---------------------------------------------------------------- commands

def load(args, path=None):
    import fcl
    return fcl.load_file(path or args.file, prelude=not args.no_prelude)


def hw_options(args) -> dict:
    return {"block_size": args.block_size, "warp_size": args.warp_size, "num_groups": args.num_groups}


def compile_options(args, dump_after=()) -> dict:
    """Hardware and pass options of `compile`, `run` and `bench`."""
    return {**hw_options(args), "device": args.device, "opt_level": args.opt_level,
            "no_pass": args.no_pass, "dump_after": dump_after, **static_args(args)}


def static_args(args) -> dict:
    """The keyword arguments of Program.compile for --static and --dynamic."""
    from fcl.errors import ArgumentError
    from fcl.values import parse_arg
    static = {}
    for text in args.static:
        name, eq, value = text.partition("=")
        if not eq or not name or not value:
            raise ArgumentError(f"--static {text}: expected NAME=VALUE, for example --static tileDim=32")
        static[name] = parse_arg(value, seed=args.seed)
    dynamic = getattr(args, "dynamic", [])
    return {"static": static, "dynamic": True if "all" in dynamic else dynamic}


def parse_args(args) -> list:
    from fcl.values import parse_arg
    return [parse_arg(text, seed=args.seed, position=k + 1) for k, text in enumerate(args.args)]


def cmd_check(args):
    print_types(load(args))


def print_types(prog):
    for name, scheme in prog.declarations():
        print(f"{name} : {scheme}")


def cmd_eval(args):
    prog = load(args)
    values = parse_args(args)
    result, report = prog.evaluate_with_cost(args.entry, *values, cost=args.cost, **hw_options(args))
    emit_result(args, result)
    if args.cost and report is not None:
        print(report.format())


def cmd_run(args):
    prog = load(args)
    values = parse_args(args)
    kernel = prog.compile(args.entry, **compile_options(args))
    emit_result(args, kernel(*values))


def cmd_bench(args):
    prog = load(args)
    values = parse_args(args)
    kernel = prog.compile(args.entry, **compile_options(args))
    values = kernel.full_args(values)
    result = kernel(*values)
    times = kernel.time(*values, repeat=max(1, args.repeat))
    median = statistics.median(times)
    moved = sum(np.asarray(v).nbytes for v in values if isinstance(v, np.ndarray)) + np.asarray(result).nbytes
    print(f"{args.entry}: median {median * 1e6:.1f} us over {len(times)} runs "
          f"(min {min(times) * 1e6:.1f} us), {moved / median / 1e9:.2f} GB/s effective "
          f"({moved} bytes read and written)")


def emit_result(args, result):
    from fcl.values import format_value
    if getattr(args, "output", None):
        if not isinstance(result, np.ndarray):
            from fcl.errors import ArgumentError
            raise ArgumentError(f"-o {args.output}: the result is not a one-dimensional array")
        writing(args.output, lambda: np.save(args.output, result))
        return
    print(format_value(result))


def writing(path: str, write):
    """write(), with a path that cannot be written as the user's error (exit 1)."""
    try:
        write()
    except OSError as e:
        from fcl.errors import ArgumentError
        raise ArgumentError(f"-o {path}: cannot write it ({e.strerror or e})") from None


def cmd_compile(args):
    if args.passes:
        from fcl.codegen.passes import describe_passes
        print(describe_passes())
        return
    if not args.file or not args.entry:
        from fcl.errors import ArgumentError
        raise ArgumentError("compile needs a FILE and at least one -e NAME (or --passes)")
    prog = load(args)
    if args.dump == "ast":
        from fcl.syntax import print_program
        print(print_program(prog.ast))
        return
    if args.dump == "types":
        print_types(prog)
        return
    after = args.dump.partition("=")[2] if args.dump and args.dump.startswith("kir-after=") else None
    kernels = [prog.compile(name, **compile_options(args, [after] if after else [])) for name in args.entry]
    if args.dump == "kir" or after:
        print("\n\n".join(k.kir(after) for k in kernels))
        return
    if args.explain:
        print("\n\n".join(k.explain() for k in kernels))
        return
    if args.emit == "py":
        from fcl.codegen.pymodule import emit_module
        text = emit_module([k.plan for k in kernels], [k.opencl_source for k in kernels], args.file)
    elif args.emit == "json":
        from fcl.codegen.plan import json_text
        text = json_text([k.plan for k in kernels])
    else:
        text = "\n".join(k.opencl_source for k in kernels)
    if args.output:
        writing(args.output, lambda: open(args.output, "w").write(text))
    else:
        print(text, end="" if text.endswith("\n") else "\n")


def cmd_test(args):
    from fcl.testrun import run_test_files
    return run_test_files(args.files, prelude=not args.no_prelude, device=None if args.evaluator_only else (args.device or ""),
                          hw=hw_options(args), seed=args.seed)


def cmd_devices(args):
    from fcl.runtime.device import survey
    lines, problem = survey(args.device)
    print("\n".join(lines))
    if problem is not None:
        raise problem


def cmd_repl(args):
    from fcl.repl import run_repl
    return run_repl(args)


if __name__ == "__main__":
    sys.exit(main())
