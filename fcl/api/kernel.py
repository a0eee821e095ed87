"""A compiled entry point: `Kernel`, callable on an OpenCL device, and `Build`, one
specialisation of it (host plan, OpenCL source, buffer spans, kernel-IR dumps).

A `Kernel` (made by `Program.compile`) holds the entry's static-argument policy
(`static_values`: pinned values, and int and bool arguments static until
STATIC_LIMIT values), its docstring, its builds (kept here and in the kernel
cache on disk, fcl.api.kernel_cache), and runs a build on a device
(`__call__`, `run`, `time`) or on the kernel-IR interpreter (`emulate`).
`value_type` gives the FCL type of an argument value, which picks the build.

fcl.api.literals (which reads fcl.eval.values) and fcl.runtime.device, launch
and emulate (which import pyopencl) are imported where they are first used,
so that `import fcl` loads neither the evaluator nor pyopencl.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fcl.api import kernel_cache as cache
from fcl.base import diskcache
from fcl.base.errors import ArgumentError
from fcl.base.hw import STORAGE_DTYPES, VALUE_DTYPES
from fcl.codegen.kir import format_program
from fcl.codegen.lower.entry import lower_entry
from fcl.codegen.opencl import render
from fcl.codegen.passes import PassOptions, run_pipeline
from fcl.codegen.plan import Plan, explain, json_text
from fcl.runtime import calling as C
from fcl.types import terms as T
from fcl.types.terms import Namer, format_type
from fcl.types.unify import type_vars

if TYPE_CHECKING:
    from fcl.api.program import Program

# Imported on first use, so that `import fcl` loads neither the evaluator nor pyopencl
# (so are fcl.runtime.launch and emulate, in Kernel.launcher and Kernel.emulate).

def _literals():
    from fcl.api import literals        # it reads fcl.eval.values: the evaluator
    return literals


def _device():
    from fcl.runtime import device      # it imports pyopencl
    return device


STATIC_LIMIT = 8     # distinct values of one argument that get static builds of their own
# When #NumGroups is not given and the program does not read it, a launch takes up to
# this many work-groups (a part each, as the hand-written kernels of bench/ launch),
# instead of #NumGroups: results do not depend on the number of groups launched.
LAUNCH_GROUPS = 65536


@dataclass(frozen=True)
class Build:
    """One specialisation of an entry point: its host plan, OpenCL source, buffer spans and
    the kernel IR kept after the passes named in dump_after."""
    plan: Plan
    source: str
    spans: dict
    dumps: dict


class Kernel:
    """A compiled entry point: `kernel(*args, **kwargs)` runs it on the OpenCL device (keyword
    arguments by the program's parameter names).  `last_profile`: the kernels the last call
    launched and their times (fcl.runtime.calling.Profile); `result`: "host" (numpy results)
    or "device" (pyopencl arrays)."""

    def __init__(self, program: Program, name: str, hw: dict, device_spec=None, options=None,
                 static=None, dynamic=None, launch_groups=None, types=None):
        self.options = options or PassOptions()
        self.program = program
        self.name = name
        self.hw = hw
        self.device_spec = device_spec
        self.chosen = self.choose_types(types or {})   # type variable -> the type it is built for
        self.types = self.default_types()
        self.param_names = program.param_names(name)[:len(self.types)]
        self.arg_names = C.python_names(self.param_names, len(self.types))
        self.pinned = self.resolve_static(static or {})
        self.result = "host"
        self.last_profile = None
        self.__doc__ = self.describe()
        self.__signature__ = C.signature(self.arg_names)
        self.dynamic = set(range(len(self.types))) if dynamic is True else \
            {self.position(p) for p in (dynamic or ())}
        self._builds: dict = {}       # (argument types, static values) -> Build
        self._launchers: dict = {}    # (argument types, static values, device) -> Launcher
        self._seen: dict = {}         # position -> values seen under the default policy
        self.launch_groups = launch_groups    # the launch cap when #NumGroups is free (LAUNCH_GROUPS)

    # -- static arguments

    def position(self, key) -> int:
        """The 0-based position of a parameter given by name or 1-based position."""
        if isinstance(key, int) or str(key).isdigit():
            k = int(key) - 1
            if 0 <= k < len(self.types):
                return k
            raise ArgumentError(f"`{self.name}` has no parameter {key} (it takes {len(self.types)})")
        if key in self.param_names:
            return self.param_names.index(key)
        known = ", ".join(f"`{n}`" for n in self.param_names) or "none with names"
        raise ArgumentError(f"`{self.name}` has no parameter named `{key}` (its parameters: {known})")

    def resolve_static(self, static: dict) -> dict[int, object]:
        """{position: value} of the static arguments given as {name or 1-based position: value},
        each checked and converted; ArgumentError for a parameter that is not a scalar."""
        out = {}
        for key, value in static.items():
            k = self.position(key)
            if not isinstance(self.types[k], T.TCon):
                raise ArgumentError(f"parameter {self.label(k)} of `{self.name}` has type {self.types[k]}; "
                                    f"only scalar arguments can be static")
            out[k] = _literals().coerce_arg(value, self.types[k], k + 1)
        return out

    def label(self, k: int) -> str:
        """How a message names parameter k: `name` in backquotes, else its 1-based position."""
        return f"`{self.param_names[k]}`" if k < len(self.param_names) else str(k + 1)

    def full_args(self, args: list, kwargs: dict | None = None) -> list:
        """The arguments in order, from positional and keyword ones (by parameter name), with
        the pinned static ones filled in where the caller left them out; ArgumentError naming
        the parameters for a wrong count or name."""
        return C.bind_arguments(self.name, self.arg_names, tuple(args), kwargs or {}, self.pinned)

    def describe(self, compiled: bool = False) -> str:
        """The docstring: the entry's FCL type, each argument (with `compiled`, the types of the
        default build, type variables as chosen or int: those of `fclc compile`, and a line
        saying which), the result, the static ones."""
        namer, t, params = Namer(), self.program.scheme(self.name).body, []
        format_type(t, namer)
        while isinstance(t, T.TFunT):
            params.append(t.arg)
            t = t.res
        if compiled:
            params, t = [default_type(p, self.chosen) for p in params], default_type(t, self.chosen)
        span = self.program.span_of(self.name)
        origin = span.source.name if span is not None else "the program"
        text = C.describe_entry(self.name, self.program.type_of(self.name), self.arg_names,
                                [format_type(p, namer) for p in params], origin, format_type(t, namer))
        static = ", ".join(f"{self.arg_names[k]} = {v!r}" for k, v in sorted(self.pinned.items()))
        if compiled and self.type_variables():
            lines = text.split("\n")
            lines.insert(3, f"    ({self.types_note()})")
            text = "\n".join(lines)
        return text + (f"\nStatic (compiled in; may be left out): {static}." if static else "")

    def types_note(self) -> str:
        """`built for 'a = int, the default; ...`: the types of the build `fclc compile` shows,
        where the entry has type variables."""
        fixed = self.fixed_types()
        said = ", ".join(f"{v} = {ty}" for v, ty, _ in fixed)
        defaulted = [v for v, _, chosen in fixed if not chosen]
        if not defaulted:
            return f"built for {said}"
        return (f"built for {said}, {'the default' if len(defaulted) == len(fixed) else 'int by default'}"
                f"; `fclc compile --type {defaulted[0][1:]}=double` (or float, bool) builds for another "
                f"element type")

    def static_values(self, values: list) -> tuple:
        """((position, value), ...) compiled in for a call with these (coerced) values."""
        out = []
        for k, v in enumerate(values):
            v = v.item() if isinstance(v, np.generic) else v
            if k in self.pinned:
                if v != self.pinned[k]:
                    raise ArgumentError(f"argument {k + 1} ({self.label(k)}) of `{self.name}` is static "
                                        f"{self.pinned[k]!r} in this kernel, not {v!r}")
                out.append((k, v))
            elif self.auto_static(k, v):
                out.append((k, v))
        return tuple(out)

    def auto_static(self, k: int, v) -> bool:
        """The default policy: int and bool arguments are static unless marked dynamic; the
        first STATIC_LIMIT distinct values of an argument get builds of their own, and one
        dynamic build serves all later values."""
        if k in self.dynamic or value_type(v) not in (T.INT, T.BOOL):
            return False
        seen = self._seen.setdefault(k, set())
        if v not in seen and len(seen) < STATIC_LIMIT:
            seen.add(v)
        return v in seen

    # -- builds

    def specialise(self, arg_types: tuple, static: tuple = ()) -> Build:
        """The build for concrete argument types and static values ((position, value), ...),
        kept here and in the kernel cache on disk (fcl/api/kernel_cache.py)."""
        key = (arg_types, static)
        if key not in self._builds:
            entry = cache.entry(self, arg_types, static)
            build = None if entry is None else diskcache.load(entry, Build)
            if build is None:
                build = self.generate(arg_types, static)
                if entry is not None:
                    diskcache.store(entry, build, cache.KEEP)
            self._builds[key] = build
        return self._builds[key]

    def generate(self, arg_types: tuple, static: tuple) -> Build:
        """Code generation: lowering, the passes, the OpenCL source."""
        plan, spans = lower_entry(list(self.program.decls), self.name, list(arg_types), self.hw,
                                  self.program.span_of(self.name), dict(static), self.param_names,
                                  self.launch_groups, bounds_checks=self.options.bounds_checks,
                                  core=self.program.core)
        plan, dumps = run_pipeline(plan, self.options)
        return Build(plan, render(plan), spans, dumps)

    def default_types(self) -> tuple:
        """Parameter types with every type variable taken as chosen (`types`), else int."""
        scheme = self.program.scheme(self.name)
        t, params = scheme.body, []
        while isinstance(t, T.TFunT):
            params.append(t.arg)
            t = t.res
        return tuple(default_type(p, self.chosen) for p in params)

    def type_variables(self) -> dict:
        """The entry's type variables by the name its printed type gives them (`a` for `'a`),
        in order of appearance."""
        body, namer = self.program.scheme(self.name).body, Namer()
        format_type(body, namer)
        found = type_vars(body)
        return {printed.lstrip("'"): found[name] for name, printed in namer.types.items() if name in found}

    def choose_types(self, types: dict) -> dict:
        """{internal type variable: type} from {printed name: "int"|"float"|"double"|"bool"};
        ArgumentError for a name the entry's type lacks or a type its kind excludes."""
        variables, out = self.type_variables(), {}
        for key, text in types.items():
            var = variables.get(str(key).lstrip("'"))
            if var is None:
                have = ", ".join(f"'{n}" for n in variables)
                raise ArgumentError(f"`{self.name} : {self.program.type_of(self.name)}` has no type variable "
                                    f"'{str(key).lstrip(chr(39))}" + (f" (it has {have})" if have else
                                                                      " (its type has none)"))
            allowed = KIND_TYPES.get(var.kind, tuple(TYPE_NAMES))
            if text not in allowed:
                raise ArgumentError(f"'{str(key).lstrip(chr(39))} = {text}: the type variable stands for "
                                    f"{' or '.join(allowed)} here ({self.name} : {self.program.type_of(self.name)})")
            out[var.name] = TYPE_NAMES[text]
        return out

    def fixed_types(self) -> list[tuple[str, str, bool]]:
        """(`'a`, type, chosen) for each type variable of the entry: the type the build
        `opencl_source` shows is for, and whether it was chosen (else int by default)."""
        return [(f"'{n}", format_type_name(self.chosen.get(v.name, T.INT)), v.name in self.chosen)
                for n, v in self.type_variables().items()]

    def arg_types(self, values: list) -> tuple:
        """The concrete types of coerced arguments (an empty list takes the declared type)."""
        declared = self.program.param_types(self.name, len(values))
        return tuple(value_type(a, d) for a, d in zip(values, declared))

    def default_build(self) -> Build:
        """The build for the default types with only the pinned static values (what
        `fclc compile` prints); independent of earlier calls."""
        types = tuple(value_type(self.pinned[k]) if k in self.pinned else t for k, t in enumerate(self.types))
        return self.specialise(types, tuple(sorted(self.pinned.items())))

    def build_for(self, *args, **kwargs) -> Build:
        """The build a call with these arguments runs."""
        values = self.coerce(args, kwargs)
        return self.specialise(self.arg_types(values), self.static_values(values))

    @property
    def opencl_source(self) -> str:
        """The OpenCL source of the default build (as `fclc compile` prints it)."""
        return self.default_build().source

    @property
    def plan(self) -> Plan:
        """The host plan of the default build."""
        return self.default_build().plan

    def kir(self, after: str | None = None) -> str:
        """The kernel IR after every pass, or after pass `after` (one of the compile's dump_after)."""
        if after is None:
            return format_program(self.plan)
        dumps = self.default_build().dumps
        if after not in dumps:
            raise ArgumentError(f"no kernel IR kept after `{after}`: compile with dump_after=[{after!r}]")
        return dumps[after]

    def explain(self) -> str:
        """The host plan in the program's terms, then notes on prelude functions that leave
        elements out."""
        notes = self.program.dropping_notes(self.name)
        return explain(self.plan, self.program.param_names(self.name)) + "".join("\n" + n for n in notes)

    def plan_json(self) -> str:
        """The host plan of the default build as JSON (`fclc compile --emit json`)."""
        return json_text([self.plan])

    # -- running

    def coerce(self, args, kwargs=None) -> list:
        """The arguments checked against the parameter types and converted (pyopencl arrays
        stay on the device, converted there if their dtype is not the parameter's)."""
        values = self.full_args(list(args), kwargs)
        types = self.program.param_types(self.name, len(values))
        return [self.coerce_one(v, t, k) for k, (v, t) in enumerate(zip(values, types))]

    def coerce_one(self, v, t: T.Type, k: int):
        """Argument k checked against parameter type `t` and converted; a pyopencl array (alone
        or in a pair) stays on the device, as an array of the parameter's element type."""
        L = _literals()
        if isinstance(v, tuple) and isinstance(t, T.TPairT) and len(v) == 2 and \
                any(C.is_device_array(x) for x in v):
            return (self.coerce_one(v[0], t.fst, k), self.coerce_one(v[1], t.snd, k))
        if not C.is_device_array(v):
            return L.coerce_arg(v, t, k + 1, self.param_names[k] if k < len(self.param_names) else "")
        what = f"argument {k + 1}" + (f" ({self.label(k)})" if k < len(self.param_names) else "")
        elem = t.elem if isinstance(t, T.TPullT) else None
        name = elem.name if isinstance(elem, T.TCon) else None
        if isinstance(elem, T.TVarT):       # any scalar: the dtype's, other ints as int
            name = SCALAR_OF_DTYPE[v.dtype].name if v.dtype in SCALAR_OF_DTYPE else \
                "int" if v.dtype.kind in "iu" else None
        if name is None:
            raise ArgumentError(f"{what}: a pyopencl array is passed only for an array of int, float, "
                                f"double or bool; the parameter has type {L.show_type(t)}")
        return C.device_array(v, STORAGE_DTYPES[name], name, what)

    @property
    def queue(self):
        """The pyopencl CommandQueue (with profiling) calls without pyopencl arguments run on:
        make input arrays with `pyopencl.array.to_device(kernel.queue, x)`."""
        D = _device()
        return D.get_queue(D.choose_device(self.device_spec))

    def launcher(self, values: list):
        """The Launcher of this call: on the context of its pyopencl arguments, if any (they
        must share one), else on the chosen device."""
        from fcl.runtime.launch import Launcher      # lazy: imports pyopencl (see the top)
        types = self.arg_types(values)
        static = self.static_values(values)
        build = self.specialise(types, static)
        arrays = [a for v in values for a in (v if isinstance(v, tuple) else (v,)) if C.is_device_array(a)]
        context = arrays[0].context if arrays else None
        if any(a.context.int_ptr != context.int_ptr for a in arrays):
            raise ArgumentError(f"the pyopencl arrays passed to `{self.name}` belong to different OpenCL contexts")
        device = (arrays[0].queue.device if arrays[0].queue is not None else context.devices[0]) if arrays \
            else _device().choose_device(self.device_spec)
        key = (types, static, device.int_ptr, context.int_ptr if context else None)
        if key not in self._launchers:
            self._launchers[key] = Launcher(build.plan, build.source, device, build.spans, context)
        return self._launchers[key]

    def emulate(self, *args):
        """The result of the compiled plan run on the kernel-IR interpreter: no device
        (fcl.runtime.emulate; slow, for small inputs and for testing passes)."""
        from fcl.runtime.emulate import Emulator      # lazy: imports pyopencl (see the top)
        values = self.coerce(args)
        build = self.specialise(self.arg_types(values), self.static_values(values))
        return Emulator(build.plan, build.spans).run(values)[0]

    def run(self, *args, **kwargs):
        """(result, [(kernel name, seconds)]) on the device."""
        result = self(*args, **kwargs)
        with _device().running_on(self._last_device):
            return result, self.last_profile.kernels

    def __call__(self, *args, **kwargs):
        """The result of the entry on these arguments, run on the device; the kernels and
        their times are in `last_profile` afterwards."""
        values = self.coerce(args, kwargs)
        launcher = self.launcher(values)
        self._last_device = launcher.device
        with _device().running_on(launcher.device):
            result, self.last_profile = launcher.start(values, on_device=self.result == "device")
        return result

    def time(self, *args, repeat: int = 10) -> list[float]:
        """Kernel seconds (profiling events, all kernels of one run summed) of `repeat` runs."""
        values = self.coerce(args)
        launcher = self.launcher(values)
        with _device().running_on(launcher.device):
            return launcher.time(values, repeat)


TYPE_NAMES = {"int": T.INT, "float": T.FLOAT, "double": T.DOUBLE, "bool": T.BOOL}
KIND_TYPES = {"NUM": ("int", "float", "double"), "FRAC": ("float", "double")}


def format_type_name(t: T.Type) -> str:
    return next(name for name, ty in TYPE_NAMES.items() if ty == t)


def default_type(t: T.Type, chosen: dict | None = None) -> T.Type:
    """`t` with each type variable as `chosen` gives it ({name: type}), else int."""
    if isinstance(t, T.TVarT):
        return (chosen or {}).get(t.name, T.INT)
    if isinstance(t, T.TPullT):
        return T.TPullT(default_type(t.elem, chosen))
    if isinstance(t, T.TPairT):
        return T.TPairT(default_type(t.fst, chosen), default_type(t.snd, chosen))
    if isinstance(t, T.TPushT):
        return T.TPushT(default_type(t.elem, chosen), t.level)
    return t


SCALAR_OF_DTYPE = {dtype: TYPE_NAMES[ty] for ty, dtype in VALUE_DTYPES.items()}   # an array's elements


def value_type(v, declared: T.Type | None = None) -> T.Type:
    """The FCL type of a coerced argument value (an empty list takes the element type
    the parameter declares, type variables as int)."""
    if isinstance(v, list) and not v and isinstance(declared, T.TPullT):
        return default_type(declared)
    if isinstance(v, (bool, np.bool_)):
        return T.BOOL
    if isinstance(v, np.float32):
        return T.FLOAT
    if isinstance(v, (int, np.integer)):
        return T.INT
    if isinstance(v, float):
        return T.DOUBLE
    if isinstance(v, np.ndarray) or C.is_device_array(v):
        return T.TPullT(SCALAR_OF_DTYPE.get(np.dtype(v.dtype), T.INT))
    if isinstance(v, tuple):
        parts = declared if isinstance(declared, T.TPairT) else T.TPairT(None, None)
        return T.TPairT(value_type(v[0], parts.fst), value_type(v[1], parts.snd))
    if isinstance(v, list):
        elem = declared.elem if isinstance(declared, T.TPullT) else None
        return T.TPullT(value_type(v[0], elem) if v else T.INT)
    raise ArgumentError(f"cannot pass a {type(v).__name__} to a kernel")
