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
  naming the runtime's real path, and point `OCL_ICD_VENDORS` at it.  The ICD
  loader reads its configuration at the first OpenCL call of the process, so
  this runs when FCL (or a printed module) is imported, before pyopencl is
  used; a later call is a no-op.  `intel_hint(devices)` says why the runtime is
  missing from `devices` and what to do (import FCL first, or the
  OCL_ICD_VENDORS value to start Python with).
* `probe(device)` builds a tiny kernel: None when it builds, else a one-line
  reason.  The verdict is kept per process, and on disk per driver (keyed by
  the driver's library file, its size and mtime, under FCL's cache folder;
  FCL_NO_CACHE=1 turns that off), so later processes build no probe again.
* `default_device(devices)`: the first CPU device, PoCL before others, that is
  not the Oclgrind simulator and passes the probe; else any such device that
  passes; None when there is none.  `default_context(spec)` is what a printed
  module uses: the device matching `spec` (`--device`), else PYOPENCL_CTX when
  set, else a context on the default device.
* `build(program, options, devices)`: a program's build without pyopencl's
  CompilerWarning (Intel's runtime writes a build log for every build).
"""
import hashlib
import os
import sys

# float division and sqrt correctly rounded (as the evaluator computes them); no warnings: the
# kernels are generated, and a compiler's warnings (PoCL's "loop not unrolled" where its
# work-group loops wrap a `#pragma unroll` loop) would only be noise on the user's terminal
BUILD_OPTIONS = ("-cl-fp32-correctly-rounded-divide-sqrt", "-w")
PROBE_SOURCE = """
__kernel void fcl_probe(__global int *out, __local int *tmp, int n) {
    int i = get_local_id(0);
    tmp[i] = (int) get_global_id(0) * n;
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = tmp[(i + 1) % (int) get_local_size(0)];
}
"""
# Tests only: a comma-separated list of substrings of a device, platform or vendor
# name, as --device takes them (`pocl`, `intel`), or `*`; the probe of a matching
# device builds a program with an #error line, so that device fails the way a
# device whose own compiler is broken does.
BREAK_ENV = "FCL_TEST_BROKEN_DEVICES"
# Set to 0 to leave the ICD loader's configuration alone.
INTEL_ENV = "FCL_INTEL_OPENCL"
INTEL_DIST, INTEL_LIB = "intel-opencl-rt", "libintelocl.so"
# Libraries libintelocl.so needs from other wheels, in load order; loaded by hand
# only when pip put them in a different folder (its RUNPATH is $ORIGIN).
INTEL_NEEDS = (("intel-cmplr-lib-rt", ("libintlc.so.5", "libirng.so", "libimf.so", "libsvml.so")),
               ("tbb", ("libtbb.so.12",)))

_verdicts: dict = {}
# register_intel_cpu_runtime's outcome: "lib" (registered), "folder" (the vendors
# folder), "late" (pyopencl was imported before it ran), "off" (why it was not done)
_intel: dict = {}


# ---------------------------------------------------------------- ICD registration

def _dist_file(dist: str, name: str):
    """Absolute path of file `name` installed by distribution `dist`, or None.  Read from
    the first `.dist-info` folder of `dist` on sys.path, as importlib.metadata finds it, but
    without importing that (tens of ms, at every start of FCL)."""
    prefix = dist.replace("-", "_").lower() + "-"
    for folder in sys.path:
        try:
            infos = [e for e in os.listdir(folder or ".")
                     if e.lower().startswith(prefix) and e.endswith(".dist-info")]
        except OSError:     # a zip file, a folder that is gone
            continue
        if not infos:
            continue
        try:
            with open(os.path.join(folder, infos[0], "RECORD"), encoding="utf-8") as f:
                paths = [line.split(",")[0] for line in f]
        except OSError:
            return None
        for rel in paths:
            if os.path.basename(rel) == name:
                path = os.path.realpath(os.path.join(folder or ".", rel))
                if os.path.exists(path):
                    return path
        return None
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


def _cache_folder(*parts: str) -> str:
    """A folder under FCL's cache, as fcl.base.resources.user_cache names it (this module is
    printed into `--emit py` modules, which import no fcl): $FCL_CACHE_DIR, else
    $XDG_CACHE_HOME/fcl, else ~/.cache/fcl."""
    root = os.environ.get("FCL_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "fcl")
    return os.path.join(root, *parts)


def _vendors_folder(icds: dict) -> str | None:
    """A folder holding exactly `icds`: one per content under the user's cache
    (reused by child processes), else a temporary one; None if none can be written."""
    import tempfile
    digest = hashlib.sha256(repr(sorted(icds.items())).encode()).hexdigest()[:16]
    final = _cache_folder("opencl-vendors", digest)
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
    file with OCL_ICD_VENDORS (then nothing changes).  Cheap, and no OpenCL call: it
    runs when FCL is imported."""
    env = os.environ if environ is None else environ
    if _intel:
        return _intel.get("lib")
    _intel["late"] = "pyopencl" in sys.modules
    if not sys.platform.startswith("linux"):
        _intel["off"] = "not Linux"
        return None
    if env.get(INTEL_ENV, "1") == "0":
        _intel["off"] = f"{INTEL_ENV}=0 keeps it out; unset {INTEL_ENV}"
        return None
    lib = _dist_file(INTEL_DIST, INTEL_LIB)
    if lib is None:
        _intel["off"] = "not installed"
        return None
    chosen = env.get("OCL_ICD_VENDORS", "")
    if chosen and not os.path.isdir(chosen):
        _intel["off"] = (f"OCL_ICD_VENDORS={chosen} names one driver file, so FCL adds none; "
                         "unset it, or set it to a folder of .icd files")
        return None
    system = chosen or env.get("OPENCL_VENDOR_PATH") or "/etc/OpenCL/vendors"
    icds = _icd_files(system)
    if any(os.path.realpath(text) == lib for text in icds.values() if text.startswith("/")):
        return None         # the loader reads it already (a child of a registered process)
    here = os.path.dirname(lib)
    for dist, names in INTEL_NEEDS:
        for name in names:
            path = _dist_file(dist, name)
            if path and os.path.dirname(path) != here:
                import ctypes
                try:
                    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                except OSError as e:
                    _intel["off"] = f"its library {path} does not load ({e})"
                    return None
    icds["fcl-intel-cpu.icd"] = lib
    folder = _vendors_folder(icds)
    if folder is None:
        _intel["off"] = "no folder for its .icd file can be written"
        return None
    env["OCL_ICD_VENDORS"] = folder
    _intel.update(lib=lib, folder=folder)
    return lib


def _importer() -> str:
    """What a user imports to get this code: `fcl`, or the `--emit py` module it is printed into."""
    return "fcl" if __name__.startswith("fcl.") else __name__


def intel_hint(devices) -> str | None:
    """Why Intel's CPU runtime, installed, is not among `devices`, and what to do; None
    when it is there, not installed, or not for this system."""
    lib = _intel.get("lib")
    if lib is None and _intel.get("off") in (None, "not Linux", "not installed"):
        return None
    if any((lib and _driver_file(d) == lib) or d.platform.name.strip() == "Intel(R) OpenCL" for d in devices):
        return None
    if "lib" not in _intel:
        return f"Intel's CPU runtime is installed but not registered ({_intel['off']})"
    if _intel.get("late"):
        return (f"Intel's CPU runtime is installed but this process used OpenCL before "
                f"`import {_importer()}` could register it: import {_importer()} before pyopencl's first "
                f"call, or start Python with OCL_ICD_VENDORS={_intel['folder']}")
    return f"Intel's CPU runtime ({_intel['lib']}) did not load in this process"


def no_device_hint(devices) -> str:
    """What to do when no device of `devices` builds kernels."""
    hint = intel_hint(devices)
    if hint:
        return hint
    if _intel.get("off") == "not installed" and sys.platform.startswith("linux"):
        import platform
        if platform.machine() == "x86_64":
            return ("install Intel's CPU runtime (pip install intel-opencl-rt) or your GPU's OpenCL "
                    "driver")
    return "install your GPU's OpenCL driver or a system PoCL (apt install pocl-opencl-icd)"


# ---------------------------------------------------------------- devices

def describe(device) -> str:
    """`device name (platform name)`."""
    return f"{device.name.strip()} ({device.platform.name.strip()})"


def is_oclgrind(device) -> bool:
    return "oclgrind" in device.platform.name.lower()


def is_pocl(device) -> bool:
    return "portable computing language" in device.platform.name.lower()


def _broken_by_test(device) -> bool:
    spec = os.environ.get(BREAK_ENV, "")
    return any(s == "*" or (s and matches(device, s)) for s in (x.strip() for x in spec.split(",")))


def probe(device, fresh: bool = False) -> str | None:
    """None if `device` builds a tiny kernel with FCL's build options, else the reason in
    one line.  Probed once per device and process, and once per driver on disk (a build
    failure is kept, a device that cannot even make a context is asked again next time);
    `fresh` probes again and keeps the new verdict."""
    key = device.int_ptr
    if key in _verdicts and not fresh:
        return _verdicts[key]
    entry = _verdict_file(device)
    kept = _load_verdict(entry) if entry and not fresh else None
    if kept is not None:
        _verdicts[key] = kept[0]
        return kept[0]
    verdict, lasting = _build_probe(device)
    _verdicts[key] = verdict
    if entry and lasting:
        _store_verdict(entry, device, verdict)
    return verdict


def _build_probe(device) -> tuple:
    """(verdict, whether it lasts until the driver changes: a build's outcome does)."""
    import pyopencl as cl
    source = PROBE_SOURCE
    if _broken_by_test(device):
        source = f"#error simulated broken compiler ({BREAK_ENV})\n" + source
    try:
        with _quiet_stderr():
            context = cl.Context([device])
    except Exception as e:      # cl.Error, or a driver that raises something else
        return _reason(e), False
    try:
        with _quiet_stderr():
            program = build(cl.Program(context, source), BUILD_OPTIONS, [device])
            cl.Kernel(program, "fcl_probe")
        return None, True
    except Exception as e:
        return _reason(e), getattr(e, "code", None) in (cl.status_code.BUILD_PROGRAM_FAILURE,
                                                        cl.status_code.COMPILER_NOT_AVAILABLE)


def _driver_file(device) -> str | None:
    """The library file of the driver behind `device`, or None where that cannot be told.
    Objects the ICD loader hands out (cl_khr_icd) begin with the driver's table of entry
    points, the one the loader itself calls through; dladdr names the file of its entry
    clGetPlatformInfo."""
    try:
        if not sys.platform.startswith("linux") or "cl_khr_icd" not in device.platform.extensions.split():
            return None
        import ctypes

        class DlInfo(ctypes.Structure):
            _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p),
                        ("sname", ctypes.c_char_p), ("saddr", ctypes.c_void_p)]
        table = ctypes.c_void_p.from_address(device.int_ptr).value
        entry = table and ctypes.c_void_p.from_address(table + ctypes.sizeof(ctypes.c_void_p)).value
        if not entry:
            return None
        try:
            dladdr = ctypes.CDLL(None).dladdr
        except AttributeError:          # glibc before 2.34: in libdl
            dladdr = ctypes.CDLL("libdl.so.2").dladdr
        dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(DlInfo)]
        info = DlInfo()
        if not dladdr(entry, ctypes.byref(info)) or not info.fname:
            return None
        return os.path.realpath(os.fsdecode(info.fname))
    except Exception:       # no ctypes, no dladdr, a platform that answers oddly
        return None


def _verdict_file(device) -> str | None:
    """Where the probe's verdict on `device` is kept: keyed by the driver's library file,
    its size and mtime, the device and the probe; None with FCL_NO_CACHE=1 or an unknown driver."""
    if os.environ.get("FCL_NO_CACHE") == "1":
        return None
    lib = _driver_file(device)
    if lib is None:
        return None
    try:
        st = os.stat(lib)
        facts = [lib, st.st_size, st.st_mtime_ns, device.name, device.driver_version,
                 device.platform.name, device.platform.version, PROBE_SOURCE, BUILD_OPTIONS,
                 _broken_by_test(device)]
    except Exception:       # the file is gone, or the device does not answer
        return None
    digest = hashlib.sha256(repr(facts).encode()).hexdigest()[:32]
    return _cache_folder("probes", digest + ".json")


def _load_verdict(entry: str):
    """(verdict,) kept at `entry`, or None when there is none (or it is unreadable)."""
    import json
    try:
        with open(entry, encoding="utf-8") as f:
            verdict = json.load(f)["verdict"]
    except Exception:       # missing, damaged, written by something else
        return None
    return (verdict,) if verdict is None or isinstance(verdict, str) else None


def _store_verdict(entry: str, device, verdict):
    """Keep `verdict` at `entry` (whole or not at all); a folder that cannot be written costs
    only the next process's probe."""
    import json
    import tempfile
    tmp = None
    try:
        os.makedirs(os.path.dirname(entry), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(entry), suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"device": describe(device), "driver": _driver_file(device), "verdict": verdict}, f)
        os.replace(tmp, entry)      # whole or not at all, also with another process writing
    except OSError:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def build(program, options=BUILD_OPTIONS, devices=None):
    """program.build(options, devices) without pyopencl's CompilerWarning ("Non-empty
    compiler output"): Intel's runtime writes a build log for every build, and a failed
    build raises with its log anyway."""
    import warnings
    import pyopencl as cl
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)
        return program.build(options=list(options), devices=devices)


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
        return (not cpu, not is_pocl(d))
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
        context = cl.create_some_context(interactive=False)
        why = probe(context.devices[0])
        if why is not None:
            raise RuntimeError(f"PYOPENCL_CTX={os.environ['PYOPENCL_CTX']!r} selects "
                               f"{describe(context.devices[0])}, which cannot build kernels ({why}): "
                               "unset it or choose another device")
        return context
    devices = all_devices()
    device = default_device(devices)
    if device is None:
        whys = "; ".join(f"{describe(d)}: {probe(d)}" for d in candidates(devices))
        raise RuntimeError(f"no OpenCL device can build kernels ({whys or 'none found'}); "
                           f"{no_device_hint(devices)}")
    return cl.Context([device])


def embeddable() -> str:
    """This module's code (after its docstring, before this function), for printing into another module."""
    with open(__file__, encoding="utf-8") as f:
        text = f.read()
    return ("\n# ---- device choice: fcl/runtime/platforms.py ----\n"
            + text[text.index("\nimport "):text.index("\ndef embeddable(")])
