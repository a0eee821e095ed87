"""The host plan IR: what the host does to run one compiled entry point.

Produced by `lower` (with the kernels it builds), rewritten by passes on its
kernels, interpreted by `fcl.runtime.launch` (the one interpreter of its
meaning) and printed here (`explain`, `to_json`) and by `pymodule` (Python
host code).  A `Plan` holds the entry's arguments, the host scalars
(`params`: argument scalars, array lengths, host variables), the global
buffers, the kernels and the host program `body`, a sequence of:

* `Alloc(buffer)`: allocate a global buffer (its size is a host expression);
* `SetVar(var, expr, size)`: set a host int scalar (a length when `size`);
* `Bind(alias, buffer)` / `Swap(a, b)`: point an alias at a buffer, exchange
  two aliases (the ping-pong buffers of a grid-level `while`);
* `Launch(kernel, groups, uses, fast, when)`: run a kernel on min(#NumGroups,
  max(1, groups...)) work-groups; `uses` lists the global buffers (or aliases)
  and host scalars it takes as arguments, in order: each kernel receives only
  those.  With `fast` set, the host runs kernel `fast` instead (the same work
  without the bounds checks that the host facts `when` prove) where `when`
  holds for this launch's host scalars (`chosen`);
* `ReadScalar(var, buffer)`: copy element 0 of an int buffer to a host scalar;
* `Loop(head, cond, body)`: `while true: head; if not cond: break; body`;
* `CheckSteps(buffer, loops)`: read the int `buffer` (a "guard" buffer, zero
  when allocated); bit k (k < 30) set means the device-side `while` holding
  buffer `loops[k]` stopped with its condition still true, on an empty array
  or (bit CAPPED also set) after MAX_DEVICE_STEPS steps: a run-time error
  located at that `while`;
* `CheckBounds(buffer, sites, kinds)`: read the bounds buffer (kir.BOUNDS_WORDS
  ints, zero when allocated; see `kir.record_failure`): when a run-time check
  failed (a `kir.Checked` index out of range or a zero divisor, a `kir.Fail`:
  a part of the wrong length...), a run-time error located at `sites[k]` (the
  `file:line:col` of that check), in the evaluator's words (`failure_message`
  of `kinds[k]` and the values recorded), for the site k recorded first.  It stands
  after the last launch and before every ReadScalar (a value read back may be
  garbage after a failure);
* `Result(kind, buffer, ty, length)`: the value the entry returns (last).

Host expressions are kernel-IR expressions over `params` (`kir.eval_host`).
Not here: device code (kir), how a device runs a plan (runtime).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterator

from fcl.codegen import kir as K


# ---------------------------------------------------------------- arguments

@dataclass(frozen=True)
class ScalarArg:
    """An entry argument passed as a host scalar `param`; `value` is set when the
    argument is static (compiled in as a constant: the kernels never see it)."""
    param: str
    ty: str
    name: str = ""
    value: object = None


@dataclass(frozen=True)
class ArrayArg:
    """An entry argument uploaded to input `buffer`; its length is host scalar `length`."""
    buffer: str
    length: str
    ty: str
    name: str = ""


@dataclass(frozen=True)
class PairArg:
    """An entry argument that is a pair: its components are passed as `fst` and `snd`."""
    fst: object
    snd: object
    name: str = ""


@dataclass(frozen=True)
class ZipArg:
    """An array of pairs, passed as one array per component (`fst`, `snd`: array
    arguments of the same length)."""
    fst: object
    snd: object
    name: str = ""


@dataclass(frozen=True)
class NestedArg:
    """A regular array of arrays, passed as one flat row-major buffer (`flat`, whose
    length is rows * cols) and its shape in host scalars `rows` and `cols`."""
    flat: ArrayArg
    rows: str
    cols: str
    name: str = ""


Arg = ScalarArg | ArrayArg | PairArg | ZipArg | NestedArg


def split_arg(spec, value, position: int) -> tuple[list, dict]:
    """The leaf arguments (ScalarArg/ArrayArg, value) of one entry argument, and the
    host scalars its shape sets (NestedArg); ArgumentError for an irregular array or
    components of different lengths."""
    import numpy as np
    from fcl.base.errors import ArgumentError
    leaves, env = [], {}

    def go(spec, value):
        if isinstance(spec, (ScalarArg, ArrayArg)):
            leaves.append((spec, value))
        elif isinstance(spec, PairArg):
            go(spec.fst, value[0])
            go(spec.snd, value[1])
        elif isinstance(spec, ZipArg):
            go(spec.fst, _component(value, 0))
            go(spec.snd, _component(value, 1))
        elif isinstance(spec, NestedArg):
            rows = [np.asarray(r) for r in value]
            cols = len(rows[0]) if rows else 0
            for k, r in enumerate(rows):
                if len(r) != cols:
                    raise ArgumentError(f"argument {position}: an array of arrays passed to a kernel must "
                                        f"be regular (every row as long): row 0 has {cols} elements, "
                                        f"row {k} has {len(r)}")
            env[spec.rows], env[spec.cols] = len(rows), cols
            flat = np.concatenate(rows) if rows else np.empty(0)
            leaves.append((spec.flat, flat))
        else:
            raise TypeError(f"unknown argument spec {spec!r}")
    go(spec, value)
    return leaves, env


def _component(value, k: int):
    """Component k of an array of pairs: a list of the k-th components."""
    return [pair[k] for pair in value]


# ---------------------------------------------------------------- host statements

@dataclass(frozen=True)
class Uses:
    buffers: tuple[str, ...]
    params: tuple[str, ...]


@dataclass(frozen=True)
class HostStmt:
    pass


@dataclass(frozen=True)
class Alloc(HostStmt):
    buffer: str


@dataclass(frozen=True)
class SetVar(HostStmt):
    var: str
    expr: K.Expr
    size: bool = True       # a length (never negative); False: any int scalar


@dataclass(frozen=True)
class Bind(HostStmt):
    alias: str
    buffer: str


@dataclass(frozen=True)
class Swap(HostStmt):
    a: str
    b: str


@dataclass(frozen=True)
class Launch(HostStmt):
    kernel: str
    groups: tuple[K.Expr, ...]
    uses: Uses
    fast: str = ""                  # the unchecked version of `kernel`, run where `when` holds
    when: K.Expr | None = None

    def kernels(self) -> tuple[str, ...]:
        return (self.kernel, self.fast) if self.fast else (self.kernel,)


def group_count(num_groups: int, sizes) -> int:
    """The work-groups a launch takes: min(#NumGroups, max(1, its grid sizes...))."""
    return max(1, min(num_groups, max(sizes, default=1)))


def chosen(s: Launch, env: dict) -> str:
    """The kernel launch `s` runs with host scalars `env`: its unchecked version where the
    version's host facts hold, else the kernel itself."""
    return s.fast if s.fast and K.eval_host(s.when, env, total=True) else s.kernel


@dataclass(frozen=True)
class ReadScalar(HostStmt):
    var: str
    buffer: str


@dataclass(frozen=True)
class Loop(HostStmt):
    head: tuple[HostStmt, ...]
    cond: K.Expr
    body: tuple[HostStmt, ...]
    length: str = ""        # set when the loop runs over this length alone (a device while's
    origin: str = ""        # sizes, that while's buffer): a length seen twice repeats forever


@dataclass(frozen=True)
class CheckSteps(HostStmt):
    buffer: str
    loops: tuple[str, ...]


def never_ends(length: int) -> str:
    """Why a while whose condition and steps read only its length never ends: the
    length came back to `length` with the condition still holding."""
    if length == 0:
        return ("while never terminates: the array is empty and the condition still holds "
                "(the step of an empty array is empty again)")
    return (f"while never terminates: the array's length comes back to {length} "
            "and the condition still holds")


@dataclass(frozen=True)
class CheckBounds(HostStmt):
    buffer: str
    sites: tuple[str, ...]
    kinds: tuple[str, ...] = ()     # what each site checks (failure_message); "index" where left out

    def kind(self, site: int) -> str:
        return self.kinds[site] if 0 <= site < len(self.kinds) else "index"


@dataclass(frozen=True)
class Site:
    """A run-time check of the program: what it checks (a kind of failure_message) and the
    span of the source it checks."""
    kind: str
    span: object


def failure_message(kind: str, values) -> str:
    """The evaluator's words for run-time check `kind` that failed with `values` (the ints
    recorded with it: kir.record_failure).  Self-contained: `--emit py` modules print it."""
    a, b, c, d = (list(values) + [0, 0, 0, 0])[:4]
    if kind == "index":
        return f"index {a} out of range for an array of length {b}"
    if kind == "div":
        return f"integer division by zero ({a} / 0)"
    if kind == "mod":
        return f"integer division by zero in remainder ({a} % 0)"
    if kind.startswith("length:"):
        return f"{kind[7:]}: the length must not be negative, got {a}"
    if kind == "concat":                # part a has b elements, the part length is c, d parts
        if b < c:
            return (f"concat: part {a} has {b} elements but the part length is {c}, so "
                    f"positions {a * c + b}..{a * c + c - 1} are never written")
        if a * c + c >= c * d:
            return (f"concat: part {a} has {b} elements but the part length is {c}; "
                    f"position {a * c + c} is outside the result (length {c * d})")
        return (f"concat: part {a} has {b} elements but the part length is {c}, so "
                f"position {a * c + c} is written twice (by parts {a} and {a + 1})")
    if kind == "interleave-part":       # part a has b elements, more than the part length c
        return f"interleave: part {a} has {b} elements, more than the part length {c}"
    if kind == "interleave-position":   # part a, element b goes to position c of d
        return (f"interleave: part {a}, element {b} goes to position {c}, "
                f"outside the result (length {d})")
    return f"run-time check {kind} failed with {list(values)}"


# A device-side (block, warp or thread level) while stops after this many steps
# and reports it through its plan's CheckSteps: a loop that never ends must not
# hang the device (the evaluator reports one that makes no progress).
MAX_DEVICE_STEPS = 1 << 20
CAPPED = 1 << 30        # in a guard buffer: a loop stopped at MAX_DEVICE_STEPS


@dataclass(frozen=True)
class Result(HostStmt):
    """kind: "array" (`length` elements of `buffer`) or "scalar" (element 0)."""
    kind: str
    buffer: str
    ty: str
    length: K.Expr
    single_group: bool = False


@dataclass(frozen=True)
class Plan:
    entry: str
    args: tuple[Arg, ...]
    params: tuple[K.Param, ...]
    buffers: tuple[K.Buffer, ...]
    kernels: tuple[K.Kernel, ...]
    body: tuple[HostStmt, ...]
    block_size: int
    warp_size: int
    num_groups: int

    @property
    def result(self) -> Result:
        return self.body[-1]

    def kernel(self, name: str) -> K.Kernel:
        return next(k for k in self.kernels if k.name == name)

    def launched(self) -> list[K.Kernel]:
        """The kernels the host program launches, without their unchecked versions (which
        `kernels` holds too, for the passes and the renderer)."""
        fast = {s.fast for s in self.launches()}
        return [k for k in self.kernels if k.name not in fast]

    def launches(self) -> list[Launch]:
        return [s for s in walk(self.body) if isinstance(s, Launch)]

    def version(self, kernel: str) -> tuple[str, K.Expr] | None:
        """(its unchecked version, the host facts under which launches run it) for a kernel
        the host launches, or None."""
        return next(((s.fast, s.when) for s in self.launches() if s.kernel == kernel and s.fast), None)

    def launch_groups(self, kernel: str) -> int | None:
        """The work-groups every launch of `kernel` takes, where that is one constant, else None."""
        counts = set()
        for s in self.launches():
            if kernel in s.kernels():
                if not all(isinstance(g, K.Const) for g in s.groups):
                    return None
                counts.add(group_count(self.num_groups, [g.value for g in s.groups]))
        return counts.pop() if len(counts) == 1 else None

    def uses_of(self, kernel: str) -> Uses:
        """What kernel `kernel` takes (the same at every launch of it)."""
        return next(s.uses for s in self.launches() if kernel in s.kernels())

    def buffer(self, name: str) -> K.Buffer:
        return next(b for b in self.buffers if b.name == name)

    def check_count(self) -> int:
        """The run-time checks (`kir.Checked`, `kir.Fail`) left in the kernels (not counting
        their unchecked versions, which hold a subset) and the host program."""
        stmts = [s for k in self.launched() for s in K.walk_stmts(k.body)]
        exprs = [e for s in stmts for e in K.stmt_exprs(s)]
        exprs += [e for s in walk(self.body) for e in vars(s).values() if isinstance(e, K.Expr)]
        return (sum(isinstance(x, K.Checked) for e in exprs for x in K.walk_expr(e))
                + sum(isinstance(s, K.Fail) for s in stmts))

    def check_kind(self, site: int) -> str:
        """What run-time check number `site` checks (`CheckBounds.kind`)."""
        found = next((s for s in walk(self.body) if isinstance(s, CheckBounds)), None)
        return found.kind(site) if found is not None else "index"


def walk(stmts) -> Iterator[HostStmt]:
    """Pre-order iterator over host statements, loop heads and bodies included."""
    for s in stmts:
        yield s
        if isinstance(s, Loop):
            yield from walk(s.head)
            yield from walk(s.body)


def kernel_uses(k: K.Kernel, buffers, params) -> Uses:
    """The global buffers (in the order of `buffers`) and host scalars (in the order of
    `params`) that the body of kernel `k` reads or writes."""
    bufs = K.buffers_used(k.body)
    names = K.names_read(k.body)
    return Uses(tuple(b.name for b in buffers if b.name in bufs),
                tuple(p.name for p in params if p.name in names))


# ---------------------------------------------------------------- printing: --explain

def explain(plan: Plan, names: list[str] | None = None) -> str:
    """The plan in words, in the program's terms: arguments, buffers, kernels with what they
    take, the host program.  Sizes print as FCL expressions (`*`, `/`, fewest parentheses),
    with the entry's parameter names (`names`, by position, else the arguments' own) for its
    scalars and `lengthPull NAME` for its arrays' lengths."""
    fmt = _source_printer(plan, names or [])
    n = len(plan.launched())
    lines = [f"entry {plan.entry}: {n} kernel{'s' * (n != 1)}, #BlockSize {plan.block_size}, "
             f"#WarpSize {plan.warp_size}, #NumGroups {plan.num_groups}"]
    given = names or []
    lines.append("arguments: " + ", ".join(_arg_text(a, given[k] if k < len(given) else "")
                                           for k, a in enumerate(plan.args)) if plan.args else "arguments: none")
    lines.append("global buffers:")
    for b in plan.buffers:
        lines.append(f"  {b.name:<10} {b.ty}[{fmt(b.size)}]  {b.role}: {b.origin}")
    for k in plan.launched():
        uses = plan.uses_of(k.name)
        barriers = sum(isinstance(s, K.Barrier) for s in K.walk_stmts(k.body))
        lines.append(f"kernel {k.name}({', '.join(uses.buffers + uses.params)}): "
                     f"{barriers} barrier{'s' * (barriers != 1)}")
        for b in k.locals_ + k.privates:
            per = f" per {b.per}" if b.per else ""
            level = "thread" if b.space == "private" or b.per == "thread" else b.per or "block"
            lines.append(f"  {b.space:<7} {b.name:<6} {b.ty}[{fmt(b.size)}]{per}  "
                         f"({level} level, {b.origin})")
        if k.locals_:
            lines.append(f"  local memory: {fmt(local_bytes(plan, k))} bytes per work-group")
    lines.append("host program:")
    lines.extend(_host_lines(plan, plan.body, 1, fmt))
    return "\n".join(lines)


ELEMENT_BYTES = {"int": 4, "float": 4, "double": 8, "bool": 1}   # as the buffers hold them


def local_bytes(plan: Plan, k) -> "K.Expr":
    """The bytes of local memory one work-group of kernel `k` needs, as an expression (as the
    launcher counts them: every warp's or work-item's copy, the skewed layout's padding)."""
    total = K.cint(0)
    for b in k.locals_:
        n = K.binop("mul", K.cint(K.copies(b, plan.block_size, plan.warp_size)), b.size)
        if b.layout == "skew32":
            n = K.binop("add", K.binop("add", n, K.binop("div", n, K.cint(32))), K.cint(1))
        total = K.binop("add", total, K.binop("mul", K.cint(ELEMENT_BYTES[b.ty]), n))
    return total


def _arg_text(a, name: str = "") -> str:
    label = f"{a.name or name} " if a.name or name else ""
    if isinstance(a, PairArg):
        return f"{label}({_arg_text(a.fst)}, {_arg_text(a.snd)})"
    if isinstance(a, ZipArg):
        return f"{label}[pairs: {_arg_text(a.fst)}, {_arg_text(a.snd)}]"
    if isinstance(a, NestedArg):
        return f"{label}{a.flat.ty}[{a.rows}][{a.cols}] -> {a.flat.buffer} (flat, row-major)"
    if isinstance(a, ArrayArg):
        return f"{label}{a.ty}[{a.length}] -> {a.buffer}"
    if a.value is not None:
        return f"{label}{a.ty} = {a.value} (static)"
    return f"{label}{a.ty} -> {a.param}"


def _host_lines(plan: Plan, stmts, depth: int, fmt=K.format_expr) -> list[str]:
    pad = "  " * depth
    out = []
    for s in stmts:
        if isinstance(s, Loop):
            out.append(f"{pad}loop (grid-level while on the host):")
            out.extend(_host_lines(plan, s.head, depth + 1, fmt))
            out.append(f"{pad}  stop unless {fmt(s.cond)}")
            out.extend(_host_lines(plan, s.body, depth + 1, fmt))
        else:
            out.append(pad + host_stmt_text(plan, s, fmt))
    return out


def host_stmt_text(plan: Plan, s: HostStmt, fmt=K.format_expr) -> str:
    """One host statement as a line of text (loops: their first line)."""
    if isinstance(s, Alloc):
        b = plan.buffer(s.buffer)
        return f"alloc {b.name} : {b.ty}[{fmt(b.size)}]"
    if isinstance(s, SetVar):
        return f"{s.var} := {fmt(s.expr)}"
    if isinstance(s, Bind):
        return f"{s.alias} -> {s.buffer}"
    if isinstance(s, Swap):
        return f"swap {s.a} {s.b}"
    if isinstance(s, Launch):
        groups = groups_text(s.groups, fmt)
        version = f"; {s.fast} (no bounds checks) where {fmt(s.when)}" if s.fast else ""
        return (f"launch {s.kernel} on {groups} work-group{'s' * (groups != '1')} x {plan.block_size} work-items "
                f"({', '.join(s.uses.buffers + s.uses.params)}){version}")
    if isinstance(s, ReadScalar):
        return f"{s.var} := read {s.buffer}[0]"
    if isinstance(s, CheckSteps):
        return f"check {s.buffer}: no device while was stopped by its guard ({', '.join(s.loops)})"
    if isinstance(s, CheckBounds):
        n = len(s.sites)
        return (f"check {s.buffer}: no run-time check failed ({plan.check_count()} device checks left "
                f"of {n} in the program: `index`, zero divisors, part lengths)")
    if isinstance(s, Result):
        return f"result: {s.kind} in {s.buffer}, length {fmt(s.length)}"
    if isinstance(s, Loop):
        return f"loop while {fmt(s.cond)}"
    raise TypeError(type(s).__name__)


def groups_text(groups, fmt=K.format_expr) -> str:
    if not groups:
        return "1"
    return f"min(#NumGroups, max(1, {', '.join(fmt(g) for g in groups)}))"


# FCL's spelling and precedence (language.md section 3) of the kernel IR's operators
_SOURCE_OPS = {"add": ("+", 6), "sub": ("-", 6), "mul": ("*", 7), "div": ("/", 7), "mod": ("%", 7),
               "add_nw": ("+", 6), "sub_nw": ("-", 6), "mul_nw": ("*", 7), "div_nn": ("/", 7),
               "mod_nn": ("%", 7), "shl": ("<<", 5), "shr": (">>", 5), "band": ("&", 4),
               "bxor": ("^", 4), "bor": ("|", 4), "lt": ("<", 3), "le": ("<=", 3), "gt": (">", 3),
               "ge": (">=", 3), "eq": ("==", 3), "ne": ("!=", 3), "and": ("&&", 2), "or": ("||", 1)}


def _source_printer(plan: Plan, names: list[str]):
    """An expression printer for `explain`: FCL operators, parameter names for argument scalars."""
    rename: dict[str, str] = {}
    for k, a in enumerate(plan.args):
        name = a.name or (names[k] if k < len(names) else "")
        if name and isinstance(a, ArrayArg):
            rename[a.length] = f"lengthPull {name}"
        elif name and isinstance(a, ScalarArg):
            rename[a.param] = name

    def show(e, prec: int = 0) -> str:
        e = K.plain_divisor(e)      # (a zero divisor is a run-time error, as in the evaluator)
        if isinstance(e, K.Var):
            return rename.get(e.name, e.name)      # `lengthPull a` binds tighter than any operator
        if isinstance(e, K.Bin) and str(e.op) in _SOURCE_OPS:
            op, p = _SOURCE_OPS[str(e.op)]
            text = f"{show(e.a, p)} {op} {show(e.b, p + 1)}"
            return f"({text})" if p < prec else text
        if isinstance(e, K.Call):
            return f"{e.fn}({', '.join(show(a) for a in e.args)})"
        if isinstance(e, K.Select):
            return f"(if {show(e.cond)} then {show(e.a)} else {show(e.b)})"
        return K.format_expr(e)
    return show


# ---------------------------------------------------------------- printing: --emit json

def to_json(plan: Plan) -> dict:
    """The plan as JSON-able data (expressions as text)."""
    def buf(b):
        return {"name": b.name, "space": b.space, "type": b.ty, "size": K.format_expr(b.size),
                "per": b.per or None, "role": b.role, "holds": b.origin}

    def arg(a):
        if isinstance(a, (PairArg, ZipArg)):
            return {"kind": "pair" if isinstance(a, PairArg) else "array of pairs", "name": a.name,
                    "components": [arg(a.fst), arg(a.snd)]}
        if isinstance(a, NestedArg):
            return {"kind": "nested array", "name": a.name, "type": a.flat.ty, "buffer": a.flat.buffer,
                    "length": a.flat.length, "rows": a.rows, "cols": a.cols}
        if isinstance(a, ArrayArg):
            return {"kind": "array", "name": a.name, "type": a.ty, "buffer": a.buffer, "length": a.length}
        return {"kind": "scalar", "name": a.name, "type": a.ty, "param": a.param, "static": a.value}

    return {
        "entry": plan.entry, "block_size": plan.block_size, "warp_size": plan.warp_size,
        "num_groups": plan.num_groups,
        "arguments": [arg(a) for a in plan.args],
        "params": [{"name": p.name, "type": p.ty} for p in plan.params],
        "buffers": [buf(b) for b in plan.buffers],
        "kernels": [{"name": k.name, "takes": list(plan.uses_of(k.name).buffers + plan.uses_of(k.name).params),
                     "barriers": sum(isinstance(s, K.Barrier) for s in K.walk_stmts(k.body)),
                     "local": [buf(b) for b in k.locals_], "private": [buf(b) for b in k.privates]}
                    for k in plan.kernels],
        "host": [_stmt_json(s) for s in plan.body],
    }


def _stmt_json(s: HostStmt) -> dict:
    if isinstance(s, Loop):
        return {"op": "loop", "head": [_stmt_json(x) for x in s.head], "cond": K.format_expr(s.cond),
                "body": [_stmt_json(x) for x in s.body]}
    if isinstance(s, Launch):
        doc = {"op": "launch", "kernel": s.kernel, "groups": [K.format_expr(g) for g in s.groups],
               "buffers": list(s.uses.buffers), "params": list(s.uses.params)}
        if s.fast:
            doc.update({"fast": s.fast, "when": K.format_expr(s.when)})
        return doc
    if isinstance(s, (SetVar, Result)):
        doc = {"op": "set" if isinstance(s, SetVar) else "result"}
        doc.update({k: K.format_expr(v) if isinstance(v, K.Expr) else v for k, v in vars(s).items()})
        return doc
    ops = {Alloc: "alloc", Bind: "bind", Swap: "swap", ReadScalar: "read", CheckSteps: "check_steps",
           CheckBounds: "check_bounds"}
    doc = {"op": ops[type(s)], **vars(s)}
    return {k: list(v) if isinstance(v, tuple) else v for k, v in doc.items()}


def json_text(plans: list[Plan]) -> str:
    docs = [to_json(p) for p in plans]
    return json.dumps(docs[0] if len(docs) == 1 else docs, indent=2)
