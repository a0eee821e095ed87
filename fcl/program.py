"""The facade: a loaded, type-checked program, and its compiled kernels.

`load(text)` / `load_file(path)` -> `Program` (parse, expand includes, check);
`Program.type_of/evaluate/evaluate_with_cost/compile`; `Kernel` is a callable
compiled entry point, specialised to the element types of its arguments.
The CLI and the REPL call only this module (and fcl.values for literals).
"""
from __future__ import annotations

import numpy as np

from fcl.errors import ArgumentError, NO_SPAN
from fcl.hw import DEFAULT_HW
from fcl.syntax import ast as A
from fcl.syntax.loader import prelude_decls  # noqa: F401 (prelude_decls: used by the REPL)
from fcl.types import types as T

def hardware(block_size=None, warp_size=None, num_groups=None) -> dict[str, int]:
    """The hardware parameters, checked: positive, block a multiple of the warp."""
    hw = dict(DEFAULT_HW)
    for key, value in (("#BlockSize", block_size), ("#WarpSize", warp_size), ("#NumGroups", num_groups)):
        if value is not None:
            if int(value) <= 0:
                raise ArgumentError(f"{key} must be positive, not {value}")
            hw[key] = int(value)
    if hw["#BlockSize"] % hw["#WarpSize"]:
        raise ArgumentError(f"#BlockSize ({hw['#BlockSize']}) must be a multiple of #WarpSize ({hw['#WarpSize']})")
    return hw


class Program:
    """A parsed and type-checked FCL program (with or without the prelude)."""

    def __init__(self, program: A.Program, prelude: bool = True):
        from fcl.types import builtins_env, check_program, prelude_env
        self.ast = program
        self.prelude = prelude
        self.checked = check_program(program, prelude_env() if prelude else builtins_env())
        self.decls = (prelude_decls() if prelude else ()) + tuple(program.decls)
        self._evaluators: dict = {}

    def extend(self, decls) -> "Program":
        """This program followed by `decls` (declarations, includes expanded; a `sig` must be
        followed by its definition), checked against everything before them -> a new Program.

        Nothing is checked or evaluated twice: the evaluators move to the new Program and
        learn the new declarations (this Program builds fresh ones if it is used again).
        TypeCheckError, leaving this Program as it was, when a declaration does not check.
        """
        from fcl.types import check_program
        from fcl.types.infer import CheckedProgram
        decls = tuple(decls)
        added = check_program(A.Program(decls, self.ast.span), self.checked.env)
        new = Program.__new__(Program)
        new.ast = A.Program(tuple(self.ast.decls) + decls, self.ast.span)
        new.prelude = self.prelude
        schemes = {**self.checked.schemes, **added.schemes}
        new.checked = CheckedProgram(schemes, added.env, list(self.checked.decls) + list(added.decls))
        new.decls = self.decls + decls
        new._evaluators, self._evaluators = self._evaluators, {}
        for ev in new._evaluators.values():
            ev.add_decls(decls)
        return new

    # ------------------------------------------------------------ types

    def names(self) -> list[str]:
        """The program's own declarations, in order."""
        return list(self.checked.schemes)

    def declarations(self) -> list[tuple[str, str]]:
        """(name, canonical scheme) for every declaration of the file, in order."""
        from fcl.types import format_scheme
        return [(n, format_scheme(s)) for n, s in self.checked.decls]

    def scheme(self, name: str) -> T.Scheme:
        s = self.checked.env.lookup(name)
        if s is None:
            import difflib
            close = difflib.get_close_matches(name, self.checked.env.names(), n=3)
            hint = f"; did you mean {', '.join(f'`{c}`' for c in close)}?" if close else ""
            raise ArgumentError(f"no declaration named `{name}`{hint}")
        return s

    def type_of(self, name: str) -> str:
        """The canonical type of `name`, without its `forall` prefix."""
        from fcl.types import format_scheme
        text = format_scheme(self.scheme(name))
        return text.split(". ", 1)[1] if text.startswith("forall ") else text

    def scheme_of(self, name: str) -> str:
        """The canonical scheme of `name` (`forall ... . type`)."""
        from fcl.types import format_scheme
        return format_scheme(self.scheme(name))

    def param_types(self, name: str, nargs: int) -> list[T.Type]:
        """The parameter types of entry `name` applied to `nargs` arguments."""
        t = self.scheme(name).body
        if isinstance(t, T.TLevelFunT):
            raise ArgumentError(f"`{name}` takes a level first (it is level-polymorphic); an entry "
                                f"point must have a fixed level", self.span_of(name))
        params = []
        while isinstance(t, T.TFunT):
            params.append(t.arg)
            t = t.res
        if nargs != len(params):
            raise ArgumentError(f"`{name}` takes {len(params)} argument{'s' * (len(params) != 1)} "
                                f"but {nargs} {'were' if nargs != 1 else 'was'} given", self.span_of(name))
        return params

    def span_of(self, name: str):
        for d in reversed(self.ast.decls):
            if isinstance(d, A.Val) and d.name == name:
                return d.name_span if d.name_span is not NO_SPAN else d.span
        return None

    def coerce(self, name: str, args) -> list:
        from fcl.values import coerce_arg
        types = self.param_types(name, len(args))
        return [coerce_arg(a, t, k + 1) for k, (t, a) in enumerate(zip(types, args))]

    # ------------------------------------------------------------ evaluation

    def evaluator(self, hw: dict):
        from fcl.eval import Evaluator
        key = tuple(sorted(hw.items()))
        if key not in self._evaluators:
            self._evaluators[key] = Evaluator(list(self.decls), hw)
        return self._evaluators[key]

    def evaluate(self, name: str, *args, block_size=None, warp_size=None, num_groups=None):
        """Run `name` on `args` with the reference evaluator."""
        return self.evaluate_with_cost(name, *args, block_size=block_size, warp_size=warp_size,
                                       num_groups=num_groups, cost=False)[0]

    def evaluate_with_cost(self, name: str, *args, block_size=None, warp_size=None, num_groups=None,
                           cost: bool = True):
        """(result, CostReport) of `name` on `args` under the reference evaluator."""
        self.scheme(name)
        values = self.coerce(name, list(args))
        ev = self.evaluator(hardware(block_size, warp_size, num_groups))
        return ev.run(name, values, cost=cost)

    # ------------------------------------------------------------ compilation

    def compile(self, name: str, block_size=None, warp_size=None, num_groups=None, device=None,
                opt_level=None, no_pass=(), dump_after=()) -> "Kernel":
        """A callable kernel for entry `name` (OpenCL, built on first use per argument types).
        opt_level 0 runs only the required passes; `no_pass` names optimising passes to
        skip; `dump_after` names passes whose kernel IR `Kernel.kir(after=NAME)` returns
        (fcl.codegen.passes.PIPELINE lists them)."""
        from fcl.codegen.passes import PassOptions
        self.scheme(name)
        options = PassOptions.make(opt_level, no_pass, dump_after)
        return Kernel(self, name, hardware(block_size, warp_size, num_groups), device, options)


class Kernel:
    """A compiled entry point: `kernel(*args)` runs it on the OpenCL device."""

    def __init__(self, program: Program, name: str, hw: dict, device_spec=None, options=None):
        from fcl.codegen.passes import PassOptions
        self.program = program
        self.name = name
        self.hw = hw
        self.device_spec = device_spec
        self.options = options or PassOptions()
        self._specs: dict = {}        # argument types -> (Plan, source, spans)
        self._dumps: dict = {}        # argument types -> {pass name: kernel IR after it}
        self._launchers: dict = {}    # (argument types, device) -> Launcher
        self._last = None

    def specialise(self, arg_types: tuple):
        """(Plan, OpenCL source, spans) for concrete argument types, cached."""
        from fcl.codegen.lower import lower_entry
        from fcl.codegen.opencl import render
        from fcl.codegen.passes import run_pipeline
        if arg_types not in self._specs:
            kprog, spans = lower_entry(list(self.program.decls), self.name, list(arg_types), self.hw,
                                       self.program.span_of(self.name))
            kprog, self._dumps[arg_types] = run_pipeline(kprog, self.options)
            self._specs[arg_types] = (kprog, render(kprog), spans)
        self._last = arg_types
        return self._specs[arg_types]

    def default_types(self) -> tuple:
        """Parameter types with every type variable taken as int."""
        scheme = self.program.scheme(self.name)
        t, params = scheme.body, []
        while isinstance(t, T.TFunT):
            params.append(t.arg)
            t = t.res
        return tuple(default_type(p) for p in params)

    def current(self):
        return self.specialise(self._last if self._last is not None else self.default_types())

    @property
    def opencl_source(self) -> str:
        return self.current()[1]

    @property
    def plan(self):
        return self.current()[0]

    def kir(self, after: str | None = None) -> str:
        """The kernel IR after every pass, or after pass `after` (one of the compile's dump_after)."""
        from fcl.codegen.kir import format_program
        if after is None:
            return format_program(self.plan)
        self.current()
        dumps = self._dumps[self._last if self._last is not None else self.default_types()]
        if after not in dumps:
            raise ArgumentError(f"no kernel IR kept after `{after}`: compile with dump_after=[{after!r}]")
        return dumps[after]

    def explain(self) -> str:
        from fcl.codegen.plan import explain
        return explain(self.plan)

    def plan_json(self) -> str:
        from fcl.codegen.plan import json_text
        return json_text([self.plan])

    def launcher(self, args: list):
        from fcl.runtime.device import choose_device
        from fcl.runtime.launch import Launcher
        types = tuple(value_type(a) for a in args)
        kprog, source, spans = self.specialise(types)
        device = choose_device(self.device_spec)
        key = (types, device.int_ptr)
        if key not in self._launchers:
            self._launchers[key] = Launcher(kprog, source, device, spans)
        return self._launchers[key]

    def emulate(self, *args):
        """The result of the compiled plan run on the kernel-IR interpreter: no device
        (fcl.runtime.emulate; slow, for small inputs and for testing passes)."""
        from fcl.runtime.emulate import Emulator
        values = self.program.coerce(self.name, list(args))
        plan = self.specialise(tuple(value_type(a) for a in values))[0]
        return Emulator(plan).run(values)[0]

    def run(self, *args):
        """(result, [(kernel name, seconds)]) on the device."""
        from fcl.runtime.device import running_on
        values = self.program.coerce(self.name, list(args))
        launcher = self.launcher(values)
        with running_on(launcher.device):
            return launcher.run(values)

    def __call__(self, *args):
        return self.run(*args)[0]

    def time(self, *args, repeat: int = 10) -> list[float]:
        """Kernel seconds (profiling events, all kernels of one run summed) of `repeat` runs."""
        from fcl.runtime.device import running_on
        values = self.program.coerce(self.name, list(args))
        launcher = self.launcher(values)
        with running_on(launcher.device):
            return launcher.time(values, repeat)


def default_type(t: T.Type) -> T.Type:
    if isinstance(t, T.TVarT):
        return T.INT
    if isinstance(t, T.TPullT):
        return T.TPullT(default_type(t.elem))
    if isinstance(t, T.TPairT):
        return T.TPairT(default_type(t.fst), default_type(t.snd))
    return t


SCALAR_OF_DTYPE = {np.dtype(np.int32): T.INT, np.dtype(np.float32): T.FLOAT,
                   np.dtype(np.float64): T.DOUBLE, np.dtype(np.bool_): T.BOOL}


def value_type(v) -> T.Type:
    """The FCL type of a coerced argument value."""
    if isinstance(v, (bool, np.bool_)):
        return T.BOOL
    if isinstance(v, np.float32):
        return T.FLOAT
    if isinstance(v, (int, np.integer)):
        return T.INT
    if isinstance(v, float):
        return T.DOUBLE
    if isinstance(v, np.ndarray):
        return T.TPullT(SCALAR_OF_DTYPE.get(v.dtype, T.INT))
    if isinstance(v, tuple):
        return T.TPairT(value_type(v[0]), value_type(v[1]))
    if isinstance(v, list):
        return T.TPullT(value_type(v[0]) if v else T.INT)
    raise ArgumentError(f"cannot pass a {type(v).__name__} to a kernel")


# ---------------------------------------------------------------- loading

def load(text: str, name: str = "<string>", prelude: bool = True) -> Program:
    """Parse and check program text (includes resolved from the current directory)."""
    from fcl.syntax import parse_program
    from fcl.syntax.loader import expand_includes
    return Program(expand_includes(parse_program(text, name), name), prelude)


def load_file(path, prelude: bool = True) -> Program:
    """Parse (expanding includes) and check a .fcl file."""
    from fcl.syntax import load_program
    return Program(load_program(str(path)), prelude)
