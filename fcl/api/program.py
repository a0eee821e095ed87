"""The facade: a loaded, type-checked program.

`load(text)` / `load_file(path)` -> `Program` (parse, expand includes, check);
`Program.type_of/evaluate/evaluate_with_cost/compile`; `compile` gives a
`Kernel` (fcl.api.kernel), a callable compiled entry point, specialised to the
element types of its arguments.  `hardware(...)` checks hardware parameters.
The CLI and the REPL call only this module (and fcl.api.literals for literals).

The evaluator (fcl.eval) and fcl.api.literals, which reads its values, are
imported where they are used, so that `import fcl` does not load the evaluator.
"""
from __future__ import annotations

import difflib

from fcl.api.kernel import LAUNCH_GROUPS, Kernel
from fcl.api.kernel_cache import decls_digest
from fcl.base.errors import NO_SPAN, ArgumentError, EnvironmentProblem
from fcl.base.hw import DEFAULT_HW, LOCAL_MEMORY
from fcl.codegen.passes import PassOptions
from fcl.runtime import tuned as tuned_records
from fcl.syntax import ast as A
from fcl.syntax import load_program, parse_program
from fcl.syntax.loader import expand_includes, prelude_decls
from fcl.types import CheckedProgram, builtins_env, check_program, format_scheme, prelude_env
from fcl.types import terms as T
from fcl.types.infer import prelude_core


def hardware(block_size=None, warp_size=None, num_groups=None, local_memory=None) -> dict[str, int]:
    """The hardware parameters, checked: positive, block a multiple of the warp."""
    hw = dict(DEFAULT_HW)
    for key, value in (("#BlockSize", block_size), ("#WarpSize", warp_size), ("#NumGroups", num_groups),
                       ("#LocalMemory", local_memory)):
        if value is not None:
            if int(value) <= 0:
                raise ArgumentError(f"{key} must be positive, not {value}")
            hw[key] = int(value)
    if hw["#BlockSize"] % hw["#WarpSize"]:
        raise ArgumentError(f"#BlockSize ({hw['#BlockSize']}) must be a multiple of #WarpSize ({hw['#WarpSize']})")
    return hw


def device_local_memory(device=None) -> int:
    """#LocalMemory on `device` (a --device substring; the default device without it): its
    local memory per work-group, at most LOCAL_MEMORY (49152); LOCAL_MEMORY where no device
    is usable (`fclc compile` on a machine without OpenCL).  Oclgrind counts a kernel's
    local arrays twice when the kernel's unchecked version follows it in the program
    (`Launcher.check_device_local`): half its local memory, so that the prelude's chunks,
    sized by #LocalMemory, fit as it counts them."""
    try:
        from fcl.runtime.device import choose_device    # lazy: imports pyopencl
        from fcl.runtime.platforms import is_oclgrind
        dev = choose_device(device, notes=False)
        size = int(dev.local_mem_size) // (2 if is_oclgrind(dev) else 1)
        return min(LOCAL_MEMORY, size)
    except (EnvironmentProblem, ImportError):
        return LOCAL_MEMORY


class Program:
    """A parsed and type-checked FCL program (with or without the prelude)."""

    def __init__(self, program: A.Program, prelude: bool = True):
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
        return prelude_core().then(self.checked.core) if self.prelude else self.checked.core

    def names(self) -> list[str]:
        """The program's own declarations, in order."""
        return list(self.checked.schemes)

    def declarations(self) -> list[tuple[str, str]]:
        """(name, canonical scheme) for every declaration of the file, in order."""
        return [(n, format_scheme(s)) for n, s in self.checked.decls]

    def scheme(self, name: str) -> T.Scheme:
        """The type scheme of declaration `name`; ArgumentError with the names it may mean."""
        s = self.checked.env.lookup(name)
        if s is None:
            raise ArgumentError(f"no declaration named `{name}`{self._unknown_name_hint(name)}")
        return s

    def _unknown_name_hint(self, name: str) -> str:
        """`; did you mean ...?` for a name that is not declared, else the program's own names."""
        close = difflib.get_close_matches(name, self.checked.env.names(), n=3)
        own = self.names()
        if close:
            return f"; did you mean {', '.join(f'`{c}`' for c in close)}?"
        if not own:
            return "; the program declares nothing of its own"
        listed = ", ".join(f"`{c}`" for c in own[-12:])
        return (f"; the program declares {listed}" if len(own) <= 12
                else f"; the program's last 12 declarations are {listed}")

    def type_of(self, name: str) -> str:
        """The canonical type of `name`, without its `forall` prefix."""
        text = format_scheme(self.scheme(name))
        return text.split(". ", 1)[1] if text.startswith("forall ") else text

    def scheme_of(self, name: str) -> str:
        """The canonical scheme of `name` (`forall ... . type`)."""
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
        """The span of the name of declaration `name` (else of the declaration), or None."""
        for d in reversed(self.ast.decls):
            if isinstance(d, A.Val) and d.name == name:
                return d.name_span if d.name_span is not NO_SPAN else d.span
        return None

    def coerce(self, name: str, args) -> list:
        """The arguments of entry `name`, checked against its parameter types and converted."""
        from fcl.api.literals import coerce_arg      # lazy: it loads the evaluator (see the top)
        types = self.param_types(name, len(args))
        names = self.param_names(name)
        return [coerce_arg(a, t, k + 1, names[k] if k < len(names) else "")
                for k, (t, a) in enumerate(zip(types, args))]

    # ------------------------------------------------------------ evaluation

    def evaluator(self, hw: dict):
        """The reference evaluator of this program for hardware parameters `hw` (kept)."""
        from fcl.eval import Evaluator      # lazy: `import fcl` must not load the evaluator (see the top)
        key = tuple(sorted(hw.items()))
        if key not in self._evaluators:
            self._evaluators[key] = Evaluator(list(self.decls), hw)
        return self._evaluators[key]

    def evaluate(self, name: str, *args, block_size=None, warp_size=None, num_groups=None, local_memory=None):
        """Run `name` on `args` with the reference evaluator."""
        return self.evaluate_with_cost(name, *args, block_size=block_size, warp_size=warp_size,
                                       num_groups=num_groups, local_memory=local_memory, cost=False)[0]

    def evaluate_with_cost(self, name: str, *args, block_size=None, warp_size=None, num_groups=None,
                           local_memory=None, cost: bool = True):
        """(result, CostReport) of `name` on `args` under the reference evaluator (#LocalMemory
        49152 unless `local_memory` says otherwise)."""
        self.scheme(name)
        values = self.coerce(name, list(args))
        ev = self.evaluator(hardware(block_size, warp_size, num_groups, local_memory))
        return ev.run(name, values, cost=cost)

    # ------------------------------------------------------------ tuned settings

    def tuned(self, name: str, *args, device=None, static=None) -> dict:
        """The hardware settings `fclc tune` found for entry `name` on these arguments' types
        and shapes on `device` (the default device without it), as keyword arguments of
        `compile` (`block_size`, `num_groups`, and `with_pass` where an optional pass won); {}
        where it found none:
        `prog.compile(name, **prog.tuned(name, *args))`.  `static` as for `compile` (pinned
        arguments the call leaves out)."""
        found = tuned_records.kept(self.tuning_key(name, list(args), device, static))
        return found.hardware if found is not None else {}

    def tuning_key(self, name: str, args: list, device=None, static=None) -> bytes:
        """What a tuned setting of `name` depends on (fcl.runtime.tuned.key)."""
        from fcl.runtime.device import choose_device, describe_device    # lazy: imports pyopencl
        kernel = self.compile(name, device=device, static=static)
        values = kernel.coerce(kernel.full_args(args))
        shapes = repr((kernel.arg_types(values), [_shape(v) for v in values]))
        return tuned_records.key(decls_digest(self.decls), name,
                                 describe_device(choose_device(device, notes=False)), shapes)

    # ------------------------------------------------------------ compilation

    def compile(self, name: str, block_size=None, warp_size=None, num_groups=None, device=None,
                opt_level=None, no_pass=(), dump_after=(), static=None, dynamic=None,
                result: str = "host", bounds_checks=True, types=None, local_memory=None,
                with_pass=()) -> "Kernel":
        """A callable kernel for entry `name` (OpenCL, built on first use per argument types and
        static values).  `device`: a substring of a device, platform or vendor name (as
        `fclc --device`; default: PYOPENCL_CTX, else fclc's default device).  `result="device"`
        returns array results as pyopencl arrays left on the device (for the next kernel,
        without a copy); `"host"` as numpy arrays.  `static`: {parameter name or 1-based position: value}, arguments compiled
        in as constants.  Every other int or bool argument is static too, specialised on the value
        of each call, unless `dynamic` names it (a list of names or positions, or True for all).
        opt_level 0 runs only the required passes; `no_pass` names optimising passes to
        skip; `with_pass` optional passes to run (`double_buffer`); `dump_after` names passes whose kernel IR `Kernel.kir(after=NAME)` returns
        (fcl.codegen.passes.PIPELINE lists them).  `bounds_checks=False` leaves out the device's
        checks of `index` (docs/language.md, "Bounds checks").  `types`: {type variable of
        the entry's type (`"a"` for `'a`): "int", "float", "double" or "bool"}, the element
        types of the build `opencl_source`, `plan` and `fclc compile` show (each call still
        builds for the types of its arguments); the others are int (`Kernel.fixed_types`).
        `local_memory`: #LocalMemory, by default the device's local memory a work-group may
        take, at most 49152 (`device_local_memory`)."""
        self.check_fixed_level(name)
        options = PassOptions.make(opt_level, no_pass, dump_after, bounds_checks=bounds_checks, with_pass=with_pass)
        if result not in ("host", "device"):
            raise ArgumentError(f"result must be \"host\" or \"device\", not {result!r}")
        if local_memory is None:
            local_memory = device_local_memory(device)
        kernel = Kernel(self, name, hardware(block_size, warp_size, num_groups, local_memory), device, options,
                        static, dynamic,
                        launch_groups=LAUNCH_GROUPS if num_groups is None else None, types=types)
        kernel.result = result
        return kernel


def _level_wrapper(name: str, t: T.Type, names: list[str]) -> str:
    """`fun placeBlock n arr = place <block> n arr`: a declaration that applies level-abstracted
    `name` (of type `t`) to levels, each chosen so that the result is a grid-level array where
    it decides the result's level (else block)."""
    levels = _grid_result_levels(t)
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


def _grid_result_levels(t: T.Type) -> dict[str, str]:
    """{level variable: level name} that makes the push-array result of type `t` grid-level,
    where its level is a variable (up to three levels below it); else {}."""
    result = t
    while isinstance(result, (T.TFunT, T.TLevelFunT)):
        result = result.res if isinstance(result, T.TFunT) else result.body
    if not isinstance(result, T.TPushT):
        return {}
    lv, ups = result.level, 0
    while isinstance(lv, T.LSucc):
        lv, ups = lv.inner, ups + 1
    if isinstance(lv, T.LVarT) and ups <= 3:
        return {lv.name: ("thread", "warp", "block", "grid")[3 - ups]}
    return {}


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


# ---------------------------------------------------------------- loading

def load(text: str, name: str = "<string>", prelude: bool = True) -> Program:
    """Parse and check program text (includes resolved from the current directory)."""
    return Program(expand_includes(parse_program(text, name), name), prelude)


def load_file(path, prelude: bool = True) -> Program:
    """Parse (expanding includes) and check a .fcl file."""
    return Program(load_program(str(path)), prelude)


def _shape(v):
    """An argument's shape for a tuned setting: the value of an int or bool, the length of an
    array, the shapes of a pair's parts (a setting found for one shape need not fit another)."""
    if isinstance(v, (bool, int)):
        return v
    if isinstance(v, tuple):
        return tuple(_shape(x) for x in v)
    return getattr(v, "shape", None) or (len(v) if hasattr(v, "__len__") else None)
