"""Plans + their OpenCL sources -> a standalone Python module (`fclc compile --emit py`).

The module needs only pyopencl and numpy.  It embeds each entry's OpenCL
source and defines a class `Kernels` with one public method per entry point
(the program's parameter names, positional or keyword, and a docstring with
the FCL type) calling a private one whose body is the entry's host plan
printed as straight-line Python (allocations, launches, the loops of
grid-level whiles).  The code around those methods is printed from modules
that are imported and tested as they are: device choice from
fcl/runtime/platforms.py, the run-time checks' words from fcl.codegen.plan,
argument binding, pyopencl arrays and profiles from fcl/runtime/calling.py,
and the helpers and the rest of `Kernels` (build, launch, copy) from
fcl/runtime/hostlib.py.
"""
from __future__ import annotations

import inspect

from fcl.base.hw import STORAGE_DTYPES
from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.opencl import kernel_symbol
from fcl.runtime import hostlib
from fcl.runtime.calling import embeddable as calling_code, python_names
from fcl.runtime.platforms import embeddable as platforms_code

PY_OPS = {"add": "_wrap({a} + {b})", "sub": "_wrap({a} - {b})", "mul": "_wrap({a} * {b})",
          "div": "_div({a}, {b})", "mod": "_mod({a}, {b})", "lt": "({a} < {b})", "le": "({a} <= {b})",
          "gt": "({a} > {b})", "ge": "({a} >= {b})", "eq": "({a} == {b})", "ne": "({a} != {b})",
          "and": "({a} and {b})", "or": "({a} or {b})", "band": "({a} & {b})", "bor": "({a} | {b})",
          "bxor": "({a} ^ {b})", "shl": "_wrap({a} << ({b} & 31))", "shr": "({a} >> ({b} & 31))"}
NP_TYPES = {ty: f"np.{dtype.__name__}" for ty, dtype in hostlib.NP_TYPES.items()}   # as printed
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
    if isinstance(e, K.Load):          # a ReadScalar's expression: an element of a global buffer
        return f"self._read_at({e.buf}, {x(e.index)}, np.{STORAGE_DTYPES[e.ty].name})"
    if isinstance(e, K.Call) and e.fn == "lo_word":
        return f"_wrap({x(e.args[0])})"
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
        exact = f", {P.EXACT_CLAIMS}=0" if P.EXACT_CLAIMS in self.params else ""
        self.emit(1, f"def _{plan.entry}(self{''.join(', ' + n for n in names)}{exact}):")
        self.emit(2, "events, inputs = [], []")
        if exact:       # the arguments as given, for a second run with claims (py_CheckBounds)
            self.emit(2, f"_args = [{', '.join(names)}]")
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
        if b.role in ("guard", "bounds", "claims", "tags"):
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
        if P.EXACT_CLAIMS in self.params:   # an interleave's coverage check: again with claims, for the error
            self.emit(d + 1, f"if _sites[_site][1] == {P.RECHECK!r} and not {P.EXACT_CLAIMS}:")
            self.emit(d + 2, f"return self._{self.plan.entry}(*_args, {P.EXACT_CLAIMS}=1)")
        self.emit(d + 1, "raise _failed(_sites[_site], _values)")

    def py_SetVar(self, s: P.SetVar, d: int):
        self.emit(d, f"{s.var} = {py_expr(s.expr, total=not s.size)}")

    def py_Bind(self, s: P.Bind, d: int):
        self.emit(d, f"{s.alias} = {s.buffer}")

    def py_Swap(self, s: P.Swap, d: int):
        self.emit(d, f"{s.a}, {s.b} = {s.b}, {s.a}")

    def py_ReadScalar(self, s: P.ReadScalar, d: int):
        if s.expr is not None:
            self.emit(d, f"{s.var} = {py_expr(s.expr, total=True)}")
        else:
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
        if P.FIRST_GROUP in s.uses.params:     # one launch of group_total work-groups, in slices
            self.emit(d, f"{P.GROUP_TOTAL} = max(1, {', '.join(py_expr(g) for g in s.groups)})")
            cap = P.slice_groups(plan.block_size)
            self.emit(d, f"for {P.FIRST_GROUP} in range(0, {P.GROUP_TOTAL}, {cap}):")
            self.emit(d + 1, f"self._launch(events, {plan.entry!r}, {kernel_symbol(kernel)!r}, "
                             f"min({cap}, {P.GROUP_TOTAL} - {P.FIRST_GROUP}), {plan.block_size}, "
                             f"[{', '.join(args)}])")
            return
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
        self.emit(d, f"return {result_expr(s)}")


def result_expr(s: P.Result) -> str:
    """The Python expression of a module's method that gives result `s`."""
    if s.kind == "pair":
        return f"({result_expr(s.parts[0])}, {result_expr(s.parts[1])})"
    if s.kind == "zip":
        return f"self._zip({result_expr(s.parts[0])}, {result_expr(s.parts[1])})"
    return f"self._result(events, inputs, {s.buffer}, {py_expr(s.length)}, {s.ty!r}, {s.kind == 'scalar'})"


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
    messages = "\n\n" + inspect.getsource(P.failure_message)     # the run-time errors' words
    return (head + platforms_code() + "\n" + HELPERS_HEAD + messages + calling_code() + "\n" + hostlib.embeddable()
            + methods + "\n\n" + signatures + "\n\n" + sources_text)
