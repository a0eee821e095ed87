"""`fclc`: the command line (interface.md).  Programs through fcl.api.program, arguments and
results through fcl.api.literals; the other commands' modules (bench, tune, testrun, repl)
and anything that imports pyopencl load when their command runs.  A mistake in the user's program or arguments prints a located
diagnostic and exits 1; a problem with the environment exits 2; a bug in FCL
itself prints one line saying so and exits 3.  Never a Python traceback.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from fcl.api.literals import ELIDE_THRESHOLD as ELIDE
from fcl.api.literals import count_elements, format_elided, format_value, os_problem, parse_arg, rejoin
from fcl.api.program import load_file
from fcl.base.errors import ArgumentError, CompilerBug, EnvironmentProblem, FCLError
from fcl.codegen.passes import describe_passes
from fcl.codegen.plan import json_text
from fcl.runtime.tuned import HARDWARE
from fcl.syntax import print_program

# fcl.runtime.device, fcl.runtime.pymodule and fcl.tools.bench import pyopencl, and
# fcl.tools.testrun and fcl.tools.repl take several ms to import: only the commands that
# use them import them, so that the others start without them.

def runtime_device():
    from fcl.runtime import device      # it imports pyopencl
    return device


def main(argv=None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        bad = [x for x in extra if x.startswith("-") and not _is_number(x) and not _is_fragment(x)]
        if bad or getattr(args, "command", None) not in ("eval", "run", "bench", "tune"):
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
INTERRUPTIBLE = ("run", "bench", "tune", "test", "devices")


def dispatch(args) -> int:
    """Run the command; map every error to its message and exit status."""
    try:
        if getattr(args, "verbose", False):
            runtime_device().set_verbose()
        status = args.func(args) or 0
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        return broken_pipe()
    except FCLError as e:
        print(e.render(color=use_color(getattr(args, "color", "auto"), sys.stderr)), file=sys.stderr)
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

def use_color(choice: str, stream) -> bool:
    """--color always/never, or auto: a terminal, NO_COLOR unset or empty, TERM not `dumb`."""
    import os
    if choice in ("always", "never"):
        return choice == "always"
    return (stream.isatty() and not os.environ.get("NO_COLOR")
            and os.environ.get("TERM", "") != "dumb")


def _is_fragment(text: str) -> bool:
    """`-3]`, `-2.5),`: the tail of an array or pair literal that the shell split at spaces."""
    import re
    return re.fullmatch(r"-\d[\d.eEf]*[\])]*,?", text) is not None


def _is_number(text: str) -> bool:
    try:
        float(text.rstrip("f"))
        return True
    except ValueError:
        return False


ARG_HELP = """\
arguments (ARG), one per parameter of NAME, in order:
  17  -3  2.5  2.5f  true          int, int, double, float (f suffix), bool
  [1, 2, 3]  [[1, 2], [3, 4]]      arrays (quote them for the shell: '[1, 2, 3]')
  (1, [2, 3])                      a pair
  iota:N                           the int array [0, 1, ..., N-1]
  random:N[:int|double|float|bool] N random values: ints in [0, 100), doubles and
                                   floats in [0, 1); the same in every run
                                   (seed 1; --seed S draws others)
  @file.npy                        a 1-D NumPy array (int32, float32, float64, bool)
Ints are taken as doubles (or floats) where the parameter is double (or float),
and in an array literal [1, 2.5] the ints become doubles too."""

EXAMPLES = {
    "check": "examples:\n  fclc check examples/reverse.fcl\n  fclc check --color never broken.fcl",
    "eval": "examples:\n  fclc eval examples/reverse.fcl -e revDistribute 4 iota:16\n"
            "  fclc eval examples/reduce.fcl -e sumChunks 8 iota:32 --cost",
    "run": "examples:\n  fclc run examples/reverse.fcl -e revDistribute 4 iota:16\n"
           "  mpiexec -n 2 fclc run --distributed examples/distributed.fcl -e total iota:1000000\n"
           "  fclc run examples/reduce.fcl -e sumChunksD 512 random:1048576:double -o sums.npy",
    "bench": "examples:\n  fclc bench examples/reduce.fcl -e sumChunks 512 iota:16777216\n"
             "  fclc bench examples/reverse.fcl -e revDistribute      (the datasets of its test blocks)",
    "compile": "examples:\n  fclc compile examples/transpose.fcl -e transposeTiled --explain\n"
               "  fclc compile examples/reverse.fcl -e revDistribute -o reverse.cl\n"
               "  fclc compile examples/reverse.fcl -e revDistribute -e revGrid --emit py -o reverse.py",
    "test": "examples:\n  fclc test examples/reverse.fcl\n  fclc test examples/*.fcl -j 2 --timeout 60",
    "repl": "example:\n  fclc repl examples/reverse.fcl      then :help at the prompt",
    "tune": "examples:\n  fclc tune examples/transpose.fcl -e transposeTiled 32 2048 2048 iota:4194304 "
            "--vary tileDim=8,16,32\n  fclc tune examples/reduce.fcl -e sumAll iota:16777216 --time 30",
    "devices": "examples:\n  fclc devices\n  fclc run examples/reverse.fcl -e revGrid iota:8 --device pocl",
}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("fcl")
    except PackageNotFoundError:
        return "unknown (not installed; run `pip install .`)"


class _Version(argparse.Action):
    """`--version`: the installed version, looked up only when asked (importlib.metadata
    takes about 40 ms, which every other command would pay)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="show program's version number and exit"):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"fclc {_version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    raw = argparse.RawDescriptionHelpFormatter
    prelude_only = argparse.ArgumentParser(add_help=False)
    prelude_only.add_argument("--no-prelude", action="store_true", help="do not load prelude/prelude.fcl")
    prelude_only.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                              help="colour in error messages (auto: on a terminal, unless NO_COLOR is set)")
    common = argparse.ArgumentParser(add_help=False, parents=[prelude_only])
    common.add_argument("--block-size", type=int, default=None, metavar="N", help="#BlockSize (default 256)")
    common.add_argument("--warp-size", type=int, default=None, metavar="N", help="#WarpSize (default 32)")
    common.add_argument("--num-groups", type=int, default=None, metavar="N",
                        help="#NumGroups, the most work-groups launched (default 4096)")
    common.add_argument("--local-memory", type=int, default=None, metavar="BYTES",
                        help="#LocalMemory, the local memory a work-group may take (default: the device's, "
                             "at most 49152; 49152 for the evaluator)")
    common.add_argument("--device", default=None, metavar="SUBSTRING",
                        help="OpenCL device by device, platform or vendor name (default: PYOPENCL_CTX, else the "
                             "first CPU device that builds kernels, PoCL before Intel's runtime; `fclc devices`)")
    common.add_argument("--verbose", action="store_true",
                        help="say on stderr which OpenCL device runs the program, and which were skipped and why")
    common.add_argument("--seed", type=int, default=None, help="seed for random:N arguments (default 1: the same inputs in every run)")
    passes = argparse.ArgumentParser(add_help=False)
    passes.add_argument("-O", dest="opt_level", type=int, choices=(0, 1), default=None,
                        help="-O0: only the required passes; -O1 (default): every optimising pass")
    passes.add_argument("--no-pass", action="append", default=[], metavar="NAME",
                        help="switch one optimising pass off (repeatable; `fclc compile --passes` lists them)")
    passes.add_argument("--pass", dest="with_pass", action="append", default=[], metavar="NAME",
                        help="run one optional pass, off by default (repeatable; `fclc compile --passes` marks "
                             "them `optional`): double_buffer")
    passes.add_argument("--no-bounds-checks", action="store_true",
                        help="no device check of `index` (where the compiler cannot prove an index in range, "
                             "one out of range then reads an unspecified element or memory outside the array)")

    p = argparse.ArgumentParser(prog="fclc", description="FCL: low-level functional GPU kernels",
                                epilog="quick start:\n  fclc run examples/reverse.fcl -e revDistribute 4 iota:16\n"
                                       "`fclc COMMAND -h` shows each command's options and examples.",
                                formatter_class=raw)
    p.add_argument("--version", action=_Version)
    sub = p.add_subparsers(dest="command")

    c = sub.add_parser("check", parents=[prelude_only], help="parse and type-check; print each declaration's type",
                       epilog=EXAMPLES["check"], formatter_class=raw)
    c.add_argument("file", help="the .fcl program")
    c.set_defaults(func=cmd_check)

    for name, func, text in (("eval", cmd_eval, "run with the reference evaluator"),
                             ("run", cmd_run, "compile and run on an OpenCL device"),
                             ("bench", cmd_bench, "time the compiled kernels (median of runs)"),
                             ("tune", cmd_tune, "search static arguments and #BlockSize for the fastest "
                                                "settings on the device, and keep them")):
        e = sub.add_parser(name, parents=[common] + ([passes] if name != "eval" else []), help=text, description=text,
                           epilog=ARG_HELP + "\n\n" + EXAMPLES[name], formatter_class=raw)
        e.add_argument("file", help="the .fcl program")
        e.add_argument("-e", "--entry", required=True, metavar="NAME",
                       help="the declaration to run (its parameters take the ARGs)")
        e.add_argument("args", nargs="*", metavar="ARG", help="the arguments (below)")
        if name == "run":
            e.add_argument("--distributed", action="store_true",
                           help="under `mpiexec -n R`: each rank runs NAME on a block of the split "
                                "arguments on its own device (docs/distributed.md)")
            e.add_argument("--halo", type=int, default=None, metavar="H",
                           help="with --distributed: NAME is local, element i of its result reading "
                                "elements i-H .. i+H of the split arguments only (a map: 0)")
            e.add_argument("--replicate", action="append", default=[], metavar="NAME",
                           help="with --distributed: every rank takes the whole of array parameter NAME "
                                "(or 1-based position) instead of a block (repeatable)")
        if name not in ("bench", "tune"):
            e.add_argument("-o", "--output", metavar="OUT.npy",
                           help="write an array result to a .npy file instead of printing it")
            e.add_argument("--full", action="store_true",
                           help=f"print every element of large results (by default arrays of more than "
                                f"{ELIDE} elements print as [a, b, c, ..., x, y, z])")
        if name == "eval":
            e.add_argument("--cost", action="store_true", help="also print work, span, memory traffic, barriers")
        if name == "bench":
            e.add_argument("--repeat", type=int, default=20, metavar="N", help="timed runs (default 20)")
            e.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                           help="stop timing a dataset after this many seconds (at least one run)")
            e.add_argument("--json", action="store_true", help="print the results as JSON")
        if name == "tune":
            e.add_argument("--vary", action="append", default=[], metavar="NAME=V1,V2,...",
                           help="an int parameter (name or 1-based position), #BlockSize or #NumGroups "
                                "and the values to try (repeatable; #BlockSize's powers of two by default)")
            e.add_argument("--time", type=float, default=60.0, metavar="SECONDS",
                           help="stop searching after this many seconds (default 60)")
            e.add_argument("--repeat", type=int, default=5, metavar="N", help="timed runs a setting (default 5)")
        if name != "eval":
            static_options(e, dynamic=True)
        e.set_defaults(func=func)

    k = sub.add_parser("compile", parents=[common, passes], help="compile to OpenCL C",
                       description="compile to OpenCL C (printed, or written with -o)",
                       epilog=EXAMPLES["compile"], formatter_class=raw)
    k.add_argument("file", nargs="?", help="the .fcl program")
    k.add_argument("-e", "--entry", metavar="NAME", action="append",
                   help="an entry point to compile (repeat -e for several)")
    k.add_argument("--passes", action="store_true", help="list the kernel-IR passes in order and exit")
    k.add_argument("--type", action="append", default=[], metavar="VAR=TYPE", dest="types",
                   help="build for type variable VAR of the entry's type ('a: a=double) as int, float, double "
                        "or bool (repeatable; default int, and a note says so)")
    k.add_argument("-o", "--output", metavar="OUT", help="write the --emit output to OUT instead of printing it")
    k.add_argument("--emit", choices=("cl", "py", "json"), default=None,
                   help="cl: OpenCL C (default); py: a Python module that runs the kernels with pyopencl; "
                        "json: the host plan")
    k.add_argument("--explain", action="store_true",
                   help="print the launch plan in words (kernels, buffers, local memory, barriers)")
    k.add_argument("--dump", metavar="WHAT", type=dump_choice,
                   help="print an intermediate form: ast, types, kir (after every pass), "
                        "kir-after=NAME (after pass NAME; kir-after=lower: before any pass) or cl")
    static_options(k, dynamic=False)
    k.set_defaults(func=cmd_compile)

    t = sub.add_parser("test", parents=[common], help="run the test blocks of FILEs",
                       description="run the test blocks (`-- == entry: NAME`, `-- input { } output { }`) "
                                   "of FILEs on the evaluator and the OpenCL device",
                       epilog=EXAMPLES["test"], formatter_class=raw)
    t.add_argument("files", nargs="+", metavar="FILE")
    t.add_argument("--evaluator-only", action="store_true", help="do not run on the OpenCL device")
    t.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="fail a test that takes longer than this (default: no limit)")
    t.add_argument("-j", "--jobs", type=int, default=1, metavar="N", help="run N tests at a time (processes)")
    t.set_defaults(func=cmd_test)

    d = sub.add_parser("devices", parents=[common],
                       help="list the OpenCL devices, whether each builds kernels, and the default",
                       epilog=EXAMPLES["devices"], formatter_class=raw)
    d.set_defaults(func=cmd_devices)

    r = sub.add_parser("repl", parents=[common], help="interactive session",
                       epilog=EXAMPLES["repl"], formatter_class=raw)
    r.add_argument("file", nargs="?", help="a .fcl program to load")
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
    return load_file(path or args.file, prelude=not args.no_prelude)


def hw_options(args) -> dict:
    return {"block_size": args.block_size, "warp_size": args.warp_size, "num_groups": args.num_groups,
            "local_memory": args.local_memory}


def compile_options(args, dump_after=()) -> dict:
    """Hardware and pass options of `compile`, `run` and `bench`."""
    return {**hw_options(args), "device": args.device, "opt_level": args.opt_level,
            "no_pass": args.no_pass, "with_pass": args.with_pass, "dump_after": dump_after, "bounds_checks": not args.no_bounds_checks,
            **static_args(args)}


def static_args(args) -> dict:
    """The keyword arguments of Program.compile for --static and --dynamic."""
    static = {}
    for text in args.static:
        name, eq, value = text.partition("=")
        if not eq or not name or not value:
            raise ArgumentError(f"--static {text}: expected NAME=VALUE, for example --static tileDim=32")
        static[name] = parse_arg(value, seed=args.seed)
    dynamic = getattr(args, "dynamic", [])
    return {"static": static, "dynamic": True if "all" in dynamic else dynamic}


def parse_args(args) -> list:
    return [parse_arg(text, seed=args.seed, position=k + 1) for k, text in enumerate(rejoin(args.args))]


def conflict(first: str, second: str, why: str):
    """Two options that cannot be used together -> ArgumentError (exit 1), never silently one."""
    return ArgumentError(f"{first} and {second} cannot be used together: {why}")


def cmd_check(args):
    print_types(load(args))


def print_types(prog):
    for name, scheme in prog.declarations():
        print(f"{name} : {scheme}")


def cmd_eval(args):
    if args.device:
        raise ArgumentError(f"--device {args.device}: `fclc eval` runs the reference evaluator on the "
                            f"CPU, not on an OpenCL device; `fclc run --device {args.device} ...` runs "
                            f"the compiled kernels there")
    if args.output:
        check_npy_path(args.output)          # before the work, not after
    prog = load(args)
    values = parse_args(args)
    result, report = prog.evaluate_with_cost(args.entry, *values, cost=args.cost, **hw_options(args))
    emit_result(args, result)
    if args.cost and report is not None:
        print(report.format())
        for note in prog.dropping_notes(args.entry):
            print(note)


def cmd_run(args):
    if args.distributed:
        return run_distributed(args)
    if args.halo is not None or args.replicate:
        raise ArgumentError(f"{'--halo' if args.halo is not None else '--replicate'} says how a distributed run "
                            f"splits the entry: use it with --distributed, under mpiexec")
    if args.output:
        check_npy_path(args.output)
    prog = load(args)
    values = parse_args(args)
    kernel = prog.compile(args.entry, **tuned_options(args, prog, values))
    emit_result(args, kernel(*values))


def run_distributed(args):
    """`mpiexec -n R fclc run --distributed ...`: every rank runs the entry on its block
    (docs/distributed.md); rank 0 prints the result, or every rank writes its block of it
    into the -o file.  An error is printed once, by the lowest rank that has it."""
    from fcl import distributed as dist      # lazy: it imports mpi4py
    comm = dist.mpi_world()
    rank, size = comm.Get_rank(), comm.Get_size()

    def setup():
        if args.output:
            check_npy_path(args.output)
        prog = load(args)
        plan = dist.distribution(prog, args.entry, args.halo, args.replicate)
        texts = rejoin(args.args)
        prog.param_types(args.entry, len(texts))        # the count, before the blocks are read
        values = [dist.block_arg(t, rank, size, args.seed, k + 1) if k in plan.split
                  else parse_arg(t, seed=args.seed, position=k + 1) for k, t in enumerate(texts)]
        return prog, plan, values

    try:
        prog, plan, values = dist.agree(comm, setup)
        options = compile_options(args)
        del options["device"]
        result = dist.run(prog, args.entry, *values, halo=args.halo, replicate=args.replicate, comm=comm,
                          device=args.device, gather=not args.output, **options)
        if args.output:
            dist.agree(comm, lambda: write_blocks(comm, args.output, result, plan.kind == "reduce"))
        elif rank == 0:
            emit_result(args, result)
    except dist.RankFailed:
        return 1
    return 0


def write_blocks(comm, path: str, block, whole: bool):
    """The ranks' blocks of the result one after another into one .npy file (rank 0 writes
    the header; `whole`: a result every rank has whole, written by rank 0 alone)."""
    lengths = comm.allgather(0 if whole and comm.Get_rank() else len(block))
    if comm.Get_rank() == 0:
        writing(path, lambda: np.lib.format.open_memmap(path, mode="w+", dtype=block.dtype,
                                                        shape=(sum(lengths),)).flush())
    comm.Barrier()
    start = sum(lengths[:comm.Get_rank()])
    if lengths[comm.Get_rank()]:
        out = np.lib.format.open_memmap(path, mode="r+")
        out[start:start + len(block)] = block
        out.flush()


def cmd_bench(args):
    from fcl.tools.bench import bench_command       # lazy: imports pyopencl (see the top)
    prog = load(args)
    values = parse_args(args) if args.args else None
    return bench_command(args, prog, tuned_options(args, prog, values) if values is not None
                         else compile_options(args))


def cmd_tune(args):
    from fcl.tools.tune import tune_command         # lazy: imports pyopencl
    tune_command(args, load(args), parse_args(args), compile_options(args))


def tuned_options(args, prog, values) -> dict:
    """compile_options, with #BlockSize, #NumGroups and optional passes as `fclc tune` found
    them for this program, entry, argument shapes and device when the command line gives
    none of them (a note says so)."""
    options = compile_options(args)
    if args.block_size is not None or args.num_groups is not None or args.with_pass:
        return options
    try:
        found = prog.tuned(args.entry, *values, device=args.device, static=options["static"])
    except FCLError:            # a mistake in the arguments: the run itself reports it
        found = {}
    if found:
        words = ", ".join([f"{name} {found[option]}" for name, option in HARDWARE.items() if option in found]
                          + [f"--pass {p}" for p in found.get("with_pass", ())])
        print(f"fcl: note: {words}, as `fclc tune` found for these arguments on this device "
              f"(--block-size, --num-groups or --pass overrides)", file=sys.stderr)
        options.update(found)
    return options


def emit_result(args, result):
    if getattr(args, "output", None):
        if getattr(args, "full", False):
            raise conflict("-o", "--full", "-o writes the result to a file, --full prints it")
        if not isinstance(result, np.ndarray):
            raise ArgumentError(f"-o {args.output}: the result is not a one-dimensional array")
        check_npy_path(args.output)
        writing(args.output, lambda: np.save(args.output, result))
        return
    if getattr(args, "full", False):
        print(format_value(result))
        return
    text = format_elided(result)
    print(text)
    if "..." in text:
        print(f"fclc: the result has {count_elements(result)} elements; --full prints them all, "
              f"-o OUT.npy saves them", file=sys.stderr)


def local_memory_limit(spec) -> str:
    """`local memory limit: N bytes per work-group on DEVICE (PLATFORM)`, for --explain."""
    D = runtime_device()
    try:
        limits = D.device_limits(D.choose_device(spec))
    except EnvironmentProblem as e:
        return f"local memory limit: unknown (no OpenCL device: {e})"
    return (f"local memory limit: {limits['local_mem_size']} bytes per work-group on "
            f"{limits['name']} ({limits['platform']})")


def check_compile_flags(args) -> None:
    """--explain, --dump and --emit each choose what to print: at most one; -o only with --emit."""
    chosen = [f for f, on in (("--explain", args.explain), (f"--dump {args.dump}", args.dump),
                              (f"--emit {args.emit}", args.emit)) if on]
    if len(chosen) > 1:
        raise conflict(chosen[0], chosen[1], "each chooses what to print; give one")
    if args.output and (args.explain or args.dump):
        raise conflict("-o", chosen[0], "-o writes the --emit output (OpenCL C, Python or JSON)")


def check_npy_path(path: str) -> None:
    """-o of an array result names a .npy file (np.save would add `.npy` to any other name,
    and write DIR.npy for a folder DIR): ArgumentError otherwise."""
    import os
    if os.path.isdir(path):
        raise ArgumentError(f"-o {path}: {path} is a folder; give a file name ending in .npy, "
                            f"e.g. -o {os.path.join(path, 'result.npy')}")
    if not path.endswith(".npy"):
        raise ArgumentError(f"-o {path}: the result is saved as a NumPy array, in a file whose "
                            f"name ends in .npy; give one, e.g. -o {os.path.splitext(path)[0] or 'result'}.npy")


def writing(path: str, write):
    """write(), with a path that cannot be written as the user's error (exit 1), saying why."""
    try:
        write()
    except OSError as e:
        raise ArgumentError(f"-o {path}: cannot write it: {os_problem(e, path, writing=True)}") from None


def cmd_compile(args):
    if args.passes:
        print(describe_passes())
        return
    if not args.file or not args.entry:
        raise ArgumentError("compile needs a FILE and at least one -e NAME (or --passes)")
    check_compile_flags(args)
    prog = load(args)
    if args.dump == "ast":
        print(print_program(prog.ast))
        return
    if args.dump == "types":
        print_types(prog)
        return
    after = args.dump.partition("=")[2] if args.dump and args.dump.startswith("kir-after=") else None
    kernels = compile_entries(prog, args, compile_options(args, [after] if after else []))
    if args.dump == "kir" or after:
        print("\n\n".join(k.kir(after) for k in kernels))
        return
    if args.explain:
        print("\n\n".join(k.explain() for k in kernels))
        if any(k.plan.kernels[i].locals_ for k in kernels for i in range(len(k.plan.kernels))):
            print(local_memory_limit(args.device))
        return
    if args.emit == "py":
        from fcl.runtime.pymodule import emit_module      # lazy: imports pyopencl (see the top)
        text = emit_module([k.plan for k in kernels], [k.opencl_source for k in kernels], args.file,
                           [k.describe(compiled=True) for k in kernels])
    elif args.emit == "json":
        text = json_text([k.plan for k in kernels])
    else:
        text = "\n".join(k.opencl_source for k in kernels)
    if args.output:
        from pathlib import Path
        writing(args.output, lambda: Path(args.output).write_text(text))
    else:
        print(text, end="" if text.endswith("\n") else "\n")


def type_choices(args) -> dict:
    """--type VAR=TYPE options -> {VAR: TYPE} (VAR without its quote)."""
    out = {}
    for text in args.types:
        name, eq, ty = text.partition("=")
        name = name.strip().lstrip("'")
        if not eq or not name or ty not in ("int", "float", "double", "bool"):
            raise ArgumentError(f"--type {text}: expected VAR=TYPE with TYPE int, float, double or bool, "
                                f"for example --type a=double")
        if name in out and out[name] != ty:
            raise ArgumentError(f"--type gives '{name} twice ({out[name]} and {ty}); one build has one type "
                                f"for it: compile again for the other")
        out[name] = ty
    return out


def compile_entries(prog, args, options: dict) -> list:
    """The kernels of `fclc compile`'s entries, each built for the --type choices its type
    variables have (the others int, said in a note on stderr)."""
    chosen, kernels, used = type_choices(args), [], set()
    for name in args.entry:
        variables = prog.compile(name, **options).type_variables()
        mine = {v: ty for v, ty in chosen.items() if v in variables}
        used |= set(mine)
        kernel = prog.compile(name, **options, types=mine)
        if any(not picked for _, _, picked in kernel.fixed_types()):
            print(f"fclc: note: `{name} : {prog.type_of(name)}` is {kernel.types_note()}", file=sys.stderr)
        kernels.append(kernel)
    unknown = [v for v in chosen if v not in used]
    if unknown:
        raise ArgumentError(f"--type {unknown[0]}=...: no entry compiled here has a type variable "
                            f"'{unknown[0]} (" + "; ".join(f"{n} : {prog.type_of(n)}" for n in args.entry) + ")")
    return kernels


def cmd_test(args):
    from fcl.tools.testrun import run_test_files    # lazy: ms of import only `fclc test` needs
    if args.evaluator_only and args.device:
        raise conflict("--evaluator-only", "--device", "the tests would not run on the device")
    if args.jobs < 1:
        raise ArgumentError(f"-j {args.jobs}: the number of jobs must be at least 1")
    return run_test_files(args.files, prelude=not args.no_prelude, device=None if args.evaluator_only else (args.device or ""),
                          hw=hw_options(args), seed=args.seed, timeout=args.timeout, jobs=args.jobs)


def cmd_devices(args):
    lines, problem = runtime_device().survey(args.device)
    print("\n".join(lines))
    if problem is not None:
        raise problem


def cmd_repl(args):
    from fcl.tools.repl import run_repl              # lazy: ms of import only `fclc repl` needs
    return run_repl(args)


if __name__ == "__main__":
    sys.exit(main())
