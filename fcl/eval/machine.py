"""The environment machine of the reference evaluator: the state and the force rules
of paper section 5.2, with explicit locations and cost counters.

`Machine` runs iteration schemes: push arrays (values.py) run only when they
are forced, here, while pull arrays stay lazy (a length and an index function).
Expressions reach it through the primitives (primitives.py) that their closures
(closures.py) call; evaluator.py starts a run and reads the counters.

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

from fcl.base.errors import ArgumentError, EvalError
from fcl.base.hw import DEFAULT_HW, LEVEL_KEYWORDS
from fcl.eval.cost import CostReport, Counters, GLOBAL, SPACE_OF_LEVEL
from fcl.eval.values import (Buffer, ConcatDelay, InterleaveDelay, MapPush, PackConcatDelay, PackThreadsDelay, Pull,
                             Push, PushOf, ScanConcatDelay, SeqConcatPush, SeqFilterPush, SeqForPush, ZipWithPush,
                             describe)


def _lname(level: int) -> str:
    """A level's name (0 thread .. 3 grid)."""
    return LEVEL_KEYWORDS[level]


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
            elif type(p) is PackConcatDelay:
                self._run_parts(p, sink, lambda i, part, o=p.offsets: lambda j, v, b=o[i]: sink(b + j, v))
            elif type(p) is ScanConcatDelay:
                self._run_parts(p, sink, self._concat_writer(p, sink))
                p.chain.finished()
            elif type(p) is SeqForPush:
                self._run_seqfor(p, sink)
            elif type(p) is SeqFilterPush:
                self._run_seq_filter(p, sink)
            elif type(p) is PackThreadsDelay:
                self._run_thread_parts(p, sink)
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

    def _run_seq_filter(self, p: SeqFilterPush, sink) -> None:
        """seqFilter p xs: one thread tests every element of xs, in order, and writes the kept
        ones one after another."""
        self.cost.work[0] += p.scanned
        self.span[0] += p.scanned
        for j, v in enumerate(p.items):
            sink(j, v)

    def _run_thread_parts(self, p: PackThreadsDelay, sink) -> None:
        """packThreads m n f: part t on thread t mod the block's threads, its elements from
        offsets[t] on."""
        threads = self.threads[2]
        saved_ctx, saved_span = self.ctx, self.span
        slots = {}
        try:
            for t, (part, start) in enumerate(zip(p.parts, p.offsets)):
                acc = slots.get(t % threads)
                if acc is None:
                    acc = slots[t % threads] = [0, 0, 0, 0]
                self.span = acc
                self.loc = self.ctx = 0
                self.run_at(part, lambda j, v, o=start: sink(o + j, v))
        finally:
            self.loc = 2
            self.ctx, self.span = saved_ctx, saved_span
        _add_max(saved_span, slots)

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
        n, name = p.chunk, _kind(p)
        if m < n:
            raise EvalError(f"{name}: part {i} has {m} elements but the part length is {n}, so "
                            f"positions {i * n + m}..{i * n + n - 1} are never written", p.span)
        pos = i * n + n
        if pos >= p.length:
            raise EvalError(f"{name}: part {i} has {m} elements but the part length is {n}; "
                            f"position {pos} is outside the result (length {p.length})", p.span)
        raise EvalError(f"{name}: part {i} has {m} elements but the part length is {n}, so "
                        f"position {pos} is written twice (by parts {i} and {i + 1})", p.span)

    def _run_interleave(self, p: InterleaveDelay, sink) -> None:
        """interleave (positions from p.f) and placeConcat (from the elements' firsts)."""
        f, chunk, total, name = p.f, p.chunk, p.length, _kind(p)
        owner = [-1] * total
        short = []

        def writer_for(i, part):
            if part.length < chunk:
                short.append((i, part.length))
            if part.length > chunk:
                raise EvalError(f"{name}: part {i} has {part.length} elements, more than "
                                f"the part length {chunk}", p.span)

            def write(j, v):
                if f is None:
                    pos, v = v
                else:
                    pos = f((i, j))
                    if type(pos) is not int:
                        raise EvalError(f"interleave: the position function returned {describe(pos)}",
                                        p.span)
                if not 0 <= pos < total:
                    raise EvalError(f"{name}: part {i}, element {j} goes to position {pos}, "
                                    f"outside the result (length {total})", p.span)
                if owner[pos] >= 0:
                    raise EvalError(f"{name} is not injective: position {pos} is written "
                                    f"twice (write conflict between part {owner[pos]} and part {i})",
                                    p.span)
                owner[pos] = i
                sink(pos, v)
            return write

        self._run_parts(p, sink, writer_for)
        if total and -1 in owner:
            holes = [q for q, o in enumerate(owner) if o < 0]
            more = f" and {len(holes) - 5} more" if len(holes) > 5 else ""
            why = (f" (part {short[0][0]} has {short[0][1]} elements, fewer than the part length {chunk})"
                   if short else "")
            raise EvalError(f"{name} leaves holes: positions {', '.join(map(str, holes[:5]))}"
                            f"{more} are never written{why}", p.span)

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
            new = self._loop_step("while", "the step", step(buf), buf, level, span)
            if new.data == buf.data:
                raise EvalError("while never terminates: the step returned the same array "
                                f"(length {new.n}) and the condition still holds", span)
            buf = new

    def run_power(self, n: int, step, init: Push, span, name: str = "power") -> Buffer:
        """power n step init: force init, then force (step i a) for i = 0 .. n-1
        (no step when n <= 0).  Like while, arrays never grow.  `name`: the primitive
        (`powerDoubleBuffered` means the same), for messages."""
        buf = self.force(init, span)
        level = self.level_of(init)
        for i in range(n):
            buf = self._loop_step(name, f"step {i}", step(i)(buf), buf, level, span)
        return buf

    def _loop_step(self, construct: str, which: str, nxt, buf: Buffer, level: int, span) -> Buffer:
        """One step of a `while` or `power` (`construct`): `nxt`, what the step (`which`: "the
        step", "step 3") returned for `buf`, must be a push array no longer than `buf`; it is
        forced, and the iteration counted at the loop's level."""
        if not isinstance(nxt, Push):
            raise EvalError(f"{construct}: the step function returned {describe(nxt)}, "
                            "not a push array", span)
        if nxt.length > buf.n:
            raise EvalError(f"{construct}: {which} returned an array of length {nxt.length}, longer "
                            f"than its input ({buf.n}): arrays never grow in {construct}", span)
        new = self.force(nxt, span)
        self.cost.while_iterations[level] += 1
        return new

    def run_reduce_by_index(self, bins: int, op, ne, idx: Pull, vals: Pull, span) -> Buffer:
        """reduceByIndex bins op ne idx vals: bin b starts at ne and combines, in index order,
        every vals[i] whose idx[i] is b (op (bin) (vals[i])); an index outside [0, bins) is
        dropped.  A grid-level operation: the bins are set in one kernel and combined into
        in the next (two kernel boundaries), each element read once and each kept one written."""
        if self.loc < 3:
            raise EvalError(f"reduceByIndex combines over the whole grid; it cannot run inside a "
                            f"{_lname(self.loc)}-level computation", span)
        if idx.n != vals.n:
            raise EvalError(f"reduceByIndex: {idx.n} indices but {vals.n} values", span)
        out = [ne] * bins
        get_i, get_v = idx.get, vals.get
        kept = 0
        for i in range(idx.n):
            b, v = get_i(i), get_v(i)
            if type(b) is not int:
                raise EvalError(f"reduceByIndex: the index of element {i} is {describe(b)}, not an int", span)
            if 0 <= b < bins:
                out[b] = op(out[b])(v)
                kept += 1
        self.cost.work[3] += idx.n + bins
        self.cost.writes[GLOBAL][self.ctx] += bins + kept
        self.cost.forces[3] += 1
        self.cost.barriers[3] += 2
        self.span[3] += 2
        return Buffer(out, GLOBAL, self)

    def run_scatter(self, dest: Pull, idx: Pull, vals: Pull, span) -> Buffer:
        """scatter dest idx vals: a copy of dest with element idx[i] replaced by vals[i] (an index
        outside dest dropped; one written twice is an error).  Grid level: the copy in one
        kernel, the writes in the next."""
        if self.loc < 3:
            raise EvalError(f"scatter writes over the whole grid; it cannot run inside a "
                            f"{_lname(self.loc)}-level computation", span)
        if idx.n != vals.n:
            raise EvalError(f"scatter: {idx.n} indices but {vals.n} values", span)
        get = dest.get
        out = [get(i) for i in range(dest.n)]
        owner: dict[int, int] = {}
        get_i, get_v = idx.get, vals.get
        for i in range(idx.n):
            p = get_i(i)
            if type(p) is not int:
                raise EvalError(f"scatter: the index of element {i} is {describe(p)}, not an int", span)
            if 0 <= p < dest.n:
                if p in owner:
                    raise EvalError(f"scatter: position {p} is written twice (by elements {owner[p]} "
                                    f"and {i})", span)
                owner[p] = i
                out[p] = get_v(i)
        self.cost.work[3] += dest.n + idx.n
        self.cost.writes[GLOBAL][self.ctx] += dest.n + len(owner)
        self.cost.forces[3] += 1
        self.cost.barriers[3] += 2
        self.span[3] += 2
        return Buffer(out, GLOBAL, self)

    def run_foldl(self, f, acc, a: Pull, span):
        """foldl f acc a: a sequential loop in one thread (work and span at thread level)."""
        get = a.get
        for i in range(a.n):
            acc = f(acc)(get(i))
        self.cost.work[0] += a.n
        self.span[0] += a.n
        return acc


def _kind(p: ConcatDelay) -> str:
    """The primitive that made a delayed concatenation, for messages."""
    return (("interleave" if p.f is not None else "placeConcat") if isinstance(p, InterleaveDelay) else
            "scanConcat" if isinstance(p, ScanConcatDelay) else
            "packConcat" if isinstance(p, PackConcatDelay) else "concat")


def _add_max(acc: list[int], slots: dict) -> None:
    """Add the slowest sub-location's span (by total steps) into acc."""
    if slots:
        best = max(slots.values(), key=sum)
        for lv in range(4):
            acc[lv] += best[lv]
