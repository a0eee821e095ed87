"""The facade: a loaded, type-checked program, and its compiled kernels.

`load(text)` / `load_file(path)` -> `Program` (parse, expand includes, check);
`Program.type_of/evaluate/evaluate_with_cost/compile`; `Kernel` is a callable
compiled entry point, specialised to the element types of its arguments.
The CLI and the REPL call only this module (and fcl.api.literals for literals).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fcl.base.errors import ArgumentError, NO_SPAN
from fcl.base.hw import DEFAULT_HW, STORAGE_DTYPES
from fcl.runtime import calling as C
from fcl.syntax import ast as A
from fcl.syntax.loader import prelude_decls  # noqa: F401 (prelude_decls: used by the REPL)
from fcl.types import terms as T

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
        new.checked = CheckedProgram(schemes, added.env, list(self.checked.decls) + list(added.decls),
                                     self.checked.core.then(added.core))
        new.decls = self.decls + decls
        new._evaluators, self._evaluators = self._evaluators, {}
        for ev in new._evaluators.values():
            ev.add_decls(decls)
        return new

    # ------------------------------------------------------------ types

    @property
    def core(self):
        """The typed core of `decls` (the prelude's and this program's), for the lowering."""
        from fcl.types.infer import prelude_core
        return prelude_core().then(self.checked.core) if self.prelude else self.checked.core

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
            own = self.names()
            if close:
                hint = f"; did you mean {', '.join(f'`{c}`' for c in close)}?"
            elif own:
                listed = ", ".join(f"`{c}`" for c in own[-12:])
                hint = (f"; the program declares {listed}" if len(own) <= 12
                        else f"; the program's last 12 declarations are {listed}")
            else:
                hint = "; the program declares nothing of its own"
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
        self.check_fixed_level(name)
        t = self.scheme(name).body
        params = []
        while isinstance(t, T.TFunT):
            params.append(t.arg)
            t = t.res
        if nargs != len(params):
            raise ArgumentError(f"`{name}` takes {len(params)} argument{'s' * (len(params) != 1)} "
                                f"but {nargs} {'were' if nargs != 1 else 'was'} given", self.span_of(name))
        return params

    def check_fixed_level(self, name: str) -> None:
        """ArgumentError at `name`'s declaration if it takes a level first: a kernel's levels
        are fixed, so an entry point cannot be level-abstracted (language.md section 2)."""
        t = self.scheme(name).body
        if not isinstance(t, T.TLevelFunT):
            return
        from fcl.types import format_scheme
        raise ArgumentError(
            f"`{name}` takes a level (its type is {format_scheme(self.scheme(name))}), and an entry "
            f"point's levels are fixed: apply it to a level in a wrapper and run that, e.g. "
            f"`{_level_wrapper(name, t, self.param_names(name))}`", self.span_of(name))

    def param_names(self, name: str) -> list[str]:
        """The names of the parameters that `name`'s definition binds first (`fun f a b = ...`)."""
        decl = next((d for d in reversed(self.decls) if isinstance(d, A.Val) and d.name == name), None)
        names, e = [], decl.value if decl is not None else None
        while isinstance(e, (A.Lam, A.LevelLam)):
            if isinstance(e, A.Lam):
                names.append(e.param)
            e = e.body
        return names

    def dropping_notes(self, name: str) -> list[str]:
        """`FILE:LINE:COL: note` for each use of a prelude function that leaves elements out
        without an error (DROPPING) in declaration `name` or the declarations it uses."""
        if not self.prelude:
            return []
        decls = [d for d in self.ast.decls if isinstance(d, A.Val)]
        own = {d.name for d in decls}
        notes, seen = [], set()
        todo = [max((k for k, d in enumerate(decls) if d.name == name), default=None)]
        while todo:
            k = todo.pop()
            if k is None or k in seen:
                continue
            seen.add(k)
            for use in A.free_uses(decls[k].value):
                if use.name in own:     # the newest declaration of that name before this one
                    todo.append(max((j for j in range(k) if decls[j].name == use.name), default=None))
                elif use.name in DROPPING and use.span is not NO_SPAN:
                    notes.append((use.span.source.name, use.span.start,
                                  f"{use.span.location()}: note: `{use.name}` {DROPPING[use.name]}"))
        return [text for *_, text in sorted(set(notes))]

    def span_of(self, name: str):
        for d in reversed(self.ast.decls):
            if isinstance(d, A.Val) and d.name == name:
                return d.name_span if d.name_span is not NO_SPAN else d.span
        return None

    def coerce(self, name: str, args) -> list:
        from fcl.api.literals import coerce_arg
        types = self.param_types(name, len(args))
        names = self.param_names(name)
        return [coerce_arg(a, t, k + 1, names[k] if k < len(names) else "")
                for k, (t, a) in enumerate(zip(types, args))]

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
                opt_level=None, no_pass=(), dump_after=(), static=None, dynamic=None,
                result: str = "host", bounds_checks=True, types=None) -> "Kernel":
        """A callable kernel for entry `name` (OpenCL, built on first use per argument types and
        static values).  `device`: a substring of a device, platform or vendor name (as
        `fclc --device`; default: PYOPENCL_CTX, else fclc's default device).  `result="device"`
        returns array results as pyopencl arrays left on the device (for the next kernel,
        without a copy); `"host"` as numpy arrays.  `static`: {parameter name or 1-based position: value}, arguments compiled
        in as constants.  Every other int or bool argument is static too, specialised on the value
        of each call, unless `dynamic` names it (a list of names or positions, or True for all).
        opt_level 0 runs only the required passes; `no_pass` names optimising passes to
        skip; `dump_after` names passes whose kernel IR `Kernel.kir(after=NAME)` returns
        (fcl.codegen.passes.PIPELINE lists them).  `bounds_checks=False` leaves out the device's
        checks of `index` (docs/language.md, "Bounds checks").  `types`: {type variable of
        the entry's type (`"a"` for `'a`): "int", "float", "double" or "bool"}, the element
        types of the build `opencl_source`, `plan` and `fclc compile` show (each call still
        builds for the types of its arguments); the others are int (`Kernel.fixed_types`)."""
        from fcl.codegen.passes import PassOptions
        self.check_fixed_level(name)
        options = PassOptions.make(opt_level, no_pass, dump_after, bounds_checks=bounds_checks)
        if result not in ("host", "device"):
            raise ArgumentError(f"result must be \"host\" or \"device\", not {result!r}")
        kernel = Kernel(self, name, hardware(block_size, warp_size, num_groups), device, options, static, dynamic,
                        launch_groups=LAUNCH_GROUPS if num_groups is None else None, types=types)
        kernel.result = result
        return kernel


def _level_wrapper(name: str, t: T.Type, names: list[str]) -> str:
    """`fun placeBlock n arr = place <block> n arr`: a declaration that applies level-abstracted
    `name` (of type `t`) to levels, each chosen so that the result is a grid-level array where
    it decides the result's level (else block)."""
    result = t
    while isinstance(result, (T.TFunT, T.TLevelFunT)):
        result = result.res if isinstance(result, T.TFunT) else result.body
    levels = {}
    if isinstance(result, T.TPushT):
        lv, ups = result.level, 0
        while isinstance(lv, T.LSucc):
            lv, ups = lv.inner, ups + 1
        if isinstance(lv, T.LVarT) and ups <= 3:
            levels[lv.name] = ("thread", "warp", "block", "grid")[3 - ups]
    params, lets, call, first = [], [], name, None
    while isinstance(t, (T.TFunT, T.TLevelFunT)):
        if isinstance(t, T.TLevelFunT):
            level = levels.get(t.lvar, "block")
            first = first or level
            if " " in call:         # level application follows a name only
                lets.append(f"let f{len(lets) + 1} = {call} in ")
                call = f"f{len(lets)}"
            call += f" <{level}>"
            t = t.body
        else:
            k = len(params)
            params.append(names[k] if k < len(names) else f"x{k + 1}")
            call += f" {params[-1]}"
            t = t.res
    head = " ".join([f"{name}{first[0].upper()}{first[1:]}"] + params)
    return f"fun {head} = {''.join(lets)}{call}"


# Prelude functions that leave elements out without an error, and what a note says of a use
# (`fclc compile --explain`, `fclc eval --cost`; docs/language.md section 6).
DROPPING = {
    "halve": "splits an odd length unevenly (the second half is one longer): `zipWith` of the "
             "halves leaves out the last element",
    "evenOdds": "splits an odd length unevenly (the first part is one longer): `zipWith` of the "
                "parts leaves out the last element",
    "splitUp": "leaves out the last `length mod n` elements (n: the part size); `pad n x` the "
               "array first to keep them",
    "coalesce": "leaves out the last `length mod n` elements (n: the number of parts); `pad n x` "
                "the array first to keep them",
    "split2DGrid": "leaves out the rows and columns past the last whole t x t tile",
}

STATIC_LIMIT = 8     # distinct values of one argument that get static builds of their own
# When #NumGroups is not given and the program does not read it, a launch takes up to
# this many work-groups (a part each, as the hand-written kernels of bench/ launch),
# instead of #NumGroups: results do not depend on the number of groups launched.
LAUNCH_GROUPS = 65536


@dataclass(frozen=True)
class Build:
    """One specialisation of an entry point: its host plan, OpenCL source, buffer spans and
    the kernel IR kept after the passes named in dump_after."""
    plan: object
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
        from fcl.codegen.passes import PassOptions
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
        from fcl.api.literals import coerce_arg
        out = {}
        for key, value in static.items():
            k = self.position(key)
            if not isinstance(self.types[k], T.TCon):
                raise ArgumentError(f"parameter {self.label(k)} of `{self.name}` has type {self.types[k]}; "
                                    f"only scalar arguments can be static")
            out[k] = coerce_arg(value, self.types[k], k + 1)
        return out

    def label(self, k: int) -> str:
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
        from fcl.types.terms import Namer, format_type
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
        kept here and in the kernel cache on disk (fcl/codegen/cache.py)."""
        from fcl.api import kernel_cache as cache
        from fcl.base import diskcache
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
        from fcl.codegen.lower.entry import lower_entry
        from fcl.codegen.opencl import render
        from fcl.codegen.passes import run_pipeline
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
        from fcl.types.terms import Namer, format_type
        from fcl.types.unify import type_vars
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
        return self.default_build().source

    @property
    def plan(self):
        return self.default_build().plan

    def kir(self, after: str | None = None) -> str:
        """The kernel IR after every pass, or after pass `after` (one of the compile's dump_after)."""
        from fcl.codegen.kir import format_program
        if after is None:
            return format_program(self.plan)
        dumps = self.default_build().dumps
        if after not in dumps:
            raise ArgumentError(f"no kernel IR kept after `{after}`: compile with dump_after=[{after!r}]")
        return dumps[after]

    def explain(self) -> str:
        """The host plan in the program's terms, then notes on prelude functions that leave
        elements out."""
        from fcl.codegen.plan import explain
        notes = self.program.dropping_notes(self.name)
        return explain(self.plan, self.program.param_names(self.name)) + "".join("\n" + n for n in notes)

    def plan_json(self) -> str:
        from fcl.codegen.plan import json_text
        return json_text([self.plan])

    # -- running

    def coerce(self, args, kwargs=None) -> list:
        """The arguments checked against the parameter types and converted (pyopencl arrays
        stay on the device, converted there if their dtype is not the parameter's)."""
        values = self.full_args(list(args), kwargs)
        types = self.program.param_types(self.name, len(values))
        return [self.coerce_one(v, t, k) for k, (v, t) in enumerate(zip(values, types))]

    def coerce_one(self, v, t: T.Type, k: int):
        from fcl.api.literals import coerce_arg, show_type
        if isinstance(v, tuple) and isinstance(t, T.TPairT) and len(v) == 2 and \
                any(C.is_device_array(x) for x in v):
            return (self.coerce_one(v[0], t.fst, k), self.coerce_one(v[1], t.snd, k))
        if not C.is_device_array(v):
            return coerce_arg(v, t, k + 1, self.param_names[k] if k < len(self.param_names) else "")
        what = f"argument {k + 1}" + (f" ({self.label(k)})" if k < len(self.param_names) else "")
        elem = t.elem if isinstance(t, T.TPullT) else None
        name = elem.name if isinstance(elem, T.TCon) else None
        if isinstance(elem, T.TVarT):       # any scalar: the dtype's, other ints as int
            name = SCALAR_OF_DTYPE[v.dtype].name if v.dtype in SCALAR_OF_DTYPE else \
                "int" if v.dtype.kind in "iu" else None
        if name is None:
            raise ArgumentError(f"{what}: a pyopencl array is passed only for an array of int, float, "
                                f"double or bool; the parameter has type {show_type(t)}")
        return C.device_array(v, STORAGE_DTYPES[name], name, what)

    @property
    def queue(self):
        """The pyopencl CommandQueue (with profiling) calls without pyopencl arguments run on:
        make input arrays with `pyopencl.array.to_device(kernel.queue, x)`."""
        from fcl.runtime.device import choose_device, get_queue
        return get_queue(choose_device(self.device_spec))

    def launcher(self, values: list):
        """The Launcher of this call: on the context of its pyopencl arguments, if any (they
        must share one), else on the chosen device."""
        from fcl.runtime.device import choose_device
        from fcl.runtime.launch import Launcher
        types = self.arg_types(values)
        static = self.static_values(values)
        build = self.specialise(types, static)
        arrays = [a for v in values for a in (v if isinstance(v, tuple) else (v,)) if C.is_device_array(a)]
        context = arrays[0].context if arrays else None
        if any(a.context.int_ptr != context.int_ptr for a in arrays):
            raise ArgumentError(f"the pyopencl arrays passed to `{self.name}` belong to different OpenCL contexts")
        device = (arrays[0].queue.device if arrays[0].queue is not None else context.devices[0]) if arrays \
            else choose_device(self.device_spec)
        key = (types, static, device.int_ptr, context.int_ptr if context else None)
        if key not in self._launchers:
            self._launchers[key] = Launcher(build.plan, build.source, device, build.spans, context)
        return self._launchers[key]

    def emulate(self, *args):
        """The result of the compiled plan run on the kernel-IR interpreter: no device
        (fcl.runtime.emulate; slow, for small inputs and for testing passes)."""
        from fcl.runtime.emulate import Emulator
        values = self.coerce(args)
        build = self.specialise(self.arg_types(values), self.static_values(values))
        return Emulator(build.plan, build.spans).run(values)[0]

    def run(self, *args, **kwargs):
        """(result, [(kernel name, seconds)]) on the device."""
        result = self(*args, **kwargs)
        from fcl.runtime.device import running_on
        with running_on(self._last_device):
            return result, self.last_profile.kernels

    def __call__(self, *args, **kwargs):
        """The result of the entry on these arguments, run on the device; the kernels and
        their times are in `last_profile` afterwards."""
        from fcl.runtime.device import running_on
        values = self.coerce(args, kwargs)
        launcher = self.launcher(values)
        self._last_device = launcher.device
        with running_on(launcher.device):
            result, self.last_profile = launcher.start(values, on_device=self.result == "device")
        return result

    def time(self, *args, repeat: int = 10) -> list[float]:
        """Kernel seconds (profiling events, all kernels of one run summed) of `repeat` runs."""
        from fcl.runtime.device import running_on
        values = self.coerce(args)
        launcher = self.launcher(values)
        with running_on(launcher.device):
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


SCALAR_OF_DTYPE = {np.dtype(np.int32): T.INT, np.dtype(np.float32): T.FLOAT,
                   np.dtype(np.float64): T.DOUBLE, np.dtype(np.bool_): T.BOOL}


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
