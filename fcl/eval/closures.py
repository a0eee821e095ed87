"""Expressions of the reference evaluator compiled to Python closures.

`Compiler` turns an AST expression into a closure ``ev(env)`` once (env is a
linked tuple ``(value, parent)``), which evaluates it call-by-value on the
machine (machine.py): locals are looked up by depth, saturated applications of
primitives (`index a i`, `push <block> a`) become direct calls, and the scalar
operators on two ints are inlined with the wrap-around of fcl.base.scalars.
An error in a call records the applications it passes through on its way out.
"""
from __future__ import annotations

import operator

from fcl.base import scalars
from fcl.base.errors import EvalError
from fcl.base.hw import LEVEL_BY_NAME
from fcl.base.operators import BY_SPELLING
from fcl.eval.machine import Machine
from fcl.eval.primitives import PRIMS
from fcl.eval.values import LevelFn, Pull, describe
from fcl.syntax import ast

class Compiler:
    """Turns AST expressions into closures ``ev(env)``.

    `scope` is a tuple of the names bound locally, innermost first (level
    variables appear as ``<name>``); `lookup_global(name)` returns a zero-
    argument getter for a visible declaration, or None."""

    def __init__(self, machine: Machine, lookup_global):
        self.m = machine
        self.lookup_global = lookup_global

    def compile(self, e: ast.Expr, scope: tuple):
        method = getattr(self, "c_" + type(e).__name__, None)
        if method is None:
            raise EvalError(f"the evaluator does not know the expression form {type(e).__name__}",
                            getattr(e, "span", None))
        return method(e, scope)

    # -------------------------------------------------------- atoms

    def c_IntLit(self, e, scope):
        v = scalars.wrap(e.value)
        return lambda env: v

    def c_FloatLit(self, e, scope):
        v = scalars.f32(e.value)
        return lambda env: v

    def c_DoubleLit(self, e, scope):
        v = float(e.value)
        return lambda env: v

    def c_BoolLit(self, e, scope):
        v = bool(e.value)
        return lambda env: v

    def c_HwParam(self, e, scope):
        if e.name not in self.m.hw:
            raise EvalError(f"unknown hardware parameter {e.name} (known: "
                            f"{', '.join(sorted(self.m.hw))})", e.span)
        v = self.m.hw[e.name]
        return lambda env: v

    def c_Var(self, e, scope):
        if e.name in scope:
            return _local(scope.index(e.name))
        getter = self.lookup_global(e.name)
        if getter is not None:
            return lambda env: getter()
        prim = PRIMS.get(e.name)
        if prim is not None:
            v = _prim_value(self.m, prim, (), e.span)
            return lambda env: v
        raise EvalError(f"unbound name '{e.name}'", e.span)

    # -------------------------------------------------------- binding forms

    def c_Lam(self, e, scope):
        body = self.compile(e.body, (e.param,) + scope)
        return lambda env: (lambda v: body((v, env)))

    def c_LevelLam(self, e, scope):
        body = self.compile(e.body, ("<" + e.lvar,) + scope)
        return lambda env: LevelFn(lambda lv: body((lv, env)))

    def c_Let(self, e, scope):
        value = self.compile(e.value, scope)
        body = self.compile(e.body, (e.name,) + scope)
        return lambda env: body((value(env), env))

    def c_If(self, e, scope):
        cond, then, else_ = (self.compile(x, scope) for x in (e.cond, e.then, e.else_))
        span = e.span

        def ev(env):
            c = cond(env)
            if c is True:
                return then(env)
            if c is False:
                return else_(env)
            raise EvalError(f"the condition of 'if' is {describe(c)}, not a bool", span)
        return ev

    def c_Pair(self, e, scope):
        a, b = self.compile(e.fst, scope), self.compile(e.snd, scope)
        return lambda env: (a(env), b(env))

    def c_ArrayLit(self, e, scope):
        """Eager, like `let`: every element is evaluated once, when the literal is."""
        elems = tuple(self.compile(x, scope) for x in e.elems)
        n = len(elems)

        def ev(env):
            values = tuple(x(env) for x in elems)
            return Pull(n, values.__getitem__)
        return ev

    # -------------------------------------------------------- application

    def c_App(self, e, scope):
        direct = self._direct_prim(e, scope)
        if direct is not None:
            return direct
        fn, arg = self.compile(e.fn, scope), self.compile(e.arg, scope)
        return _apply(fn, arg, e.span)

    def c_LevelApp(self, e, scope):
        direct = self._direct_prim(e, scope)
        if direct is not None:
            return direct
        fn, level = self.compile(e.fn, scope), self.level(e.level, scope)
        span = e.span

        def ev(env):
            f = fn(env)
            if not isinstance(f, LevelFn):
                raise EvalError(f"level application of {describe(f)}, which takes no level", span)
            return f.fn(level(env))
        return ev

    def _direct_prim(self, e, scope):
        """A saturated application of a primitive (`index a i`, `push <block> a`),
        compiled to a direct call; extra arguments are applied afterwards."""
        args = []
        head = e
        while isinstance(head, (ast.App, ast.LevelApp)):
            args.append(head)
            head = head.fn
        if not isinstance(head, ast.Var) or head.name in scope:
            return None
        prim = PRIMS.get(head.name)
        if prim is None or self.lookup_global(head.name) is not None:
            return None
        args.reverse()
        k = len(prim.params)
        if len(args) != k:
            return None   # partial (generic path) or over-applied (outer App handles the rest)
        compiled = []
        for kind, node in zip(prim.params, args):
            if (kind == "l") != isinstance(node, ast.LevelApp):
                return None
            compiled.append(self.level(node.level, scope) if kind == "l"
                            else self.compile(node.arg, scope))
        return _direct_call(self.m, prim, compiled, e.span)

    # -------------------------------------------------------- operators

    def c_BinOp(self, e, scope):
        op = e.op
        left, right = self.compile(e.left, scope), self.compile(e.right, scope)
        span = e.span
        if op == "|>":
            return _apply(right, left, span, arg_first=True)
        if op == ".":
            def compose(env):
                f, g = left(env), right(env)
                return lambda x: f(g(x))
            return compose
        if op in ("&&", "||"):
            return _logic(op, left, right, span)
        table = scalars.BINARY.get(op)
        if table is None:
            raise EvalError(f"unknown operator {op}", span)
        return _scalar_binop(op, table, left, right, span)

    def c_UnOp(self, e, scope):
        operand = self.compile(e.operand, scope)
        table = scalars.UNARY.get(e.op)
        if table is None:
            raise EvalError(f"unknown operator {e.op}", e.span)
        op, span = e.op, e.span

        def ev(env):
            a = operand(env)
            fn = table.get(type(a))
            if fn is None:
                raise EvalError(f"operator {op} is not defined on {describe(a)}", span)
            return fn(a)
        return ev

    # -------------------------------------------------------- levels

    def level(self, lv: ast.LevelAst, scope):
        """Compile a written level to ``ev(env) -> 0..3``."""
        if isinstance(lv, ast.LNamed):
            if lv.name not in LEVEL_BY_NAME:
                raise EvalError(f"unknown level {lv.name}", lv.span)
            d = LEVEL_BY_NAME[lv.name]
            return lambda env: d
        if isinstance(lv, ast.LVar):
            key = "<" + lv.name
            if key not in scope:
                raise EvalError(f"unbound level variable {lv.name}", lv.span)
            return _local(scope.index(key))
        if isinstance(lv, ast.LSucc):
            inner, span = self.level(lv.inner, scope), lv.span

            def succ(env):
                d = inner(env) + 1
                if d > 3:
                    raise EvalError("there is no level above grid", span)
                return d
            return succ
        raise EvalError(f"unknown level form {type(lv).__name__}", getattr(lv, "span", None))


# comparisons of two ints, inlined: the operator module's function of each comparison
_CMP_FAST = {s: getattr(operator, op.name) for s, op in BY_SPELLING.items() if op.kind == "compare"}


def _scalar_binop(op: str, table: dict, left, right, span):
    """A scalar operator: scalars.BINARY[op] chosen by the operands' type.

    int + - * and comparisons of two ints are inlined (the same wrap-around
    as scalars.int_add etc.); everything else calls the table's function."""
    raising = op in scalars.RAISING

    def general(a, b):
        fn = table.get(type(a))
        if fn is None or type(b) is not type(a):
            raise EvalError(f"operator {op} is not defined on {describe(a)} and {describe(b)}",
                            span)
        if raising:
            try:
                return fn(a, b)
            except EvalError as err:
                raise EvalError(err.message, span) from None
        return fn(a, b)

    if op == "+":
        def ev(env):
            a = left(env)
            b = right(env)
            if type(a) is int and type(b) is int:
                x = a + b
                return x if -2147483648 <= x <= 2147483647 else scalars.wrap(x)
            return general(a, b)
    elif op == "-":
        def ev(env):
            a = left(env)
            b = right(env)
            if type(a) is int and type(b) is int:
                x = a - b
                return x if -2147483648 <= x <= 2147483647 else scalars.wrap(x)
            return general(a, b)
    elif op == "*":
        def ev(env):
            a = left(env)
            b = right(env)
            if type(a) is int and type(b) is int:
                x = a * b
                return x if -2147483648 <= x <= 2147483647 else scalars.wrap(x)
            return general(a, b)
    elif op in _CMP_FAST:
        cmp = _CMP_FAST[op]     # on two ints these give a bool, as scalars.lt etc.

        def ev(env):
            a = left(env)
            b = right(env)
            if type(a) is int and type(b) is int:
                return cmp(a, b)
            return general(a, b)
    elif op in ("/", "div", "%", "mod"):
        int_fn = table[int]

        def ev(env):
            a = left(env)
            b = right(env)
            if type(a) is int and type(b) is int and b > 0 and a >= 0:
                return a // b if int_fn is scalars.int_div else a % b
            return general(a, b)
    else:
        def ev(env):
            return general(left(env), right(env))
    return ev


def _local(depth: int):
    if depth == 0:
        return lambda env: env[0]
    if depth == 1:
        return lambda env: env[1][0]
    if depth == 2:
        return lambda env: env[1][1][0]
    if depth == 3:
        return lambda env: env[1][1][1][0]

    def ev(env):
        for _ in range(depth):
            env = env[1]
        return env[0]
    return ev


def _apply(fn, arg, span, arg_first: bool = False):
    """Call-by-value application; applying a non-function is an error at `span`."""
    def ev(env):
        if arg_first:
            a = arg(env)
            f = fn(env)
        else:
            f = fn(env)
            a = arg(env)
        try:
            return f(a)
        except TypeError:
            if not callable(f):
                raise EvalError(f"{describe(f)} is applied to an argument, but it is not a function",
                                span) from None
            raise
        except EvalError as e:
            _add_call_frame(e, span)
            raise
    return ev


MAX_CALL_FRAMES = 8


def _add_call_frame(e: EvalError, span) -> None:
    """Record, as the error travels out, the application it passed through: the call chain
    from the failing primitive back to the entry, innermost first (at most MAX_CALL_FRAMES)."""
    if span is None or span == e.span or any(s == span for _, s in e.related):
        return
    frames = [r for r in e.related if r[0] == "called from here"]
    if len(frames) < MAX_CALL_FRAMES:
        e.related.append(("called from here", span))


def _logic(op, left, right, span):
    want = op == "||"     # the value of the left side that decides the result

    def ev(env):
        a = left(env)
        if type(a) is not bool:
            raise EvalError(f"operator {op} needs bools, got {describe(a)}", span)
        if a is want:
            return a
        b = right(env)
        if type(b) is not bool:
            raise EvalError(f"operator {op} needs bools, got {describe(b)}", span)
        return b
    return ev


def _direct_call(m, prim, compiled, span):
    impl = prim.impl
    if len(compiled) == 1:
        (a,) = compiled
        return lambda env: impl(m, span, a(env))
    if len(compiled) == 2:
        a, b = compiled
        return lambda env: impl(m, span, a(env), b(env))
    if len(compiled) == 3:
        a, b, c = compiled
        return lambda env: impl(m, span, a(env), b(env), c(env))
    return lambda env: impl(m, span, *(x(env) for x in compiled))


def _prim_value(m, prim, args: tuple, span):
    """A primitive as a first-class (curried) value, with the arguments so far."""
    if len(args) == len(prim.params):
        return prim.impl(m, span, *args)
    if prim.params[len(args)] == "l":
        return LevelFn(lambda lv: _prim_value(m, prim, args + (lv,), span))
    return lambda v: _prim_value(m, prim, args + (v,), span)
