"""OpenCL devices, contexts, queues and the program build cache.

Consumes a device choice (`--device SUBSTRING`, `PYOPENCL_CTX`, or nothing)
and OpenCL C text; produces `cl.Device`, one `cl.Context` and one profiling
`cl.CommandQueue` per device, and `cl.Program`s built once per
(device, source, options).  It does not allocate buffers or launch kernels
(that is `launch.py`).  A missing OpenCL installation is an
`EnvironmentProblem`, and so is a device that cannot build kernels (a tiny
probe build, once per driver: fcl.runtime.platforms), a device whose compiler
fails on OpenCL another device builds, and a device out of memory; generated
code that no device builds is a `CompilerBug` carrying the saved `.cl` path and
the build log.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile
import warnings

from fcl.base.errors import CompilerBug, EnvironmentProblem
from fcl.runtime import platforms

platforms.register_intel_cpu_runtime()      # before pyopencl's first call (`import fcl` did it already)
try:
    import pyopencl as cl
except ImportError:          # pragma: no cover - exercised only without pyopencl
    cl = None

INSTALL_HINT = "pip install pocl-binary-distribution"
describe_device = platforms.describe
_is_oclgrind = platforms.is_oclgrind

_contexts: dict = {}
_queues: dict = {}
_pools: dict = {}
_programs: dict = {}
_noted: set = set()
_verbose: list = []


def _require_cl():
    if cl is None:
        raise EnvironmentProblem("pyopencl is not installed: run `pip install pyopencl "
                                 "pocl-binary-distribution`")
    return cl


def all_devices() -> list:
    """Every device of every OpenCL platform, platform by platform."""
    _require_cl()
    devices = platforms.all_devices()
    if not devices:
        raise EnvironmentProblem(f"no OpenCL platform found: install one with `{INSTALL_HINT}`")
    return devices


def _device_list(devices) -> str:
    return "; ".join(describe_device(d) for d in devices)


_matches = platforms.matches


def _from_pyopencl_ctx(spec: str):
    """PYOPENCL_CTX as pyopencl reads it: `platform[:device]`, each an index or a name substring."""
    try:
        devices = cl.choose_devices(interactive=False, answers=spec.split(":"))
    except (RuntimeError, cl.Error) as e:
        raise EnvironmentProblem(f"PYOPENCL_CTX={spec!r} selects no OpenCL device ({e}); "
                                 f"devices present: {_device_list(all_devices())}") from None
    return devices[0]


def usable(device) -> str | None:
    """None if `device` can build kernels, else why not (probed once per driver)."""
    return platforms.probe(device)


def set_verbose(on: bool = True):
    """`--verbose`: choose_device notes on stderr the devices it skipped and the one it chose."""
    _verbose[:] = [True] if on else []


def note(text: str):
    """A one-line note on stderr, once per process."""
    if text not in _noted:
        _noted.add(text)
        print(f"fcl: note: {text}", file=sys.stderr)


def _unusable(device, why: str, how: str) -> EnvironmentProblem:
    return EnvironmentProblem(f"OpenCL device {describe_device(device)} cannot build kernels "
                              f"({why}); {how}")


def choose_device(spec: str | None = None, notes: bool = True):
    """The device to run on.

    `spec` (from `--device`) is a case-insensitive substring of a device,
    platform or vendor name: the first matching device that can build kernels;
    otherwise `PYOPENCL_CTX`; otherwise the first CPU device that can build
    kernels (PoCL before others, never Oclgrind), else any device that can.
    Devices are probed with a tiny build (once per driver, the verdict kept on
    disk); an unusable one is skipped quietly, and no usable device is an
    EnvironmentProblem.  With `set_verbose()` (and `notes`) the skipped devices
    and the chosen one are noted on stderr, once each per process.
    """
    devices = all_devices()
    device, how, skipped = _choose(devices, spec)
    if notes and _verbose:
        for s in skipped:
            note(f"skipping OpenCL device {describe_device(s)}: it cannot build kernels ({usable(s)})")
        hint = platforms.intel_hint(devices)
        if hint:
            note(hint)
        note(f"using OpenCL device {describe_device(device)} ({how})")
    return device


def _choose(devices, spec):
    """(device, how it was chosen, the devices skipped before it) or an EnvironmentProblem."""
    if spec:
        matching = [d for d in devices if _matches(d, spec)]
        if not matching:
            raise EnvironmentProblem(f"no OpenCL device matches --device {spec!r}; "
                                     f"devices present: {_device_list(devices)}")
        for k, d in enumerate(matching):
            if usable(d) is None:
                return d, f"chosen with --device {spec!r}", matching[:k]
        raise _unusable(matching[0], usable(matching[0]),
                        "choose another with --device (see `fclc devices`)")
    ctx = os.environ.get("PYOPENCL_CTX")
    if ctx:
        d = _from_pyopencl_ctx(ctx)
        if usable(d) is not None:
            raise _unusable(d, usable(d), f"PYOPENCL_CTX={ctx!r} selects it: "
                                          "unset it or choose another device (see `fclc devices`)")
        return d, f"chosen with PYOPENCL_CTX={ctx!r}", []
    order = platforms.candidates(devices)
    for k, d in enumerate(order):
        if usable(d) is None:
            cpu = d.type & cl.device_type.CPU
            return d, ("the default: the first CPU device that builds kernels" if cpu else
                       "the default: no CPU device builds kernels"), order[:k]
    whys = "; ".join(f"{describe_device(d)} cannot build kernels ({usable(d)})" for d in order)
    raise EnvironmentProblem(f"no usable OpenCL device: {whys or 'only the Oclgrind simulator is present'}; "
                             f"{platforms.no_device_hint(devices)}; `fclc devices` shows what each device says")


def kind_of(device) -> str:
    if _is_oclgrind(device):
        return "simulator"
    t = device.type
    return ("GPU" if t & cl.device_type.GPU else "CPU" if t & cl.device_type.CPU
            else "accelerator" if t & cl.device_type.ACCELERATOR else "device")


def survey(spec: str | None = None) -> tuple[list[str], EnvironmentProblem | None]:
    """`fclc devices`: one line per device (kind, whether it builds kernels, which
    one is the default for `spec`), and the EnvironmentProblem when none is usable.
    Every device is probed afresh (the verdicts kept on disk are renewed)."""
    devices = all_devices()
    for d in devices:
        platforms.probe(d, fresh=True)
    try:
        chosen, problem = choose_device(spec, notes=False), None
    except EnvironmentProblem as e:
        chosen, problem = None, e
    lines = []
    for d in devices:
        why = usable(d)
        state = "builds kernels" if why is None else f"cannot build kernels: {why}"
        if chosen is not None and d.int_ptr == chosen.int_ptr:
            state += " (chosen)" if spec or os.environ.get("PYOPENCL_CTX") else " (default)"
        elif _is_oclgrind(d) and why is None:
            state += " (checks races and bounds; used only when chosen: --device oclgrind)"
        mark = "*" if chosen is not None and d.int_ptr == chosen.int_ptr else " "
        lines.append(f"{mark} {describe_device(d)}: {kind_of(d)}, {state}")
    return lines, problem


def get_context(device):
    """The one cl.Context of `device`."""
    if device not in _contexts:
        _contexts[device] = cl.Context([device])
    return _contexts[device]


def get_queue(device, context=None):
    """The one profiling-enabled cl.CommandQueue of `device` in `context` (default: its
    one context; another is that of a caller's pyopencl arrays)."""
    context = context or get_context(device)
    key = (device, context.int_ptr)
    if key not in _queues:
        _queues[key] = cl.CommandQueue(context, device,
                                       properties=cl.command_queue_properties.PROFILING_ENABLE)
    return _queues[key]


def memory_pool(queue):
    """The one pyopencl MemoryPool of `queue`.  The buffers a compiled program allocates (its
    intermediate arrays and its results) come from it and go back to it when freed, so a
    kernel run again and again, its results left on the device, writes the same memory each
    time instead of a new buffer that the driver maps on first touch (copyGrid at 2^28 ints on
    an H200: 0.89 of the hand-written copy with a new buffer each run, 1.00 from the pool).
    A freed buffer is handed out again only to later commands of the same in-order queue,
    so it is never overwritten while a kernel still uses it."""
    key = queue.int_ptr
    if key not in _pools:
        import pyopencl.tools
        _pools[key] = pyopencl.tools.MemoryPool(pyopencl.tools.ImmediateAllocator(queue))
    return _pools[key]


def build_options(device) -> tuple[str, ...]:
    """OpenCL build options for FCL's kernels on `device`: float division and sqrt
    correctly rounded (as the evaluator computes them); unoptimised on Oclgrind,
    which cannot run some intrinsics clang's optimiser emits (llvm.abs) and whose
    uninitialised-value check trips on `freeze`; then the options in the
    environment variable FCL_BUILD_OPTIONS (`-cl-opt-disable` makes PoCL build a
    kernel about ten times faster: the test suite sets it)."""
    options = platforms.BUILD_OPTIONS
    if _is_oclgrind(device):
        options = options + ("-cl-opt-disable",)
    extra = tuple(os.environ.get("FCL_BUILD_OPTIONS", "").split())
    return options + tuple(x for x in extra if x not in options)


PROGRAMS_KEPT = 256     # built programs kept for reuse, the least recently used dropped first


def build_program(context, source: str, options: tuple = ()):
    """Build `source` for the context's device, once (the last PROGRAMS_KEPT builds are
    kept: a long session, `fclc tune` or the random tester, builds thousands); CompilerBug
    with the saved source path and the build log when it does not build."""
    device = context.devices[0]
    digest = hashlib.sha256(source.encode()).hexdigest()
    key = (device, context.int_ptr, digest, tuple(options))
    if key in _programs:
        _programs[key] = _programs.pop(key)     # now the most recently used
    else:
        _programs[key] = _build(context, device, source, list(options))
        while len(_programs) > PROGRAMS_KEPT:
            del _programs[next(iter(_programs))]
    return _programs[key]


BUILD_FAILURES = ("BUILD_PROGRAM_FAILURE", "COMPILE_PROGRAM_FAILURE", "LINK_PROGRAM_FAILURE",
                  "INVALID_BUILD_OPTIONS")


def _build(context, device, source: str, options: list):
    program = cl.Program(context, source)
    try:
        return platforms.build(program, options, [device])
    except cl.Error as e:
        if not any(code in str(e) for code in BUILD_FAILURES):
            raise device_error(device, e) from None     # (the runtime out of resources, say)
        log = (_build_log(program, device) or str(e)).strip()
    fd, path = tempfile.mkstemp(prefix="fcl-kernel-", suffix=".cl")
    with os.fdopen(fd, "w") as f:
        f.write(source)
    other = _builds_elsewhere(device, source, options)
    if other is not None:
        first = next((x for x in log.splitlines() if "error" in x.lower()), log.splitlines()[0] if log else "")
        raise EnvironmentProblem(
            f"the OpenCL compiler of {describe_device(device)} fails on valid OpenCL C that "
            f"{describe_device(other)} builds ({first.strip()[:200]}; source saved to {path}); "
            f"choose another device with --device (see `fclc devices`)")
    raise CompilerBug(f"generated OpenCL C did not build on {describe_device(device)} "
                      f"(options {' '.join(options) or 'none'}); source saved to {path}\n"
                      f"build log:\n{log}")


def _builds_elsewhere(device, source: str, options: list):
    """Another device (that passes the probe) whose compiler accepts `source`, or None:
    then the failure is `device`'s compiler's, not FCL's."""
    for other in all_devices():
        if other.int_ptr == device.int_ptr or usable(other) is not None:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cl.Program(get_context(other), source).build(options=options, devices=[other])
            return other
        except cl.Error:
            continue
    return None


OUT_OF_MEMORY = ("MEM_OBJECT_ALLOCATION_FAILURE", "OUT_OF_RESOURCES", "OUT_OF_HOST_MEMORY",
                 "INVALID_BUFFER_SIZE")


@contextlib.contextmanager
def running_on(device):
    """Turn a cl.Error raised while running on `device` into `device_error`'s error."""
    try:
        yield
    except cl.Error as e:
        raise device_error(device, e) from None


def device_error(device, error) -> Exception:
    """The error to raise for a cl.Error from running on `device`: running out of
    memory is an EnvironmentProblem, anything else a CompilerBug."""
    text = str(error).split("\n")[0]
    if any(code in text for code in OUT_OF_MEMORY):
        return EnvironmentProblem(f"OpenCL device {describe_device(device)} ran out of memory "
                                  f"or resources ({text}); use smaller inputs, or another device with --device")
    return CompilerBug(f"OpenCL call failed on {describe_device(device)}: {text}")


def _build_log(program, device) -> str:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return program.get_build_info(device, cl.program_build_info.LOG)
    except cl.Error:
        return ""


def device_limits(device) -> dict:
    """The device facts code generation and launch planning need."""
    return {
        "max_work_group_size": int(device.max_work_group_size),
        "local_mem_size": int(device.local_mem_size),
        "max_compute_units": int(device.max_compute_units),
        "name": device.name.strip(),
        "platform": device.platform.name.strip(),
    }
