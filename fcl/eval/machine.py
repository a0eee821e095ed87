"""The reference evaluator: an environment machine for the small-step rules of
paper section 5.2, with explicit locations and cost counters.

Consumes declarations (`fcl.syntax.ast.Val`, prelude first, includes
expanded) and produces values (values.py).  Expressions are compiled once
into Python closures ``ev(env)`` (env is a linked tuple ``(value, parent)``)
and evaluated call-by-value; pull arrays stay lazy (a length and an index
function), push arrays are iteration schemes that run only under ``force``.

Locations.  The machine always evaluates at a location of some level:
``self.loc`` (0 thread .. 3 grid).  A location of level L is the group of
`threads[L]` work-items (1, #WarpSize, #BlockSize, #NumGroups * #BlockSize)
made of `subs[L]` sub-locations of level L-1 (a warp has #WarpSize threads, a
block #BlockSize/#WarpSize warps, the grid #NumGroups blocks).  ``self.ctx``
is the level of the iteration scheme whose element is being evaluated (the
level to which work and memory traffic are charged).  ``self.span`` is the
span accumulator of the current (sub-)location: one counter per level.

The force rules:

* rule 39/40 (thread): a push array of level thread is forced by one
  thread, element after element (``_run_push_of`` with L = 0);
* rule 41 (group): a push array ``push <L> a`` with L > thread is forced by
  the group at once: element i runs on thread ``i mod threads[L]`` of the
  group (virtualisation when there are more elements than threads); the
  span of the step is the maximum over the threads;
* rule 42 (delayed concatenation): each part i is evaluated and forced on
  its own sub-location ``i mod subs[L]``, and the parts are laid side by
  side (`ConcatDelay`) or scattered by the interleave function
  (`InterleaveDelay`), checking that every position is written once.

Forcing an array of level L at a location of a higher level is done by one
sub-location of level L (the first).  Forcing a warp- or block-level array
inside the per-element work of a block-level array (a thread location whose
scheme is at block level) is done by the element's block: the array is
computed as a whole and the element goes on with it.  Other forces at a
lower level (a block array inside a thread-level scheme) have no rule and
are an error.
"""
from __future__ import annotations

import operator
import sys

import numpy as np

from fcl.base import scalars
from fcl.base.errors import ArgumentError, EvalError, FCLError, NO_SPAN
from fcl.base.hw import DEFAULT_HW, LEVEL_BY_NAME
from fcl.eval.cost import CostReport, Counters, GLOBAL, SPACE_OF_LEVEL
from fcl.eval.primitives import PRIMS
from fcl.eval.values import (Buffer, ConcatDelay, InterleaveDelay, LEVEL_NAMES, LevelFn, MapPush,
                             Pull, Push, PushOf, SeqConcatPush, SeqForPush, ZipWithPush, describe,
                             from_python, is_function, to_python)
from fcl.syntax import ast
from fcl.syntax.loader import prelude_decls

_LEVEL_DEPTH = LEVEL_BY_NAME
_UNSET = object()


def _lname(level: int) -> str:
    return LEVEL_NAMES[level]


class Machine:
    """Evaluation state: hardware shape, current location, counters; the force rules."""

    def __init__(self, hw: dict[str, int] | None = None):
        self.hw = dict(DEFAULT_HW)
        for key, value in (hw or {}).items():
            if type(value) is not int or value <= 0:
                raise ArgumentError(f"hardware parameter {key} must be a positive int, got {value!r}")
            self.hw[key] = value
        b, w, g = self.hw["#BlockSize"], self.hw["#WarpSize"], self.hw["#NumGroups"]
        self.threads = (1, w, b, g * b)
        self.subs = (1, w, max(1, b // w), g)
        self.cost = Counters()
        self.reset()

    def reset(self) -> None:
        """Start a run at the grid location with zero counters (counter lists are
        zeroed in place, so buffers keep counting into them)."""
        c = self.cost
        for lst in [c.work, c.barriers, c.forces, c.while_iterations,
                    *c.reads.values(), *c.writes.values()]:
            lst[:] = [0, 0, 0, 0]
        self.loc = 3
        self.ctx = 3
        self.span = [0, 0, 0, 0]

    def report(self) -> CostReport:
        return self.cost.report(self.span)

    # ------------------------------------------------------------ levels of push arrays

    def level_of(self, p: Push) -> int:
        """The level of a push array; a delayed concatenation learns it from part 0."""
        if p.level is not None:
            return p.level
        if isinstance(p, (MapPush, ZipWithPush)):
            p.level = self.level_of(p.inner)
            return p.level
        if isinstance(p, SeqConcatPush):
            return self._probe_steps(p)
        return self._probe(p)

    def _probe_steps(self, p: SeqConcatPush) -> int:
        """Evaluate step 0 of a seqConcat here to learn its parts' level (the result's);
        keep the step for the run that follows.  With no steps: this location's level."""
        if p.steps == 0:
            p.level = self.loc
            return p.level
        p.pending = self._seq_step(p, p.state, 0)
        p.level = self.level_of(p.pending[1])
        return p.level

    def _seq_step(self, p: SeqConcatPush, state, i: int) -> tuple:
        r = p.f(state)(i)
        if type(r) is not tuple or not isinstance(r[1], Push):
            raise EvalError(f"seqConcat: step {i} returned {describe(r)}, not a pair "
                            "(next state, push array)", p.span)
        if r[1].length != p.part:
            raise EvalError(f"seqConcat: step {i} returned an array of length {r[1].length}, "
                            f"but every part must have length {p.part}", p.span)
        return r

    def _probe(self, p: ConcatDelay) -> int:
        """Evaluate part 0 on the first sub-location to learn the parts' level
        (the level is 1 + theirs); keep the part for the force that follows."""
        if p.parts.n == 0:
            p.level = max(self.loc, 1)
            return p.level
        saved = (self.loc, self.ctx, self.span)
        acc = [0, 0, 0, 0]
        self.loc = self.ctx = max(self.loc - 1, 0)
        self.span = acc
        try:
            part = p.parts.get(0)
            if not isinstance(part, Push):
                raise EvalError(f"{_kind(p)}: the parts must be push arrays, got {describe(part)}",
                                p.span)
            level = self.level_of(part) + 1
        finally:
            self.loc, self.ctx, self.span = saved
        if level > 3:
            raise EvalError(f"{_kind(p)} of grid-level parts: there is no level above grid", p.span)
        p.level = level
        p.pending = (part, acc)
        return level

    # ------------------------------------------------------------ force (rules 39-42)

    def force(self, p: Push, span, final: bool = False) -> Buffer:
        """force p: run p's iteration scheme here and materialise it.

        The array goes to memory by level (thread private, warp/block local,
        grid global) or, for a kernel's `final` result, to global memory.
        A force at warp/block level ends with a barrier, at grid level with a
        kernel boundary (none after the final result)."""
        level = self.level_of(p)
        if level > self.loc:
            if not 1 <= level <= self.ctx or level > 2:
                raise EvalError(
                    f"cannot force a {_lname(level)}-level array inside a {_lname(self.loc)}-level "
                    f"computation (a {_lname(self.loc)} location has no {_lname(level)} to run it)", span)
            # inside the per-element work of a block-level array: the element's block
            # (or warp) computes the array together, then the element goes on with it
            saved = self.loc
            self.loc = level
            try:
                return self.force(p, span, final)
            finally:
                self.loc = saved
        n = p.length
        space = GLOBAL if final else SPACE_OF_LEVEL[level]
        out = [None] * n
        counter = self.cost.writes[space]

        def sink(i, v):
            out[i] = v
            counter[self.ctx] += 1

        self.run_at(p, sink)
        if n and None in out:
            first = out.index(None)
            raise EvalError(f"position {first} of the forced array is never written", span)
        self.cost.forces[level] += 1
        if not final and level > 0:
            self.cost.barriers[level] += 1
        scalar = not n or not isinstance(out[0], (Pull, tuple))
        return Buffer(out, space, self, count_reads=scalar)

    def run_at(self, p: Push, sink) -> None:
        """Run push array p's scheme on a location of its own level; sink(i, v) writes."""
        level = self.level_of(p)
        if level > self.loc:
            raise EvalError(f"a part of level {_lname(level)} cannot run on a "
                            f"{_lname(self.loc)} location", getattr(p, "span", None))
        saved = self.loc
        self.loc = level
        try:
            if type(p) is PushOf:
                self._run_push_of(p, sink)
            elif type(p) is MapPush:
                f = p.f
                self.run_at(p.inner, lambda i, v: sink(i, f(v)))
            elif type(p) is ZipWithPush:
                f, get, n = p.f, p.pull.get, p.length

                def zsink(i, v):
                    if i < n:
                        sink(i, f(get(i))(v))
                self.run_at(p.inner, zsink)
            elif type(p) is ConcatDelay:
                self._run_parts(p, sink, self._concat_writer(p, sink))
            elif type(p) is SeqForPush:
                self._run_seqfor(p, sink)
            elif type(p) is SeqConcatPush:
                self._run_seq_concat(p, sink)
            else:
                self._run_interleave(p, sink)
        finally:
            self.loc = saved

    def _run_push_of(self, p: PushOf, sink) -> None:
        """Rules 40 (thread: sequential) and 41 (group: one parallel step)."""
        level, n, get = p.level, p.pull.n, p.pull.get
        self.cost.work[level] += n
        saved_ctx, saved_span = self.ctx, self.span
        self.ctx = level
        try:
            if level == 0:
                acc = saved_span
                for i in range(n):
                    acc[0] += 1
                    sink(i, get(i))
            else:
                self.loc = 0
                threads = self.threads[level]
                slots = {}
                for i in range(n):
                    acc = slots.get(i % threads)
                    if acc is None:
                        acc = slots[i % threads] = [0, 0, 0, 0]
                    acc[level] += 1
                    self.span = acc
                    sink(i, get(i))
                _add_max(saved_span, slots)
        finally:
            self.ctx, self.span = saved_ctx, saved_span

    def _run_seqfor(self, p: SeqForPush, sink) -> None:
        """seqfor n s f: one thread, one element after another, the state carried along."""
        state, f = p.state, p.f
        self.cost.work[0] += p.length
        for i in range(p.length):
            r = f(state)(i)
            if type(r) is not tuple:
                raise EvalError(f"seqfor: the step returned {describe(r)}, not a pair "
                                "(next state, element)", p.span)
            state, v = r
            self.span[0] += 1
            sink(i, v)

    def _run_seq_concat(self, p: SeqConcatPush, sink) -> None:
        """seqConcat m n s f: the steps one after another on this location, each step's
        part run here and written at i*m + j, the state carried along."""
        state, m = p.state, p.part
        pending, p.pending = p.pending, None
        for i in range(p.steps):
            if i == 0 and pending is not None:
                r = pending
            else:
                r = self._seq_step(p, state, i)
            state, part = r
            if self.level_of(part) != p.level:
                raise EvalError(f"seqConcat: step {i} returned a {_lname(self.level_of(part))}-level "
                                f"array, step 0 a {_lname(p.level)}-level one", p.span)
            self.run_at(part, lambda j, v, o=i * m: sink(o + j, v))

    def _run_parts(self, p: ConcatDelay, sink, writer_for) -> None:
        """Rule 42: part i is evaluated and forced on sub-location i mod subs[L]."""
        level = self.loc
        sub = level - 1
        k = self.subs[level]
        pending, p.pending = p.pending, None
        saved_ctx, saved_span = self.ctx, self.span
        slots = {}
        try:
            for i in range(p.parts.n):
                acc = slots.get(i % k)
                if acc is None:
                    acc = slots[i % k] = [0, 0, 0, 0]
                self.span = acc
                self.loc = self.ctx = sub
                if i == 0 and pending is not None:
                    part, probe_acc = pending
                    for lv in range(4):
                        acc[lv] += probe_acc[lv]
                else:
                    part = p.parts.get(i)
                if not isinstance(part, Push):
                    raise EvalError(f"{_kind(p)}: part {i} is {describe(part)}, not a push array",
                                    p.span)
                self.run_at(part, writer_for(i, part))
        finally:
            self.loc = level
            self.ctx, self.span = saved_ctx, saved_span
        _add_max(saved_span, slots)

    def _concat_writer(self, p: ConcatDelay, sink):
        chunk = p.chunk

        def writer_for(i, part):
            if part.length != chunk:
                self._concat_mismatch(p, i, part.length)
            base = i * chunk
            return lambda j, v: sink(base + j, v)
        return writer_for

    def _concat_mismatch(self, p: ConcatDelay, i: int, m: int):
        n = p.chunk
        if m < n:
            raise EvalError(f"concat: part {i} has {m} elements but the part length is {n}, so "
                            f"positions {i * n + m}..{i * n + n - 1} are never written", p.span)
        pos = i * n + n
        if pos >= p.length:
            raise EvalError(f"concat: part {i} has {m} elements but the part length is {n}; "
                            f"position {pos} is outside the result (length {p.length})", p.span)
        raise EvalError(f"concat: part {i} has {m} elements but the part length is {n}, so "
                        f"position {pos} is written twice (by parts {i} and {i + 1})", p.span)

    def _run_interleave(self, p: InterleaveDelay, sink) -> None:
        f, chunk, total = p.f, p.chunk, p.length
        owner = [-1] * total

        def writer_for(i, part):
            if part.length > chunk:
                raise EvalError(f"interleave: part {i} has {part.length} elements, more than "
                                f"the part length {chunk}", p.span)

            def write(j, v):
                pos = f((i, j))
                if type(pos) is not int:
                    raise EvalError(f"interleave: the position function returned {describe(pos)}",
                                    p.span)
                if not 0 <= pos < total:
                    raise EvalError(f"interleave: part {i}, element {j} goes to position {pos}, "
                                    f"outside the result (length {total})", p.span)
                if owner[pos] >= 0:
                    raise EvalError(f"interleave is not injective: position {pos} is written "
                                    f"twice (write conflict between part {owner[pos]} and part {i})",
                                    p.span)
                owner[pos] = i
                sink(pos, v)
            return write

        self._run_parts(p, sink, writer_for)
        if total and -1 in owner:
            holes = [q for q, o in enumerate(owner) if o < 0]
            more = f" and {len(holes) - 5} more" if len(holes) > 5 else ""
            raise EvalError(f"interleave leaves holes: positions {', '.join(map(str, holes[:5]))}"
                            f"{more} are never written", p.span)

    # ------------------------------------------------------------ loops

    def run_while(self, cond, step, init: Push, span) -> Buffer:
        """while cond step init: force init, then force (step a) while cond a holds.

        One memory area (a ping-pong pair) serves every iteration, so the step
        must never return a longer array than it was given.  The step is a pure
        function of the array, so a step that gives back the same array while
        the condition holds would loop for ever: that is reported as an error."""
        buf = self.force(init, span)
        level = self.level_of(init)
        while True:
            c = cond(buf)
            if type(c) is not bool:
                raise EvalError(f"while: the condition returned {describe(c)}, not a bool", span)
            if not c:
                return buf
            nxt = step(buf)
            if not isinstance(nxt, Push):
                raise EvalError(f"while: the step function returned {describe(nxt)}, "
                                "not a push array", span)
            if nxt.length > buf.n:
                raise EvalError(f"while: the step returned an array of length {nxt.length}, longer "
                                f"than its input ({buf.n}): arrays never grow in while", span)
            new = self.force(nxt, span)
            self.cost.while_iterations[level] += 1
            if new.data == buf.data:
                raise EvalError("while never terminates: the step returned the same array "
                                f"(length {new.n}) and the condition still holds", span)
            buf = new

    def run_power(self, n: int, step, init: Push, span) -> Buffer:
        """power n step init: force init, then force (step i a) for i = 0 .. n-1
        (no step when n <= 0).  Like while, arrays never grow."""
        buf = self.force(init, span)
        level = self.level_of(init)
        for i in range(n):
            nxt = step(i)(buf)
            if not isinstance(nxt, Push):
                raise EvalError(f"power: the step function returned {describe(nxt)}, "
                                "not a push array", span)
            if nxt.length > buf.n:
                raise EvalError(f"power: step {i} returned an array of length {nxt.length}, longer "
                                f"than its input ({buf.n}): arrays never grow in power", span)
            buf = self.force(nxt, span)
            self.cost.while_iterations[level] += 1
        return buf

    def run_foldl(self, f, acc, a: Pull, span):
        """foldl f acc a: a sequential loop in one thread (work and span at thread level)."""
        get = a.get
        for i in range(a.n):
            acc = f(acc)(get(i))
        self.cost.work[0] += a.n
        self.span[0] += a.n
        return acc


def _kind(p: ConcatDelay) -> str:
    return "interleave" if isinstance(p, InterleaveDelay) else "concat"


def _add_max(acc: list[int], slots: dict) -> None:
    """Add the slowest sub-location's span (by total steps) into acc."""
    if slots:
        best = max(slots.values(), key=sum)
        for lv in range(4):
            acc[lv] += best[lv]


# ================================================================ compiling expressions

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
            if lv.name not in _LEVEL_DEPTH:
                raise EvalError(f"unknown level {lv.name}", lv.span)
            d = _LEVEL_DEPTH[lv.name]
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


_CMP_FAST = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
             "==": operator.eq, "!=": operator.ne}


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


# ================================================================ the public evaluator

class _Cell:
    """A declaration, compiled and evaluated on first use (once)."""

    __slots__ = ("decl", "index", "value", "busy")

    def __init__(self, decl: ast.Val, index: int):
        self.decl = decl
        self.index = index
        self.value = _UNSET
        self.busy = False


class Evaluator:
    """The reference evaluator of FCL programs.

    ``Evaluator(decls, hw)``: `decls` are the prelude's then the program's
    declarations (includes expanded; `Sig`s are ignored); a declaration sees
    the earlier ones only, and later ones shadow earlier ones.  `hw` overrides
    #BlockSize (256), #WarpSize (32), #NumGroups (4096).

    ``run(name, args, cost=False) -> (result, CostReport | None)`` applies a
    declaration to Python arguments (see values.from_python / to_python).
    """

    def __init__(self, decls, hw: dict[str, int] | None = None):
        self.machine = Machine(hw)
        self._cells: list[_Cell] = []
        self._by_name: dict[str, list[int]] = {}
        self.add_decls(decls)

    @property
    def hw(self) -> dict[str, int]:
        return dict(self.machine.hw)

    def names(self) -> list[str]:
        """The visible declaration names (for completion)."""
        return sorted(self._by_name)

    def add_decls(self, decls) -> None:
        """Append declarations (REPL); they shadow earlier ones of the same name."""
        if isinstance(decls, ast.Program):
            decls = decls.decls
        for d in decls:
            if isinstance(d, ast.Val):
                cell = _Cell(d, len(self._cells))
                self._cells.append(cell)
                self._by_name.setdefault(d.name, []).append(cell.index)
            elif isinstance(d, ast.Include):
                raise EvalError(f"include \"{d.path}\" was not expanded before evaluation", d.span)

    # ------------------------------------------------------------ globals

    def _lookup(self, limit: int):
        """Global lookup for code that sees declarations with index < limit."""
        def lookup(name: str):
            indices = self._by_name.get(name)
            if not indices:
                return None
            visible = [i for i in indices if i < limit]
            if not visible:
                return None
            cell = self._cells[visible[-1]]
            return lambda: cell.value if cell.value is not _UNSET else self._force_cell(cell)
        return lookup

    def _force_cell(self, cell: _Cell):
        if cell.busy:
            raise EvalError(f"'{cell.decl.name}' refers to itself", cell.decl.span)
        cell.busy = True
        m = self.machine
        saved = (m.loc, m.ctx, m.span)
        m.loc = m.ctx = 3
        m.span = [0, 0, 0, 0]
        try:
            code = Compiler(m, self._lookup(cell.index)).compile(cell.decl.value, ())
            cell.value = code(None)
        finally:
            m.loc, m.ctx, m.span = saved
            cell.busy = False
        return cell.value

    # ------------------------------------------------------------ running

    def run(self, name: str, args: list, cost: bool = False):
        """Apply declaration `name` to `args`; return (result, CostReport or None)."""
        indices = self._by_name.get(name)
        if not indices:
            raise ArgumentError(f"no declaration named '{name}'")
        cell = self._cells[indices[-1]]
        span = cell.decl.name_span if cell.decl.name_span is not NO_SPAN else cell.decl.span

        def go():
            f = self._force_cell(cell) if cell.value is _UNSET else cell.value
            if isinstance(f, LevelFn):
                raise ArgumentError(f"'{name}' takes a level first (it is level-polymorphic); "
                                    "an entry point must have a fixed level", span)
            v = f
            for k, arg in enumerate(args):
                if not callable(v):
                    raise ArgumentError(f"'{name}' takes {k} argument{'s' * (k != 1)} but "
                                        f"{len(args)} were given", span)
                v = v(from_python(arg, self.machine, f"argument {k + 1} of '{name}'"))
            if is_function(v):
                raise ArgumentError(f"'{name}' needs more than the {len(args)} argument"
                                    f"{'s' * (len(args) != 1)} given (its result is a function)",
                                    span)
            return to_python(v, self.machine, span)
        return self._guarded(go, cost)

    def eval_expr(self, expr: ast.Expr, cost: bool = False):
        """Evaluate an expression that sees every declaration (REPL); (result, report)."""
        def go():
            code = Compiler(self.machine, self._lookup(len(self._cells))).compile(expr, ())
            return to_python(code(None), self.machine, getattr(expr, "span", None))
        return self._guarded(go, cost)

    def _guarded(self, go, cost: bool):
        m = self.machine
        m.reset()
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 20000))
        try:
            with np.errstate(all="ignore"):
                result = go()
        except FCLError:
            raise
        except RecursionError:
            raise EvalError("evaluation nested too deeply (more than the Python recursion "
                            "limit allows)") from None
        except Exception as exc:   # an ill-typed program reaching Python's own checks
            raise EvalError(f"evaluation failed: {type(exc).__name__}: {exc} (is the program "
                            "well typed?)") from exc
        finally:
            sys.setrecursionlimit(limit)
        return result, (m.report() if cost else None)


# ================================================================ conveniences


def evaluator_for_source(text: str, name: str = "<input>", hw: dict[str, int] | None = None,
                         prelude: bool = True) -> Evaluator:
    """Program text -> an Evaluator over the prelude (unless prelude=False) and the program.
    No type checking is done here; includes are not allowed (use evaluator_for_file)."""
    from fcl.syntax import parse_program

    decls = parse_program(text, name).decls
    return Evaluator((prelude_decls() if prelude else ()) + tuple(decls), hw)


def evaluator_for_file(path: str, hw: dict[str, int] | None = None,
                       prelude: bool = True) -> Evaluator:
    """A .fcl file (includes expanded) -> an Evaluator over the prelude and its declarations."""
    from fcl.syntax import load_program

    decls = load_program(str(path)).decls
    return Evaluator((prelude_decls() if prelude else ()) + tuple(decls), hw)
