"""OpenCL devices, contexts, queues and the program build cache.

Consumes a device choice (`--device SUBSTRING`, `PYOPENCL_CTX`, or nothing)
and OpenCL C text; produces `cl.Device`, one `cl.Context` and one profiling
`cl.CommandQueue` per device, and `cl.Program`s built once per
(device, source, options).  It does not allocate buffers or launch kernels
(that is `launch.py`).  A missing OpenCL installation is an
`EnvironmentProblem`; generated code that fails to build is a `CompilerBug`
carrying the saved `.cl` path and the build log.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import warnings

from fcl.errors import CompilerBug, EnvironmentProblem

try:
    import pyopencl as cl
except ImportError:          # pragma: no cover - exercised only without pyopencl
    cl = None

INSTALL_HINT = "pip install pocl-binary-distribution"

_contexts: dict = {}
_queues: dict = {}
_programs: dict = {}


def _require_cl():
    if cl is None:
        raise EnvironmentProblem("pyopencl is not installed: run `pip install pyopencl "
                                 "pocl-binary-distribution`")
    return cl


def all_devices() -> list:
    """Every device of every OpenCL platform, platform by platform."""
    _require_cl()
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        platforms = []
    devices = [d for p in platforms for d in p.get_devices()]
    if not devices:
        raise EnvironmentProblem(f"no OpenCL platform found: install one with `{INSTALL_HINT}`")
    return devices


def describe_device(device) -> str:
    """`device name (platform name)`."""
    return f"{device.name.strip()} ({device.platform.name.strip()})"


def _device_list(devices) -> str:
    return "; ".join(describe_device(d) for d in devices)


def _matches(device, spec: str) -> bool:
    spec = spec.lower()
    return any(spec in text.lower() for text in
               (device.name, device.platform.name, device.platform.vendor))


def _is_oclgrind(device) -> bool:
    return "oclgrind" in device.platform.name.lower()


def _from_pyopencl_ctx(spec: str):
    """PYOPENCL_CTX as pyopencl reads it: `platform[:device]`, each an index or a name substring."""
    try:
        devices = cl.choose_devices(interactive=False, answers=spec.split(":"))
    except (RuntimeError, cl.Error) as e:
        raise EnvironmentProblem(f"PYOPENCL_CTX={spec!r} selects no OpenCL device ({e}); "
                                 f"devices present: {_device_list(all_devices())}") from None
    return devices[0]


def choose_device(spec: str | None = None):
    """The device to run on.

    `spec` (from `--device`) is a case-insensitive substring of a device,
    platform or vendor name; otherwise `PYOPENCL_CTX`; otherwise the first
    CPU device that is not Oclgrind (PoCL after a plain install); otherwise
    the first device.
    """
    devices = all_devices()
    if spec:
        for device in devices:
            if _matches(device, spec):
                return device
        raise EnvironmentProblem(f"no OpenCL device matches --device {spec!r}; "
                                 f"devices present: {_device_list(devices)}")
    if os.environ.get("PYOPENCL_CTX"):
        return _from_pyopencl_ctx(os.environ["PYOPENCL_CTX"])
    for device in devices:
        if device.type & cl.device_type.CPU and not _is_oclgrind(device):
            return device
    plain = [d for d in devices if not _is_oclgrind(d)]
    return (plain or devices)[0]


def get_context(device):
    """The one cl.Context of `device`."""
    if device not in _contexts:
        _contexts[device] = cl.Context([device])
    return _contexts[device]


def get_queue(device):
    """The one profiling-enabled cl.CommandQueue of `device`."""
    if device not in _queues:
        _queues[device] = cl.CommandQueue(
            get_context(device), device,
            properties=cl.command_queue_properties.PROFILING_ENABLE)
    return _queues[device]


def build_program(context, source: str, options: tuple = ()):
    """Build `source` for the context's device, once; CompilerBug with the saved
    source path and the build log when it does not build."""
    device = context.devices[0]
    digest = hashlib.sha256(source.encode()).hexdigest()
    key = (device, digest, tuple(options))
    if key not in _programs:
        _programs[key] = _build(context, device, source, list(options))
    return _programs[key]


def _build(context, device, source: str, options: list):
    program = cl.Program(context, source)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cl.CompilerWarning)
            return program.build(options=options, devices=[device])
    except cl.Error as e:
        log = _build_log(program, device) or str(e)
        fd, path = tempfile.mkstemp(prefix="fcl-kernel-", suffix=".cl")
        with os.fdopen(fd, "w") as f:
            f.write(source)
        raise CompilerBug(f"generated OpenCL C did not build on {describe_device(device)} "
                          f"(options {' '.join(options) or 'none'}); source saved to {path}\n"
                          f"build log:\n{log.strip()}") from None


def _build_log(program, device) -> str:
    try:
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
