"""The `--dump kir` printer: kernel IR as indented text.

`format_expr` and `format_stmts` print expressions and statements,
`format_program` a plan's buffers and kernels (`fclc compile --dump kir`,
`--dump kir-after=PASS`, `Kernel.kir()`).  Consumes nodes and a `plan.Plan`;
produces text for people (nothing parses it back).  Not here: OpenCL C
(codegen/opencl.py), the host plan's own text (plan.explain).
"""
from __future__ import annotations

from fcl.codegen.kir.nodes import (Atomic, Barrier, Bin, Call, Checked, Comment, Const, DeclPtr, DeclVar,
                                   Assign, Expr, Fail, For, HwId, If, Let, Load, Loop, ParFor, PartFor, Select,
                                   SeqFor, Stmt, Store, SwapPtr, Un, Var, VLoad, VStore, stmt_children)


def format_expr(e: Expr) -> str:
    if isinstance(e, Const):
        return str(e.value).lower() if e.ty == "bool" else repr(e.value)
    if isinstance(e, Var):
        return e.name
    if isinstance(e, HwId):
        return f"%{e.name}"
    if isinstance(e, Bin):
        return f"({format_expr(e.a)} {e.op} {format_expr(e.b)})"
    if isinstance(e, Un):
        return f"{e.op}({format_expr(e.a)})"
    if isinstance(e, Call):
        return f"{e.fn}({', '.join(format_expr(a) for a in e.args)})"
    if isinstance(e, Select):
        return f"({format_expr(e.cond)} ? {format_expr(e.a)} : {format_expr(e.b)})"
    if isinstance(e, Load):
        return f"{e.buf}[{format_expr(e.index)}]"
    if isinstance(e, Checked):
        return f"check#{e.site}({format_expr(e.index)} < {format_expr(e.length)})"
    return repr(e)


def format_stmts(stmts, indent: int = 0) -> str:
    pad = "  " * indent
    out = []
    for s in stmts:
        out.append(pad + _format_head(s))
        for i, body in enumerate(stmt_children(s)):
            if isinstance(s, If) and i == 1:
                if not body:
                    continue
                out.append(pad + "else")
            if isinstance(s, Loop) and i == 1:
                out.append(pad + f"  while {format_expr(s.cond)} do")
            out.append(format_stmts(body, indent + 1))
    return "\n".join(x for x in out if x)


def _format_head(s: Stmt) -> str:
    if isinstance(s, Let):
        return f"let {s.var} : {s.expr.ty} = {format_expr(s.expr)}"
    if isinstance(s, DeclVar):
        return f"var {s.var} : {s.init.ty} = {format_expr(s.init)}"
    if isinstance(s, Assign):
        return f"{s.var} := {format_expr(s.expr)}"
    if isinstance(s, Store):
        return f"{s.buf}[{format_expr(s.index)}] := {format_expr(s.value)}"
    if isinstance(s, VLoad):
        return f"let {', '.join(s.vars)} : {s.ty} = {s.buf}[{format_expr(s.index)}]x{len(s.vars)}  (vector {s.var})"
    if isinstance(s, VStore):
        return f"{s.buf}[{format_expr(s.index)}]x{len(s.values)} := ({', '.join(format_expr(v) for v in s.values)})"
    if isinstance(s, SeqFor):
        return f"seqfor {s.var} < {format_expr(s.count)}" + ("  (double-buffered)" if s.double_buffer else "")
    if isinstance(s, ParFor):
        return f"parfor<{s.level}> {s.var} < {format_expr(s.count)}"
    if isinstance(s, PartFor):
        return f"partfor<{s.level}> {s.var} < {format_expr(s.count)}"
    if isinstance(s, For):
        unroll = ("  (unroll)" if s.unroll else "") + ("  (double-buffered)" if s.double_buffer else "")
        return (f"for {s.var} = {format_expr(s.start)}; {s.var} lt {format_expr(s.stop)}; "
                f"{s.var} += {format_expr(s.step)}{unroll}")
    if isinstance(s, If):
        return f"if {format_expr(s.cond)}"
    if isinstance(s, Loop):
        return "loop"
    if isinstance(s, Fail):
        return f"fail#{s.site}({', '.join(format_expr(v) for v in s.values)})"
    if isinstance(s, Atomic):
        old = f"{s.var} = " if s.var else ""
        return f"{old}atomic_{s.op} {s.buf}[{format_expr(s.index)}] {format_expr(s.value)}"
    if isinstance(s, Barrier):
        return f"barrier  // {s.why}" if s.why else "barrier"
    if isinstance(s, DeclPtr):
        return f"ptr {s.var} -> {s.init}"
    if isinstance(s, SwapPtr):
        return f"swap {s.a} {s.b}"
    if isinstance(s, Comment):
        return f"// {s.text}"
    return repr(s)


def format_program(p) -> str:
    """The kernels of a `plan.Plan` (--dump kir)."""
    lines = [f"entry {p.entry}  (#BlockSize={p.block_size}, #WarpSize={p.warp_size}, #NumGroups={p.num_groups})"]
    lines.append("params: " + ", ".join(f"{x.name}:{x.ty}" for x in p.params))
    for b in p.buffers:
        lines.append(f"global {b.name} : {b.ty}[{format_expr(b.size)}]  ({b.role}; {b.origin})")
    versions = {s.fast: s for s in p.launches() if s.fast}
    for k in p.kernels:
        v = versions.get(k.name)
        lines.append(f"kernel {k.name}:" if v is None else
                     f"kernel {k.name}: (unchecked version of {v.kernel}, launched where {format_expr(v.when)})")
        for b in k.locals_ + k.privates:
            per = f" per {b.per}" if b.per else ""
            lines.append(f"  {b.space} {b.name} : {b.ty}[{format_expr(b.size)}]{per}  ({b.origin})")
        lines.append(format_stmts(k.body, 1))
    return "\n".join(lines)
