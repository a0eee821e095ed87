"""The kernel-IR interpreter: runs mapped kernels on numpy arrays, as OpenCL would.

Consumes a kernel of a plan after `map_hw` (only `For`, `If`, `Let`... over
`HwId`s), the number of work-groups, the global arrays it takes (numpy, in
storage dtypes: bool as uint8) and its host scalars; writes the arrays in
place.  Each work-item is a Python generator that yields at a barrier; a
work-group runs its items in lock-step from barrier to barrier and fails when
they disagree on the barrier (divergence).  Scalars follow OpenCL C exactly as
the printer spells them (fcl.base.scalars: 32-bit wrap, x/0 = 0), and the proven
forms (`div_nn`, `add_nw`, ...) check at run time that their proof held.
Any violation (out-of-bounds access, read of an undefined name, divergent
barrier, broken proof) is a `CompilerBug`: a pass is wrong.

Used by `fcl.runtime.emulate` to run whole plans without a device, so passes
are tested against the evaluator.  Not a model of timing or of races:
work-items between two barriers run one after another.
"""
from __future__ import annotations

import numpy as np

from fcl.base import scalars as S
from fcl.base.errors import CompilerBug
from fcl.base.hw import STORAGE_DTYPES, skewed_index
from fcl.base.operators import COMPARISONS, OPERATORS
from fcl.codegen import kir as K

# kir.Atomic's operations on the old value and the operand
ATOMIC = {"add": lambda a, b: a + b, "min": min, "max": max, "and": lambda a, b: a & b,
          "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b, "xchg": lambda a, b: b}

MAX_LOOP_STEPS = 1 << 22
Op = K.Op


def _div(a, b):
    return 0 if b == 0 else (S.int_neg(a) if b == -1 else S.int_div(a, b))


def _mod(a, b):
    return 0 if b in (0, -1) else S.int_rem(a, b)


def _proven(general, check, what):
    def f(a, b):
        if not check(a, b):
            raise CompilerBug(f"a pass proved {what}, but {a}, {b} break it")
        return general(a, b)
    return f


def _no_wrap(fn, what):
    def f(a, b):
        exact = {"add": a + b, "sub": a - b, "mul": a * b}[what]
        if not S.INT_MIN <= exact <= S.INT_MAX:
            raise CompilerBug(f"a pass proved that {a} {what} {b} does not wrap")
        return fn(a, b)
    return f


INT_OPS = {
    **{Op(name): op.on_ints for name, op in OPERATORS.items() if op.kind in ("arith", "bits")},
    Op.DIV: _div, Op.MOD: _mod,         # as fcl_div and fcl_mod in the OpenCL: no trap
    Op.DIV_NN: _proven(_div, lambda a, b: a >= 0 and b > 0, "a non-negative division"),
    Op.MOD_NN: _proven(_mod, lambda a, b: a >= 0 and b > 0, "a non-negative remainder"),
    Op.ADD_NW: _no_wrap(S.int_add, "add"), Op.SUB_NW: _no_wrap(S.int_sub, "sub"),
    Op.MUL_NW: _no_wrap(S.int_mul, "mul"),
}
CMP_OPS = {Op(name): OPERATORS[name].on_ints for name in COMPARISONS}
CONVERSIONS = {name: getattr(S, name) for name in ("i2d", "i2f", "d2i", "f2i", "f2d", "d2f", "b2i")}

# opencl.BIT_CASTS: a scalar's bits as ints and back (ints here are Python ints in int32's range)
BIT_CASTS = {
    "as_int": lambda x: int(np.float32(x).view(np.int32)),
    "as_float": lambda w: S.F32(np.int32(w).view(np.float32)),
    "lo_bits": lambda x: S.wrap(int(np.float64(x).view(np.int64)) & 0xFFFFFFFF),
    "hi_bits": lambda x: int(np.float64(x).view(np.int64) >> 32),
    "pack": lambda flag, word: (flag << 32) | (word & 0xFFFFFFFF),
    "hi_word": lambda x: S.wrap(x >> 32),
    "lo_word": lambda x: S.wrap(x & 0xFFFFFFFF),
    "as_double": lambda lo, hi: float(np.uint64(((hi & 0xFFFFFFFF) << 32) | (lo & 0xFFFFFFFF)).view(np.float64)),
}


# a constant's value or a buffer element (numpy scalar) as the interpreter's value of its type
AS_VALUE = {"int": int, "float": S.F32, "double": float, "bool": bool, "long": int}


def const_value(e: K.Const):
    return AS_VALUE[e.ty](e.value)


class WorkItem:
    __slots__ = ("env", "hw", "private")

    def __init__(self, hw: dict, env: dict, private: dict):
        self.hw = hw
        self.env = env
        self.private = private


class KernelRun:
    """One launch of one kernel: `run()` executes every work-group in turn."""

    def __init__(self, kernel: K.Kernel, groups: int, block_size: int, warp_size: int,
                 arrays: dict, env: dict, local_sizes: dict):
        self.k = kernel
        self.groups = groups
        self.bs = block_size
        self.ws = warp_size
        self.arrays = arrays            # global buffer name -> numpy array
        self.env = env                  # host scalars the kernel takes
        self.local_sizes = local_sizes  # local buffer name -> elements (all copies, layout included)
        self.types = {b.name: b.ty for b in kernel.locals_ + kernel.privates}
        self.compiled = {}              # id of an expression of the kernel -> compile(it)

    def run(self):
        for g in range(self.groups):
            self.group(g)

    def group(self, g: int):
        local = {b.name: np.zeros(max(1, self.local_sizes[b.name]), STORAGE_DTYPES[b.ty]) for b in self.k.locals_}
        items = []
        for lid in range(self.bs):
            hw = {"lid": lid, "wid": lid // self.ws, "lane": lid % self.ws, "group_id": g,
                  "num_groups": self.groups, "global_id": g * self.bs + lid, "global_size": self.groups * self.bs}
            private = {b.name: np.zeros(max(1, b.size.value), STORAGE_DTYPES[b.ty]) for b in self.k.privates}
            items.append(WorkItem(hw, dict(self.env), {**local, **private}))
        runs = [self.block(self.k.body, wi) for wi in items]
        while True:
            stops = [next(r, None) for r in runs]
            if all(s is None for s in stops):
                return
            if len(set(stops)) != 1:
                raise CompilerBug(f"kernel {self.k.name}: work-items of group {g} reach different barriers "
                                  f"(or some finish while others wait)")

    # ------------------------------------------------------------ statements

    def block(self, stmts, wi: WorkItem):
        for s in stmts:
            t = type(s)
            if t is K.Let or t is K.DeclVar:
                wi.env[s.var] = self.ev(s.expr if t is K.Let else s.init, wi)
            elif t is K.Assign:
                wi.env[s.var] = self.ev(s.expr, wi)
            elif t is K.Store:
                self.store(s.buf, self.ev(s.index, wi), self.ev(s.value, wi), wi)
            elif t is K.VLoad:
                self.vload(s, wi)
            elif t is K.VStore:
                arr, w = self.array(s.buf, wi), len(s.values)
                base = w * self.ev(s.index, wi)
                values = [self.ev(v, wi) for v in s.values]
                for k, value in enumerate(values):
                    self.check_index(s.buf, arr, base + k)
                    arr[base + k] = value
            elif t is K.If:
                yield from self.block(s.then if self.ev(s.cond, wi) else s.else_, wi)
            elif t is K.For:
                yield from self.for_(s, wi)
            elif t is K.Loop:
                yield from self.loop(s, wi)
            elif t is K.Barrier:
                yield id(s)
            elif t is K.Fail:
                K.record_failure(self.array(s.buf, wi), s.site, *(self.ev(v, wi) for v in s.values))
            elif t is K.Atomic and s.op == "fadd":
                arr, i = self.array(s.buf, wi), self.ev(s.index, wi)
                self.check_index(s.buf, arr, i)
                arr[i] = arr.dtype.type(arr[i] + arr.dtype.type(self.ev(s.value, wi)))
            elif t is K.Atomic:
                arr, i = self.array(s.buf, wi), self.ev(s.index, wi)
                self.check_index(s.buf, arr, i)
                old, value = int(arr[i]), self.ev(s.value, wi)
                new = ATOMIC[s.op](old, value)
                arr[i] = new if arr.dtype == np.int64 else S.wrap(new)
                if s.var:
                    wi.env[s.var] = old
            elif t is K.DeclPtr:
                wi.env[s.var] = ("ptr", s.init)
            elif t is K.SwapPtr:
                wi.env[s.a], wi.env[s.b] = wi.env[s.b], wi.env[s.a]
            elif t is not K.Comment:
                raise CompilerBug(f"the interpreter runs mapped kernel IR; found {t.__name__}")

    def for_(self, s: K.For, wi: WorkItem):
        i = self.ev(s.start, wi)
        steps = 0
        while i < self.ev(s.stop, wi):
            wi.env[s.var] = i
            yield from self.block(s.body, wi)
            i = S.int_add(i, self.ev(s.step, wi))
            steps += 1
            if steps > MAX_LOOP_STEPS:
                raise CompilerBug(f"loop over {s.var} does not end")

    def loop(self, s: K.Loop, wi: WorkItem):
        for _ in range(MAX_LOOP_STEPS):
            yield from self.block(s.head, wi)
            if not self.ev(s.cond, wi):
                return
            yield from self.block(s.body, wi)
        raise CompilerBug("a kernel loop does not end")

    # ------------------------------------------------------------ memory

    def array(self, name: str, wi: WorkItem):
        target = wi.env.get(name)
        if isinstance(target, tuple):
            name = target[1]
        if name in wi.private:
            return wi.private[name]
        if name in self.arrays:
            return self.arrays[name]
        raise CompilerBug(f"kernel {self.k.name} accesses `{name}`, which it was not given")

    def check_index(self, name: str, arr, i: int):
        if not 0 <= i < len(arr):
            raise CompilerBug(f"kernel {self.k.name}: index {i} out of bounds of `{name}` ({len(arr)} elements)")

    def store(self, name: str, i: int, value, wi: WorkItem):
        arr = self.array(name, wi)
        self.check_index(name, arr, i)
        arr[i] = value

    def vload(self, s: K.VLoad, wi: WorkItem):
        """The elements of one vector, bound to the names of its components (and the
        vector's own name to the tuple)."""
        arr, w = self.array(s.buf, wi), len(s.vars)
        base = w * self.ev(s.index, wi)
        values = []
        for k, name in enumerate(s.vars):
            self.check_index(s.buf, arr, base + k)
            values.append(AS_VALUE[s.ty](arr[base + k]))
            wi.env[name] = values[-1]
        wi.env[s.var] = tuple(values)

    # ------------------------------------------------------------ expressions

    def ev(self, e: K.Expr, wi: WorkItem):
        """The value of expression `e` for work-item `wi`."""
        f = self.compiled.get(id(e))
        if f is None:
            f = self.compiled[id(e)] = self.compile(e)
        return f(wi)

    def compile(self, e: K.Expr):
        """`e` as a Python function of the work-item (each expression of the kernel is
        translated once a launch: the operators looked up once, not at every evaluation)."""
        t, c = type(e), self.compile
        if t is K.Var:
            name, kernel = e.name, self.k.name

            def var(wi):
                try:
                    return wi.env[name]
                except KeyError:
                    raise CompilerBug(f"kernel {kernel} reads `{name}` before defining it") from None
            return var
        if t is K.Const:
            value = const_value(e)
            return lambda wi: value
        if t is K.Bin:
            return self.binary(e)
        if t is K.HwId:
            name = e.name
            return lambda wi: wi.hw[name]
        if t is K.Load:
            buf, index, convert, array, check = e.buf, c(e.index), AS_VALUE[e.ty], self.array, self.check_index

            def load(wi):
                arr, i = array(buf, wi), index(wi)
                check(buf, arr, i)
                return convert(arr[i])
            return load
        if t is K.Select:
            cond, a, b = c(e.cond), c(e.a), c(e.b)
            return lambda wi: a(wi) if cond(wi) else b(wi)
        if t is K.Un:
            a = c(e.a)
            if e.op == Op.NOT:
                return lambda wi: not a(wi)
            neg = {"int": S.int_neg, "float": S.float_neg, "double": S.double_neg}[e.ty]
            return lambda wi: neg(a(wi))
        if t is K.Call:
            return self.call(e)
        if t is K.Checked:
            index, length, buf, site, array = c(e.index), c(e.length), e.buf, e.site, self.array

            def checked(wi):
                i, n = index(wi), length(wi)
                if 0 <= i < n:
                    return i
                K.record_failure(array(buf, wi), site, i, n)
                return 0
            return checked
        raise CompilerBug(f"cannot interpret {t.__name__}")

    def binary(self, e: K.Bin):
        op, a, b = e.op, self.compile(e.a), self.compile(e.b)
        if op == Op.AND:
            return lambda wi: bool(a(wi)) and bool(b(wi))
        if op == Op.OR:
            return lambda wi: bool(a(wi)) or bool(b(wi))
        if op in CMP_OPS:
            fn = CMP_OPS[op]
        elif e.a.ty == "int":
            fn = INT_OPS[op]
        else:
            fn = getattr(S, f"{e.ty}_{op}")
        return lambda wi: fn(a(wi), b(wi))

    def call(self, e: K.Call):
        args = [self.compile(a) for a in e.args]
        if e.fn in CONVERSIONS:
            fn = CONVERSIONS[e.fn]
        elif e.fn == "skew":
            fn = skewed_index
        elif e.fn in BIT_CASTS:
            fn = BIT_CASTS[e.fn]
        else:
            fn = getattr(S, f"{e.ty}_{e.fn}")
        if len(args) == 1:
            (a,) = args
            return lambda wi: fn(a(wi))
        return lambda wi: fn(*[a(wi) for a in args])
