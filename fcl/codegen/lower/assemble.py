"""The builder's kernels and host statements as a `plan.Plan`.

`carry_scalars` stores a scalar that a later kernel reads; `assemble` names and freezes
the kernels, resolves each launch (what it takes, how many work-groups: `grid_groups`)
and ends the host program with the run-time checks and the result;
`check_local_scope` makes sure no local or private buffer outlives its kernel.
"""
from __future__ import annotations

import dataclasses

from fcl.base.errors import CompilerBug, CompilerLimitation, Span
from fcl.base.hw import LOCAL_MEMORY, Level
from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.lower.builder import Builder, BufRec, PendingLaunch


def carry_scalars(b: Builder, params) -> None:
    """A scalar declared at the top of one kernel (a foldl, an `if`) and used in a later
    kernel is stored by work-item 0 into a one-element global buffer at the end of
    the kernel that computes it, and read back at the start of each kernel that uses it."""
    known = {p.name for p in params} | {v.name for v in b.host_vars} | b.params
    top = []                                   # per kernel: {name: type} declared at its top
    for stmts, _, _ in b.kernels:
        top.append({s.var: (s.expr if isinstance(s, K.Let) else s.init).ty
                    for s in stmts if isinstance(s, (K.Let, K.DeclVar))})
    carried: dict[str, BufRec] = {}
    for i, (stmts, locals_, privates) in enumerate(b.kernels):
        declared, used = set(), K.names_read(stmts)
        for st in K.walk_stmts(stmts):
            declared.update(declared_names(st))
        loads = []
        for name in sorted(used - declared - known):
            j = next((j for j in range(i - 1, -1, -1) if name in top[j]), None)
            if j is None:
                continue
            ty = top[j][name]
            if name not in carried:
                rec = b.buffer("global", K.cint(1), f"scalar {name} carried to a later kernel", "carry",
                               prefix="carry", ty=ty)
                b.host.insert(0, b.host.pop())      # its Alloc goes before every launch
                carried[name] = rec
                b.kernels[j][0].append(K.If(K.binop("eq", K.HwId("int", "global_id"), K.cint(0)),
                                            (K.Store(rec.name, K.cint(0), K.Var(ty, name)),)))
            loads.append(K.Let(name, K.Load(ty, carried[name].name, K.cint(0))))
        stmts[:0] = loads


def declared_names(s: K.Stmt) -> list[str]:
    """The names statement `s` itself declares."""
    if isinstance(s, (K.Let, K.DeclVar, K.SeqFor, K.ParFor, K.DeclPtr)):
        return [s.var]
    if isinstance(s, K.PartFor):
        return [s.var, s.active]
    if isinstance(s, K.Atomic) and s.var:
        return [s.var]
    return []


def assemble(b: Builder, name, args, params, result: P.Result, hw) -> P.Plan:
    """Name the kernels and resolve the host program's launches (each takes what it uses)."""
    carry_scalars(b, params)
    # (numbers of one width: no kernel's name begins another's, which Oclgrind would take
    # for one kernel and count the local memory of both: sortBy's 19 kernels, k1 and k10-k18.
    # A version without bounds checks, `_fast`, still begins with its kernel's name)
    width = len(str(len(b.kernels) - 1))
    kernels = [K.Kernel(name=f"{name}_k{k:0{width}d}" if len(b.kernels) > 1 else name, body=tuple(stmts),
                        locals_=tuple(frozen(r) for r in locals_),
                        privates=tuple(frozen(r) for r in privates))
               for k, (stmts, locals_, privates) in enumerate(b.kernels)]
    check_local_scope(b, kernels)
    all_params = tuple(params) + tuple(b.host_vars)
    buffers = tuple(frozen(r) for r in b.globals)

    checks = (P.CheckSteps(b.guard.name, tuple(b.guarded)),) if b.guard is not None and b.guarded else ()
    bounds = ()
    if b.bounds is not None:
        bounds = (P.CheckBounds(b.bounds.name, tuple(site_text(site.span) for site in b.sites),
                                tuple(site.kind for site in b.sites)),)
        checks = checks + bounds    # a while the device stopped comes first: what follows it is garbage

    allocated = []      # the bounds buffer, once the host program has allocated it

    def resolve(stmts) -> tuple:
        out = []
        for s in stmts:
            if isinstance(s, P.Alloc) and b.bounds is not None and s.buffer == b.bounds.name:
                allocated.append(s.buffer)
            if isinstance(s, P.ReadScalar) and allocated:
                out.extend(bounds)      # a value read back means nothing after a failed check
            if isinstance(s, PendingLaunch):
                k = kernels[s.index]
                s = P.Launch(k.name, tuple(grid_groups(b, k.body, hw["#BlockSize"])),
                             P.kernel_uses(k, buffers, all_params))
            elif isinstance(s, P.Loop):
                s = dataclasses.replace(s, head=resolve(s.head), body=resolve(s.body))
            out.append(s)
        return tuple(out)

    return P.Plan(entry=name, args=tuple(args), params=all_params, buffers=buffers, kernels=tuple(kernels),
                  body=resolve(b.host) + checks + (result,), block_size=hw["#BlockSize"], warp_size=hw["#WarpSize"],
                  num_groups=hw["#NumGroups"], local_memory=hw.get("#LocalMemory", LOCAL_MEMORY))


def site_text(span: Span | None) -> str:
    """Where a run-time check is, as `file:line:col`."""
    return span.location() if span is not None else "?"


def frozen(r: BufRec) -> K.Buffer:
    """The kernel-IR buffer of `r`."""
    if not r.ty:
        raise CompilerBug(f"buffer {r.name} ({r.origin}) has no element type")
    return K.Buffer(r.name, r.space, r.ty, r.size, r.origin, r.role, r.per)


def grid_groups(b: Builder, stmts, block_size: int) -> list[K.Expr]:
    """Work-groups each grid loop of a kernel can use (all #NumGroups when the loop's
    count is known only on the device): those at its top and those under an `if` there
    (a result chosen by a condition the compiler cannot fold; the launch takes the most)."""
    out = []
    for s in K.walk_stmts(stmts):
        if isinstance(s, K.ParFor) and s.level == Level.GRID:
            want = K.div(K.add(s.count, K.cint(block_size - 1)), K.cint(block_size))
            if s.groups is not None:
                want = K.call("min", (want, K.cint(s.groups)), "int")
        elif isinstance(s, K.PartFor) and s.level == Level.GRID:
            want = s.count
        else:
            continue
        out.append(want if b.host_computable(want) else K.cint(b.hw["#NumGroups"]))
    return out


def check_local_scope(b: Builder, kernels):
    """A local or private buffer must be used only in the kernel that allocated it (also
    through a pointer of a `while`'s ping-pong, declared in that kernel)."""
    pointers = {s.var: s.init for k in kernels for s in K.walk_stmts(k.body) if isinstance(s, K.DeclPtr)}
    for k in kernels:
        own = {r.name for r in k.locals_ + k.privates}
        own |= {s.var for s in K.walk_stmts(k.body) if isinstance(s, K.DeclPtr)}
        for used in K.buffers_used(k.body):
            rec = b.bufs.get(pointers.get(used, used)) if used not in own else None
            if rec is not None and rec.name not in own and rec.space != "global":
                raise CompilerLimitation("grid-nesting",
                    f"the {rec.space} array from the {rec.origin} is used after a grid-level force "
                    f"(a kernel boundary) and would be lost; force it at grid level instead", rec.span)
