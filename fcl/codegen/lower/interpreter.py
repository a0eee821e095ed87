"""`Lowerer`: runs the program's declarations over symbolic values.

An `ev_` method per kind of expression, under an environment that maps names to
values and carries the typed core's instance (`INST`: the concrete types of the code
evaluated) and the number of the declaration evaluated (`SCOPE`).  Also the values of
array literals, the empty one included.
"""
from __future__ import annotations

from fcl.base.errors import CompileError, CompilerBug
from fcl.codegen import kir as K
from fcl.codegen.lower.builder import Ctx
from fcl.codegen.lower.control import branch, merge_pure
from fcl.codegen.lower.primitives import SPANNED, TYPED, primitives
from fcl.codegen.lower.values import (BINOPS, PolyLet, SFun, SLevel, SLevelFun, SPair, SPull, SScalar, SVal,
                                      apply, checks, with_span)
from fcl.syntax import ast as A
from fcl.types import node_types as NT
from fcl.types import terms as T
from fcl.types.terms import format_type


SCOPE = "\0scope"    # env key: the number of the declaration whose body is evaluated
INST = "\0inst"      # env key: the `core.Inst` giving the concrete types of the code evaluated


class Lowerer:
    """Runs declarations over symbolic values."""

    def __init__(self, decls, hw: dict[str, int], core: NT.TypedCore):
        self.core = core
        self.decls: dict[str, list[tuple[int, A.Val]]] = {}
        vals = [d for d in decls if isinstance(d, A.Val)]
        for k, d in enumerate(vals):
            self.decls.setdefault(d.name, []).append((k, d))
        self.end = len(vals)
        self.hw = hw
        self.prims = primitives()
        self.hw_read: set[str] = set()      # hardware parameters the program reads

    # -- expressions

    def ev(self, ctx: Ctx, env: dict, e: A.Expr) -> SVal:
        method = getattr(self, "ev_" + type(e).__name__)
        return method(ctx, env, e)

    def ev_IntLit(self, ctx, env, e):
        return SScalar(K.cint(e.value))

    def ev_FloatLit(self, ctx, env, e):
        return SScalar(K.Const("float", e.value))

    def ev_DoubleLit(self, ctx, env, e):
        return SScalar(K.Const("double", e.value))

    def ev_BoolLit(self, ctx, env, e):
        return SScalar(K.Const("bool", bool(e.value)))

    def ev_HwParam(self, ctx, env, e):
        self.hw_read.add(e.name)
        return SScalar(K.cint(self.hw[e.name]))

    def ev_Var(self, ctx, env, e):
        if e.name in env:
            value = env[e.name]
            if isinstance(value, PolyLet):      # a polymorphic let's value, at this use's types
                let_env = value.env
                inst = let_env[INST].for_let(value.let, env[INST].at(e))
                return ctx.share(self.ev(ctx, {**let_env, INST: inst}, value.let.value))
            return value
        return self.global_value(ctx, e.name, e.span, env[INST].at(e), env.get(SCOPE, self.end))

    def global_value(self, ctx, name, span, ty: T.Type | NT.Inst, limit=None):
        """The value of declaration `name` as seen from before declaration number `limit`
        (a declaration sees the earlier ones only; a later one may shadow a name), at type
        `ty` (the concrete type of the occurrence; for the entry point, its instance)."""
        limit = self.end if limit is None else limit
        seen = [(k, d) for k, d in self.decls.get(name, ()) if k < limit]
        if seen:
            k, d = seen[-1]
            inst = ty if isinstance(ty, NT.Inst) else NT.Inst(self.core).for_decl(d, ty)
            return self.ev(ctx, {SCOPE: k, INST: inst}, d.value)
        if name in TYPED:
            prim = TYPED[name](ty, name)
            return with_span(prim, span)
        if name in self.prims:
            prim = self.prims[name]
            return with_span(prim, span) if name in SPANNED else prim
        raise CompileError(f"unbound name `{name}` during compilation", span)

    def ev_Lam(self, ctx, env, e):
        unused = e.param not in {x.name for x in A.free_uses(e.body)}

        def f(c, v, env=env, e=e):
            # an argument is evaluated before the call, as in the evaluator: its zero-divisor
            # checks are made here, used or not, and all its checks where the function leaves
            # it unused (else bounds checks stay where the value is used)
            return self.ev(c, {**env, e.param: c.share(v, eager=checks(v) if unused else divides(v))}, e.body)
        return SFun(f, e.param)

    def ev_LevelLam(self, ctx, env, e):
        rigid = self.core.rigid_level(e)

        def f(c, lvl, env=env, e=e):
            return self.ev(c, {**env, e.lvar: SLevel(lvl), INST: env[INST].with_level(rigid, lvl)}, e.body)
        return SLevelFun(f)

    def ev_App(self, ctx, env, e):
        fn = self.ev(ctx, env, e.fn)
        arg = self.ev(ctx, env, e.arg)
        return self.apply_at(ctx, fn, arg, e.span)

    def apply_at(self, ctx, fn, arg, span):
        with ctx.b.at(span):
            return apply(ctx, fn, arg)

    def ev_LevelApp(self, ctx, env, e):
        fn = self.ev(ctx, env, e.fn)
        if not isinstance(fn, SLevelFun):
            raise CompilerBug("level application of a value that is not level-abstracted")
        with ctx.b.at(e.span):
            return fn.f(ctx, self.level(env, e.level))

    def level(self, env, lv: A.LevelAst) -> int:
        if isinstance(lv, A.LNamed):
            return T.level_depth(T.LEVEL_NAMES[lv.name])
        if isinstance(lv, A.LSucc):
            return self.level(env, lv.inner) + 1
        value = env.get(lv.name)
        if not isinstance(value, SLevel):
            raise CompilerBug(f"level variable {lv.name} unbound at compile time")
        return value.level

    def ev_Let(self, ctx, env, e):
        _, tq, lq = self.core.let_info(e)
        if tq or lq:        # polymorphic: lowered at each use, at that use's types (`ev_Var`)
            return self.ev(ctx, {**env, e.name: PolyLet(e, env)}, e.body)
        value = self.ev(ctx, env, e.value)
        if isinstance(value, SScalar):
            value = SScalar(ctx.bind(value.e))
        return self.ev(ctx, {**env, e.name: ctx.share(value, eager=True)}, e.body)

    def ev_If(self, ctx, env, e):
        cond = self.ev(ctx, env, e.cond)
        c = cond.e
        if isinstance(c, K.Const):
            return self.ev(ctx, env, e.then if c.value else e.else_)
        return branch(ctx, c, lambda sc: self.ev(sc, env, e.then), lambda sc: self.ev(sc, env, e.else_), e.span)

    def ev_Pair(self, ctx, env, e):
        return SPair(self.ev(ctx, env, e.fst), self.ev(ctx, env, e.snd))

    def ev_ArrayLit(self, ctx, env, e):
        if not e.elems:     # `[]`: any read is out of range; a value of its type stands in
            return empty_array(env[INST].at(e).elem)
        elems = [ctx.share(self.ev(ctx, env, x), eager=True) for x in e.elems]
        return literal_array(elems)

    def ev_UnOp(self, ctx, env, e):
        v = self.ev(ctx, env, e.operand).e
        if e.op == "not":
            return SScalar(K.unop("not", v))
        if isinstance(v, K.Const) and v.ty in ("float", "double"):
            return SScalar(K.Const(v.ty, -v.value))
        return SScalar(K.unop("neg", v))

    def ev_BinOp(self, ctx, env, e):
        if e.op == "|>":
            arg = self.ev(ctx, env, e.left)
            return self.apply_at(ctx, self.ev(ctx, env, e.right), arg, e.span)
        if e.op == ".":
            f, g = self.ev(ctx, env, e.left), self.ev(ctx, env, e.right)
            return SFun(lambda c, x: apply(c, f, apply(c, g, x)), "compose")
        if e.op in ("&&", "||"):
            return self.short_circuit(ctx, env, e)
        a = self.ev(ctx, env, e.left).e
        b = self.ev(ctx, env, e.right).e
        op = BINOPS[e.op]
        if op in ("div", "mod") and a.ty == "int":
            b = ctx.b.checked_divisor(a, b, op, e.span)
        return SScalar(K.binop(op, a, b))

    def short_circuit(self, ctx, env, e):
        """`a && b`, `a || b`: b's code (a loop, a checked index in it) runs only when a
        does not decide, as the evaluator evaluates it; a pure b stays C's own operator."""
        a = self.ev(ctx, env, e.left).e
        if isinstance(a, K.Const):
            return self.ev(ctx, env, e.right) if a.value == (e.op == "&&") else SScalar(a)
        decided = SScalar(K.Const("bool", e.op == "||"))
        seen = []

        def right(sc):
            b = self.ev(sc, env, e.right)
            seen.append((sc, b))
            return b
        then, else_ = (right, lambda sc: decided) if e.op == "&&" else (lambda sc: decided, right)
        v = branch(ctx, a, then, else_)
        (sc, b), = seen
        if not sc.stmts:        # no code of its own: the value is good where `a` is
            return SScalar(K.binop(BINOPS[e.op], a, b.e))
        return v


def divides(v: SVal) -> bool:
    """A scalar value (or pair of them) holding a checked divisor (`kir.checked_divisor`), or a
    check that fails whatever the values (a divisor or length the compiler knows is 0)."""
    if isinstance(v, SPair):
        return divides(v.a) or divides(v.b)
    return isinstance(v, SScalar) and K.holds_check(v.e) and any(
        isinstance(x, K.Select) and K.plain_divisor(x) is not x
        or isinstance(x, K.Checked) and K.is_const(x.length, 0) for x in K.walk_expr(v.e))


def literal_array(elems: list[SVal]) -> SPull:
    """The array literal of `elems`: a pull array choosing among them by index."""
    def at(ctx, i, elems=elems):
        if isinstance(i, K.Const):
            if 0 <= i.value < len(elems):
                return elems[i.value]
            raise ctx.error(f"index {i.value} out of range for an array literal of length {len(elems)}")
        result = elems[-1]
        if len(elems) == 1:     # (no choice reads i)
            ctx.make_checks(SScalar(i))
        for k in range(len(elems) - 2, -1, -1):
            result = merge_pure(K.binop("eq", i, K.cint(k)), elems[k], result)
        return result
    return SPull(K.cint(len(elems)), at)


def empty_array(elem: T.Type) -> SPull:
    """An empty pull array of `elem`: its index function gives zeros of that type."""
    return SPull(K.cint(0), lambda ctx, i: zero_value(elem))


def zero_value(t: T.Type) -> SVal:
    """A value of type `t` made of zeros (and empty arrays)."""
    if isinstance(t, T.TCon):
        return SScalar(K.zero(t.name))
    if isinstance(t, T.TPairT):
        return SPair(zero_value(t.fst), zero_value(t.snd))
    if isinstance(t, T.TPullT):
        return empty_array(t.elem)
    raise CompilerBug(f"the typed core gives an empty array literal elements of type {format_type(t)}")
