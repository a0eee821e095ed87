"""Loops in the lowering: `while` and `power`, which step between two buffers, and
`seqfor`, `seqConcat` and `foldl`, whose state lives in registers.

A `while` or `power` forces its initial array into the first of two buffers
(`PingPong`).  A step known at compile time is unrolled, into the other buffer.  A loop
left to run time steps through two pointers it swaps (`PointerLoop`: a loop in the
kernel, for a `while` guarded against never ending) or, at grid level, is a loop of
launches on the host over two aliases it swaps (`HostLoop`).  `state_loop` is the loop
with its state in registers that `seqfor`, `seqConcat` and `foldl` share.
"""
from __future__ import annotations

from dataclasses import dataclass

from fcl.base.errors import CompileError, CompilerBug, CompilerLimitation, FCLError
from fcl.base.hw import Level
from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.lower.builder import BufRec, Builder, Ctx, origin_of
from fcl.codegen.lower.schemes import (check_count, check_level, fail_unless, host_length, names_of, outside_barriers,
                                       placements, reader, store_writer, sync)
from fcl.codegen.lower.values import (SPair, SPull, SPush, SScalar, Shape, SVal, apply, apply2, as_scalar, build,
                                      scalar_leaves, shape_leaves, shape_of)


UNROLL_MAX = 16           # constant foldl/while trip counts up to this are unrolled
WHILE_UNROLL_MAX = 64     # a while whose condition is known at compile time unrolls this far
STATE_PER_ITEM_MAX = 16   # a block- or warp-level power whose state has more elements a work-item stays a loop


def while_loop(ctx: Ctx, cond: SVal, step: SVal, init: SPush, ty: Shape) -> SPull:
    """`while cond step init`: force init, then step between two buffers while cond holds."""
    pp = start_pingpong(ctx, init, ty, "while")
    # a condition that forces grid-level arrays runs as kernels of its own each round
    # (`_host_while`), never at compile time
    unroll = 0 if pp.level == Level.GRID and _forces_grid_arrays(ctx, _applied(cond), pp.array()) else WHILE_UNROLL_MAX
    for _ in range(unroll):
        arr = pp.array()
        c = as_scalar(ctx, apply(ctx.sub(), cond, arr)).e
        if not isinstance(c, K.Const):
            break
        if not c.value:
            return arr
        pp.step(apply(ctx, step, arr))
    return _dynamic_while(ctx, cond, step, pp)


def power_loop(ctx: Ctx, count: SScalar, step: SVal, init: SPush, ty: Shape, double: bool = False) -> SPull:
    """`power n step init`: force init, then step n times between two buffers; step i
    gets the iteration number.  A constant count unrolls (sizes stay constants); else
    a loop in the kernel that every work-item of the unit runs equally often, marked for
    the `double_buffer` pass where `double` (`powerDoubleBuffered`)."""
    n = count.e
    pp = start_pingpong(ctx, init, ty, "powerDoubleBuffered" if double else "power")
    # a grid-level step of several kernels (a scan, a sort's pass) repeats as a host loop
    # of launches rather than unrolled into copies of its kernels
    many = pp.level == Level.GRID and K.is_const(n) and n.value > 2 and _forces_grid_arrays(
        ctx, lambda c, a: apply2(c, step, SScalar(K.cint(0)), a), pp.array())
    # a long block- or warp-level state stays a loop even with a constant count: there the
    # privatise pass can keep each work-item's share in registers (a 128 x 128 tile of a
    # matrix product), where unrolled steps would each need a copy in local memory
    long_state = pp.level != Level.GRID and not (isinstance(pp.n, K.Const)
                                                 and pp.n.value <= STATE_PER_ITEM_MAX * ctx.b.hw["#BlockSize"])
    if isinstance(n, K.Const) and n.value <= WHILE_UNROLL_MAX and not many and not long_state:
        for k in range(n.value):
            pp.step(apply2(ctx, step, SScalar(K.cint(k)), pp.array()))
        return pp.array()
    if pp.level == Level.GRID:
        return _host_power(ctx, n, step, pp)
    if pp.level == Level.WARP and not ctx.b.dry and not ctx.b.host_computable(n):
        raise ctx.limitation("host-step-count", "the step count of a warp-level power must be known to the host (it may "
                        "depend on the arguments only): every warp must take the same number of "
                        "steps, because each step ends with a work-group barrier")
    same = _keeps_length(ctx, step, pp)
    loop = PointerLoop.declare(pp)
    it = ctx.b.fresh("it")
    body = ctx.sub(guard=n)
    nxt = apply2(body, step, SScalar(K.Var("int", it)), loop.array())
    loop.end_step(body, loop.write(body, nxt))
    ctx.emit(K.SeqFor(it, n, tuple(body.stmts), double_buffer=double))
    return loop.array(pp.n if same else None)


def double_buffered_loop(ctx: Ctx, count: SScalar, step: SVal, init: SPush, ty: Shape) -> SPull:
    """`powerDoubleBuffered n step init`: `power`, its kernel loop double-buffered (the
    `double_buffer` pass: two copies of the local arrays the step forces, taken in turn)."""
    return power_loop(ctx, count, step, init, ty, double=True)


def _keeps_length(ctx, step, pp: PingPong) -> bool:
    """Whether every step of a power gives an array as long as the one it takes (then the
    host knows the final length: the first's): a dry probe of a step says."""
    b = ctx.b
    if b.dry:
        return False
    var = K.Var("int", "%plen")         # (names of the probe's own: the plan's stay as they are)
    probe = b.probe(keep_checks=False, params={var.name})
    pctx = Ctx(probe, pp.level, [])
    arr = _probe_array(var, pp.shape)
    try:
        nxt = apply2(pctx, step, SScalar(K.Var("int", "%pit")), arr)
    except FCLError:
        return False
    return isinstance(nxt, SPush) and nxt.n == var


# ---------------------------------------------------------------- the ping-pong of while and power

@dataclass
class PingPong:
    """The two buffers a `while` or `power` steps between: `cur` holds the array of `n`
    elements of `shape` the next step reads (at offset `base`), `other` gets the step's
    array (each a buffer per scalar of `shape`); `first` is the length of the initial
    array, which no step may exceed."""
    ctx: Ctx
    level: int
    cur: list[BufRec]
    other: list[BufRec]
    base: K.Expr
    n: K.Expr
    first: K.Expr
    shape: Shape

    @property
    def origin(self) -> str:
        return self.cur[0].origin

    def array(self) -> SPull:
        """The current array."""
        return reader(names_of(self.cur), self.base, self.n, self.shape)

    def step(self, nxt: SVal):
        """Store `nxt`, a step of the current array, in the other buffer, which then holds
        the current array (a step unrolled at compile time)."""
        _check_step(self.ctx, nxt, self.level, self.first)
        nxt.run(self.ctx, store_writer(self.other, self.base))
        _boundary(self.ctx, self.level, self.other[0].origin)
        self.cur, self.other, self.n = self.other, self.cur, nxt.n


def start_pingpong(ctx: Ctx, init: SPush, ty: Shape, what: str) -> PingPong:
    """The two buffers of `init`'s level for a `what` (while, power) of `ty` elements,
    `init` forced into the first."""
    level = init.level
    check_level(ctx, level, "loop over")
    if level == Level.GRID and not ctx.top:
        raise ctx.limitation("grid-nesting", f"a grid-level {what} can only run at the top level of a kernel")
    (ra, base), (rb, _) = [placements(ctx, level, init.n, what, "while", ty) for _ in range(2)]
    init.run(ctx, store_writer(ra, base))
    _boundary(ctx, level, ra[0].origin)
    return PingPong(ctx, level, ra, rb, base, init.n, init.n, ty)


def _boundary(ctx, level, why):
    if level == Level.GRID:
        ctx.b.split_kernel()
    sync(ctx, level, why)


def _check_step(ctx, nxt, level, size):
    if not isinstance(nxt, SPush) or nxt.level != level:
        raise CompilerBug("while step of the wrong level")
    if isinstance(nxt.n, K.Const) and isinstance(size, K.Const) and nxt.n.value > size.value:
        raise ctx.error(f"the step of this while makes the array grow from {size.value} to "
                        f"{nxt.n.value} elements; arrays never grow in while")


@dataclass
class PointerLoop:
    """A loop in the kernel over the buffers of a `PingPong`: the variable `length` holds
    the current array's length, the pointers `cur` point to the array a step reads and
    `nxt` to the buffers it writes (one of each per scalar of the elements); each step
    swaps the two."""
    pp: PingPong
    length: str
    cur: list[str]
    nxt: list[str]

    @classmethod
    def declare(cls, pp: PingPong) -> PointerLoop:
        """Declare the length and the pointers, before the loop."""
        ctx, b = pp.ctx, pp.ctx.b
        loop = cls(pp, b.fresh("len"), [b.fresh("cur") for _ in pp.cur], [b.fresh("nxt") for _ in pp.cur])
        ctx.emit(K.DeclVar(loop.length, pp.n))
        for cur, nxt, first, other in zip(loop.cur, loop.nxt, pp.cur, pp.other):
            ctx.emit(K.DeclPtr(cur, first.space, first.ty, first.name))
            ctx.emit(K.DeclPtr(nxt, first.space, first.ty, other.name))
        return loop

    def array(self, n: K.Expr | None = None) -> SPull:
        """The array `cur` points to, of the current length (or of length `n`)."""
        pp = self.pp
        return reader(self.cur, pp.base, n if n is not None else K.Var("int", self.length), pp.shape)

    def write(self, body: Ctx, nxt: SVal) -> list[K.Stmt]:
        """Store `nxt`, a step of the array, through pointers `nxt`, in `body`; gives the
        statements that end the step: the new length, the pointers swapped."""
        pp = self.pp
        _check_step(pp.ctx, nxt, pp.level, K.Var("int", self.length))
        new_len = body.bind(nxt.n, "newlen")
        ptrs = [BufRec(name, first.space, pp.n, first.origin, None, "while", ty=first.ty)
                for name, first in zip(self.nxt, pp.cur)]
        nxt.run(body, store_writer(ptrs, pp.base))
        return [K.Assign(self.length, new_len)] + [K.SwapPtr(c, x) for c, x in zip(self.cur, self.nxt)]

    def end_step(self, body: Ctx, updates: list[K.Stmt]):
        """End a step that every work-item of the unit runs: a barrier, then `updates`."""
        sync(body, self.pp.level, self.pp.origin)
        for u in updates:
            body.emit(u)


class HostLoop:
    """A grid-level loop of launches on the host over the buffers of a `PingPong`: the
    step kernels read alias `cur` and write alias `nxt`, which the host binds to the two
    global buffers and swaps after each step.  The length lives in a host variable
    passed to kernels; so does the step counter (`counter`) of a `power`."""

    def __init__(self, ctx: Ctx, pp: PingPong, counted: bool):
        b = self.b = ctx.b
        self.ctx = ctx
        self.length = b.fresh("hlen")
        self.counter = b.fresh("hit") if counted else None
        b.length_spans[self.length] = b.span
        names = [self.length] + ([self.counter] if counted else [])
        b.params.update(names)
        b.host_vars += [K.Param(name, "int") for name in names]
        self.shape = pp.shape
        n0 = host_length(ctx, pp.n, "the array this loop starts from")
        self.cur = [b.buffer("global", f.size, f.origin, "alias", prefix="cur", ty=f.ty) for f in pp.cur]
        self.nxt = [b.buffer("global", f.size, f.origin, "alias", prefix="nxt", ty=f.ty) for f in pp.cur]
        b.split_kernel()
        self.outer = b.host
        for cur, nxt, first, other in zip(self.cur, self.nxt, pp.cur, pp.other):
            self.outer += [P.Bind(cur.name, first.name), P.Bind(nxt.name, other.name)]
        self.outer.append(P.SetVar(self.length, n0))
        if counted:
            self.outer.append(P.SetVar(self.counter, K.cint(0)))

    def array(self) -> SPull:
        """The array aliases `cur` hold, of the current length."""
        return reader(names_of(self.cur), K.cint(0), K.Var("int", self.length), self.shape)

    def statements(self) -> list:
        """A new list for the host statements that follow (the loop's head or body)."""
        self.b.host = []
        return self.b.host

    def step(self, nxt: SVal, what: str):
        """Run `nxt`, a step of the array in a grid-level `what`, as kernels that write alias
        `nxt`; after them the host sets the new length, swaps the aliases and counts the step."""
        ctx, b = self.ctx, self.b
        _check_step(ctx, nxt, Level.GRID, K.Var("int", self.length))
        n = host_length(ctx, nxt.n, f"each step of this grid-level {what}")
        nxt.run(ctx, store_writer(self.nxt, K.cint(0)))
        b.split_kernel()
        b.host += [P.SetVar(self.length, n)] + [P.Swap(c.name, x.name) for c, x in zip(self.cur, self.nxt)]
        if self.counter is not None:
            b.host.append(P.SetVar(self.counter, K.add(K.Var("int", self.counter), K.cint(1))))

    def close(self, head: list, cond: K.Expr, body: list):
        """Back to the host statements before the loop: the allocations of `head` and `body`
        whose size the loop does not change, then the loop."""
        b, outer = self.b, self.outer
        b.host = outer
        varying = {self.length} | ({self.counter} if self.counter is not None else set())
        outer += hoist_allocs(b, head, varying) + hoist_allocs(b, body, varying)
        outer.append(P.Loop(tuple(head), cond, tuple(body)))


def hoist_allocs(b: Builder, stmts: list, varying: set) -> list:
    """Take out of `stmts` (a loop's) the allocations whose size does not change in the loop."""
    varying = varying | {s.var for s in P.walk(stmts) if isinstance(s, (P.SetVar, P.ReadScalar))}
    out = [s for s in stmts if isinstance(s, P.Alloc) and not b.bufs[s.buffer].size.names & varying]
    stmts[:] = [s for s in stmts if s not in out]
    return out


# ---------------------------------------------------------------- while and power at run time

def _dynamic_while(ctx, cond, step, pp: PingPong) -> SPull:
    """A run-time loop over a ping-pong pair of pointers.  At block level the
    condition is uniform over the work-group; at warp level every warp may stop
    at a different step, so all warps loop while any warp goes on (a local flag
    set with atomic_or) and each warp's step is guarded by its own condition."""
    if pp.level == Level.GRID:
        return _host_while(ctx, cond, step, pp)
    final = _host_final_length(ctx, cond, step, pp.n, pp.level, pp.shape, pp.cur[0].name)
    loop = PointerLoop.declare(pp)
    arr = loop.array()
    head = ctx.sub()
    c = as_scalar(ctx, apply(head, cond, arr)).e
    body = ctx.sub(guard=c)
    updates = loop.write(body, apply(body, step, arr))
    if pp.level == Level.WARP:
        _warp_while(ctx, head, c, tuple(body.stmts) + tuple(updates), pp.cur[0])
    else:
        loop.end_step(body, updates)
        _guarded_loop(ctx, tuple(head.stmts), c, tuple(body.stmts), pp.cur[0].name, K.Var("int", loop.length))
    return loop.array(final)


def _warp_while(ctx, head: Ctx, c: K.Expr, steps: tuple, cur: BufRec):
    """The loop of a warp-level while whose condition `c` is evaluated in `head`: every
    warp votes in a local flag whether it goes on, all warps loop while any does, and a
    warp runs `steps` only while its own condition holds."""
    b = ctx.b
    going = head.bind(c, "going")
    if not isinstance(going, K.Var):
        going = K.Var("bool", b.fresh("going"))
        head.emit(K.Let(going.name, c))
    flag = b.buffer("local", K.cint(1), origin_of(b.span, "while (any warp still stepping)"), "while",
                    ty="int")
    anyv = b.fresh("anygoing")
    head.emit(K.If(K.binop("eq", K.HwId("int", "lid"), K.cint(0)), (K.Store(flag.name, K.cint(0), K.cint(0)),)))
    head.emit(K.Barrier("reset the while flag"))
    head.emit(K.If(going, (K.Atomic("or", flag.name, K.cint(0), K.cint(1)),)))
    head.emit(K.Barrier("every warp has voted"))
    head.emit(K.Let(anyv, K.binop("ne", K.Load("int", flag.name, K.cint(0)), K.cint(0))))
    body_stmts = (K.If(going, steps), K.Barrier(cur.origin))
    _guarded_loop(ctx, tuple(head.stmts), K.Var("bool", anyv), body_stmts, cur.name)


def _host_final_length(ctx, cond, step, n, level, ty, origin: str):
    """When a while's condition and step lengths read only the length, and its first
    length is known to the host, the host runs the same loop over lengths alone before
    the launch: the length after the loop becomes a host scalar (so later forces and
    the result can be sized by it).  None otherwise."""
    b = ctx.b
    if b.dry or not b.host_computable(n):
        return None
    var = K.Var("int", b.fresh("hlen"))
    b.length_spans[var.name] = b.span
    probe = b.probe(keep_checks=True, params={var.name})   # its condition and lengths become host code
    pctx = Ctx(probe, level, [])
    arr = _probe_array(var, ty)
    try:
        c = as_scalar(pctx, apply(pctx, cond, arr)).e
        nxt = apply(pctx, step, arr)
    except FCLError:
        return None
    if pctx.stmts or not probe.host_computable(c) or not isinstance(nxt, SPush) \
            or not probe.host_computable(nxt.n):
        return None
    b.params.add(var.name)
    b.host_vars.append(K.Param(var.name, "int"))
    b.host += [P.SetVar(var.name, n), P.Loop((), c, (P.SetVar(var.name, nxt.n),), var.name, origin)]
    return var


def _probe_array(n: K.Var, shape: Shape) -> SPull:
    """An array of n elements of `shape` in buffers of a probe's own (its code is thrown away)."""
    return reader([f"probe{k}" for k in range(len(shape_leaves(shape)))], K.cint(0), n, shape)


def _guarded_loop(ctx, head, cond, body, holder: str, length=None):
    """Loop(head, cond, body) that also stops where the evaluator would say the
    while never terminates: its condition holding on an empty array (`length` 0:
    the step of an empty array is empty again; not given at warp level, where the
    loop condition must stay uniform) or, failing that, after P.MAX_DEVICE_STEPS
    steps.  Then it sets its bit (and CAPPED for the cap) in the plan's guard
    buffer, which the host's CheckSteps reports.  `stuck` keeps the last condition:
    true after the loop only when the guard ended it."""
    b = ctx.b
    steps, stuck = b.fresh("steps"), b.fresh("stuck")
    ctx.emit(K.DeclVar(steps, K.cint(0)))
    ctx.emit(K.DeclVar(stuck, K.const(False, "bool")))
    capped = K.binop("ge", K.Var("int", steps), K.cint(P.MAX_DEVICE_STEPS))
    going = K.binop("and", K.Var("bool", stuck), K.lt(K.Var("int", steps), K.cint(P.MAX_DEVICE_STEPS)))
    if length is not None:
        going = K.binop("and", going, K.binop("ne", length, K.cint(0)))
    ctx.emit(K.Loop(head + (K.Assign(stuck, cond),), going,
                    body + (K.Assign(steps, K.add(K.Var("int", steps), K.cint(1))),)))
    if b.dry:
        return
    if b.guard is None:
        b.guard = b.buffer("global", K.cint(1), "device while guard", "guard", prefix="guard", ty="int")
    if holder not in b.guarded:
        b.guarded.append(holder)
    bit = K.cint(1 << min(b.guarded.index(holder), 29))
    flag = K.select(capped, K.binop("bor", bit, K.cint(P.CAPPED)), bit)
    ctx.emit(K.If(K.Var("bool", stuck), (K.Atomic("or", b.guard.name, K.cint(0), flag),)))


def _host_while(ctx, cond, step, pp: PingPong) -> SPull:
    """A grid-level while with a run-time condition: a loop of launches on the host
    (`HostLoop`), whose head launches a kernel for the condition where the host cannot
    compute it (`_host_condition`)."""
    loop = HostLoop(ctx, pp, counted=False)
    head_host = loop.statements()
    arr = loop.array()
    if _forces_grid_arrays(ctx, _applied(cond), arr):
        head = Ctx(ctx.b, Level.GRID, None, top=True)
        c = as_scalar(head, apply(head, cond, arr)).e
        loop_cond = _kernels_condition(ctx, c, head_host)
    else:
        head = Ctx(ctx.b, Level.GRID, [])
        c = as_scalar(ctx, apply(head, cond, arr)).e
        loop_cond = _host_condition(ctx, head, c, head_host)
    body_host = loop.statements()
    loop.step(apply(ctx, step, arr), "while")
    loop.close(head_host, loop_cond, body_host)
    return arr


def _host_condition(ctx, head: Ctx, c: K.Expr, head_host: list) -> K.Expr:
    """The host's test of a grid-level while's condition `c`, evaluated in `head`: `c`
    itself where it reads only the length, else the flag of `_flag_condition` (the first
    work-group evaluates the condition: a block-level computation in it, with its
    barriers, needs the whole group)."""
    if not head.stmts and ctx.b.host_computable(c):
        return c
    return _flag_condition(ctx, c, head.stmts, head_host)


def _flag_condition(ctx, c: K.Expr, stmts: list, head_host: list) -> K.Expr:
    """A kernel of its own runs `stmts` in its first work-group, whose first work-item stores
    the condition `c` in a flag; the host reads it (`head_host`, the loop's head) and tests it."""
    b = ctx.b
    go = b.fresh("go")
    b.host_vars.append(K.Param(go, "int"))
    flag = b.buffer("global", K.cint(1), origin_of(b.span, "while condition"), "flag", prefix="flag", ty="int")
    store = K.Store(flag.name, K.cint(0), K.select(c, K.cint(1), K.cint(0)))
    first_item = K.If(K.binop("eq", K.HwId("int", "lid"), K.cint(0)), (store,))
    ctx.emit(K.If(K.binop("eq", K.HwId("int", "group_id"), K.cint(0)), tuple(stmts) + (first_item,)))
    b.split_kernel()
    head_host.append(P.ReadScalar(go, flag.name))
    return K.binop("ne", K.Var("int", go), K.cint(0))


def _applied(fn: SVal):
    """`fn` as a Python function of a context and an argument."""
    return lambda c, x: apply(c, fn, x)


def _forces_grid_arrays(ctx, use, arr: SPull) -> bool:
    """Whether `use(ctx, arr)` (a grid-level while's condition, a power's step) forces
    grid-level arrays (a reduction over the whole state, say), which the first work-group
    alone cannot: a dry probe of it says (its code is thrown away)."""
    try:
        use(Ctx(ctx.b.probe(keep_checks=False), Level.GRID, []), arr)
    except CompilerLimitation as e:
        return e.what == "grid-nesting"
    except FCLError:
        return False            # the lowering itself reports it
    return False


def _kernels_condition(ctx, c: K.Expr, head_host: list) -> K.Expr:
    """The host's test of a grid-level while's condition `c` that forced grid-level arrays
    at the top level of the loop's head (kernels of their own, before the test): what
    follows the last of them is `_flag_condition`'s kernel."""
    tail = list(ctx.b.top)
    ctx.b.top.clear()
    return _flag_condition(ctx, c, tail, head_host)


def _host_power(ctx, n, step, pp: PingPong) -> SPull:
    """A grid-level power with a run-time count: a loop of launches on the host
    (`HostLoop`) with a counter the step kernels receive."""
    b = ctx.b
    if not b.dry and not b.host_computable(n):
        raise ctx.limitation("host-step-count", "the step count of a grid-level power must be known to the host (it may "
                        "depend on the arguments only)")
    loop = HostLoop(ctx, pp, counted=True)
    body_host = loop.statements()
    arr = loop.array()
    loop.step(apply2(ctx, step, SScalar(K.Var("int", loop.counter)), arr), "power")
    loop.close([], K.lt(K.Var("int", loop.counter), n), body_host)
    return arr


# ---------------------------------------------------------------- loops with their state in registers

def seqfor(ctx: Ctx, count: SScalar, state: SVal, f: SVal) -> SPush:
    """`seqfor n s f`: a thread-level push array; one work-item runs the n steps in
    order, the state in registers (scalars or pairs of scalars), and writes element i
    as it is computed."""
    n, span = count.e, ctx.b.span
    check_count(ctx, n, "seqfor")

    def run(c: Ctx, w):
        if isinstance(n, K.Const) and n.value <= UNROLL_MAX:
            st = state
            for k in range(n.value):
                r = _seqfor_step(c, f, st, K.cint(k))
                w(c, K.cint(k), _bound(c, r.b))
                st = r.a
            return

        def step(body, st, i):
            r = _seqfor_step(body, f, st, i)
            v = _bound(body, r.b)
            temps = [snapshot(body, x.e, "nst") for x in scalar_leaves(c, r.a)]
            w(body, i, v)
            return temps
        state_loop(c, n, state, "the state of a seqfor", step, span=span)
    return SPush(Level.THREAD, n, run, span)


def state_loop(c: Ctx, n: K.Expr, state: SVal, what: str, step, prefix: str = "st", span=None) -> SVal:
    """A loop of n steps in the kernel whose state (scalars or pairs of scalars) lives in
    registers: step(body, st, i) emits step i and gives the next state's scalars, named
    (`snapshot`) before anything of the step that the state's variables must outlive.
    Gives the state's variables (after the loop: the final state)."""
    leaves = scalar_leaves(c, state, what, span)
    names = [c.b.fresh(prefix) for _ in leaves]
    for name, leaf in zip(names, leaves):
        c.emit(K.DeclVar(name, leaf.e))
    st = build(shape_of(state), iter(SScalar(K.Var(l.e.ty, nm)) for nm, l in zip(names, leaves)))
    body = c.sub(guard=n)
    var = c.b.fresh("k")
    temps = step(body, st, K.Var("int", var))
    for name, t in zip(names, temps):
        body.emit(K.Assign(name, t))
    c.emit(K.SeqFor(var, n, tuple(body.stmts)))
    return st


def seq_concat(ctx: Ctx, part: SScalar, count: SScalar, state: SVal, f: SVal, level: int) -> SPush:
    """`seqConcat m n s f`: a loop of n steps that the units of `level` run together,
    the state in every work-item's registers (scalars or pairs of scalars, the same in
    all of them); step i writes its part (m elements, at `level`) at i*m + j.  At warp
    and block level a step ends with a barrier where the next step's first accesses
    could race with this one's last (`_wraps_around`)."""
    m, n = part.e, count.e
    span = ctx.b.span
    if level == Level.GRID:
        raise ctx.limitation("grid-nesting", "seqConcat cannot step over grid-level parts: each step would be a "
                        "kernel, and the state cannot live in registers between kernels",
                        ["run it per work-group (block-level parts inside a grid-level concat), "
                         "or use a grid-level power"])
    check_count(ctx, m, "seqConcat", "the length of every part")
    check_count(ctx, n, "seqConcat", "the number of steps")

    def run(c: Ctx, w):
        check_level(c, level, "compute")
        if level == Level.WARP and not c.b.dry and not c.b.host_computable(n):
            raise CompilerLimitation("host-step-count", "the step count of a warp-level seqConcat must be known to the host "
                               "(it may depend on the arguments only): every warp must take the same "
                               "number of steps, because a step may end with a work-group barrier", span)

        def step(body, st, i):
            r = apply2(body, f, st, SScalar(i))
            if not isinstance(r, SPair) or not isinstance(r.b, SPush) or r.b.level != level:
                raise CompilerBug("seqConcat step did not return (state, push array of its level)")
            if isinstance(r.b.n, K.Const) and isinstance(m, K.Const) and r.b.n.value != m.value:
                raise CompileError(f"each step of this seqConcat must write {m.value} elements, but "
                                   f"it writes {r.b.n.value}", span)
            temps = [snapshot(body, x.e, "nst") for x in scalar_leaves(c, r.a)]
            # the evaluator reports a step whose part is not m elements long (before it writes
            # any): then it writes nothing
            fits = fail_unless(body, body.bind(K.binop("eq", r.b.n, m), "fits"), "seqConcat-step", (i, r.b.n, m),
                               span)

            def write(cc, j, v):
                if K.is_const(fits, True):
                    w(cc, K.add(K.mul(i, m), j), v)
                    return
                g = cc.sub()
                w(g, K.add(K.mul(i, m), j), v)
                cc.emit(K.If(fits, tuple(g.stmts)))
            r.b.run(body, write)
            if level in (Level.WARP, Level.BLOCK) and _wraps_around(body):
                body.emit(K.Barrier("the next step reuses local memory"))
            return temps
        state_loop(c, n, state, "the state of a seqConcat", step, span=span)
    return SPush(level, K.mul(n, m), run, span)


def _wraps_around(body: Ctx) -> bool:
    """Whether a loop body needs a barrier at its end: some memory that is not private
    is written after its last barrier and used before its first (in the next
    iteration), or used after the last and written before the first.  A pointer
    variable counts as touching everything; barriers only inside nested statements
    count as one at the end."""
    stmts = body.stmts
    ends = outside_barriers(stmts)
    if ends is None:    # no barrier: no work-item reads what another wrote in the loop
        return K.contains_barrier(stmts)
    (hr, hw), (tr, tw) = (K.all_accesses(seg) for seg in ends)
    if any(body.b.bufs.get(x) is None for x in hr | hw | tr | tw):
        return True
    shared = ((hw & (tr | tw)) | (tw & hr))
    return any(body.b.bufs[x].space != "private" for x in shared)


def _seqfor_step(ctx, f, state, i) -> SPair:
    r = apply2(ctx, f, state, SScalar(i))
    if not isinstance(r, SPair):
        raise CompilerBug("seqfor step did not return (state, element)")
    return r


def _bound(ctx, v: SVal) -> SVal:
    """Element `v` (a scalar or pairs of them) with each scalar named once."""
    leaves = scalar_leaves(ctx, v, "the elements of a seqfor")
    return build(shape_of(v), iter(SScalar(ctx.bind(x.e, "sv")) for x in leaves))


def foldl(ctx: Ctx, f: SVal, acc: SVal, arr: SPull) -> SVal:
    """Sequential loop in one work-item; the accumulator lives in registers."""
    n = arr.n
    if isinstance(n, K.Const) and n.value <= UNROLL_MAX:
        for k in range(n.value):
            acc = apply2(ctx, f, acc, arr.at(ctx, K.cint(k)))
        return acc

    def step(body, state, i):
        new = apply2(body, f, state, arr.at(body, i))
        return [snapshot(body, x.e, "nacc") for x in scalar_leaves(ctx, new)]
    return state_loop(ctx, n, acc, "the accumulator of a foldl with a loop", step, prefix="acc")


def snapshot(ctx: Ctx, e: K.Expr, prefix: str) -> K.Expr:
    """`e` named by a fresh variable (unless constant): the value it has now, safe to use
    after the loop-carried variables it reads are assigned."""
    if isinstance(e, K.Const):
        return e
    name = ctx.b.fresh(prefix)
    ctx.emit(K.Let(name, e))
    return K.Var(e.ty, name)
