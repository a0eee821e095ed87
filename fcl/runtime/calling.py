"""Calling a compiled entry point from Python: parameter names, device arrays, profiles.

Self-contained on purpose (numpy and pyopencl only, like platforms.py): `fclc
compile --emit py` prints the code below the marker line into the modules it
writes, so that their entry points take arguments, pyopencl arrays and report
kernel times exactly as `Program.compile(...)`'s kernels do.

* `python_names(names, count)`: FCL parameter names -> distinct Python
  identifiers (a prime becomes `_`, a Python keyword or `self` gets a
  trailing `_`, an unnamed parameter is `argN`).
* `bind_arguments(entry, names, args, kwargs, defaults)`: positional and
  keyword arguments -> the arguments in order (static ones may be left out);
  ArgumentError naming the parameters for a wrong count, an unknown name or a
  name given twice.
* `signature(names)`, `describe_entry(...)`: what `help()` shows.
* `is_device_array(value)`, `device_buffer(value, dtype, ...)`: a pyopencl
  array passed without a copy to the host; `device_result(queue, buffer, n,
  dtype)`: a result left on the device.
* `Profile`: the kernels one call launched and their times from OpenCL
  profiling events, read when first asked for.

Below `embeddable`, not printed: `split_arg(spec, value, position)`, an entry
argument -> the leaves a host plan takes (fcl.codegen.plan.args) and the
shape of an array of arrays.
"""
from fcl.base.errors import ArgumentError      # a printed module defines its own ArgumentError
from fcl.codegen.plan.args import ArrayArg, NestedArg, PairArg, ScalarArg, ZipArg
# ---- printed into --emit py modules from here ----
import inspect
import keyword

import numpy as np

MISSING = object()     # an optional argument the caller left out


def python_names(names, count: int) -> list:
    """The Python names of `count` parameters whose FCL names are `names` (maybe fewer)."""
    out = []
    for k in range(count):
        name = names[k].replace("'", "_") if k < len(names) and names[k] else f"arg{k + 1}"
        name = name if name.isidentifier() else f"arg{k + 1}"
        while keyword.iskeyword(name) or name == "self" or name in out or not name.isidentifier():
            name += "_"
        out.append(name)
    return out


def _listed(names) -> str:
    return ", ".join(f"`{n}`" for n in names) or "none"


def bind_arguments(entry: str, names: list, args: tuple, kwargs: dict, defaults=None) -> list:
    """`args` and `kwargs` (by Python name) -> one value per parameter, in order.  `defaults`
    ({position: value}, the static arguments compiled in) fill the parameters the caller leaves
    out: by name, or by giving exactly the other arguments positionally.  ArgumentError naming
    the parameters for a wrong count, an unknown name or a name given twice."""
    count, defaults = len(names), dict(defaults or {})
    if defaults and not kwargs and len(args) == count - len(defaults):
        rest = iter(args)
        return [defaults[k] if k in defaults else next(rest) for k in range(count)]
    plural = "s" * (count != 1)
    if len(args) > count:
        raise ArgumentError(f"`{entry}` takes {count} argument{plural} but {len(args)} "
                            f"{'were' if len(args) != 1 else 'was'} given (its parameters: {_listed(names)})")
    values = list(args) + [MISSING] * (count - len(args))
    for key, value in kwargs.items():
        if key not in names:
            raise ArgumentError(f"`{entry}` has no parameter named `{key}` (its parameters: {_listed(names)})")
        k = names.index(key)
        if values[k] is not MISSING:
            raise ArgumentError(f"argument {k + 1} (`{key}`) of `{entry}` is given twice")
        values[k] = value
    missing = [names[k] for k, v in enumerate(values) if v is MISSING and k not in defaults]
    if missing and not kwargs and not defaults:
        raise ArgumentError(f"`{entry}` takes {count} argument{plural} but {len(args)} "
                            f"{'were' if len(args) != 1 else 'was'} given (its parameters: {_listed(names)})")
    if missing:
        raise ArgumentError(f"`{entry}` takes {count} argument{plural}: {_listed(missing)} "
                            f"{'is' if len(missing) == 1 else 'are'} missing (its parameters: {_listed(names)})")
    return [defaults[k] if v is MISSING else v for k, v in enumerate(values)]


def signature(names: list, method: bool = False) -> inspect.Signature:
    """The signature `help()` and `inspect` show: one positional-or-keyword parameter per name."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter(n, kind) for n in (["self"] if method else []) + list(names)]
    return inspect.Signature(params)


def describe_entry(entry: str, scheme: str, names: list, types: list, origin: str, result_type: str) -> str:
    """The docstring of an entry point: its FCL type, each argument, the result, how to run it."""
    lines = [f"FCL entry point `{entry}` from {origin}.", "", f"    {entry} : {scheme}", ""]
    if names:
        lines.append("Arguments:")
        lines += [f"    {n} : {t} -- {_python_kind(t)}" for n, t in zip(names, types)]
    array = result_type.startswith("[")
    lines += ["", f"Returns {result_type}: " + ("a numpy array (a pyopencl array when results are left "
                                                "on the device)." if array else f"{_python_kind(result_type)}."),
              "Array arguments may be numpy arrays, lists or pyopencl.array.Array (used on the device, "
              "no copy).", "The kernel times of the call are in `last_profile` afterwards."]
    return "\n".join(lines)


_KINDS = {"int": "int (32-bit)", "bool": "bool", "float": "float (32-bit)", "double": "float (64-bit)"}
_DTYPES = {"int": "int32", "bool": "bool", "float": "float32", "double": "float64"}


def _python_kind(fcl_type: str) -> str:
    """An FCL type as text -> what to pass or expect in Python."""
    import re
    if fcl_type in _KINDS:
        return f"a Python {_KINDS[fcl_type]}"
    m = re.fullmatch(r"\[(int|bool|float|double|'\w+)\](<.*>)?", fcl_type)
    if m:
        dtype = _DTYPES.get(m.group(1), "int32, float32, float64 or bool")
        return f"a 1-D array of {dtype} (numpy, list or pyopencl)"
    return "see the FCL type"


def is_device_array(value) -> bool:
    """Whether `value` is a pyopencl.array.Array."""
    if not type(value).__module__.startswith("pyopencl"):
        return False
    import pyopencl.array as cla
    return isinstance(value, cla.Array)


_ALLOWED_KINDS = {"int": "iu", "float": "iuf", "double": "iuf", "bool": "b"}


def device_array(value, dtype, fcl_type: str, what: str):
    """A pyopencl array as an argument of element type `fcl_type`: 1-D, contiguous and
    starting at its buffer's beginning (else copied on the device), converted on the device
    where the host path converts too (ints to floats, float to double); ArgumentError else."""
    if value.ndim != 1:
        raise ArgumentError(f"{what}: expected [{fcl_type}], a one-dimensional array, "
                            f"found a pyopencl array of {value.ndim} dimensions")
    narrow = value.dtype == np.int32 or (value.dtype.kind in "iu" and value.dtype.itemsize < 4)
    if value.dtype.kind not in _ALLOWED_KINDS[fcl_type] or (fcl_type == "int" and not narrow):
        hint = " (convert it with .astype(np.int32) if its values fit)" if fcl_type == "int" else ""
        raise ArgumentError(f"{what}: expected [{fcl_type}], found a pyopencl array of {value.dtype}{hint}")
    if not value.flags.forc:
        raise ArgumentError(f"{what}: a pyopencl array with strides cannot be passed; "
                            f"pass a contiguous one (its .copy())")
    if np.dtype(value.dtype).itemsize != np.dtype(dtype).itemsize or \
            (value.dtype.kind != np.dtype(dtype).kind and fcl_type != "bool"):
        import warnings
        import pyopencl as cl
        with warnings.catch_warnings():     # pyopencl builds a kernel: no CompilerWarning (Intel's
            warnings.simplefilter("ignore", cl.CompilerWarning)     # runtime logs every build)
            value = value.astype(dtype)
    elif value.offset:
        value = value.copy()
    return value


def device_buffer(value, queue, what: str):
    """The cl.Buffer holding a pyopencl array (from `device_array`) for a kernel run on
    `queue` (None for an empty array), once the work queued on the array's own queue is done."""
    if value.context.int_ptr != queue.context.int_ptr:
        raise ArgumentError(f"{what}: this pyopencl array belongs to another OpenCL context than "
                            f"the kernel runs on")
    if value.queue is not None and value.queue.int_ptr != queue.int_ptr:
        value.queue.finish()
    return value.base_data if value.size else None


def zipped(first, second):
    """An array of pairs from its two components (arrays of one length, each of scalars or
    itself such an array): a NumPy structured array with fields `f0` and `f1`."""
    out = np.empty(len(first), dtype=[("f0", first.dtype), ("f1", second.dtype)])
    out["f0"], out["f1"] = first, second
    return out


def device_result(queue, buffer, n: int, dtype):
    """A result left on the device: a pyopencl array of `n` elements over `buffer`."""
    import pyopencl.array as cla
    return cla.Array(queue, (n,), np.dtype(dtype), data=buffer)


class Profile:
    """The kernels one call launched, with their times from OpenCL profiling events (and the
    device-side fills of its claims and tags buffers, named `fill BUFFER`, where a run zeroes
    them: device time of the call too).  The times are read when first asked for: asking
    waits for those kernels to finish."""

    def __init__(self, events):
        self._events = list(events)     # (kernel name, cl.Event)
        self._kernels = None

    @property
    def kernels(self) -> list:
        """[(kernel name, seconds), ...] in launch order."""
        if self._kernels is None:
            for _, e in self._events:       # results left on the device: nothing waited yet
                e.wait()
            self._kernels = [(name, (e.profile.end - e.profile.start) * 1e-9) for name, e in self._events]
            self._events = []
        return self._kernels

    @property
    def total(self) -> float:
        """The seconds of all kernels of the call together."""
        return sum(t for _, t in self.kernels)

    def __len__(self) -> int:
        return len(self.kernels)

    def __iter__(self):
        return iter(self.kernels)

    def __str__(self) -> str:
        rows = self.kernels + [("total", self.total)]
        width = max(len(name) for name, _ in rows)
        return "\n".join(f"{name:<{width}}  {seconds * 1e6:12.1f} us" for name, seconds in rows)

    def __repr__(self) -> str:
        return f"Profile({len(self.kernels)} kernels, {self.total * 1e6:.1f} us)"


def embeddable() -> str:
    """This module's code after the marker line, for printing into another module."""
    with open(__file__, encoding="utf-8") as f:
        text = f.read()
    marker = "# ---- printed into --emit py modules from here ----\n"
    body = text[text.index(marker) + len(marker):]
    return "\n# ---- calling entry points: fcl/runtime/calling.py ----\n" + body[:body.index("\ndef embeddable(")]


# ---- not printed: the launcher's own ----

def split_arg(spec, value, position: int) -> tuple[list, dict]:
    """The leaf arguments (ScalarArg/ArrayArg, value) of entry argument number `position`,
    and the host scalars its shape sets (NestedArg); ArgumentError for an irregular array."""
    leaves, env = [], {}
    _split(spec, value, position, leaves, env)
    return leaves, env


def _split(spec, value, position: int, leaves: list, env: dict) -> None:
    """Append the leaves of `value` (passed as `spec`) to `leaves`, its shape to `env`."""
    if isinstance(spec, (ScalarArg, ArrayArg)):
        leaves.append((spec, value))
    elif isinstance(spec, PairArg):
        _split(spec.fst, value[0], position, leaves, env)
        _split(spec.snd, value[1], position, leaves, env)
    elif isinstance(spec, ZipArg):
        _split(spec.fst, _component(value, 0), position, leaves, env)
        _split(spec.snd, _component(value, 1), position, leaves, env)
    elif isinstance(spec, NestedArg):
        flat, env[spec.rows], env[spec.cols] = _flatten(value, position)
        leaves.append((spec.flat, flat))
    else:
        raise TypeError(f"unknown argument spec {spec!r}")


def _component(value, k: int):
    """Component k of an array of pairs (a list of pairs, or a structured array's field k)."""
    if isinstance(value, np.ndarray) and value.dtype.names:
        return value[value.dtype.names[k]]
    return [pair[k] for pair in value]


def _flatten(value, position: int) -> tuple:
    """(the rows one after another, the row count, the row length) of an array of arrays;
    ArgumentError when the rows differ in length."""
    rows = [np.asarray(r) for r in value]
    cols = len(rows[0]) if rows else 0
    for k, r in enumerate(rows):
        if len(r) != cols:
            raise ArgumentError(f"argument {position}: an array of arrays passed to a kernel must "
                                f"be regular (every row as long): row 0 has {cols} elements, "
                                f"row {k} has {len(r)}")
    return (np.concatenate(rows) if rows else np.empty(0)), len(rows), cols
