"""`scanConcat m n op ne f`: the parts of a grid-level concatenation, each exchanging a
value for the combination of those its predecessors gave, in one kernel (a single-pass
scan with decoupled look-back: Merrill and Garland, 2016); `packConcat m n f`, parts of
varying lengths one after another, each placed by the scanConcat of their lengths.

The evaluator runs the parts in order of g: part g's `prefix x` gives the fold of `op`
from `ne` over the values the parts before it gave, and x becomes part g's.  On the
device the parts run at once, so:

* a work-group takes the part it computes from a ticket counter (an atomic add), not from
  its group id: tickets go out in the order work-groups start, so a part waits only on
  parts whose work-groups have started, whatever order and however few at a time the
  device runs work-groups (PoCL and Intel's CPU runtime run one per thread to its end);
* `prefix x` publishes x at once as the part's aggregate (flag 1), or as its inclusive
  prefix (flag 2) where op y x = x for any y (`_absorbing`: a segmented scan's part that
  holds a flag; on an H200 a segmented scan of 2^26 ints took 0.217 ms so against 0.234,
  its parts looking back no further than such a part; and there work-item 0 first reads
  the nearest part's status alone, which, where it is inclusive, is the combination, and
  no window is read: 0.192 ms against 0.207 with a flag in 64 elements, 0.207 either way
  with a flag in 10^5), then the first
  `WINDOW` work-items look back over the status of the WINDOW parts before it together,
  each spinning until its part has published (before part 0 stands an inclusive prefix,
  ne); work-item 0 folds the window forwards from the nearest inclusive prefix (flag 2):
  op (op P a1) a2 ..., the evaluator's order, so floats agree exactly; where the window
  holds none, all of it, and the window moves back (what the windows after it gave is
  combined after it: the same value by op's associativity, floats within rounding).  It
  hands the fold and whether it is done to the others through local memory (on an H200,
  at 2^26 ints, the scan's pass took 0.151 ms so against 0.158 with every work-item folding
  the window itself; a segmented scan 0.207 against 0.216); then work-item 0 publishes
  the part's inclusive prefix (flag 2), and every work-item has the exclusive one;
* a status is a 64-bit word for each int of the value (an int, a bool, a float's bits, a
  double's two halves): the flag in its high half, the int in its low half, written
  (`atom_xchg`) and read (`atom_add` of 0) whole, so a flag and its int are seen together
  and no memory fence is needed (NVIDIA's OpenCL makes `mem_fence` a fence of the
  work-group only); a value of several ints is read again until every word holds the same
  flag (each is written once with the aggregate, then once with the inclusive prefix).
  Nothing else passes between work-groups, and Oclgrind sees no race;
* a kernel launched before zeroes the status words and the counter (`_Status.zero`).

A `packConcat`'s parts exchange their lengths, ints added in any order: its look-back
(`_look_back_sum`) finds the window's nearest inclusive prefix with a local atomic_min and
adds the lengths back to it with local atomic_adds, as the hand-written compaction does,
instead of every work-item folding the window one part after another (on an H200, a filter
of 2^26 ints in 0.214 ms instead of 0.224, with the kernel's run-time checks).

`prefix` must run once in every part, by the whole block, at the part's top (not in a
branch, a loop or per-element work): its barriers must be uniform and the parts after it
wait for it.  Elsewhere it is a located refusal; where the evaluator would call it twice,
or never, a located compile error.
"""
from __future__ import annotations

from fcl.base.errors import CompileError, CompilerBug, FCLError
from fcl.base.hw import Level
from fcl.codegen import kir as K
from fcl.codegen.lower.builder import Ctx, origin_of
from fcl.codegen.lower.schemes import check_count, fail_unless, host_length, parts_scheme
from fcl.codegen.lower.values import SFun, SPull, SPush, SScalar, SVal, apply, apply2, build, scalar_leaves, shape_of

WINDOW = 32             # predecessors looked at together (a warp's worth)
AGGREGATE, INCLUSIVE = 1, 2


def scan_concat(ctx: Ctx, m: SScalar, count: SScalar, op: SVal, ne: SVal, f: SVal, level: int) -> SPush:
    """`scanConcat m n op ne f`: n parts of m elements, part g = f g prefix (a grid-level push array)."""
    span = ctx.b.span
    if level != Level.GRID:
        raise CompilerBug("scanConcat typed at a level other than grid")

    def run(c: Ctx, w):
        b = c.b
        n = host_length(c, count.e, "the parts of this scanConcat")
        status = _Status(c, ne, n, span)
        status.zero(b)
        state = {"calls": 0}

        def at(body: Ctx, p: K.Expr) -> SVal:
            g = _take_ticket(body, status, n)
            state["g"] = g
            prefix = SFun(lambda c2, x: _prefix(c2, body, x, g, status, op, state), "prefix")
            return apply2(body, f, SScalar(g), prefix)

        def place(c2, p, j, count, v):
            return K.add(K.mul(state["g"], m.e), j), K.Const("bool", True), (), None

        def fits(c2, p, size, count, active):
            return fail_unless(c2, K.binop("eq", size, m.e), "scanConcat", (state["g"], size, m.e, count), span,
                               active)
        parts_scheme(Level.GRID, m.e, SPull(n, at), place, fits, span).run(c, w)
        if state["calls"] == 0 and not b.dry:
            raise CompileError("this scanConcat's part never calls its prefix function; every part must "
                               "give its value once (the parts after it wait for it)", span)
    check_count(ctx, m.e, "scanConcat", "the part length")
    check_count(ctx, count.e, "scanConcat", "the number of parts")
    return SPush(level, K.mul(m.e, count.e), run, span)


def pack_concat(ctx: Ctx, m: SScalar, count: SScalar, f: SVal, level: int) -> SPush:
    """`packConcat m n f`: the block-level parts f 0 .. f (n-1), each at most m elements, one
    after another: a scanConcat of the parts' lengths gives each its start.  Its length is the
    last part's inclusive prefix, read from its status word once the kernel has run; the
    array is stored in room for n * m elements (`SPush.bound`)."""
    span = ctx.b.span
    b = ctx.b
    if level != Level.GRID:
        raise CompilerBug("packConcat typed at a level other than grid")
    check_count(ctx, m.e, "packConcat", "the part length")
    check_count(ctx, count.e, "packConcat", "the number of parts")
    n = host_length(ctx, count.e, "the parts of this packConcat")
    status = _Status(ctx, SScalar(K.cint(0)), n, span, "packConcat")
    b.unwritten |= set(status.slots)
    last = K.call("lo_word", (K.Load("long", status.slots[0], K.sub(n, K.cint(1))),), "int")
    total = K.select(K.binop("gt", n, K.cint(0)), last, K.cint(0))
    add = SFun(lambda c, x: SFun(lambda c2, y: SScalar(K.add(x.e, y.e)), "+"), "+")

    def run(c: Ctx, w):
        state = {"calls": 0}
        status.zero(b)

        def at(body: Ctx, p: K.Expr) -> SVal:
            window = _sum_window(body, status)      # (set before the ticket's barrier)
            g = _take_ticket(body, status, n)
            part = apply(body, f, SScalar(g))
            if not isinstance(part, SPush) or part.level != Level.BLOCK:
                raise CompilerBug("packConcat of parts at the wrong level")
            state["g"] = g
            state["offset"] = _prefix(body, body, SScalar(part.n), g, status, add, state, summed=window).e
            return part

        def place(c2, p, j, count, v):
            return K.add(state["offset"], j), K.Const("bool", True), (), None

        def fits(c2, p, size, count, active):
            return fail_unless(c2, K.binop("le", size, m.e), "packConcat", (state["g"], size, m.e), span, active)
        def lead(c2, p):
            # (a work-group's writes from the 128-byte line below its offset: on an H200, a
            # filter of 2^26 ints took 0.139 ms so against 0.160 from the offset itself)
            return K.binop("band", state["offset"], K.cint(31)) if b.hw["#BlockSize"] >= 32 else None
        parts_scheme(Level.GRID, m.e, SPull(n, at), place, fits, span, lead=lead).run(c, w)
        b.unwritten -= set(status.slots)
    return SPush(level, total, run, span, K.mul(m.e, n))


class _Status:
    """The global buffers of one scanConcat's look-back: a status word (a long) for each int of
    the exchanged value and each part, and the ticket counter; `zero` zeroes them in a kernel
    launched before the current one (before every run of the parts)."""

    def __init__(self, ctx: Ctx, ne: SVal, n: K.Expr, span, what: str = "scanConcat"):
        b = ctx.b
        self.ne = scalar_leaves(ctx, ne, "the values scanConcat's parts exchange", span)
        self.shape = shape_of(ne)
        words = sum(_word_count(x.e.ty) for x in self.ne)
        origin = origin_of(span, what)
        # room for no parts where n is negative: the check of n reports it, not the allocation
        room = K.call("max", (n, K.cint(0)), "int")
        self.slots = [b.buffer("global", room, f"{origin}: the parts' status words", "status", prefix="status",
                               ty="long").name for _ in range(words)]
        self.ticket = b.buffer("global", K.cint(1), f"{origin}: the next part to take", "temp", prefix="ticket",
                               ty="int").name
        self.origin = origin
        self.n = n

    def zero(self, b):
        """A kernel launched before the current one that zeroes the n status words of each
        buffer and the ticket counter."""
        if b.dry:
            return
        i = b.fresh("i")
        b.kernel_before((K.ParFor(Level.GRID, i, self.n, tuple(K.Store(buf, K.Var("int", i), K.Const("long", 0))
                                                               for buf in self.slots)),
                         K.If(K.binop("eq", K.HwId("int", "global_id"), K.cint(0)),
                              (K.Store(self.ticket, K.cint(0), K.cint(0)),))))


def _take_ticket(body: Ctx, st: _Status, n: K.Expr) -> K.Expr:
    """The part this work-group computes: work-item 0 takes a ticket, the block reads it.  The
    n tickets of a launch are 0 .. n-1, one a part; said as max(min(ticket, n - 1), 0), which
    changes nothing, so that the range analysis knows it (and proves the part's indices)."""
    b = body.b
    slot = b.buffer("local", K.cint(1), f"{st.origin}: the part this work-group takes", "ticket", ty="int").name
    t = b.fresh("ticket")
    lid0 = K.binop("eq", K.HwId("int", "lid"), K.cint(0))
    body.emit(K.If(lid0, (K.Atomic("add", st.ticket, K.cint(0), K.cint(1), t),
                          K.Store(slot, K.cint(0), K.Var("int", t)))))
    body.emit(K.Barrier("the part this work-group takes"))
    g = b.fresh("g")
    ticket = K.call("min", (K.Load("int", slot, K.cint(0)), K.sub(n, K.cint(1))), "int")
    body.emit(K.Let(g, K.call("max", (ticket, K.cint(0)), "int")))
    return K.Var("int", g)


def _word_count(ty: str) -> int:
    """How many ints `_words` takes for a scalar of type ty."""
    return 2 if ty == "double" else 1


def _words(x: K.Expr) -> list[K.Expr]:
    """The ints that hold scalar x."""
    if x.ty == "int":
        return [x]
    if x.ty == "bool":
        return [K.call("b2i", (x,), "int")]
    if x.ty == "float":
        return [K.call("as_int", (x,), "int")]
    return [K.call("lo_bits", (x,), "int"), K.call("hi_bits", (x,), "int")]


def _value(ty: str, words: list[K.Expr]) -> K.Expr:
    """The scalar of type ty that `words` (taken from the front) hold."""
    if ty == "int":
        return words.pop(0)
    if ty == "bool":
        return K.binop("ne", words.pop(0), K.cint(0))
    if ty == "float":
        return K.call("as_float", (words.pop(0),), "float")
    lo, hi = words.pop(0), words.pop(0)
    return K.call("as_double", (lo, hi), "double")


def _encode(ctx: Ctx, v: SVal, what: str) -> list[K.Expr]:
    return [w for x in scalar_leaves(ctx, v, what) for w in _words(x.e)]


def _decode(st: _Status, words: list[K.Expr]) -> SVal:
    words = list(words)
    return build(st.shape, iter([SScalar(_value(x.e.ty, words)) for x in st.ne]))


def _prefix(c: Ctx, body: Ctx, x: SVal, g: K.Expr, st: _Status, op: SVal, state: dict,
            summed: tuple | None = None) -> SVal:
    """`prefix x` in part g: publish x, look back, publish the inclusive prefix; the exclusive one.
    `summed`: the values are ints combined by + (packConcat's lengths), in any order, and these
    are `_sum_window`'s buffers."""
    if c.level != Level.BLOCK or c.elem is not None or c.stmts is not body.stmts:
        raise c.limitation("scan-prefix", "a scanConcat part's prefix function must be called at the top of the "
                           "part, by the whole block: not inside a branch, a loop or per-element work",
                           ["bind its result with a `let` at the part's top: `let before = prefix x in ...`"])
    state["calls"] += 1
    if state["calls"] > 1:
        raise c.error("this scanConcat part calls its prefix function twice; each part gives its value once")
    words = [c.bind(w, "word") for w in _encode(c, x, "the value a scanConcat part gives")]
    lid0 = K.binop("eq", K.HwId("int", "lid"), K.cint(0))
    flag = K.cint(AGGREGATE)
    absorbing = None if summed else _absorbing(c, st, op)
    if absorbing is not None:       # (its word: the bool as an int)
        word = words[sum(_word_count(x0.e.ty) for x0 in st.ne[:absorbing])]
        flag = K.select(K.binop("ne", word, K.cint(0)), K.cint(INCLUSIVE), K.cint(AGGREGATE))
    c.emit(K.If(lid0, _publish(st, g, flag, words)))
    exclusive = _look_back_sum(c, g, st, summed) if summed else _look_back(c, g, st, op, absorbing is not None)
    last = c.sub()
    incl = [last.bind(w, "word") for w in _encode(last, apply2(last, op, exclusive, x),
                                                  "the values scanConcat's parts exchange")]
    c.emit(K.If(lid0, tuple(last.stmts) + _publish(st, g, K.cint(INCLUSIVE), incl)))
    return exclusive


def _publish(st: _Status, g: K.Expr, flag: K.Expr, words) -> tuple:
    """Part g's status: each word with the flag, in one 64-bit exchange."""
    return tuple(K.Atomic("xchg", slot, g, K.call("pack", (flag, w), "long"))
                 for slot, w in zip(st.slots, words))


def _absorbing(c: Ctx, st: _Status, op: SVal) -> int | None:
    """A bool of the exchanged values, by its place among their scalars, such that
    op y x = x whatever y is where x's holds (a segmented scan's flag: the pair through a part
    that holds a flag is the part's own), or None.  Found by applying op, in a probe whose code
    is thrown away, to variables y and x with that bool of x true: every scalar of the result
    must then be x's own, none of y's."""
    probe = Ctx(c.b.probe(keep_checks=False), Level.THREAD, [])
    for i, x0 in enumerate(st.ne):
        if x0.e.ty != "bool":
            continue
        ys = [K.Var(y0.e.ty, f"y{k}") for k, y0 in enumerate(st.ne)]
        xs = [K.Const("bool", True) if k == i else K.Var(y0.e.ty, f"x{k}") for k, y0 in enumerate(st.ne)]
        try:
            r = apply2(probe, op, build(st.shape, iter([SScalar(y) for y in ys])),
                       build(st.shape, iter([SScalar(x) for x in xs])))
            got = [K.map_expr(_fold_logic, v.e) for v in scalar_leaves(probe, r, "the values scanConcat's parts exchange")]
        except FCLError:
            continue
        if got == xs:
            return i
    return None


def _fold_logic(e: K.Expr) -> K.Expr:
    """`a || true`, `a && false` and the like folded (for `_absorbing`'s comparison only: a
    is not evaluated then, which its probe's variables do not mind)."""
    if isinstance(e, K.Bin) and e.op in (K.Op.AND, K.Op.OR):
        for a, b in ((e.a, e.b), (e.b, e.a)):
            if isinstance(b, K.Const):
                return b if b.value == (e.op == K.Op.OR) else a
    return e


def _look_back(c: Ctx, g: K.Expr, st: _Status, op: SVal, nearest_first: bool = False) -> SVal:
    """The combination of the values of the parts before g, in every work-item: windows of
    `WINDOW` parts, from g - 1 back, each read (`_read_window`) and folded by work-item 0
    (`_fold_window`), which hands the fold and `done` to the others in local memory (the
    words of the values, as in the status words), until one holds an inclusive prefix.
    `nearest_first` (where parts publish their inclusive prefix at once, `_absorbing`):
    work-item 0 first reads part g - 1's status alone, and where it holds an inclusive
    prefix, that is the combination, and no window is read."""
    b = c.b
    width = min(WINDOW, b.hw["#BlockSize"])
    origin = f"{st.origin}: the look-back window"
    win = _Window(b.buffer("local", K.cint(width), origin, "temp", ty="int").name,
                  [b.buffer("local", K.cint(width), origin, "temp", ty="int").name for _ in st.slots],
                  width, b.fresh("end"))
    newer = [b.fresh("before") for _ in st.ne]
    for name, x0 in zip(newer, st.ne):
        c.emit(K.DeclVar(name, x0.e))
    done, has = b.fresh("done"), b.fresh("has")
    c.emit(K.DeclVar(done, K.Const("bool", False)))
    c.emit(K.DeclVar(has, K.Const("bool", False)))
    c.emit(K.DeclVar(win.end, K.sub(g, K.cint(1))))
    lid = K.HwId("int", "lid")
    held = [w for name, x0 in zip(newer, st.ne) for w in _words(K.Var(x0.e.ty, name))] \
        + [K.call("b2i", (K.Var("bool", done),), "int")]
    shared = b.buffer("local", K.cint(len(held)), f"{origin}'s fold", "temp", ty="int").name
    got = [K.Load("int", shared, K.cint(k)) for k in range(len(held))]

    def take(ctx: Ctx) -> tuple:
        """The values handed over in local memory, into `newer`."""
        for name, x in zip(newer, scalar_leaves(ctx, _decode(st, got[:-1]), "the values scanConcat's parts exchange")):
            ctx.emit(K.Assign(name, x.e))
        return tuple(ctx.stmts)
    if nearest_first:
        flag, vals, stmts = _read_part(b, st, K.sub(g, K.cint(1)))
        inclusive = K.call("b2i", (K.binop("eq", K.Var("int", flag), K.cint(INCLUSIVE)),), "int")
        c.emit(K.If(K.binop("eq", lid, K.cint(0)),
                    stmts + tuple(K.Store(shared, K.cint(k), K.Var("int", v)) for k, v in enumerate(vals))
                    + (K.Store(shared, K.cint(len(held) - 1), inclusive),)))
        c.emit(K.Barrier("the nearest part's status is read"))
        # (the window's fold overwrites these words only after the barrier of its first read)
        c.emit(K.If(K.binop("ne", got[-1], K.cint(0)),
                    take(c.sub()) + (K.Assign(done, K.Const("bool", True)), K.Assign(has, K.Const("bool", True)))))
    c.emit(K.Loop((), K.unop("not", K.Var("bool", done)),
                  (K.If(K.lt(lid, K.cint(width)), _read_window(b, st, win)), K.Barrier("the look-back window is read"),
                   K.If(K.binop("eq", lid, K.cint(0)), _fold_window(c, st, win, op, newer, done, has)
                        + tuple(K.Store(shared, K.cint(k), w) for k, w in enumerate(held))),
                   K.Barrier("the look-back window is combined"))
                  + take(c.sub())
                  + (K.Assign(done, K.binop("ne", got[-1], K.cint(0))),
                     K.Assign(win.end, K.sub(K.Var("int", win.end), K.cint(width))))))
    return _values(st, newer)


def _sum_window(c: Ctx, st: _Status) -> tuple[str, str]:
    """`_look_back_sum`'s local words, the nearest inclusive prefix in the window (none yet:
    the window's width) and the sum so far (0), set by work-item 0 at the part's top."""
    b = c.b
    origin = f"{st.origin}: the look-back"
    nearest = b.buffer("local", K.cint(1), f"{origin}'s nearest inclusive prefix", "temp", ty="int").name
    total = b.buffer("local", K.cint(1), f"{origin}'s sum", "temp", ty="int").name
    width = min(WINDOW, b.hw["#BlockSize"])
    c.emit(K.If(K.binop("eq", K.HwId("int", "lid"), K.cint(0)), (K.Store(nearest, K.cint(0), K.cint(width)),
                                                                 K.Store(total, K.cint(0), K.cint(0)))))
    return nearest, total


def _look_back_sum(c: Ctx, g: K.Expr, st: _Status, window: tuple[str, str]) -> SVal:
    """`_look_back` for ints combined by + in any order (packConcat's lengths), as the hand-
    written compaction does it: work-item l (< WINDOW) reads the status of part end - l; the
    nearest inclusive prefix in the window is found with a local atomic_min and the values
    from the nearest part back to it added with local atomic_adds, not folded one by one by
    every work-item; where the window holds no inclusive prefix, all of it, and the window
    moves back."""
    b = c.b
    width = min(WINDOW, b.hw["#BlockSize"])
    nearest, total = window
    lid = K.HwId("int", "lid")
    before, end, done = b.fresh("before"), b.fresh("end"), b.fresh("done")
    for name, init in ((before, K.cint(0)), (end, K.sub(g, K.cint(1)))):
        c.emit(K.DeclVar(name, init))
    c.emit(K.DeclVar(done, K.Const("bool", False)))
    j, f, v, stop = (b.fresh(x) for x in ("j", "flag", "w", "stop"))
    jv = K.Var("int", j)
    spin, (seen,) = _read_status(b, st.slots[:1], jv)
    sv = K.Var("long", seen)
    read = (K.Let(j, K.sub(K.Var("int", end), lid)), K.DeclVar(f, K.cint(INCLUSIVE)),
            K.If(K.binop("ge", jv, K.cint(0)),
                 spin + (K.Assign(f, K.call("hi_word", (sv,), "int")), K.Assign(v, K.call("lo_word", (sv,), "int")))),
            K.If(K.binop("eq", K.Var("int", f), K.cint(INCLUSIVE)), (K.Atomic("min", nearest, K.cint(0), lid),)))
    inside = K.binop("and", K.lt(lid, K.cint(width)), K.binop("le", lid, K.Var("int", stop)))
    c.emit(K.Loop((), K.unop("not", K.Var("bool", done)),
                  (K.DeclVar(v, K.cint(0)), K.If(K.lt(lid, K.cint(width)), read),
                   K.Barrier("the look-back window is read"),
                   K.Let(stop, K.Load("int", nearest, K.cint(0))),
                   K.If(inside, (K.Atomic("add", total, K.cint(0), K.Var("int", v)),)),
                   K.Barrier("the look-back window is summed"),
                   K.Assign(before, K.Load("int", total, K.cint(0))),
                   K.Assign(done, K.lt(K.Var("int", stop), K.cint(width))),
                   K.Barrier("the look-back's sum is read"),
                   K.Assign(end, K.sub(K.Var("int", end), K.cint(width))))))
    return SScalar(K.Var("int", before))


def _read_status(b, slots: list[str], j: K.Expr) -> tuple[tuple, list[str]]:
    """Statements that read part j's status words in `slots` again until they hold a flag and
    the same one (each word is written once with the aggregate, then once with the inclusive
    prefix), and the long variables that then hold them."""
    seen = [b.fresh("seen") for _ in slots]
    head = []
    for slot, name in zip(slots, seen):
        t = b.fresh("status")
        head += [K.Atomic("add", slot, j, K.Const("long", 0), t), K.Assign(name, K.Var("long", t))]
    flags = [K.call("hi_word", (K.Var("long", name),), "int") for name in seen]
    ready = K.binop("ne", flags[0], K.cint(0))
    for other in flags[1:]:
        ready = K.binop("and", ready, K.binop("eq", other, flags[0]))
    return (tuple(K.DeclVar(name, K.Const("long", 0)) for name in seen)
            + (K.Loop(tuple(head), K.unop("not", ready), ()),)), seen


class _Window:
    """The look-back window in local memory: each part's flag and words, `width` parts from
    the part `end` (a variable) back."""

    def __init__(self, flags: str, words: list[str], width: int, end: str):
        self.flags, self.words, self.width, self.end = flags, words, width, end


def _read_window(b, st: _Status, win: _Window) -> tuple:
    """Work-item l (< width) reads the status of part end - l (`_read_part`)."""
    lid = K.HwId("int", "lid")
    j = b.fresh("j")
    f, vals, stmts = _read_part(b, st, K.Var("int", j))
    return ((K.Let(j, K.sub(K.Var("int", win.end), lid)),) + stmts
            + (K.Store(win.flags, lid, K.Var("int", f)),)
            + tuple(K.Store(buf, lid, K.Var("int", v)) for buf, v in zip(win.words, vals)))


def _read_part(b, st: _Status, j: K.Expr) -> tuple[str, list[str], tuple]:
    """(flag, words, statements): the statements read the status of part j, all its words
    (`_read_status`), into int variables `flag` and `words`; before part 0 stands an
    inclusive prefix, ne."""
    f = b.fresh("flag")
    vals = [b.fresh("w") for _ in st.slots]
    ne_words = [w for x0 in st.ne for w in _words(x0.e)]
    spin, seen = _read_status(b, st.slots, j)
    return f, vals, ((K.DeclVar(f, K.cint(INCLUSIVE)),)
                     + tuple(K.DeclVar(v, w) for v, w in zip(vals, ne_words))
                     + (K.If(K.binop("ge", j, K.cint(0)),
                             spin + (K.Assign(f, K.call("hi_word", (K.Var("long", seen[0]),), "int")),)
                             + tuple(K.Assign(v, K.call("lo_word", (K.Var("long", name),), "int"))
                                     for v, name in zip(vals, seen))),))


def _fold_window(c: Ctx, st: _Status, win: _Window, op: SVal, newer: list[str], done: str, has: str) -> tuple:
    """Work-item 0 folds the window forwards from its nearest inclusive prefix (op
    (op P a1) a2 ...: the evaluator's order, so floats agree exactly), or where it holds none,
    all of it; what the windows after it gave (`newer`, where `has`) is combined after it.
    `done` once an inclusive prefix was seen."""
    b = c.b
    acc = [b.fresh("acc") for _ in st.ne]
    r, started = b.fresh("r"), b.fresh("started")
    lv = K.sub(K.cint(win.width - 1), K.Var("int", r))
    got = _decode(st, [K.Load("int", buf, lv) for buf in win.words])
    inclusive = K.binop("eq", K.Load("int", win.flags, lv), K.cint(INCLUSIVE))

    def assign(ctx: Ctx, names, v: SVal):
        for name, x in zip(names, scalar_leaves(ctx, v, "the values scanConcat's parts exchange")):
            ctx.emit(K.Assign(name, x.e))
    restart, fold, after = c.sub(), c.sub(), c.sub()
    assign(restart, acc, got)
    restart.emit(K.Assign(started, K.Const("bool", True)))
    restart.emit(K.Assign(done, K.binop("or", K.Var("bool", done), inclusive)))
    assign(fold, acc, apply2(fold, op, _values(st, acc), got))
    assign(after, acc, apply2(after, op, _values(st, acc), _values(st, newer)))
    return ((K.DeclVar(started, K.Const("bool", False)),)
            + tuple(K.DeclVar(name, x0.e) for name, x0 in zip(acc, st.ne))
            + (K.SeqFor(r, K.cint(win.width), (K.If(K.binop("or", inclusive, K.unop("not", K.Var("bool", started))),
                                                    tuple(restart.stmts), tuple(fold.stmts)),)),
               K.If(K.Var("bool", has), tuple(after.stmts)))
            + tuple(K.Assign(n, K.Var(x0.e.ty, a)) for n, a, x0 in zip(newer, acc, st.ne))
            + (K.Assign(has, K.Const("bool", True)),))


def _values(st: _Status, names) -> SVal:
    """A value of the exchanged shape held in the variables `names`."""
    return build(st.shape, iter([SScalar(K.Var(x0.e.ty, n)) for n, x0 in zip(names, st.ne)]))
