"""The `vectorize` pass: contiguous accesses to int/float/bool buffers as int4/float4/uchar4 loads and stores.

Three rewrites, all only where they are provably exact:

* Grid-stride loops of independent elements are strip-mined.  A loop
  `for (i = global_id; i < n; i += global_size) body` at the top of a kernel
  (its unchecked version from `bounds` is a kernel of its own) whose iterations cannot see each other (no
  barrier, no atomic but a combining one - `atomic_add` ... `atomic_xor`, which gives the same
  result in any order, into a buffer the loop touches no other way: reduceByIndex -, no bounds check, no variable carried from one iteration
  to the next, every store at index `i` exactly, every read at `i` or at an
  index that is the same in every iteration, of a buffer the kernel does not
  write there, and the buffers it writes not used elsewhere in the kernel)
  gives its elements to the work-items in runs of WIDTH:
  `for (j = global_id; j < n / 4; j += global_size) { body[i := 4j]; ...
  body[i := 4j + 3] }`, then the original loop from `4 * (n / 4) + global_id`
  for the last n % 4 elements.  Which work-item handles which element
  changes; nothing else does (any work-item may handle any element of a
  grid-level parallel loop).  copyGrid's loop is this shape, and every map of
  arrays to an array at the grid level; afterwards all its accesses at `i`
  are vector accesses (a loop that reads `a[n - 1 - i]` or `a[4i + k]` is left
  to the grouping below).
* Block-stride loops of independent elements are strip-mined the same way.
  `for (i = lid; i < C; i += #BlockSize)`, C a constant multiple of 4 *
  #BlockSize (the loops `unroll` leaves: more than 16 rounds, such as a
  scan's chunk of 8192 going into local memory and back out), whose body
  is `Let`s, stores and `if`s, each store at i plus a uniform offset (under
  a local layout's skew), a buffer it writes read only where the same
  iteration stores, and every other name uniform over the work-group (an
  argument, a loop counter or `Let` of uniform values: nothing depends on
  which work-item runs an element), becomes `for (j = lid; j < C / 4; j +=
  #BlockSize)` over element 4j + d in copy d, marked for unrolling.  Tests
  `x < n` of the copies, x the same index d elements on (a chunk's guard
  `g < n ? a[g] : ne` of its partial last run), are decided once for the
  whole loop: where the work-group's last run passes (x at the last j plus 3
  below n, and x at j = 0 below that: no wrap-around), every run does, and
  the loop takes the copies with the tests true (plain accesses the
  grouping below makes vector ones, no branch between the loads); else the
  copies as they were.  The scan's chunks (32 elements a work-item) then
  load and store as the hand-written single-pass scan does: on an H200,
  0.170 / 0.619 ms at 2^26 / 2^28 ints against 0.205 / 0.716 with scalar
  accesses in the loop.
* Groups of loads (stores) in one straight-line block, `a[b]`, `a[b + 1]`,
  `a[b + 2]`, `a[b + 3]`, all of them executed (no `if` or select between
  them and the block), become one `VLoad` before the first (one `VStore` at
  the last) when `b` is a multiple of 4 (a congruence over constants, `Let`s,
  loop counters with a step that is a multiple of 4, and #BlockSize-multiples
  such as global_size) and the indexes are equal up to the constant (linear
  forms over names that are never reassigned).  Unchecked indexes are in
  range, so the vector is; a run of four checked loads (one bounds buffer,
  one length) becomes `if (0 <= b && b < len && 3 < len - b) vector load
  else the four checked loads as they were`, all at the first load: the same
  values, and the same failures recorded (the first failure's details may
  come from another check of the work-item than before: they are hoisted).
  Nothing between the first and the last access writes the buffer (for a
  load; for a buffer the kernel also writes, nothing writes any global
  buffer), or touches it (for a store; nor writes any other global buffer
  or reads one the kernel writes).  This is the shape of the copies that
  `unroll` or the strip-mining above make of a loop over 4 consecutive
  elements (the prelude's reduceStride and bench/programs.fcl's matvecRows4 are written so).

Alignment: global buffers are whole OpenCL allocations (aligned to at least
the largest vector type), so element b = 4q of an int buffer starts an
aligned int4 and the renderer casts the pointer, `((__global const
int4*)a)[q]`: one 128-bit access on NVIDIA (vload4 needs only element
alignment, and then the compiler rarely proves more).  The vector index q
is b / 4 taken apart symbolically where the arithmetic provably does not
wrap (`mul_nw`, `add_nw`...), else `b >> 2`.  Runs last (after `nowrap`),
so the loops it makes are already in their final form.

Local memory: the grouping (not the strip-mining) also takes local buffers
of a constant size stored plainly (not skewed; the `skew` pass leaves
alone the accesses this pass will group at a lane stride of 4, which are
conflict-free as vectors: `quad_runs`), declared 16-byte aligned by the
renderer where they have vector accesses: matmulF's work-item reads 4
consecutive elements of a row of its tile of a, and 4 consecutive columns
of its tile of b, as one float4 each (a quarter of the load instructions
in its inner loop).  A barrier cuts a run of loads of a local buffer the
kernel writes.  Bools (a byte each) go as uchar4, as ints do as int4: a segmented scan's
flags, a map to bools.  Not here: private memory, local buffers of run-time size, doubles,
runs mixing checked and unchecked loads, strided or reversed runs, loops other than the
grid-stride one.
"""
from __future__ import annotations

import dataclasses
import functools

from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.analysis.linear import ADDS, MAX_DEPTH, MULS, SUBS, KernelFacts
from fcl.codegen.passes.base import Pass, replace_kernels

Op = K.Op
COMBINING = frozenset({"add", "min", "max", "and", "or", "xor"})    # atomics whose order does not matter
WORK_ITEM_IDS = frozenset({K.Hw.LID, K.Hw.WID, K.Hw.LANE, K.Hw.GLOBAL_ID})   # differ between work-items of a group
WIDTH = 4
ELEMENTS = ("int", "float", "bool")   # int4, float4, and bools as uchar4


def vectorize(plan: P.Plan) -> P.Plan:
    globals_ = {b.name: b for b in plan.buffers if b.space == "global"}
    return replace_kernels(plan, lambda k: _kernel(plan, k, globals_))


def _kernel(plan: P.Plan, k: K.Kernel, globals_: dict) -> K.Kernel:
    facts = VectorFacts(plan, k, globals_)
    names = K.Names(k)
    body = K.map_stmts(lambda s: _strip_mine_block(s, facts, names) if _block_independent(s, facts) else s,
                       None, _top(k.body, facts, names))
    facts = VectorFacts(plan, dataclasses.replace(k, body=body), globals_)
    grouped = dataclasses.replace(k, body=_Grouper(facts).block(body))
    # the element indexes that only the vector accesses used are dead now
    return K.simplify_kernel(grouped) if grouped != k else k


class VectorFacts(KernelFacts):
    """KernelFacts, and what vectorising asks of them: which buffers are global or local
    with 4-byte elements, and the residues of indexes mod WIDTH (the vector width)."""

    def __init__(self, plan: P.Plan, k: K.Kernel, globals_: dict):
        super().__init__(k)
        self.plan = plan
        self.globals = globals_
        # (a skewed buffer's index is a `skew` call, which no linear form sees through; a
        # per-warp copy's offset is part of its index)
        self.locals = {b.name: b for b in k.locals_ if K.plain_local(b)}
        self.arguments = {p.name for p in plan.params}      # host scalars: one value everywhere

    def uniform(self, name: str, depth: int = 0) -> bool:
        """`name` has one value in every work-item of a work-group: a kernel argument, a `Let`
        of uniform operands (a load at a uniform index included: every work-item reads it at
        the same point), or the counter of a loop with uniform bounds."""
        if depth > MAX_DEPTH or name in self.assigned:
            return False
        if name in self.lets:
            return self.uniform_expr(self.lets[name], depth + 1)
        loop = self.loops.get(name)
        if loop is not None:
            return all(self.uniform_expr(e, depth + 1) for e in (loop.start, loop.stop, loop.step))
        return name in self.arguments

    def uniform_expr(self, e: K.Expr, depth: int = 0) -> bool:
        return all(not (isinstance(n, K.HwId) and n.name in WORK_ITEM_IDS)
                   and not (isinstance(n, K.Var) and not self.uniform(n.name, depth)) for n in K.walk_expr(e))

    def vectorisable(self, buf: str, ty: str) -> bool:
        b = self.globals.get(buf) or self.locals.get(buf)
        # (bools only in global memory: the renderer stores a local bool as a bool, not a byte)
        return b is not None and b.ty == ty and ty in ELEMENTS and (ty != "bool" or b.space == "global")

    # ------------------------------------------------------------ congruences

    def residue(self, e: K.Expr, depth: int = 0) -> int | None:
        """e mod WIDTH when known (32-bit wrap-around keeps it: 2^32 is a multiple of 4)."""
        if depth > MAX_DEPTH or e.ty != "int":
            return None
        if isinstance(e, K.Const):
            return e.value % WIDTH
        if isinstance(e, K.Var):
            if e.name in self.lets:
                return self.residue(self.lets[e.name], depth + 1)
            loop = self.loops.get(e.name)
            if loop is not None and self.residue(loop.step, depth + 1) == 0:
                return self.residue(loop.start, depth + 1)
            return None
        if isinstance(e, K.HwId):
            return 0 if e.name == K.Hw.GLOBAL_SIZE and self.plan.block_size % WIDTH == 0 else None
        if isinstance(e, K.Un) and e.op == Op.NEG:
            r = self.residue(e.a, depth + 1)
            return None if r is None else -r % WIDTH
        if not isinstance(e, K.Bin):
            return None
        if e.op == Op.SHL and isinstance(e.b, K.Const):
            shift = e.b.value & 31
            r = self.residue(e.a, depth + 1)
            return 0 if shift >= 2 else (None if r is None else (r << shift) % WIDTH)
        a, b = self.residue(e.a, depth + 1), self.residue(e.b, depth + 1)
        if e.op in MULS and (a == 0 or b == 0):
            return 0
        if a is None or b is None:
            return None
        if e.op in ADDS:
            return (a + b) % WIDTH
        if e.op in SUBS:
            return (a - b) % WIDTH
        if e.op in MULS:
            return a * b % WIDTH
        return None

    def form_residue(self, terms: dict) -> int | None:
        """The terms' sum mod WIDTH, when known."""
        total = 0
        for t, c in terms.items():
            if c % WIDTH == 0:
                continue
            r = self.residue(t)
            if r is None:
                return None
            total += c * r
        return total % WIDTH

    def quarter(self, e: K.Expr, depth: int = 0) -> K.Expr | None:
        """e / WIDTH as an expression where e is built without wrapping (the proven forms
        `mul_nw`, `add_nw`, `sub_nw`, constants, pure `Let`s), else None."""
        if depth > MAX_DEPTH:
            return None
        if isinstance(e, K.Const):
            return K.cint(e.value // WIDTH) if e.value % WIDTH == 0 else None
        d = self.definition(e)
        if d is not None:
            return self.quarter(d, depth + 1)
        if not isinstance(e, K.Bin):
            return None
        if e.op in (Op.ADD_NW, Op.SUB_NW):
            a, b = self.quarter(e.a, depth + 1), self.quarter(e.b, depth + 1)
            if a is None or b is None:
                return None
            return K.Bin("int", e.op, a, b) if not (isinstance(a, K.Const) and isinstance(b, K.Const)) \
                else K.binop(K.GENERAL_OP[e.op], a, b)
        if e.op == Op.MUL_NW:
            for x, y in ((e.a, e.b), (e.b, e.a)):
                if isinstance(x, K.Const) and x.value % WIDTH == 0:
                    return y if x.value == WIDTH else K.Bin("int", Op.MUL_NW, K.cint(x.value // WIDTH), y)
        return None

    def vector_index(self, base: K.Expr) -> K.Expr:
        """base / WIDTH for an in-range element index base proven a multiple of WIDTH."""
        q = self.quarter(base)
        return q if q is not None else K.binop(Op.SHR, base, K.cint(2))


# ---------------------------------------------------------------- strip-mining grid-stride loops

def _top(stmts, facts: VectorFacts, names: K.Names) -> tuple:
    """The kernel's top-level statements with their grid-stride loops strip-mined."""
    out = []
    for s in stmts:
        if isinstance(s, K.For) and _independent(s, stmts, facts):
            out.extend(_strip_mine(s, facts, names))
            continue
        out.append(s)
    return tuple(out)


def _independent(loop: K.For, block, facts: VectorFacts) -> bool:
    """A grid-stride loop whose iterations cannot see each other, with an access at its
    counter to a global int/float buffer; the buffers it writes are not used elsewhere
    in its `block` (the kernel's body)."""
    if not (loop.start == K.HwId("int", K.Hw.GLOBAL_ID) and loop.step == K.HwId("int", K.Hw.GLOBAL_SIZE)
            and facts.pure(loop.stop)):
        return False
    i = K.Var("int", loop.var)
    own = K.defines(loop.body)

    def varying(e: K.Expr) -> bool:
        return bool(e.names & (own | {loop.var})) or not facts.pure(e)
    stored, useful, combined = set(), False, set()
    for s in K.walk_stmts(loop.body):
        if isinstance(s, K.Atomic) and s.op in COMBINING and not s.var:
            combined.add(s.buf)
        elif isinstance(s, (K.Barrier, K.Atomic, K.Fail, K.DeclPtr, K.SwapPtr, K.VLoad, K.VStore)):
            return False
        if isinstance(s, K.Assign) and s.var not in own:
            return False            # a value carried from one iteration to the next
        if isinstance(s, K.Store):
            if s.index != i or s.buf not in facts.globals:
                return False
            stored.add(s.buf)
            useful = useful or facts.vectorisable(s.buf, s.value.ty)
        for e in K.stmt_exprs(s):
            for n in K.walk_expr(e):
                if isinstance(n, K.Checked):
                    return False
                if isinstance(n, K.Load) and n.index != i and (n.buf in facts.written or varying(n.index)):
                    return False    # only element i, or the same element in every iteration
                if isinstance(n, K.Load) and n.index == i:
                    useful = useful or facts.vectorisable(n.buf, n.ty)
    touched = set()
    for s in K.walk_stmts(loop.body):
        if not isinstance(s, K.Atomic):
            touched.update(*K.accesses(s))
    if combined & (touched | stored):
        return False                # a combined buffer read or written otherwise in the loop
    return useful and not stored & K.buffers_used(tuple(x for x in block if x is not loop))


def _strip_mine(loop: K.For, facts: VectorFacts, names: K.Names) -> tuple:
    quarter = names.fresh(loop.var, "n4")
    stop4 = K.Var("int", quarter)
    j = names.fresh(loop.var, "v")
    body = _run_copies(loop, names, j, "v")     # 4j + k <= 4 (stop / 4 - 1) + 3 < stop
    main = K.For(j, loop.start, stop4, loop.step, tuple(body))
    tail = dataclasses.replace(loop, start=K.add(K.mul(K.cint(WIDTH), stop4), loop.start))
    last = f"{K.format_expr(loop.stop)} % {WIDTH}"
    return (K.Comment(f"{loop.var}: runs of {WIDTH} elements a work-item, then the last {last}"),
            K.Let(quarter, K.binop(Op.DIV, loop.stop, K.cint(WIDTH))), main, tail)


def _run_copies(loop: K.For, names: K.Names, j: str, tag: str) -> list:
    """WIDTH copies of the loop's body, copy d at element WIDTH j + d (`let i_d = 4j + d`),
    its names renamed; the caller's bounds keep WIDTH j + d from wrapping around."""
    jv, out = K.Var("int", j), []
    for d in range(WIDTH):
        var = names.fresh(loop.var, f"{tag}{d}")
        table = {name: names.fresh(name, f"{tag}{d}") for name in sorted(K.defines(loop.body))}
        table[loop.var] = var
        at = K.Bin("int", Op.MUL_NW, K.cint(WIDTH), jv)
        out.append(K.Let(var, at if d == 0 else K.Bin("int", Op.ADD_NW, at, K.cint(d))))
        out.extend(K.rename(loop.body, table))
    return out


# ---------------------------------------------------------------- strip-mining block-stride loops

def _block_independent(loop: K.Stmt, facts: VectorFacts) -> bool:
    """`for (i = lid; i < C; i += #BlockSize)`, C a multiple of WIDTH * #BlockSize (the loops
    `unroll` leaves: more than 16 rounds), whose iterations cannot see each other: straight-line
    `Let`s, stores and `if`s; each store at i plus a uniform offset (under the local layout's
    skew); a buffer the loop writes read only where the same iteration stores, and no buffer
    with a copy a warp or a work-item; every other name uniform over the work-group (so no
    iteration depends on which work-item runs it); and an access at i of a global int/float
    buffer to gain."""
    bs = facts.plan.block_size
    if not (isinstance(loop, K.For) and loop.start == K.HwId("int", K.Hw.LID) and loop.step == K.cint(bs) and isinstance(loop.stop, K.Const)
            and loop.stop.value > 0 and loop.stop.value % (WIDTH * bs) == 0):
        return False
    i = K.Var("int", loop.var)
    own = K.defines(loop.body)
    stores: dict[str, set] = {}
    for s in K.walk_stmts(loop.body):
        if not isinstance(s, (K.Let, K.Store, K.If, K.Comment)):
            return False
        if isinstance(s, K.Store):
            stores.setdefault(s.buf, set()).add(s.index)
    useful = False

    def at_counter(index: K.Expr) -> bool:
        _, terms, _ = facts.place(index)
        return terms.get(i) == 1 and all(loop.var not in t.names and not (t.names & own) for t in terms if t != i)
    shared = facts.globals.keys() | {b.name for b in facts.k.locals_ if not b.per}   # one copy a work-group
    for s in K.walk_stmts(loop.body):
        if isinstance(s, K.Store):
            if not at_counter(s.index) or s.buf not in shared:
                return False
            useful = useful or s.buf in facts.globals and facts.vectorisable(s.buf, s.value.ty)
        for e in K.stmt_exprs(s):
            for n in K.walk_expr(e):
                if isinstance(n, K.Checked) or isinstance(n, K.HwId) and n.name in WORK_ITEM_IDS:
                    return False
                if isinstance(n, K.Var) and n != i and n.name not in own and not facts.uniform(n.name):
                    return False
                if isinstance(n, K.Load) and (n.buf not in shared or n.buf in stores and n.index not in stores[n.buf]):
                    return False    # a work-item's own copy, or another iteration's element
                if isinstance(n, K.Load) and n.buf in facts.globals and at_counter(n.index):
                    useful = useful or facts.vectorisable(n.buf, n.ty)
    return useful


def _strip_mine_block(loop: K.For, facts: VectorFacts, names: K.Names) -> tuple:
    """The loop over runs of WIDTH elements: `for (j = lid; j < C / WIDTH; j += #BlockSize)`,
    element WIDTH j + d in copy d of the body.  Where the copies test `x_d < n` for x_d the
    same index d elements on, increasing with j (the guard of a chunk's last, partial run:
    `g < n ? a[g] : ne`), and the work-group's last run passes every such test (x_3 < n at
    the last j, and x_0 at j = 0 below that: no wrap-around between), every run passes:
    the loop takes copies with the tests true, whose accesses the grouping makes vector
    ones, and no branch stands between its loads; else the copies as they were."""
    j = names.fresh(loop.var, "q")
    jv = K.Var("int", j)
    last_j = loop.stop.value // WIDTH - 1

    def run(body, j: str) -> K.For:
        return K.For(j, loop.start, K.cint(last_j + 1), loop.step, tuple(body), True)
    fast = _run_copies(loop, names, j, "v")     # WIDTH j + d < C
    local = KernelFacts(dataclasses.replace(facts.k, body=facts.k.body + tuple(fast)))
    defined = K.defines(fast)
    lets = {x.var: x.expr for x in fast if isinstance(x, K.Let)}

    def at_j(e: K.Expr, value: int) -> K.Expr:     # the copies' names inlined, j a constant
        return K.map_expr(lambda x: at_j(lets[x.name], value) if isinstance(x, K.Var) and x.name in lets
                          else K.cint(value) if x == jv else x, e)
    guards: dict = {}           # (terms, bound) -> {constant: the test}
    for x in K.walk_stmts(fast):
        for e in K.stmt_exprs(x):
            for n in K.walk_expr(e):
                if isinstance(n, K.Bin) and n.op == Op.LT and not (n.b.names & defined) and facts.pure(n.b):
                    terms, c = local.linear(n.a)
                    step = terms.get(jv, 0)         # x grows by `step` a run, never past 2^31 in all
                    if 0 < step and step * last_j + WIDTH < 2 ** 31 and not any(t.names & defined for t in terms):
                        guards.setdefault((frozenset(terms.items()), n.b), {})[c] = n
    tests, dropped = [], set()
    for by_const in guards.values():
        c0 = min(by_const)
        if sorted(by_const) != [c0 + d for d in range(WIDTH)]:
            continue
        first, last = by_const[c0], by_const[c0 + WIDTH - 1]
        lo, hi = at_j(first.a, 0), at_j(last.a, last_j)
        tests.append(K.binop(Op.AND, K.lt(hi, last.b), K.lt(lo, hi)))
        dropped |= set(by_const.values())
    head = K.Comment(f"{loop.var}: runs of {WIDTH} elements a work-item")
    if not tests:
        return (head, run(fast, j))
    true = K.Const("bool", True)

    def fs(x: K.Stmt):          # (a select on a test made true folds as it is rebuilt)
        return x.then if isinstance(x, K.If) and x.cond == true else x
    taken = K.map_stmts(fs, lambda e: true if e in dropped else e, tuple(fast))
    slow = names.fresh(loop.var, "q")
    cond = functools.reduce(lambda a, b: K.binop(Op.AND, a, b), tests)
    return (head, K.If(cond, (run(taken, j),), (run(_run_copies(loop, names, slow, "w"), slow),)))


# ---------------------------------------------------------------- grouping accesses in straight-line code

def _unconditional_loads(e: K.Expr):
    """Loads that evaluating e always evaluates (not under a select's arms or the right of && ||)."""
    if isinstance(e, K.Load):
        yield e
    for c, always in K.strict_children(e):
        if always:
            yield from _unconditional_loads(c)


def _touches(s: K.Stmt, buf: str) -> tuple[bool, bool]:
    """(reads buf, writes buf) anywhere in s."""
    reads, writes = K.all_accesses((s,))
    return buf in reads, buf in writes


def _writes_global(s: K.Stmt, facts: VectorFacts) -> bool:
    return any(b in facts.globals for b in K.all_accesses((s,))[1])


def _reads_written_global(s: K.Stmt, facts: VectorFacts) -> bool:
    return any(b in facts.globals and b in facts.written for b in K.all_accesses((s,))[0])


class _Grouper:
    def __init__(self, facts: VectorFacts):
        self.facts = facts
        self.names = K.Names(facts.k)

    def block(self, stmts) -> tuple:
        out = []
        for s in stmts:
            bodies = {name: self.block(getattr(s, name)) for name, kind in K._child_fields(type(s))
                      if kind == "block"}
            out.append(dataclasses.replace(s, **bodies) if bodies else s)
        out = self.loads(out)
        return tuple(self.stores(out))

    def candidate(self, index: K.Expr) -> bool:
        return self.facts.pure(index)

    def runs(self, occurrences):
        """Aligned runs of WIDTH consecutive elements: (key, first constant) for occurrences
        [(position, buf, index, payload)] grouped by buffer and terms of the index."""
        by_key: dict = {}
        for pos, buf, index, payload in occurrences:
            terms, c = self.facts.linear(index)
            key = (buf, frozenset(terms.items()))
            by_key.setdefault(key, {}).setdefault(c, []).append((pos, index, payload))
        for key, consts in by_key.items():
            r = self.facts.form_residue(dict(key[1]))
            if r is None:
                continue
            for c in sorted(consts):
                if (r + c) % WIDTH == 0 and all(c + d in consts for d in range(WIDTH)):
                    yield key[0], [consts[c + d] for d in range(WIDTH)]

    def load_occurrences(self, stmts) -> list:
        """[(position, buffer, index, load)]: the loads of `stmts` (a straight-line block) that
        a vector load may take, every one evaluated (a checked one by its unchecked index)."""
        occ = []
        for pos, s in enumerate(stmts):
            if isinstance(s, (K.Let, K.DeclVar, K.Assign, K.Store)):
                for e in K.stmt_exprs(s):
                    for ld in _unconditional_loads(e):
                        index = ld.index.index if isinstance(ld.index, K.Checked) else ld.index
                        if self.facts.vectorisable(ld.buf, ld.ty) and self.candidate(index) and \
                                (not isinstance(ld.index, K.Checked) or self.candidate(ld.index.length)):
                            occ.append((pos, ld.buf, index, ld))
        return occ

    def store_occurrences(self, stmts) -> list:
        """[(position, buffer, index, store)]: the stores of `stmts` a vector store may take."""
        return [(pos, s.buf, s.index, s) for pos, s in enumerate(stmts)
                if isinstance(s, K.Store) and self.facts.vectorisable(s.buf, s.value.ty) and self.candidate(s.index)]

    def loads(self, stmts: list) -> list:
        occ = self.load_occurrences(stmts)
        inserts: dict[int, list] = {}
        replace: dict[int, dict] = {}
        for buf, elements in self.runs(occ):
            positions = [pos for element in elements for pos, _, _ in element]
            first, last = min(positions), max(positions)
            if any(self.cuts_load(stmts[p], buf) for p in range(first, last)):
                continue
            checks = {(ld.index.length, ld.index.buf) if isinstance(ld.index, K.Checked) else None
                      for element in elements for _, _, ld in element}
            if len(checks) != 1:
                continue            # checked and unchecked, or checked against different lengths
            k, (_, index, load) = min(((k, hit) for k, element in enumerate(elements) for hit in element
                                       if hit[0] == first), key=lambda x: x[0])
            base = index if k == 0 else K.sub(index, K.cint(k))
            vec = self.names.fresh(buf, "v4")
            parts = tuple(self.names.fresh(buf, f"v4s{d}") for d in range(WIDTH))
            vload = K.VLoad(vec, parts, load.ty, buf, self.facts.vector_index(base))
            check = checks.pop()
            if check is None:
                inserts.setdefault(first, []).append(vload)
                names = parts
            else:
                names = tuple(self.names.fresh(buf, f"e{d}") for d in range(WIDTH))
                inserts.setdefault(first, []).extend(self.checked_group(vload, names, base, check, elements))
            for d, element in enumerate(elements):
                for pos, _, ld in element:
                    replace.setdefault(pos, {})[ld] = K.Var(ld.ty, names[d])
        if not inserts:
            return stmts
        out = []
        for pos, s in enumerate(stmts):
            out.extend(inserts.get(pos, ()))
            table = replace.get(pos)
            out.append(K.map_own_exprs(s, lambda e: table.get(e, e)) if table else s)
        return out

    @staticmethod
    def checked_group(vload: K.VLoad, names: tuple, base: K.Expr, check: tuple, elements) -> list:
        """Bounds-checked loads of a run: one test of the whole run, the vector load where it
        passes, else every check of the run as it was (each recording its own failure),
        all of them at the first load of the run.  The results are in mutable `names`."""
        length, bounds = check
        ty = vload.ty
        zero = K.Const(ty, 0 if ty == "int" else 0.0)
        inside = K.binop("and", K.binop("le", K.cint(0), base),
                         K.binop("and", K.lt(base, length), K.lt(K.cint(WIDTH - 1), K.sub(length, base))))
        fast = (vload,) + tuple(K.Assign(name, K.Var(ty, part)) for name, part in zip(names, vload.vars))
        slow, seen = [], set()
        for d, element in enumerate(elements):
            for _, _, ld in element:
                if (d, ld.index.site) not in seen:
                    seen.add((d, ld.index.site))
                    at = K.Checked("int", K.add(base, K.cint(d)), length, bounds, ld.index.site)
                    slow.append(K.Assign(names[d], K.Load(ty, vload.buf, at)))
        return [K.DeclVar(name, zero) for name in names] + [K.If(inside, fast, tuple(slow))]

    def cuts_load(self, s: K.Stmt, buf: str) -> bool:
        """s writes buf, or (buf being a buffer the kernel writes) any global buffer or waits
        at a barrier (after which another work-item's writes may be seen)."""
        return _touches(s, buf)[1] or (buf in self.facts.written and
                                       (_writes_global(s, self.facts) or K.contains_barrier((s,))))

    def stores(self, stmts: list) -> list:
        occ = self.store_occurrences(stmts)
        edits: dict[int, tuple] = {}
        for buf, elements in self.runs(occ):
            if any(len(element) != 1 for element in elements):
                continue
            hits = [element[0] for element in elements]
            positions = [pos for pos, _, _ in hits]
            first, last = min(positions), max(positions)
            values_read = [K.Let("_", st.value) for _, _, st in hits]
            if any(p not in positions and self.cuts_store(stmts[p], buf) for p in range(first, last + 1)) \
                    or any(p in edits for p in positions) \
                    or any(_touches(x, buf)[0] or _reads_written_global(x, self.facts) for x in values_read):
                continue
            base_hit = min(hits, key=lambda h: h[0])
            d = hits.index(base_hit)
            base = base_hit[1] if d == 0 else K.sub(base_hit[1], K.cint(d))
            values = []
            for pos, _, st in hits:
                value = st.value
                if isinstance(value, K.Const) or isinstance(value, K.Var) and value.name not in self.facts.assigned:
                    edits[pos] = ()
                else:
                    name = self.names.fresh(buf, "s")
                    edits[pos] = (K.Let(name, value),)
                    value = K.Var(value.ty, name)
                values.append(value)
            edits[last] = edits[last] + (K.VStore(buf, self.facts.vector_index(base), tuple(values)),)
        if not edits:
            return stmts
        out = []
        for pos, s in enumerate(stmts):
            out.extend(edits[pos] if pos in edits else (s,))
        return out

    def cuts_store(self, s: K.Stmt, buf: str) -> bool:
        """s reads or writes buf, writes another global buffer, reads one the kernel writes, or
        waits at a barrier."""
        return any(_touches(s, buf)) or _writes_global(s, self.facts) or _reads_written_global(s, self.facts) \
            or K.contains_barrier((s,))


def quad_runs(plan: P.Plan, k: K.Kernel):
    """(facts, accesses) for each whole aligned run of WIDTH loads, or of WIDTH stores, of one
    of k's plainly stored local buffers in one straight-line block, the runs `_Grouper` makes
    vector accesses of (the `skew` pass asks, before the passes between it and this one)."""
    facts = VectorFacts(plan, k, {})        # no global buffers: local ones only
    grouper = _Grouper(facts)
    for block in K.walk_blocks(k.body):
        for occ in (grouper.load_occurrences(block), grouper.store_occurrences(block)):
            for _, elements in grouper.runs(occ):
                yield facts, [payload for element in elements for _, _, payload in element]


PASS = Pass("vectorize", "int4/float4/uchar4 (bools) loads and stores: grid-stride loops of independent elements of global "
                         "buffers in runs of 4 a work-item (then the last n % 4), block-stride loops of more than "
                         "16 rounds in runs of 4 (a partial last run's guards decided once), and 4 unchecked accesses "
                         "a[4k] .. a[4k + 3] of a global or constant-sized local buffer in straight-line code", vectorize)
