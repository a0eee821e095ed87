"""What the kernel IR says about memory: accesses, pointer classes, storage, run-time checks.

`accesses` (and `all_accesses`, `buffers_used`) gives the buffers and pointer
variables a statement reads and writes; `PointerClasses` puts the local
buffers and the pointers of a `while` ping-pong that may denote the same
memory in one class; `copies` and `footprint` say how much storage a buffer
takes.  The bounds-buffer protocol: what a failing run-time check
(`Checked`, `Fail`) records where (BOUNDS_WORDS, `record_failure`, on every
device and in the interpreter), and `hoist_checks`, a host copy of an
expression apart from its divisor checks; `barrier_segments` and `hoist_decls`,
what cutting a block at its barriers needs.  Consumes nodes; builds on
nodes.py, build.py and walk.py.  Not here: which names a statement defines
(walk.binds), the wording of a failure (plan.failure_message).
"""
from __future__ import annotations

from dataclasses import replace

from fcl.base.errors import CompilerBug
from fcl.base.hw import skewed_elements
from fcl.codegen.kir.build import binop, cint, plain_divisor, zero
from fcl.codegen.kir.nodes import (Assign, Atomic, Barrier, Bin, Buffer, Checked, Const, DeclPtr, DeclVar, Expr, Fail, For, Kernel,
                                   Let, Select, Stmt, Store, SwapPtr, VLoad, VStore, _child_fields, expr_children,
                                   holds_check, stmt_exprs)
from fcl.codegen.kir.walk import rebuilt, refold, strict_children, walk_stmts


def barrier_segments(stmts) -> list:
    """[(a stretch of statements, the barrier after it or None)] of a statement list's top
    level (barriers nested in its loops and ifs stay in their stretch)."""
    segs, cur = [], []
    for s in stmts:
        if isinstance(s, Barrier):
            segs.append((tuple(cur), s))
            cur = []
        else:
            cur.append(s)
    segs.append((tuple(cur), None))
    return segs


def hoist_decls(stmts, wanted=None) -> tuple[tuple, tuple]:
    """(declarations, statements): the `Let`s and `DeclVar`s at the top level of `stmts`
    whose names `wanted` holds (all where None), to stand before the block they were in,
    declared with their type's zero, and `stmts` with an `Assign` of each value in its
    place; likewise a `DeclPtr`, moved whole.  So code after the block (a joined `if`'s
    result) or in another block (the next stretch of a cut `if`) may read them."""
    decls, kept = [], []
    for s in stmts:
        if isinstance(s, (Let, DeclVar, DeclPtr)) and (wanted is None or wanted(s.var)):
            if isinstance(s, DeclPtr):
                decls.append(s)
                continue
            value = s.expr if isinstance(s, Let) else s.init
            decls.append(DeclVar(s.var, zero(value.ty)))
            s = Assign(s.var, value)
        kept.append(s)
    return tuple(decls), tuple(kept)


def contains_barrier(stmts) -> bool:
    return any(isinstance(s, Barrier) for s in walk_stmts(stmts))


def accesses(s: Stmt) -> tuple[set[str], set[str]]:
    """(names s itself reads, names it writes): buffers and pointer variables, not those of
    its nested bodies.  A pointer's declaration reads the buffer it starts at; a bounds check
    (`Checked`) reads its buffer."""
    reads = set().union(*(e.buffers_read for e in stmt_exprs(s)))
    writes = set()
    if isinstance(s, (Store, Atomic, VStore)):
        writes.add(s.buf)
    elif isinstance(s, VLoad):
        reads.add(s.buf)
    elif isinstance(s, DeclPtr):
        reads.add(s.init)
    elif isinstance(s, Fail):       # like a `Checked`, an atomic record in the bounds buffer
        reads.add(s.buf)
    return reads, writes


def all_accesses(stmts) -> tuple[set[str], set[str]]:
    """(names read, names written) by `stmts` and everything nested in them."""
    reads, writes = set(), set()
    for s in walk_stmts(stmts):
        r, w = accesses(s)
        reads |= r
        writes |= w
    return reads, writes


def buffers_used(stmts) -> set[str]:
    """Names of buffers and pointer variables read or written in `stmts`."""
    reads, writes = all_accesses(stmts)
    return reads | writes


def used_outside(stmts, inner) -> set[str]:
    """Names of buffers and pointer variables read or written by the statements of `stmts`
    (nested ones included) that are not statements of `inner`, a body among them (a loop's
    own bounds count as outside its body): what a loop's body has to itself is
    `buffers_used(body) - used_outside(kernel body, body)`."""
    own = {id(s) for s in walk_stmts(inner)}
    out = set()
    for s in walk_stmts(stmts):
        if id(s) not in own:
            reads, writes = accesses(s)
            out |= reads | writes
    return out


def without_unused_locals(k: Kernel) -> Kernel:
    """k less the local buffers that no statement uses (a device gives a work-group only so
    much local memory), after the stores to local buffers that nothing reads (an array
    forced and never read; no pointer, atomic or check of the stored value or place: a
    check may be the evaluator's error) are gone.  (A per-work-item copy that nothing read,
    kept, made PoCL's optimising build compute a wrong value beside it: random-tester seed
    2782, tests/programs/fuzz_regressions.fcl.)"""
    pruned = _without_dead_local_stores(k)
    used = buffers_used(pruned.body)
    # a size the host computes is checked when it allocates the buffer (a negative length is
    # the evaluator's error): such a buffer stays, its stores gone
    used |= {b.name for b in k.locals_ if not isinstance(b.size, Const)} & buffers_used(k.body)
    k = pruned
    kept = tuple(b for b in k.locals_ if b.name in used)
    return k if len(kept) == len(k.locals_) else replace(k, locals_=kept)


def _without_dead_local_stores(k: Kernel) -> Kernel:
    classes = PointerClasses(k)
    read = {classes.find(name) for name in all_accesses(k.body)[0]}
    read |= {classes.find(s.buf) for s in walk_stmts(k.body) if isinstance(s, Atomic)}
    # the buffers a while's ping-pong points at (a class of more than one name) stay as they are
    read |= {classes.find(name) for name in classes.parent if classes.find(name) != name}
    dead = {b.name for b in k.locals_ if classes.find(b.name) not in read}
    if not dead:
        return k

    def checked(s: Stmt) -> bool:
        return any(holds_check(e) for e in stmt_exprs(s))

    def prune(stmts) -> tuple:
        out = []
        for s in stmts:
            if isinstance(s, Store) and s.buf in dead and not checked(s):
                continue
            changes = {name: prune(getattr(s, name)) for name, kind in _child_fields(type(s)) if kind == "block"}
            if isinstance(s, For) and s.body and not changes["body"] and not checked(s):
                continue        # a loop left empty
            out.append(rebuilt(s, changes) if changes else s)
        return tuple(out)
    body = prune(k.body)
    return k if body == k.body else replace(k, body=body)


class PointerClasses:
    """A kernel's local buffers and the pointer variables of its `while` ping-pongs
    (`DeclPtr`, `SwapPtr`) in classes of names that may denote the same memory: a
    union-find over names (`find` gives a class's representative)."""

    def __init__(self, k: Kernel):
        self.parent = {b.name: b.name for b in k.locals_}
        for s in walk_stmts(k.body):
            if isinstance(s, DeclPtr):
                self.union(s.var, s.init)
            elif isinstance(s, SwapPtr):
                self.union(s.a, s.b)

    def find(self, x: str) -> str:
        while self.parent.get(x, x) != x:
            x = self.parent[x]
        return x

    def union(self, a: str, b: str):
        ra, rb = self.find(a), self.find(b)
        self.parent.setdefault(a, a)
        self.parent.setdefault(b, b)
        if ra != rb:
            self.parent[ra] = rb


# ---------------------------------------------------------------- storage

def copies(b: Buffer, block_size: int, warp_size: int) -> int:
    """How many copies of one size a local buffer holds: one, one per warp, or one per work-item."""
    return {"": 1, "warp": max(1, block_size // warp_size), "thread": block_size}[b.per]


def plain_local(b: Buffer) -> bool:
    """A local buffer of a size known at compile time whose element i is stored at i (not
    skewed): vector accesses may reach it (`passes.vectorize`; the renderer declares it 16-byte
    aligned where they do)."""
    return b.space == "local" and isinstance(b.size, Const) and not b.layout


def footprint(b: Buffer, elems: int) -> int:
    """Elements of storage a buffer of `elems` logical elements (all copies) takes."""
    return skewed_elements(elems) if b.layout == "skew32" else elems


# ---------------------------------------------------------------- run-time checks

# What a bounds buffer (the plan's run-time checks) holds, BOUNDS_WORDS ints, zero when
# allocated: the bits of the sites that failed (bit min(site, BOUNDS_BIT_CAP)), then the site
# of the first failure recorded and up to CHECK_VALUES values it recorded (a `Checked`: the
# index and the length; a `Fail`: its values), from which plan.failure_message words the error.
CHECK_VALUES = 4
BOUNDS_WORDS = 2 + CHECK_VALUES
BOUNDS_BIT_CAP = 30


class CheckFailed(Exception):
    """A run-time check that failed while evaluating a host expression: its site and values."""

    def __init__(self, site: int, *values: int):
        super().__init__(site, *values)
        self.site, self.values = site, values


def record_failure(err, site: int, *values: int):
    """What a failing check does to its bounds buffer `err` (a sequence of BOUNDS_WORDS
    ints), on every device and in the interpreter: set the site's bit; the first failure
    also records its site and values."""
    if len(values) > CHECK_VALUES:
        raise CompilerBug(f"a check records {len(values)} values, at most {CHECK_VALUES}")
    old = int(err[0])
    err[0] = old | (1 << min(site, BOUNDS_BIT_CAP))
    if old == 0:
        err[1] = site
        for k, v in enumerate(values):
            err[2 + k] = v


def hoist_checks(e: Expr) -> tuple[Expr, list] | None:
    """(e without its divisor checks, each as (the condition under which it fails, its
    Checked)), for a host copy of e whose checks the kernel makes apart; None where e holds
    another run-time check or one that only some of its evaluations reach (an arm of a
    select, the right side of && and ||).  Same value: a checked divisor b is b (`a / 0` is
    0 either way)."""
    found = []

    def strip(x: Expr) -> Expr:
        d = plain_divisor(x)
        if d is not x:
            found.append((binop("eq", d, cint(0)), x.b))
            return strip(d)
        if isinstance(x, Checked):
            raise _Unhoistable
        if isinstance(x, Select) or isinstance(x, Bin) and x.op in ("and", "or"):
            if holds_check(x):
                raise _Unhoistable
            return x
        children = {name: (strip(getattr(x, name)) if kind == "expr" else tuple(strip(c) for c in getattr(x, name)))
                    for name, kind in _child_fields(type(x)) if kind != "block"}
        return refold(x, **children) if children else x
    try:
        return strip(e), found
    except _Unhoistable:
        return None


def checks_made(e: Expr) -> set:
    """The run-time checks that every evaluation of e makes (not those in an arm of a select
    or the right side of && and ||, which only some reach: `strict_children`): a bounds
    check as its (index, length), a checked divisor as itself."""
    made = set()
    stack = [e]
    while stack:
        x = stack.pop()
        if plain_divisor(x) is not x:
            made.add(x)
            stack.append(x.a)
            continue
        if isinstance(x, Checked):
            made.add((x.index, x.length))
        stack.extend(c for c, always in strict_children(x) if always)
    return made


def checks_covered(e: Expr, by: Expr) -> bool:
    """Whether every run-time check in e is one that evaluating `by` makes anyway (the same
    index into the same length, the same checked divisor), so evaluating e as well cannot
    fail where `by` does not."""
    made = checks_made(by)

    def covered(x: Expr) -> bool:
        if not holds_check(x):
            return True
        if plain_divisor(x) is not x:
            return x in made and covered(x.a)
        if isinstance(x, Checked) and (x.index, x.length) not in made:
            return False
        return all(covered(c) for c in expr_children(x))
    return covered(e)


class _Unhoistable(Exception):
    pass
