"""The host helpers of the modules `fclc compile --emit py` writes: argument checks,
the errors of failed run-time checks, int32 arithmetic of host sizes, and `Kernels`,
the class whose methods are the entry points.

Self-contained on purpose (numpy and pyopencl only, like calling.py and
platforms.py): `fcl.runtime.pymodule` prints the code below the marker line into
the modules it writes, after the device choice (platforms.py), `failure_message`
(fcl.codegen.plan) and the calling code (calling.py), and prints each entry point's
methods right after it, inside `Kernels` (so the class comes last).  The imports
above the marker give this module, imported, the names the printed one has.

* `NP_TYPES`: the numpy type a buffer of each FCL scalar type holds
  (fcl.base.hw.STORAGE_DTYPES, restated).
* `_array(value, dtype, fcl_type, position, name)`, `_scalar(value, fcl_type,
  position, name)`: an argument checked and converted (as fcl.api.literals
  coerces one), ArgumentError naming it else.
* `_checked(index, length, site)`, `_failed(site, values)`: a run-time check
  computed on the host, and the error of one that failed on the device.
* `_wrap`, `_div`, `_mod`: int arithmetic of host sizes (fcl.base.scalars'
  int32 semantics, restated: a printed module imports no fcl); `_skew(n)`: the
  elements a local buffer of `n` takes in the skewed layout.
* `Kernels(device, context, result)`: the context, queue, kernel builds,
  buffers and results that the printed entry point methods use.
"""
import numpy as np
import pyopencl as cl

from fcl.base.errors import ArgumentError      # a printed module defines its own ArgumentError
from fcl.codegen.plan import failure_message    # printed before this code
from fcl.runtime.calling import Profile, device_array, device_buffer, device_result, is_device_array, zipped
from fcl.runtime.platforms import BUILD_OPTIONS, build, default_context

SOURCES: dict = {}      # a printed module's OpenCL source of each entry point, printed after Kernels
# ---- printed into --emit py modules from here ----
NP_TYPES = {"int": np.int32, "float": np.float32, "double": np.float64, "bool": np.uint8, "long": np.int64}


def _what(position, name):
    """How an error names an argument: argument 2 (`arr`), or argument 2 if it has no name."""
    return f"argument {position} (`{name}`)" if name else f"argument {position}"


def _array(value, dtype, fcl_type, position, name):
    """`value` as a contiguous 1-D array of `dtype`, never converting silently to a narrower kind."""
    a = np.asarray(value)
    if a.ndim != 1:
        raise ArgumentError(f"{_what(position, name)}: expected [{fcl_type}], a one-dimensional "
                            f"array, found {a.ndim} dimensions")
    ok = {"int": "iu", "float": "iuf", "double": "iuf", "bool": "b"}[fcl_type]
    if a.size and a.dtype.kind not in ok:
        raise ArgumentError(f"{_what(position, name)}: expected [{fcl_type}], found an array of {a.dtype}")
    if fcl_type == "int" and a.size and (a.min() < -2**31 or a.max() > 2**31 - 1):
        raise ArgumentError(f"{_what(position, name)}: array values do not fit in 32-bit ints")
    return np.ascontiguousarray(a, dtype=dtype)


def _scalar(value, fcl_type, position, name):
    """`value` as a host scalar of `fcl_type` (int widens to float and double)."""
    is_bool = isinstance(value, (bool, np.bool_))
    is_int = isinstance(value, (int, np.integer)) and not is_bool
    if fcl_type == "bool" and is_bool:
        return int(value)
    if fcl_type == "int" and is_int:
        if not -2**31 <= int(value) <= 2**31 - 1:
            raise ArgumentError(f"{_what(position, name)}: {int(value)} does not fit in a 32-bit int")
        return int(value)
    if fcl_type in ("float", "double") and (is_int or isinstance(value, (float, np.floating))):
        return np.float32(value) if fcl_type == "float" else float(value)
    found = type(value).__name__ if not isinstance(value, np.ndarray) else "an array"
    raise ArgumentError(f"{_what(position, name)}: expected {fcl_type}, found {found}")


def _failed(site, values):
    """The error of run-time check `site` (where, what) that failed with `values`: IndexError
    for an index out of range, ArithmeticError for the others (a zero divisor, a part of the
    wrong length ...), in the evaluator's words."""
    where, kind = site
    what = "bounds check" if kind == "index" else "run-time check"
    error = IndexError if kind == "index" else ArithmeticError
    return error(f"{where}: {failure_message(kind, values)} (found by the device's {what} for these arguments)")


def _checked(index, length, site):
    """A run-time check (kir.Checked) computed on the host (a size that reads an array)."""
    if not 0 <= index < length:
        raise _failed(site, (index, length))
    return index


def _wrap(x):
    """A Python int as a 32-bit two's complement int (C wrap-around)."""
    return ((x + 2**31) % 2**32) - 2**31


def _skew(n):
    """The elements a local buffer of `n` takes in the skewed layout (`i` at `i + i/32`), one to spare."""
    return n + (n >> 5) + 1


def _div(a, b, total=False):
    """Truncating int division; by zero a ZeroDivisionError, or 0 with `total` (fcl_div)."""
    if b == 0:
        if total:           # a scalar the kernels would compute: fcl_div gives 0
            return 0
        raise ZeroDivisionError("a size divides by zero for these arguments")
    q = abs(a) // abs(b)
    return _wrap(-q if (a < 0) != (b < 0) else q)


def _mod(a, b, total=False):
    """The remainder with the dividend's sign; by zero as `_div`."""
    if b == 0:
        if total:
            return 0
        raise ZeroDivisionError("a size divides by zero for these arguments")
    r = abs(a) % abs(b)
    return -r if a < 0 else r


class Kernels:
    """The compiled entry points: one method each, taking the program's parameter names.

    Kernels(device=None, context=None, result="host"): `device` is a substring of a device,
    platform or vendor name (as `fclc --device`), `context` a pyopencl Context; by default
    PYOPENCL_CTX when it is set, else the device `fclc run` would use.  `result="device"`
    leaves array results on the device as pyopencl arrays (pass them to the next entry point
    without a copy; `.get()` brings one to the host).  Array arguments may be numpy arrays,
    lists or pyopencl arrays of this context (used in place).  After each call `last_profile`
    holds the kernels it launched and their times from OpenCL profiling events (`.kernels`:
    [(name, seconds)], `.total`), and `last_times` the seconds alone."""

    def __init__(self, device=None, context=None, result="host"):
        if result not in ("host", "device"):
            raise ArgumentError(f'result must be "host" or "device", not {result!r}')
        self._context = context or default_context(device)
        self._queue = cl.CommandQueue(self._context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        self._on_device = result == "device"
        self._kernels = {}
        self._profile = Profile([])

    @property
    def context(self):
        """The pyopencl Context the kernels run in."""
        return self._context

    @property
    def queue(self):
        """The profiling CommandQueue the kernels run on (make pyopencl input arrays with it)."""
        return self._queue

    @property
    def last_profile(self):
        """The kernels of the last call and their times (a Profile)."""
        return self._profile

    @property
    def last_times(self):
        """The seconds each kernel launch of the last call took."""
        return [t for _, t in self._profile.kernels]

    def _kernel(self, entry, name):
        """Kernel `name` of entry point `entry`, its program built on first use."""
        if entry not in self._kernels:
            prg = build(cl.Program(self._context, SOURCES[entry]), BUILD_OPTIONS)
            self._kernels[entry] = {k.function_name: k for k in prg.all_kernels()}
        return self._kernels[entry][name]

    def _launch(self, events, entry, name, groups, block_size, args):
        """Enqueue kernel `name` on `groups` work-groups; its event joins `events`."""
        kernel = self._kernel(entry, name)
        kernel.set_args(*args)
        events.append((name, cl.enqueue_nd_range_kernel(self._queue, kernel, (groups * block_size,),
                                                        (block_size,))))

    def _alloc(self, n, dtype):
        """A device buffer of `n` elements (at least one)."""
        return cl.Buffer(self._context, cl.mem_flags.READ_WRITE, max(1, n) * np.dtype(dtype).itemsize)

    def _zeros(self, n, dtype):
        """A device buffer of `n` zeros (at least one): a guard or bounds buffer."""
        return cl.Buffer(self._context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                         hostbuf=np.zeros(max(1, n), dtype))

    def _input(self, value, dtype, fcl_type, position, name, inputs):
        """(buffer, length) of an array argument: a pyopencl array in place, else uploaded."""
        if is_device_array(value):
            value = device_array(value, dtype, fcl_type, _what(position, name))
            buf = device_buffer(value, self._queue, _what(position, name)) or self._alloc(1, dtype)
            inputs.append(buf)
            return buf, value.size
        host = _array(value, dtype, fcl_type, position, name)
        data = host if host.size else np.zeros(1, host.dtype)
        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
        return cl.Buffer(self._context, flags, hostbuf=data), len(host)

    def _read(self, buf, n, dtype):
        """The first `n` elements of device buffer `buf`, as a numpy array."""
        host = np.empty(max(n, 1), dtype=dtype)
        cl.enqueue_copy(self._queue, host, buf)
        return host[:n]

    def _read_at(self, buf, i, dtype):
        """Element i of device buffer `buf`, as a Python int."""
        host = np.empty(1, dtype=dtype)
        cl.enqueue_copy(self._queue, host, buf, src_offset=i * np.dtype(dtype).itemsize)
        return int(host[0])

    def _zip(self, first, second):
        """An array of pairs: one structured array (fields f0, f1), or (result="device") the
        pair of its components' pyopencl arrays."""
        return (first, second) if self._on_device else zipped(first, second)

    def _result(self, events, inputs, buf, n, fcl_type, scalar):
        """What an entry point returns: a Python scalar, a numpy array, or (result="device")
        a pyopencl array over the result buffer."""
        self._profile = Profile(events)
        dtype = NP_TYPES[fcl_type]
        if self._on_device and not scalar:
            if any(buf.int_ptr == b.int_ptr for b in inputs):   # never hand back the caller's array
                copy = self._alloc(n, dtype)
                if n:
                    cl.enqueue_copy(self._queue, copy, buf, byte_count=n * np.dtype(dtype).itemsize)
                buf = copy
            return device_result(self._queue, buf, n, bool if fcl_type == "bool" else dtype)
        out = self._read(buf, n, dtype)
        if fcl_type == "bool":
            out = out.astype(bool)
        if scalar:
            return {"int": int, "double": float, "bool": bool}.get(fcl_type, np.float32)(out[0])
        return out


def embeddable() -> str:
    """This module's code after the marker line, for printing into another module; it ends
    inside `Kernels`, so the methods printed after it join the class."""
    with open(__file__, encoding="utf-8") as f:
        text = f.read()
    marker = "# ---- printed into --emit py modules from here ----\n"
    body = text[text.index(marker) + len(marker):]
    return "\n# ---- host helpers: fcl/runtime/hostlib.py ----\n" + body[:body.index("\n\n\ndef embeddable(")] + "\n"
