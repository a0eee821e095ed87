"""Lowering one entry point: `lower_entry`.

The entry's arguments become symbolic values and plan arguments (a static scalar a
constant), the declaration is applied to them, and its result is stored in an output
buffer; `core_of` gives the typed core of declarations handed in without one.
"""
from __future__ import annotations

import dataclasses

from fcl.base.errors import CompileError, CompilerBug, CompilerLimitation
from fcl.base.hw import DEFAULT_HW, Level
from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.lower.assemble import assemble
from fcl.codegen.lower.builder import Builder, Ctx
from fcl.codegen.lower.interpreter import Lowerer
from fcl.codegen.lower.schemes import host_length, push_scheme, reader, store_writer
from fcl.codegen.lower.values import SFun, SLevelFun, SPair, SPull, SPush, SScalar, SVal, apply, shape_leaves
from fcl.syntax import ast as A
from fcl.syntax.loader import prelude_decls
from fcl.types import node_types as NT
from fcl.types import terms as T
from fcl.types.infer import builtins_env, check_program, prelude_checked
from fcl.types.terms import format_type


def lower_entry(decls, name: str, arg_types: list[T.Type], hw: dict[str, int], entry_span=None,
                static: dict | None = None, names=(), launch_groups: int | None = None,
                bounds_checks: bool = True, core: NT.TypedCore | None = None):
    """Compile declaration `name`, applied to arguments of `arg_types`:
    (Plan, {buffer name: span of the force/while it holds}).  `static`: {position:
    value} of scalar arguments compiled in as constants; `names`: parameter names.
    `launch_groups`: when the program never reads #NumGroups, the most work-groups
    a launch may take (instead of #NumGroups): a part per work-group up to it.
    `core`: the checker's types of `decls` (fcl.types.node_types); by default `decls` are
    checked for it (the prelude's once per process).  A hardware parameter `hw` leaves out
    takes its default (fcl.base.hw.DEFAULT_HW)."""
    hw = {**DEFAULT_HW, **hw}
    if core is None:
        core = core_of(decls)
    lw = Lowerer(decls, hw, core)
    b = Builder(hw, checks=bounds_checks)
    b.span = entry_span
    b.arg_names = list(names)        # the program's parameter names, for messages
    ctx = Ctx(b, Level.GRID, None, top=True)
    params, args = [], []
    static = static or {}
    values = [entry_arg(b, t, k, params, args, static, names[k] if k < len(names) else "")
              for k, t in enumerate(arg_types)]
    b.params = {p.name for p in params}
    seen = lw.decls.get(name)
    if not seen:
        raise CompileError(f"unbound name `{name}` during compilation", entry_span)
    inst, result_type = NT.entry_inst(core, seen[-1][1], list(arg_types))
    value = lw.global_value(ctx, name, entry_span, inst)
    for a in values:
        value = apply(ctx, value, a)
    result = emit_result(ctx, value, name, result_type)
    b.finish()
    free = bool(launch_groups) and "#NumGroups" not in lw.hw_read | b.hw_read
    if free:
        hw = dict(hw, **{"#NumGroups": launch_groups})
    plan = dataclasses.replace(assemble(b, name, args, params, result, hw), free_groups=free)
    spans = {n: r.span for n, r in b.bufs.items()}
    spans.update({site_key(k): site.span for k, site in enumerate(b.sites)})
    spans.update(b.length_spans)
    return plan, spans


def core_of(decls) -> NT.TypedCore:
    """The typed core of `decls` when the caller has none: the prelude's (when `decls`
    start with its declarations) followed by the rest, checked now."""
    decls = list(decls)
    pre = prelude_decls()
    if len(decls) >= len(pre) and all(a is b for a, b in zip(decls, pre)):
        checked = prelude_checked()
        rest = check_program(A.Program(tuple(decls[len(pre):])), checked.env)
        return checked.core.then(rest.core)
    return check_program(A.Program(tuple(decls)), builtins_env()).core


def site_key(k: int) -> str:
    """The key of run-time check number k in lower_entry's spans."""
    return f"index site {k}"


def entry_arg(b: Builder, t: T.Type, k: int, params, args, static: dict, name: str) -> SVal:
    """The symbolic value of argument k of type t; its plan argument goes to `args`.
    A static scalar is a constant the kernels never see."""
    if isinstance(t, T.TCon) and k in static:
        args.append(P.ScalarArg(f"arg{k}", t.name, name, static[k]))
        return SScalar(K.cint(static[k]) if t.name == "int" else K.const(static[k], t.name))
    value, spec = _arg_value(b, t, k, f"{k}", params)
    args.append(dataclasses.replace(spec, name=name) if name else spec)
    return value


def _arg_value(b: Builder, t: T.Type, k: int, path: str, params) -> tuple[SVal, object]:
    """(value, plan argument) for (part `path` of) argument k: scalars are host scalars,
    pairs their components, arrays of scalars input buffers, arrays of pairs one buffer
    per component, regular arrays of arrays a flat buffer and its shape."""
    if isinstance(t, T.TCon):
        pname = f"arg{path}"
        params.append(K.Param(pname, t.name))
        return SScalar(K.Var(t.name, pname)), P.ScalarArg(pname, t.name)
    if isinstance(t, T.TPairT):
        a, sa = _arg_value(b, t.fst, k, f"{path}_0", params)
        c, sc = _arg_value(b, t.snd, k, f"{path}_1", params)
        return SPair(a, c), P.PairArg(sa, sc)
    if isinstance(t, T.TPullT) and isinstance(t.elem, T.TCon):
        rec, length = _input_buffer(b, t.elem.name, k, path, params)
        return reader(rec.name, K.cint(0), length, t.elem.name), P.ArrayArg(rec.name, length.name, t.elem.name)
    if isinstance(t, T.TPullT) and isinstance(t.elem, T.TPairT):
        a, sa = _arg_value(b, T.TPullT(t.elem.fst), k, f"{path}_0", params)
        c, sc = _arg_value(b, T.TPullT(t.elem.snd), k, f"{path}_1", params)
        return SPull(a.n, lambda ctx, i: SPair(a.at(ctx, i), c.at(ctx, i))), P.ZipArg(sa, sc)
    if isinstance(t, T.TPullT) and isinstance(t.elem, T.TPullT) and isinstance(t.elem.elem, T.TCon):
        ty = t.elem.elem.name
        rec, length = _input_buffer(b, ty, k, path, params)
        rows, cols = K.Var("int", f"r{path}"), K.Var("int", f"c{path}")
        params += [K.Param(rows.name, "int"), K.Param(cols.name, "int")]

        def row(ctx, i):
            base = K.mul(i, cols)
            return SPull(cols, lambda c2, j: SScalar(K.Load(ty, rec.name, K.add(base, j))))
        return SPull(rows, row), P.NestedArg(P.ArrayArg(rec.name, length.name, ty), rows.name, cols.name)
    raise CompilerLimitation("kernel-interface", f"argument {k + 1} has type {format_type(t)}, which a kernel cannot take: kernel "
                       "arguments are scalars, pairs, arrays of scalars or of pairs, and regular arrays "
                       "of arrays of scalars; pass deeper structures flat, with their sizes, and rebuild "
                       "them with `splitUp` or `generate`", b.span)


def _input_buffer(b: Builder, ty: str, k: int, path: str, params):
    """(the input buffer of `ty` elements for part `path` of argument k, its length parameter)."""
    length = K.Var("int", f"n{path}")
    rec = b.buffer("global", length, f"argument {k + 1}", "input", prefix=f"in{path}_", ty=ty)
    params.append(K.Param(length.name, "int"))
    return rec, length


def emit_result(ctx: Ctx, value: SVal, name: str, ty: T.Type) -> P.Result:
    """Store `value`, the result of entry `name` of type `ty`, in output buffers: an array
    (a pull array pushed at grid level; of pairs, a buffer per scalar of the element), a
    scalar, which work-item 0 writes, or a pair of results."""
    b = ctx.b
    if isinstance(value, SPair) and isinstance(ty, T.TPairT):
        return P.Result("pair", "", "", K.cint(1), parts=(emit_result(ctx, value.a, name, ty.fst),
                                                          emit_result(ctx, value.b, name, ty.snd)))
    if isinstance(value, SPull) and value.whole and isinstance(ty, T.TPullT) and isinstance(ty.elem, T.TCon):
        return P.Result("array", value.whole, ty.elem.name, host_length(ctx, value.n, f"the result of `{name}`"))
    if isinstance(value, SPull):
        value = push_scheme(Level.GRID, value, b.span)
    if isinstance(value, SPush):
        n = host_length(ctx, value.n if value.bound is None else value.bound, f"the result of `{name}`")
        if not isinstance(ty, (T.TPullT, T.TPushT)):
            raise CompilerBug(f"`{name}` returns an array, but its type is {format_type(ty)}")
        if isinstance(ty.elem, (T.TPullT, T.TPushT)):
            raise CompilerLimitation("kernel-interface", f"`{name}` returns an array of arrays "
                                     f"({format_type(ty)}), which a kernel cannot return; return it flat "
                                     f"(`concat m` of parts of m elements) with its sizes", b.span)
        shape = NT.shape(ty.elem, f"the elements of the result of `{name}`")
        recs = [b.buffer("global", n, f"result of {name}", "output", prefix="out", ty=t)
                for t in shape_leaves(shape)]
        w = store_writer(recs, K.cint(0))
        single = value.level < Level.GRID
        if value.level < Level.BLOCK:
            guard = K.binop("eq", K.HwId("int", "wid" if value.level == Level.WARP else "lid"), K.cint(0))
            inner = w

            def w(c, i, v):
                g = c.sub()
                inner(g, i, v)
                c.emit(K.If(guard, tuple(g.stmts)))
        value.run(ctx, w)
        if value.bound is not None:     # its length is known once it has run
            b.split_kernel()
            n = host_length(ctx, value.n, f"the result of `{name}`")
        leaves = iter(P.Result("array", rec.name, rec.ty, n, single) for rec in recs)
        return _zipped(shape, leaves, n, single)
    if isinstance(value, SScalar):
        rec = b.buffer("global", K.cint(1), f"result of {name}", "output", prefix="out", ty=value.e.ty)
        ctx.emit(K.If(K.binop("eq", K.HwId("int", "global_id"), K.cint(0)),
                      (K.Store(rec.name, K.cint(0), value.e),)))
        return P.Result("scalar", rec.name, rec.ty, K.cint(1), True)
    raise CompilerLimitation("kernel-interface", f"`{name}` returns a {describe(value)}, which a kernel cannot return; "
                       f"return arrays, scalars or pairs of them", b.span)


def _zipped(shape, leaves, n: K.Expr, single: bool) -> P.Result:
    """The result of an array of `shape` elements from its components' array results."""
    if isinstance(shape, str):
        return next(leaves)
    return P.Result("zip", "", "", n, single, (_zipped(shape[0], leaves, n, single),
                                               _zipped(shape[1], leaves, n, single)))


def describe(v: SVal) -> str:
    """What `v` is, in a message."""
    return {SPair: "pair", SFun: "function", SLevelFun: "level function"}.get(type(v), type(v).__name__)
