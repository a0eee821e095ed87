"""The `skew` pass: a bank-conflict-free layout for local buffers read with a lane stride.

`skew_local_memory` stores element i of a chosen local buffer at i + i/32, so
a warp that reads a column of a 32-wide tile (stride 32) hits 32 different
banks instead of one; contiguous accesses stay conflict-free.  A buffer is
chosen when it holds more than 32 elements and some access index multiplies
a lane-varying value (one that differs between neighbouring work-items: the
local or global id, a loop counter started from one, or a value computed from
these) by a non-constant or by an even constant: the strides that put several
lanes of a warp on one bank (32 on one for a multiple of 32, 8 for the
per-work-item runs of 8 in the prelude's reduce and scan, 2 for a tree step
reading a[2i] and a[2i+1]); and when the lowering marks it `scattered`: written
by neighbouring work-items at places the data decides, about as far apart as
their shares of the data (`packThreads`'s parts, each from its start: 16 words
apart for half of 32 kept; on an H200, a filter of 2^26 ints took 0.148 ms
with that buffer skewed against 0.160 plain).  Contiguous trees (`sumGrid`) keep the plain layout and do not
pay for the skew, and so do accesses at a lane stride of exactly 4 that come as whole aligned
runs a[4q] .. a[4q + 3] in one straight-line block (`quad_accesses`): the `vectorize` pass
makes each run one 16-byte access, and a warp's 16-byte accesses at consecutive places are
conflict-free (matmulF's reads of its tile of b, 4 columns a work-item).  Buffers a `while` ping-pongs between (pointer variables
and their swaps) get one decision together, applied through the pointers too,
so the layout is invisible to the program.  Runs after `map_hw`.
"""
from __future__ import annotations

import dataclasses

from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.passes.base import Pass, replace_kernels
from fcl.codegen.passes.vectorize import quad_runs

BANKS = 32
LANE_VARYING = frozenset({"lid", "lane", "global_id"})


def skew_local_memory(kp: P.Plan) -> P.Plan:
    return replace_kernels(kp, lambda k: _skew_kernel(kp, k))


def _big_enough(b: K.Buffer) -> bool:
    return b.space == "local" and not (isinstance(b.size, K.Const) and b.size.value <= BANKS and not b.per)


def lane_varying_names(stmts) -> set[str]:
    """Names whose value differs between neighbouring work-items (in program order)."""
    varying: set[str] = set()
    for s in K.walk_stmts(stmts):
        if isinstance(s, K.For) and _varies(s.start, varying):
            varying.add(s.var)
        elif isinstance(s, (K.Let, K.Assign)) and _varies(s.expr, varying):
            varying.add(s.var)
        elif isinstance(s, K.DeclVar) and _varies(s.init, varying):
            varying.add(s.var)
    return varying


def _varies(e: K.Expr, varying: set) -> bool:
    return any((isinstance(n, K.HwId) and n.name in LANE_VARYING) or (isinstance(n, K.Var) and n.name in varying)
               for n in K.walk_expr(e))


def lane_strided(index: K.Expr, varying: set, lanes: "_Lanes") -> bool:
    """True when `index` scales a lane-varying value by a non-constant or an even constant:
    a stride of 2^k * odd puts gcd(2^k, 32) lanes of a warp on each bank it uses (a
    work-item's run of 8 consecutive elements, lid * 8 + q: 8 lanes a bank); the skewed
    layout spreads a power-of-two stride over all 32 banks.  A value with at most two
    values across a warp (`lanes.few`) scaled by a constant that is not a multiple of 32
    is left alone: its two addresses are on two banks, and every other lane reads one of
    them (a broadcast), as a tile row index `lid / 16 * 16` does."""
    for n in K.walk_expr(index):
        if isinstance(n, K.Bin) and K.GENERAL_OP.get(n.op, n.op) == K.Op.MUL:
            for x, y in ((n.a, n.b), (n.b, n.a)):
                if _varies(x, varying) and (not isinstance(y, K.Const) or (y.value % 2 == 0 and y.value)):
                    if not (isinstance(y, K.Const) and y.value % BANKS and lanes.few(x)):
                        return True
        if isinstance(n, K.Bin) and n.op == K.Op.SHL and _varies(n.a, varying):
            if not isinstance(n.b, K.Const) or n.b.value >= 1:
                return True
    return False


class _Lanes:
    """Which lane-varying values of a kernel take at most two values across a warp."""

    def __init__(self, k: K.Kernel, varying: set):
        self.varying = varying
        self.lets = {s.var: s.expr for s in K.walk_stmts(k.body) if isinstance(s, K.Let)}
        self.loops = {s.var: s for s in K.walk_stmts(k.body) if isinstance(s, K.For)}

    def few(self, x: K.Expr) -> bool:
        """x is a value of lane stride 1 divided by at least 16 (shifted right by at least 4),
        plus values the same across a warp: lanes 0..31 of a warp see at most two
        consecutive values."""
        x = self.lets.get(x.name, x) if isinstance(x, K.Var) else x
        if isinstance(x, K.Bin) and K.GENERAL_OP.get(x.op, x.op) == K.Op.ADD:
            a, b = _varies(x.a, self.varying), _varies(x.b, self.varying)
            return a != b and self.few(x.a if a else x.b)
        if isinstance(x, K.Bin) and isinstance(x.b, K.Const):
            op = K.GENERAL_OP.get(x.op, x.op)
            if op == K.Op.DIV and x.b.value >= BANKS // 2 or op == K.Op.SHR and 4 <= x.b.value < 32:
                return self.unit(x.a)
        return False

    def unit(self, x: K.Expr, depth: int = 0) -> bool:
        """x is the lane (or local or global id) plus values that are the same across a warp."""
        if depth > 8:
            return False
        if isinstance(x, K.Bin) and K.GENERAL_OP.get(x.op, x.op) == K.Op.ADD:
            a, b = _varies(x.a, self.varying), _varies(x.b, self.varying)
            return a != b and self.unit(x.a if a else x.b, depth + 1)
        if isinstance(x, K.HwId):
            return x.name in LANE_VARYING
        if isinstance(x, K.Var) and x.name in self.lets:
            return self.unit(self.lets[x.name], depth + 1)
        if isinstance(x, K.Bin) and isinstance(x.b, K.Const) and x.b.value > 0 and (
                x.op == K.Op.BAND and x.b.value & (x.b.value + 1) == 0 or
                K.GENERAL_OP.get(x.op, x.op) == K.Op.MOD and x.b.value & (x.b.value - 1) == 0):
            # lane & 31, lid % 8: runs of consecutive values across a warp, each run from a
            # multiple of a power of two (the lanes of one place read it at once)
            return self.unit(x.a, depth + 1)
        loop = self.loops.get(x.name) if isinstance(x, K.Var) else None
        return (loop is not None and isinstance(loop.step, K.Const) and loop.step.value % BANKS == 0
                and self.unit(loop.start, depth + 1))


def _classes(k: K.Kernel) -> dict[str, str]:
    """Buffer or pointer name -> a representative of the buffers it may point to."""
    classes = K.PointerClasses(k)
    return {name: classes.find(name) for name in classes.parent}


def quad_accesses(kp: P.Plan, k: K.Kernel, varying: set, lanes: _Lanes) -> set[int]:
    """The ids of the loads and stores of k's local buffers that the `vectorize` pass can make
    16-byte accesses at a lane stride of 4 (consecutive work-items, consecutive vectors): whole
    aligned runs of 4 consecutive elements in one straight-line block whose index is 4 times a
    value of lane stride 1 (`_Lanes.unit`) plus values the same across a warp."""
    out: set[int] = set()
    for facts, nodes in quad_runs(kp, k):
        terms, _ = facts.linear(nodes[0].index)
        moving = [(t, c) for t, c in terms.items() if _varies(t, varying)]
        if len(moving) == 1 and moving[0][1] == 4 and lanes.unit(moving[0][0]):
            out.update(id(n) for n in nodes)
    return out


def _skew_kernel(kp: P.Plan, k: K.Kernel) -> K.Kernel:
    cls = _classes(k)
    varying = lane_varying_names(k.body)
    lanes = _Lanes(k, varying)
    quads = quad_accesses(kp, k, varying, lanes)
    strided = set()
    for s in K.walk_stmts(k.body):
        if isinstance(s, (K.Store, K.Atomic)) and s.buf in cls and id(s) not in quads \
                and lane_strided(s.index, varying, lanes):
            strided.add(cls[s.buf])
        for e in K.stmt_exprs(s):
            for n in K.walk_expr(e):
                if isinstance(n, K.Load) and n.buf in cls and id(n) not in quads \
                        and lane_strided(n.index, varying, lanes):
                    strided.add(cls[n.buf])
    strided |= {cls[b.name] for b in k.locals_ if b.role == "scattered" and b.name in cls}
    small = {cls[b.name] for b in k.locals_ if not _big_enough(b)}
    chosen = strided - small
    skewed = {name for name, c in cls.items() if c in chosen}
    if not skewed:
        return k

    def skew(i: K.Expr) -> K.Expr:
        return K.Call("int", "skew", (i,))

    def fe(e: K.Expr) -> K.Expr:
        if isinstance(e, K.Load) and e.buf in skewed:
            return K.Load(e.ty, e.buf, skew(e.index))
        return e

    def fs(s: K.Stmt) -> K.Stmt:
        if isinstance(s, (K.Store, K.Atomic)) and s.buf in skewed:
            return dataclasses.replace(s, index=skew(s.index))
        return s

    locals_ = tuple(dataclasses.replace(b, layout="skew32") if b.name in skewed else b for b in k.locals_)
    return dataclasses.replace(k, body=K.map_stmts(fs, fe, k.body, lambda e: not skewed.isdisjoint(e.buffers_read)),
                               locals_=locals_)


PASS = Pass("skew", "skewed layout (i + i/32) for local buffers of more than 32 elements read with a "
                    "lane stride: no bank conflicts", skew_local_memory)
