"""The host plan in words (`explain`, `fclc compile --explain`) and as JSON (`to_json`,
`json_text`, `fclc compile --emit json`).

`explain` speaks the program's terms: sizes as FCL expressions (FCL's operators and
precedence, the entry's parameter names, `lengthPull NAME` for an array argument's
length), each kernel with what it takes and its local memory in bytes.
Not here: the plan's meaning (`nodes`), Python host code (`fcl.runtime.pymodule`).
"""
from __future__ import annotations

import json

from fcl.base.hw import SKEW_SHIFT, STORAGE_BYTES
from fcl.base.operators import OPERATORS
from fcl.codegen import kir as K
from fcl.codegen.plan.args import ArrayArg, NestedArg, PairArg, ScalarArg, ZipArg
from fcl.codegen.plan.nodes import (FIRST_GROUP, Alloc, Bind, CheckBounds, CheckSteps, HostStmt, Launch, Loop, Plan,
                                    ReadScalar, Result, SetVar, Swap)


# ---------------------------------------------------------------- --explain

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


def local_bytes(plan: Plan, k) -> "K.Expr":
    """The bytes of local memory one work-group of kernel `k` needs, as an expression (as the
    launcher counts them: every warp's or work-item's copy, the skewed layout's padding)."""
    total = K.cint(0)
    for b in k.locals_:
        n = K.binop("mul", K.cint(K.copies(b, plan.block_size, plan.warp_size)), b.size)
        if b.layout == "skew32":
            n = K.binop("add", K.binop("add", n, K.binop("div", n, K.cint(1 << SKEW_SHIFT))), K.cint(1))
        total = K.binop("add", total, K.binop("mul", K.cint(STORAGE_BYTES[b.ty]), n))
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
        groups = groups_text(s.groups, fmt, FIRST_GROUP in s.uses.params)
        version = f"; {s.fast} (no bounds checks) where {fmt(s.when)}" if s.fast else ""
        return (f"launch {s.kernel} on {groups} work-group{'s' * (groups != '1')} x {plan.block_size} work-items "
                f"({', '.join(s.uses.buffers + s.uses.params)}){version}")
    if isinstance(s, ReadScalar):
        if s.expr is not None:
            return f"{s.var} := {fmt(s.expr)}, read by the host"
        return f"{s.var} := read {s.buffer}[0]"
    if isinstance(s, CheckSteps):
        return f"check {s.buffer}: no device while was stopped by its guard ({', '.join(s.loops)})"
    if isinstance(s, CheckBounds):
        n = len(s.sites)
        return (f"check {s.buffer}: no run-time check failed ({len(plan.check_sites())} of the program's {n} "
                f"run-time checks left on the device: `index`, zero divisors, part lengths)")
    if isinstance(s, Result):
        return "result: " + result_text(s, fmt)
    if isinstance(s, Loop):
        return f"loop while {fmt(s.cond)}"
    raise TypeError(type(s).__name__)


def result_text(s: Result, fmt=K.format_expr) -> str:
    """What the plan returns: `array in out3, length n`, and pairs of those."""
    if s.kind == "pair":
        return f"pair of ({result_text(s.parts[0], fmt)}) and ({result_text(s.parts[1], fmt)})"
    if s.kind == "zip":
        return (f"array of pairs, length {fmt(s.length)}, of components ({result_text(s.parts[0], fmt)}) "
                f"and ({result_text(s.parts[1], fmt)})")
    return f"{s.kind} in {s.buffer}, length {fmt(s.length)}"


def groups_text(groups, fmt=K.format_expr, sliced: bool = False) -> str:
    if not groups:
        return "1"
    if sliced:          # a part a work-group, in as many launches as keep ids in an int (plan.slices)
        return f"max(1, {', '.join(fmt(g) for g in groups)}) (a part each, {FIRST_GROUP} the first of a launch)"
    return f"min(#NumGroups, max(1, {', '.join(fmt(g) for g in groups)}))"


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
        if isinstance(e, K.Bin) and K.GENERAL_OP.get(e.op, e.op) in OPERATORS:
            op = OPERATORS[K.GENERAL_OP.get(e.op, e.op)]      # FCL's spelling and precedence
            p = op.precedence
            text = f"{show(e.a, p)} {op.fcl[0]} {show(e.b, p + 1)}"
            return f"({text})" if p < prec else text
        if isinstance(e, K.Call):
            return f"{e.fn}({', '.join(show(a) for a in e.args)})"
        if isinstance(e, K.Select):
            return f"(if {show(e.cond)} then {show(e.a)} else {show(e.b)})"
        return K.format_expr(e)
    return show


# ---------------------------------------------------------------- --emit json

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
        doc.update({k: K.format_expr(v) if isinstance(v, K.Expr) else v for k, v in vars(s).items()
                    if k != "parts"})
        if isinstance(s, Result) and s.parts:
            doc["parts"] = [_stmt_json(p) for p in s.parts]
        return doc
    ops = {Alloc: "alloc", Bind: "bind", Swap: "swap", ReadScalar: "read", CheckSteps: "check_steps",
           CheckBounds: "check_bounds"}
    doc = {"op": ops[type(s)], **vars(s)}
    return {k: list(v) if isinstance(v, tuple) else v for k, v in doc.items()}


def json_text(plans: list[Plan]) -> str:
    docs = [to_json(p) for p in plans]
    return json.dumps(docs[0] if len(docs) == 1 else docs, indent=2)

