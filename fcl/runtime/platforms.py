"""Which OpenCL devices a process sees, which of them can build kernels, and
which one runs FCL programs by default.

Self-contained on purpose (os, sys and pyopencl only): `fclc compile --emit py`
prints this module's text into the modules it writes, so that they choose
their device by the same rule as `fclc`.  fcl.runtime.device builds the
user-facing errors on top of it.

* `register_intel_cpu_runtime()` makes Intel's CPU OpenCL runtime from PyPI
  (`intel-opencl-rt`, an FCL dependency on x86-64 Linux) visible to the ICD
  loader.  Its wheel's own `.icd` file names a path that does not exist in a
  venv, so we write a vendors folder holding a copy of every `.icd` file the
  loader would otherwise read (an NVIDIA or AMD driver stays visible) plus one
  naming the runtime's real path, and point `OCL_ICD_VENDORS` at it.  It must
  run before the first OpenCL call of the process; a later call is a no-op.
* `probe(device)` builds a tiny kernel once per device and process: None when
  it builds, else a one-line reason.
* `default_device(devices)`: the first CPU device, PoCL before others, that is
  not the Oclgrind simulator and passes the probe; else any such device that
  passes; None when there is none.  `default_context(spec)` is what a printed
  module uses: the device matching `spec` (`--device`), else PYOPENCL_CTX when
  set, else a context on the default device.
"""
import hashlib
import os
import sys

BUILD_OPTIONS = ("-cl-fp32-correctly-rounded-divide-sqrt",)
PROBE_SOURCE = """
__kernel void fcl_probe(__global int *out, __local int *tmp, int n) {
    int i = get_local_id(0);
    tmp[i] = (int) get_global_id(0) * n;
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = tmp[(i + 1) % (int) get_local_size(0)];
}
"""
# Tests only: a comma-separated list of substrings of "device (platform)" (or `*`);
# the probe of a matching device builds a program with an #error line, so that
# device fails the way a device whose own compiler is broken does.
BREAK_ENV = "FCL_TEST_BROKEN_DEVICES"
# Set to 0 to leave the ICD loader's configuration alone.
INTEL_ENV = "FCL_INTEL_OPENCL"
INTEL_DIST, INTEL_LIB = "intel-opencl-rt", "libintelocl.so"
# Libraries libintelocl.so needs from other wheels, in load order; loaded by hand
# only when pip put them in a different folder (its RUNPATH is $ORIGIN).
INTEL_NEEDS = (("intel-cmplr-lib-rt", ("libintlc.so.5", "libirng.so", "libimf.so", "libsvml.so")),
               ("tbb", ("libtbb.so.12",)))

_verdicts: dict = {}
_registered: list = []


# ---------------------------------------------------------------- ICD registration

def _dist_file(dist: str, name: str):
    """Absolute path of file `name` installed by distribution `dist`, or None."""
    try:
        from importlib import metadata
        files = metadata.distribution(dist).files or []
    except Exception:       # not installed, or unreadable metadata
        return None
    for f in files:
        if f.name == name:
            path = os.path.realpath(str(f.locate()))
            if os.path.exists(path):
                return path
    return None


def _icd_files(folder: str) -> dict:
    """{file name: contents} of the .icd files in `folder` (empty if none)."""
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".icd"))
    except OSError:
        return {}
    out = {}
    for name in names:
        try:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                out[name] = f.read().strip()
        except OSError:
            pass
    return out


def _vendors_folder(icds: dict) -> str | None:
    """A folder holding exactly `icds`: one per content under the user's cache
    (reused by child processes), else a temporary one; None if none can be written."""
    import tempfile
    digest = hashlib.sha256(repr(sorted(icds.items())).encode()).hexdigest()[:16]
    # as fcl.resources.user_cache: this module is copied into `--emit py` modules, which import no fcl
    cache = os.environ.get("FCL_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "fcl")
    final = os.path.join(cache, "opencl-vendors", digest)
    if _icd_files(final) == icds:
        return final
    for parent in (os.path.dirname(final), None):
        try:
            if parent:
                os.makedirs(parent, exist_ok=True)
            tmp = tempfile.mkdtemp(prefix="vendors-", dir=parent)
            for name, text in icds.items():
                with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                    f.write(text + "\n")
            if parent is None:
                return tmp
            try:
                os.rename(tmp, final)
            except OSError:         # another process made it first
                import shutil
                shutil.rmtree(tmp, ignore_errors=True)
            if _icd_files(final) == icds:
                return final
        except OSError:
            continue
    return None


def register_intel_cpu_runtime(environ=None) -> str | None:
    """Make the pip-installed Intel CPU runtime visible to the ICD loader, keeping
    every vendor the loader already reads.  The library path, or None when the
    runtime is not installed, is already registered, or the user chose one ICD
    file with OCL_ICD_VENDORS (then nothing changes)."""
    env = os.environ if environ is None else environ
    if _registered:
        return _registered[0]
    _registered.append(None)
    if env.get(INTEL_ENV, "1") == "0" or not sys.platform.startswith("linux"):
        return None
    lib = _dist_file(INTEL_DIST, INTEL_LIB)
    if lib is None:
        return None
    chosen = env.get("OCL_ICD_VENDORS", "")
    if chosen and not os.path.isdir(chosen):
        return None
    system = chosen or env.get("OPENCL_VENDOR_PATH") or "/etc/OpenCL/vendors"
    icds = _icd_files(system)
    if any(os.path.realpath(text) == lib for text in icds.values() if text.startswith("/")):
        return None
    here = os.path.dirname(lib)
    for dist, names in INTEL_NEEDS:
        for name in names:
            path = _dist_file(dist, name)
            if path and os.path.dirname(path) != here:
                import ctypes
                try:
                    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                except OSError:
                    return None
    icds["fcl-intel-cpu.icd"] = lib
    folder = _vendors_folder(icds)
    if folder is None:
        return None
    env["OCL_ICD_VENDORS"] = folder
    _registered[0] = lib
    return lib


# ---------------------------------------------------------------- devices

def describe(device) -> str:
    """`device name (platform name)`."""
    return f"{device.name.strip()} ({device.platform.name.strip()})"


def is_oclgrind(device) -> bool:
    return "oclgrind" in device.platform.name.lower()


def _broken_by_test(device) -> bool:
    spec = os.environ.get(BREAK_ENV, "")
    text = describe(device).lower()
    return any(s == "*" or (s and s in text) for s in (x.strip().lower() for x in spec.split(",")))


def probe(device) -> str | None:
    """None if `device` builds a tiny kernel with FCL's build options (once per
    device and process), else the reason in one line."""
    import pyopencl as cl
    key = device.int_ptr
    if key not in _verdicts:
        source = PROBE_SOURCE
        if _broken_by_test(device):
            source = f"#error simulated broken compiler ({BREAK_ENV})\n" + source
        try:
            with _quiet_stderr():
                context = cl.Context([device])
                program = cl.Program(context, source).build(options=list(BUILD_OPTIONS),
                                                            devices=[device])
                cl.Kernel(program, "fcl_probe")
            _verdicts[key] = None
        except Exception as e:      # cl.Error, or a driver that raises something else
            _verdicts[key] = _reason(e)
    return _verdicts[key]


class _quiet_stderr:
    """Silence file descriptor 2 (compilers print their diagnostics there
    themselves; the probe reports the build log instead) and Python warnings."""

    def __enter__(self):
        import warnings
        self.warnings = warnings.catch_warnings()
        self.warnings.__enter__()
        warnings.simplefilter("ignore")
        try:
            sys.stderr.flush()
            self.saved = os.dup(2)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 2)
            os.close(null)
        except OSError:
            self.saved = None

    def __exit__(self, *exc):
        if self.saved is not None:
            os.dup2(self.saved, 2)
            os.close(self.saved)
        self.warnings.__exit__(*exc)
        return False


def _reason(error) -> str:
    """The most telling line of a failed build: its first `error:` message."""
    import re
    lines = [x.strip() for x in str(error).splitlines() if x.strip()]
    for x in lines:
        if "error:" in x and not x.startswith(("clBuildProgram failed", "Build on")):
            text = re.sub(r"^\S*:\d+:\d+:\s*", "", x[x.index("error:") + 6:].strip())
            return "error: " + text[:300]
    return (lines[0] if lines else type(error).__name__)[:300]


def candidates(devices) -> list:
    """Devices in the order the default is looked for: CPUs (PoCL first), then the
    rest; never Oclgrind (a checker, chosen explicitly)."""
    import pyopencl as cl
    plain = [d for d in devices if not is_oclgrind(d)]

    def rank(d):
        cpu = bool(d.type & cl.device_type.CPU)
        pocl = "portable computing language" in d.platform.name.lower()
        return (not cpu, not pocl)
    return sorted(plain, key=rank)


def default_device(devices):
    """The first candidate that passes the probe, or None."""
    for d in candidates(devices):
        if probe(d) is None:
            return d
    return None


def all_devices() -> list:
    """Every device of every platform (registering Intel's runtime first)."""
    register_intel_cpu_runtime()
    import pyopencl as cl
    try:
        platforms = cl.get_platforms()
    except Exception:       # no ICD at all: clGetPlatformIDs fails
        return []
    out = []
    for p in platforms:
        try:
            out.extend(p.get_devices())
        except Exception:   # a platform with no devices
            pass
    return out


def matches(device, spec: str) -> bool:
    """Whether `spec` is a case-insensitive substring of the device, platform or vendor name."""
    spec = spec.lower()
    return any(spec in text.lower() for text in (device.name, device.platform.name, device.platform.vendor))


def default_context(spec=None):
    """A pyopencl Context: on the first device matching `spec` (as `fclc --device`) that
    can build kernels, else PYOPENCL_CTX's choice when it is set, else the default device's;
    RuntimeError naming the devices and why they cannot build when none can."""
    import pyopencl as cl
    if spec:
        devices = all_devices()
        found = [d for d in devices if matches(d, spec)]
        for d in found:
            if probe(d) is None:
                return cl.Context([d])
        whys = "; ".join(f"{describe(d)}: {probe(d)}" for d in found)
        raise RuntimeError(f"no OpenCL device matching {spec!r} can build kernels "
                           f"({whys or 'devices present: ' + ', '.join(describe(d) for d in devices)})")
    if os.environ.get("PYOPENCL_CTX"):
        register_intel_cpu_runtime()
        return cl.create_some_context(interactive=False)
    devices = all_devices()
    device = default_device(devices)
    if device is None:
        whys = "; ".join(f"{describe(d)}: {probe(d)}" for d in candidates(devices))
        raise RuntimeError(f"no OpenCL device can build kernels ({whys or 'none found'}); "
                           "install FCL's dependencies (pip install pocl-binary-distribution, "
                           "or intel-opencl-rt on x86-64 Linux) or a GPU driver")
    return cl.Context([device])


def embeddable() -> str:
    """This module's code (after its docstring), for printing into another module."""
    with open(__file__, encoding="utf-8") as f:
        text = f.read()
    return "\n# ---- device choice: fcl/runtime/platforms.py ----\n" + text[text.index("\nimport "):]
