"""Plans + their OpenCL sources -> a standalone Python module (`fclc compile --emit py`).

The module needs only pyopencl and numpy.  It embeds each entry's OpenCL
source and defines a class `Kernels` with one public method per entry point
(the program's parameter names, positional or keyword, and a docstring with
the FCL type) calling a private one whose body is the entry's host plan
printed as straight-line Python (allocations, launches, the loops of
grid-level whiles); a few small helpers build, launch and copy.  Argument
binding, pyopencl arrays and profiles are fcl/runtime/calling.py's code, and
device choice fcl/runtime/platforms.py's, printed into the module.
"""
from __future__ import annotations

import inspect

from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.opencl import kernel_symbol
from fcl.runtime.calling import embeddable as calling_code, python_names
from fcl.runtime.platforms import embeddable as platforms_code

PY_OPS = {"add": "_wrap({a} + {b})", "sub": "_wrap({a} - {b})", "mul": "_wrap({a} * {b})",
          "div": "_div({a}, {b})", "mod": "_mod({a}, {b})", "lt": "({a} < {b})", "le": "({a} <= {b})",
          "gt": "({a} > {b})", "ge": "({a} >= {b})", "eq": "({a} == {b})", "ne": "({a} != {b})",
          "and": "({a} and {b})", "or": "({a} or {b})", "band": "({a} & {b})", "bor": "({a} | {b})",
          "bxor": "({a} ^ {b})", "shl": "_wrap({a} << ({b} & 31))", "shr": "({a} >> ({b} & 31))"}
NP_TYPES = {"int": "np.int32", "float": "np.float32", "double": "np.float64", "bool": "np.uint8"}
MAX_HOST_ITERATIONS = 1 << 20

# Printed after the device choice code: Intel's CPU runtime is registered on import, before
# pyopencl (imported here) makes its first call.
HELPERS_HEAD = '''
register_intel_cpu_runtime()

import numpy as np
import pyopencl as cl


class ArgumentError(ValueError):
    """A wrong argument to an entry point: wrong count, unknown name, type, shape or value."""
'''

HELPERS = '''

def _what(position, name):
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
    return ((x + 2**31) % 2**32) - 2**31


def _skew(n):
    return n + (n >> 5) + 1


def _div(a, b, total=False):
    if b == 0:
        if total:           # a scalar the kernels would compute: fcl_div gives 0
            return 0
        raise ZeroDivisionError("a size divides by zero for these arguments")
    q = abs(a) // abs(b)
    return _wrap(-q if (a < 0) != (b < 0) else q)


def _mod(a, b, total=False):
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
        if entry not in self._kernels:
            prg = build(cl.Program(self._context, SOURCES[entry]), BUILD_OPTIONS)
            self._kernels[entry] = {k.function_name: k for k in prg.all_kernels()}
        return self._kernels[entry][name]

    def _launch(self, events, entry, name, groups, block_size, args):
        kernel = self._kernel(entry, name)
        kernel.set_args(*args)
        events.append((name, cl.enqueue_nd_range_kernel(self._queue, kernel, (groups * block_size,),
                                                        (block_size,))))

    def _alloc(self, n, dtype):
        return cl.Buffer(self._context, cl.mem_flags.READ_WRITE, max(1, n) * np.dtype(dtype).itemsize)

    def _zeros(self, n, dtype):
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
        host = np.empty(max(n, 1), dtype=dtype)
        cl.enqueue_copy(self._queue, host, buf)
        return host[:n]

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
'''


def py_expr(e: K.Expr, total: bool = False) -> str:
    """A host expression as Python text over local variables (int32 semantics); with
    `total` a division by zero gives 0 (kir.eval_host)."""
    def x(sub):
        return py_expr(sub, total)
    if isinstance(e, K.Const):
        return repr(e.value)
    if isinstance(e, K.Var):
        return e.name
    if isinstance(e, K.Bin) and total and e.op in ("div", "mod"):
        return f"_{e.op}({x(e.a)}, {x(e.b)}, True)"
    if isinstance(e, K.Bin):
        return PY_OPS[e.op].format(a=x(e.a), b=x(e.b))
    if isinstance(e, K.Un):
        return f"(not {x(e.a)})" if e.op == "not" else f"_wrap(-{x(e.a)})"
    if isinstance(e, K.Select):
        return f"({x(e.a)} if {x(e.cond)} else {x(e.b)})"
    if isinstance(e, K.Call) and e.fn in ("min", "max"):
        return f"{e.fn}({x(e.args[0])}, {x(e.args[1])})"
    if isinstance(e, K.Call) and e.fn == "b2i":
        return f"(1 if {x(e.args[0])} else 0)"
    if isinstance(e, K.Call) and e.fn == "abs" and e.ty == "int":
        return f"_wrap(abs({x(e.args[0])}))"
    if isinstance(e, K.Checked):
        return f"_checked({x(e.index)}, {x(e.length)}, _sites[{e.site}])"
    raise ValueError(f"not a host expression: {K.format_expr(e)}")


class MethodPrinter:
    """One entry's plan as the body of a `Kernels` method."""

    def __init__(self, plan: P.Plan):
        self.plan = plan
        self.params = {p.name: p for p in plan.params}
        self.lines: list[str] = []

    def emit(self, depth: int, text: str):
        self.lines.append("    " * depth + text)

    def method(self, doc: str) -> str:
        """The public method (binds arguments by position or name, carries the docstring)
        and the private one that runs the plan."""
        plan = self.plan
        names = [f"a{k}" for k in range(len(plan.args))]
        public = python_names([a.name for a in plan.args], len(plan.args))
        defaults = {k: a.value for k, a in enumerate(plan.args)
                    if isinstance(a, P.ScalarArg) and a.value is not None}
        self.emit(1, f"def {plan.entry}(self, *args, **kwargs):")
        self.emit(2, docstring(doc, 2))
        self.emit(2, f"return self._{plan.entry}(*bind_arguments({plan.entry!r}, {public!r}, args, kwargs, "
                     f"{defaults!r}))")
        self.emit(0, "")
        self.emit(1, f"def _{plan.entry}(self{''.join(', ' + n for n in names)}):")
        self.emit(2, "events, inputs = [], []")
        check = next((s for s in P.walk(plan.body) if isinstance(s, P.CheckBounds)), None)
        if check is not None:
            sites = [(where, check.kind(k)) for k, where in enumerate(check.sites)]
            self.emit(2, f"_sites = {sites!r}  # where each run-time check is, and what it checks")
        for k, (name, a) in enumerate(zip(names, plan.args)):
            self.argument(name, a, k + 1)
        self.stmts(plan.body, 2)
        return "\n".join(self.lines) + "\n"

    def argument(self, name: str, a, position: int):
        if isinstance(a, (P.PairArg, P.ZipArg)):
            first, second = f"{name}_0", f"{name}_1"
            if isinstance(a, P.PairArg):
                self.emit(2, f"{first}, {second} = {name}")
            else:
                self.emit(2, f"{first}, {second} = [x[0] for x in {name}], [x[1] for x in {name}]")
            self.argument(first, a.fst, position)
            self.argument(second, a.snd, position)
            return
        if isinstance(a, P.NestedArg):
            self.emit(2, f"{name} = [np.asarray(r) for r in {name}]")
            self.emit(2, f"{a.rows}, {a.cols} = len({name}), (len({name}[0]) if {name} else 0)")
            self.emit(2, f"if any(len(r) != {a.cols} for r in {name}): "
                         f"raise ArgumentError('an array of arrays must be regular')")
            self.emit(2, f"{name} = np.concatenate({name}) if {name} else np.empty(0)")
            self.argument(name, a.flat, position)
            return
        if isinstance(a, P.ArrayArg):
            self.emit(2, f"{a.buffer}, {a.length} = self._input({name}, {NP_TYPES[a.ty]}, {a.ty!r}, "
                         f"{position}, {a.name!r}, inputs)")
        elif a.value is not None:
            self.emit(2, f"if {name} != {a.value!r}:")
            self.emit(3, f"raise ArgumentError(_what({position}, {a.name!r}) + ' is compiled in as {a.value!r}, "
                         f"not ' + repr({name}))")
        else:
            self.emit(2, f"{a.param} = _scalar({name}, {a.ty!r}, {position}, {a.name!r})")

    def stmts(self, stmts, d: int):
        for s in stmts:
            getattr(self, "py_" + type(s).__name__)(s, d)

    def py_Alloc(self, s: P.Alloc, d: int):
        b = self.plan.buffer(s.buffer)
        if b.role in ("guard", "bounds"):
            self.emit(d, f"{b.name} = self._zeros({py_expr(b.size)}, {NP_TYPES[b.ty]})  # {b.origin}")
            return
        self.emit(d, f"{b.name} = self._alloc({py_expr(b.size)}, {NP_TYPES[b.ty]})  # {b.origin}")

    def py_CheckSteps(self, s: P.CheckSteps, d: int):
        self.emit(d, f"if int(self._read({s.buffer}, 1, np.int32)[0]):")
        self.emit(d + 1, "raise RuntimeError('a while on the device does not terminate for these arguments "
                         f"(its condition still held on an empty array or after {P.MAX_DEVICE_STEPS} steps)')")

    def py_CheckBounds(self, s: P.CheckBounds, d: int):
        self.emit(d, f"_bits, _site, *_values = (int(x) for x in self._read({s.buffer}, "
                     f"{K.BOUNDS_WORDS}, np.int32))")
        self.emit(d, "if _bits:")
        self.emit(d + 1, "raise _failed(_sites[_site], _values)")

    def py_SetVar(self, s: P.SetVar, d: int):
        self.emit(d, f"{s.var} = {py_expr(s.expr, total=not s.size)}")

    def py_Bind(self, s: P.Bind, d: int):
        self.emit(d, f"{s.alias} = {s.buffer}")

    def py_Swap(self, s: P.Swap, d: int):
        self.emit(d, f"{s.a}, {s.b} = {s.b}, {s.a}")

    def py_ReadScalar(self, s: P.ReadScalar, d: int):
        self.emit(d, f"{s.var} = int(self._read({s.buffer}, 1, np.int32)[0])")

    def py_Launch(self, s: P.Launch, d: int):
        if s.fast:          # the unchecked version where its host facts hold
            self.emit(d, f"if {py_expr(s.when, total=True)}:")
            self.launch(s, s.fast, d + 1)
            self.emit(d, "else:")
            self.launch(s, s.kernel, d + 1)
        else:
            self.launch(s, s.kernel, d)

    def launch(self, s: P.Launch, kernel: str, d: int):
        plan = self.plan
        args = list(s.uses.buffers)
        for name in s.uses.params:
            ty = self.params[name].ty
            args.append(f"{NP_TYPES['int' if ty == 'bool' else ty]}({name})")
        for b in plan.kernel(kernel).locals_:
            if not isinstance(b.size, K.Const):
                n = f"({py_expr(b.size)}) * {K.copies(b, plan.block_size, plan.warp_size)}"
                n = f"_skew({n})" if b.layout == "skew32" else n
                args.append(f"cl.LocalMemory(max(1, {n}) * np.dtype({NP_TYPES[b.ty]}).itemsize)")
        groups = (f"max(1, min({plan.num_groups}, max({', '.join(py_expr(g) for g in s.groups)}, 1)))"
                  if s.groups else "1")
        self.emit(d, f"self._launch(events, {plan.entry!r}, {kernel_symbol(kernel)!r}, {groups}, {plan.block_size}, "
                     f"[{', '.join(args)}])")

    def py_Loop(self, s: P.Loop, d: int):
        if s.length:
            self.emit(d, f"_seen_{s.length} = set()")
        self.emit(d, f"for _step in range({MAX_HOST_ITERATIONS}):")
        self.stmts(s.head, d + 1)
        self.emit(d + 1, f"if not {py_expr(s.cond)}:")
        self.emit(d + 2, "break")
        if s.length:        # the loop runs over this length alone: a length seen twice repeats forever
            self.emit(d + 1, f"if {s.length} in _seen_{s.length}:")
            self.emit(d + 2, "raise RuntimeError('a while on the device does not terminate for these arguments: '")
            self.emit(d + 3, f"f'the length of its array comes back to {{{s.length}}} and its condition still holds')")
            self.emit(d + 1, f"_seen_{s.length}.add({s.length})")
        self.stmts(s.body, d + 1)
        self.emit(d, "else:")
        self.emit(d + 1, "raise RuntimeError('a grid-level while does not seem to terminate')")

    def py_Result(self, s: P.Result, d: int):
        self.emit(d, f"return self._result(events, inputs, {s.buffer}, {py_expr(s.length)}, {s.ty!r}, "
                     f"{s.kind == 'scalar'})")


def docstring(text: str, depth: int) -> str:
    """`text` as a docstring literal indented `depth` levels."""
    pad = "    " * depth
    body = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return '"""' + body.replace("\n", "\n" + pad).replace("\n" + pad + "\n", "\n\n") + "\n" + pad + '"""'


def emit_module(plans, sources, origin: str, docs=None) -> str:
    """The text of a standalone module running `plans` (one method per entry point;
    `docs`: the docstring of each, by default the entry's name and origin)."""
    names = [p.entry for p in plans]
    docs = docs or [f"FCL entry point `{p.entry}` from {origin}." for p in plans]
    head = (f'"""OpenCL kernels compiled by fclc from {origin}: entry points {", ".join(names)}.\n\n'
            f'Needs only pyopencl and numpy:\n\n'
            f'    k = Kernels()               # or Kernels(device="nvidia"), Kernels(result="device")\n'
            f'    out = k.{names[0]}(...)     # positional or keyword arguments (help(k.{names[0]}))\n'
            f'    print(k.last_profile)       # the kernels of the call and their times\n"""\n')
    methods = "".join("\n" + MethodPrinter(p).method(doc) for p, doc in zip(plans, docs))
    signatures = "".join(f"Kernels.{p.entry}.__signature__ = signature("
                         f"{python_names([a.name for a in p.args], len(p.args))!r}, method=True)\n"
                         for p in plans)
    sources_text = "SOURCES = {\n" + "".join(f"    {p.entry!r}: {src!r},\n" for p, src in zip(plans, sources)) + "}\n"
    types = "NP_TYPES = {" + ", ".join(f"{k!r}: {v}" for k, v in NP_TYPES.items()) + "}\n"
    messages = "\n\n" + inspect.getsource(P.failure_message)     # the run-time errors' words
    return (head + platforms_code() + "\n" + HELPERS_HEAD + messages + calling_code() + "\n\n" + types + HELPERS + methods
            + "\n\n" + signatures + "\n\n" + sources_text)
