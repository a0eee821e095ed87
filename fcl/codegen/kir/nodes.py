"""The kernel IR: what `lower` produces, what passes rewrite and `opencl` renders.

Expressions are side-effect free trees over scalar types ("int", "float",
"double", "bool").  Statements are per-work-item code plus the two
parallel forms that name a level:

* `ParFor(level, var, count, body)`: the elements 0..count-1 are shared out
  over the work-items of one unit of `level` (thread: a sequential loop; warp:
  strided by lane; block: strided by local id; grid: strided by global id);
  the body is thread-level code.
* `PartFor(level, var, count, body)`: parts 0..count-1 are shared out over the
  sub-units of one unit of `level` (grid: work-groups, with block
  virtualisation; block: warps, in a loop whose trip count is uniform over the
  work-group so that barriers inside stay convergent; warp: lanes).

Buffers carry their memory space, element type, size and the `force`/`while`
they hold.  The smart constructors (`add`, `mul`, ...) fold constants, so
sizes that are known at compile time stay `Const`.
"""
from __future__ import annotations

import dataclasses
import functools
import operator
import typing
from dataclasses import dataclass

from fcl.base import scalars
from fcl.base.errors import CompilerBug
from fcl.base.hw import Level, Name, ScalarType, Space

LEVELS = tuple(Level)      # LEVELS[depth] is the Level of that depth


class Op(Name):
    """Operators of `Bin` and `Un`.  The *_NN forms are C's own operators, valid where
    a pass has proven both operands non-negative and the divisor positive; the *_NW
    forms are plain C arithmetic where a pass has proven that the result cannot wrap."""
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    MOD = "mod"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    EQ = "eq"
    NE = "ne"
    AND = "and"
    OR = "or"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"
    SHL = "shl"
    SHR = "shr"
    DIV_NN = "div_nn"
    MOD_NN = "mod_nn"
    ADD_NW = "add_nw"
    SUB_NW = "sub_nw"
    MUL_NW = "mul_nw"
    NEG = "neg"
    NOT = "not"


# a proven form -> the general operation it computes
GENERAL_OP = {Op.DIV_NN: Op.DIV, Op.MOD_NN: Op.MOD, Op.ADD_NW: Op.ADD, Op.SUB_NW: Op.SUB,
              Op.MUL_NW: Op.MUL}


def _setfield(obj, name: str, value):
    object.__setattr__(obj, name, value)


@functools.cache
def _members(names: type[Name]) -> dict[str, Name]:
    return {m.value: m for m in names}


def _member(names: type[Name], value) -> Name:
    """`value` as a member of `names` (it may be given as the plain string; looked up in a dict:
    calling the enumeration costs more than building a node)."""
    if type(value) is names:
        return value
    member = _members(names).get(value)
    return names(value) if member is None else member


def _as_member(obj, name: str, names: type[Name]):
    """Field `name` of a frozen node as a member of `names` (it may be given as the plain string)."""
    value = getattr(obj, name)
    if type(value) is not names:
        _setfield(obj, name, _member(names, value))


class node_property:
    """A value a node works out once and keeps (in its `__dict__`): functools.cached_property
    without the lock that Python 3.11's takes on every first access."""

    def __init__(self, f):
        self.f = f
        self.__doc__ = f.__doc__

    def __set_name__(self, owner, name: str):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.f(obj)
        return value


# ---------------------------------------------------------------- expressions

@dataclass(frozen=True)
class Expr:
    """An expression node.  Being immutable, a node works out what passes ask of every node
    (`names`, `buffers_read`) once and keeps it, so a pass that asks it of each node of a
    tree costs the tree's size, not its size times its depth."""
    ty: ScalarType

    def __post_init__(self):
        if type(self.ty) is not ScalarType:
            _setfield(self, "ty", _member(ScalarType, self.ty))

    @node_property
    def names(self) -> frozenset[str]:
        """The variables the expression reads."""
        return frozenset().union(*(c.names for c in expr_children(self)))

    @node_property
    def buffers_read(self) -> frozenset[str]:
        """The buffers (and pointer variables) the expression reads: those of its loads, and
        the bounds buffer of each check (`Checked`)."""
        return frozenset().union(*(c.buffers_read for c in expr_children(self)))

    @node_property
    def kinds(self) -> int:
        """The kinds of node in the tree, as bits (`kind_bits`): a pass that rewrites some
        kinds only leaves a tree without them as it is."""
        bits = _KIND_BIT[self.op if isinstance(self, (Bin, Un)) else type(self)]
        for c in expr_children(self):
            bits |= c.kinds
        return bits

    def __getstate__(self):
        """Pickling keeps the fields, not what the node worked out from them (a kept hash
        holds only in the process that worked it out: strings hash differently in each)."""
        return {name: self.__dict__[name] for name in _field_names(type(self))}


@dataclass(frozen=True)
class Const(Expr):
    value: object


@dataclass(frozen=True)
class Var(Expr):
    name: str

    @node_property
    def names(self) -> frozenset[str]:
        return frozenset((self.name,))


@dataclass(frozen=True)
class Bin(Expr):
    """op: an `Op` (add sub mul div mod lt le gt ge eq ne and or band bor bxor shl shr...)."""
    op: Op
    a: Expr
    b: Expr

    def __post_init__(self):
        super().__post_init__()
        if type(self.op) is not Op:
            _setfield(self, "op", _member(Op, self.op))


@dataclass(frozen=True)
class Un(Expr):
    """op: neg not."""
    op: Op
    a: Expr

    def __post_init__(self):
        super().__post_init__()
        if type(self.op) is not Op:
            _setfield(self, "op", _member(Op, self.op))


@dataclass(frozen=True)
class Call(Expr):
    """A built-in function: sqrt exp log sin cos floor min max abs, conversions i2d...b2i."""
    fn: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Select(Expr):
    """`c ? a : b`; only the chosen side is evaluated."""
    cond: Expr
    a: Expr
    b: Expr


@dataclass(frozen=True)
class Load(Expr):
    """Element `index` of a buffer (or of a pointer variable during a `while`)."""
    buf: str
    index: Expr

    @node_property
    def buffers_read(self) -> frozenset[str]:
        return self.index.buffers_read | {self.buf}


@dataclass(frozen=True)
class Checked(Expr):
    """A bounds-checked index (an int): `index` when 0 <= index < `length`; otherwise
    the failure is recorded in the int buffer `buf` (see `record_failure`) and the
    value is 0, so the read it feeds stays inside memory.  `site` numbers the
    `index` of the program that made it (plan.CheckBounds says where it is)."""
    index: Expr
    length: Expr
    buf: str
    site: int

    @node_property
    def buffers_read(self) -> frozenset[str]:
        return self.index.buffers_read | self.length.buffers_read | {self.buf}


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


class Hw(Name):
    """Hardware indices and counts of the work-item running the code."""
    LID = "lid"                    # local id, [0, #BlockSize)
    WID = "wid"                    # warp in the work-group, [0, #BlockSize / #WarpSize)
    LANE = "lane"                  # lane in the warp, [0, #WarpSize)
    GROUP_ID = "group_id"          # [0, num_groups)
    NUM_GROUPS = "num_groups"      # work-groups launched, [1, #NumGroups]
    GLOBAL_ID = "global_id"        # [0, global_size)
    GLOBAL_SIZE = "global_size"    # num_groups * #BlockSize


@dataclass(frozen=True)
class HwId(Expr):
    """A hardware index or count (an `Hw`), an int."""
    name: Hw

    def __post_init__(self):
        super().__post_init__()
        _as_member(self, "name", Hw)


@functools.cache
def _field_names(cls) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def _keep_hash(cls):
    """Give node class `cls` a hash worked out once (kept in the node's `__dict__`) and an
    equality that answers from identity or from the hashes where it can: the dataclass's own
    hash and `==` walk the whole tree on every call, and the passes hash and compare
    subtrees (memo tables, common-subexpression keys, `changed?` tests) all the time.
    A hash depends on the process (strings'), so it is never pickled (`Expr.__getstate__`)."""
    names = _field_names(cls)
    get = operator.attrgetter(*names) if len(names) > 1 else (lambda e, g=operator.attrgetter(names[0]): (g(e),))

    def __hash__(self):
        h = self.__dict__.get("_hash")
        if h is None:
            h = self.__dict__["_hash"] = hash((cls, get(self)))
        return h

    def __eq__(self, other):
        if self is other:
            return True
        if other.__class__ is not cls:
            return NotImplemented
        return hash(self) == hash(other) and get(self) == get(other)
    cls.__hash__, cls.__eq__ = __hash__, __eq__


for _cls in (Const, Var, Bin, Un, Call, Select, Load, Checked, HwId):
    _keep_hash(_cls)


# A node's kind: its operator for a Bin or Un, else its class.
_KIND_BIT = {k: 1 << i for i, k in enumerate((*Op, Const, Var, Call, Select, Load, Checked, HwId))}


def kind_bits(*kinds) -> int:
    """The bits of these kinds of node (operators, node classes), as `Expr.kinds` has them."""
    return functools.reduce(operator.or_, (_KIND_BIT[k] for k in kinds), 0)


# ---------------------------------------------------------------- statements

@dataclass(frozen=True)
class Stmt:
    pass


@dataclass(frozen=True)
class Let(Stmt):
    """`const T var = expr;`"""
    var: str
    expr: Expr


@dataclass(frozen=True)
class DeclVar(Stmt):
    """A mutable variable `T var = init;`"""
    var: str
    init: Expr


@dataclass(frozen=True)
class Assign(Stmt):
    var: str
    expr: Expr


@dataclass(frozen=True)
class Store(Stmt):
    buf: str
    index: Expr
    value: Expr


@dataclass(frozen=True)
class SeqFor(Stmt):
    """for (var = 0; var < count; var++) body — one work-item's sequential loop."""
    var: str
    count: Expr
    body: tuple[Stmt, ...]


def _level(x) -> Level:
    return Level.named(x) if isinstance(x, str) else Level(x)


@dataclass(frozen=True)
class ParFor(Stmt):
    level: Level
    var: str
    count: Expr
    body: tuple[Stmt, ...]

    def __post_init__(self):
        _setfield(self, "level", _level(self.level))


@dataclass(frozen=True)
class PartFor(Stmt):
    """Parts over sub-units. `active` names a bool variable the body's outer writes use."""
    level: Level
    var: str
    count: Expr
    body: tuple[Stmt, ...]
    active: str = ""

    def __post_init__(self):
        _setfield(self, "level", _level(self.level))


@dataclass(frozen=True)
class For(Stmt):
    """for (int var = start; var < stop; var += step) body — after hardware mapping.
    `unroll` asks the target compiler to unroll (constant trip count)."""
    var: str
    start: Expr
    stop: Expr
    step: Expr
    body: tuple[Stmt, ...]
    unroll: bool = False


@dataclass(frozen=True)
class If(Stmt):
    cond: Expr
    then: tuple[Stmt, ...]
    else_: tuple[Stmt, ...] = ()


@dataclass(frozen=True)
class Loop(Stmt):
    """while (true) { head; if (!cond) break; body } — `head` computes `cond`."""
    head: tuple[Stmt, ...]
    cond: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class Barrier(Stmt):
    """A work-group barrier on local memory (also used after warp-level steps)."""
    why: str = ""


@dataclass(frozen=True)
class DeclPtr(Stmt):
    """A pointer variable over a local/private buffer, for `while` ping-pong."""
    var: str
    space: Space
    ty: ScalarType
    init: str

    def __post_init__(self):
        _as_member(self, "space", Space)
        _as_member(self, "ty", ScalarType)


@dataclass(frozen=True)
class SwapPtr(Stmt):
    a: str
    b: str


@dataclass(frozen=True)
class AtomicOr(Stmt):
    """atomic_or(&buf[index], value) on a local int (a work-group wide "any")."""
    buf: str
    index: Expr
    value: Expr


@dataclass(frozen=True)
class VLoad(Stmt):
    """`const T4 var = ((__global T4*)buf)[index]` and `const T vars[k] = var.sk`: elements
    width*index .. width*index + width - 1 of global buffer `buf` (width = len(vars)) in one
    vector load (the `vectorize` pass).  Global buffers are whole OpenCL allocations, so a
    vector index is always aligned to the vector."""
    var: str
    vars: tuple[str, ...]
    ty: ScalarType
    buf: str
    index: Expr

    def __post_init__(self):
        _as_member(self, "ty", ScalarType)


@dataclass(frozen=True)
class VStore(Stmt):
    """`((__global T4*)buf)[index] = (T4)(values...)`: elements width*index .. width*index +
    width - 1 of global buffer `buf` (width = len(values)) in one vector store."""
    buf: str
    index: Expr
    values: tuple[Expr, ...]


VECTOR_WIDTHS = (2, 4)


@dataclass(frozen=True)
class Fail(Stmt):
    """A run-time error of the program found where control reaches this statement (under
    the `If` that tests for it): recorded in the bounds buffer `buf` as site `site` with
    `values` (see `record_failure`); the error's words are plan.failure_message's."""
    buf: str
    site: int
    values: tuple[Expr, ...]


@dataclass(frozen=True)
class Comment(Stmt):
    text: str


# ---------------------------------------------------------------- buffers and kernels

@dataclass(frozen=True)
class Buffer:
    """A memory area. space: global | local | private. `per` says how many copies
    a local buffer holds (one per warp or per work-item) and `size` is one copy."""
    name: str
    space: Space
    ty: ScalarType
    size: Expr
    origin: str
    role: str = "temp"          # input | output | temp | force | while
    per: str = ""               # "" | "warp" | "thread"
    layout: str = ""            # "" | "skew32" (element i stored at i + i/32: no bank conflicts)

    def __post_init__(self):
        _as_member(self, "space", Space)
        _as_member(self, "ty", ScalarType)


def copies(b: Buffer, block_size: int, warp_size: int) -> int:
    """How many copies of one size a local buffer holds: one, one per warp, or one per work-item."""
    return {"": 1, "warp": max(1, block_size // warp_size), "thread": block_size}[b.per]


def footprint(b: Buffer, elems: int) -> int:
    """Elements of storage a buffer of `elems` logical elements (all copies) takes."""
    return elems + (elems >> 5) + 1 if b.layout == "skew32" else elems


@dataclass(frozen=True)
class Param:
    """A scalar kernel parameter (argument scalar or array length)."""
    name: str
    ty: str


@dataclass(frozen=True)
class Kernel:
    """One OpenCL kernel; what it takes and how it is launched is in the host plan (plan.Launch)."""
    name: str
    body: tuple[Stmt, ...]
    locals_: tuple[Buffer, ...]        # local buffers (static or host-sized)
    privates: tuple[Buffer, ...]

    @property
    def barriers(self) -> int:
        """Barrier statements in the body (derived, so never stale)."""
        return sum(isinstance(s, Barrier) for s in walk_stmts(self.body))


# ---------------------------------------------------------------- smart constructors

def const(value, ty: str) -> Const:
    return Const(ty, value)


def cint(value: int) -> Const:
    return Const("int", scalars.wrap(int(value)))


def is_const(e: Expr, value=None) -> bool:
    return isinstance(e, Const) and (value is None or e.value == value)


_FOLD_INT = {
    "add": lambda a, b: scalars.wrap(a + b),
    "sub": lambda a, b: scalars.wrap(a - b),
    "mul": lambda a, b: scalars.wrap(a * b),
    "band": lambda a, b: a & b,
    "bor": lambda a, b: a | b,
    "bxor": lambda a, b: a ^ b,
    "shl": lambda a, b: scalars.int_shl(a, b),
    "shr": lambda a, b: scalars.int_shr(a, b),
    "min": min,
    "max": max,
}
_FOLD_CMP = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
             "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}
COMPARISONS = frozenset(_FOLD_CMP)


def binop(op: str, a: Expr, b: Expr) -> Expr:
    """A binary operation with constant folding and the usual identities (ints only)."""
    op = _member(Op, op)
    ty = "bool" if op in COMPARISONS or op in ("and", "or") else a.ty
    if isinstance(a, Const) and isinstance(b, Const):
        folded = _fold(op, a, b)
        if folded is not None:
            return folded
    if a.ty == "int":
        simple = _simplify_int(GENERAL_OP.get(op, op), a, b)
        if simple is not None:
            return simple
    if op == "and":
        if is_const(a):
            return b if a.value else a
        if is_const(b, True):
            return a
    if op == "or":
        if is_const(a):
            return a if a.value else b
        if is_const(b, False):
            return a
    return Bin(ty, op, a, b)


def _fold(op: str, a: Const, b: Const) -> Expr | None:
    op = GENERAL_OP.get(op, op)
    if op in _FOLD_CMP:
        return Const("bool", bool(_FOLD_CMP[op](a.value, b.value)))
    if op == "and":
        return Const("bool", bool(a.value and b.value))
    if op == "or":
        return Const("bool", bool(a.value or b.value))
    if a.ty != "int":
        return None
    if op in _FOLD_INT:
        return Const("int", _FOLD_INT[op](a.value, b.value))
    if op in ("div", "mod") and b.value != 0:
        fn = scalars.int_div if op == "div" else scalars.int_rem
        return Const("int", fn(a.value, b.value))
    return None


def _simplify_int(op: str, a: Expr, b: Expr) -> Expr | None:
    if op == "add":
        if is_const(a, 0):
            return b
        if is_const(b, 0):
            return a
        # (x + c1) + c2 -> x + (c1 + c2)
        if isinstance(b, Const) and isinstance(a, Bin) and a.op == "add" and isinstance(a.b, Const):
            return binop("add", a.a, cint(a.b.value + b.value))
    if op == "sub":
        if is_const(b, 0):
            return a
        if a == b:
            return cint(0)
    if op == "mul":
        if is_const(a, 0) or is_const(b, 0):
            return cint(0)
        if is_const(a, 1):
            return b
        if is_const(b, 1):
            return a
    if op == "div" and is_const(b, 1):
        return a
    if op == "mod" and is_const(b, 1):
        return cint(0)
    if op in ("shl", "shr") and is_const(b, 0):
        return a
    if op in _FOLD_CMP and a == b and not a.kinds & _KIND_BIT[Checked]:    # x == x, x < x ...
        return Const("bool", op in ("eq", "le", "ge"))
    return None


def add(a, b):
    return binop("add", a, b)


def sub(a, b):
    return binop("sub", a, b)


def mul(a, b):
    return binop("mul", a, b)


def div(a, b):
    return binop("div", a, b)


def lt(a, b):
    return binop("lt", a, b)


def checked(index: Expr, length: Expr, buf: str, site: int) -> Expr:
    """`Checked` unless the index is a constant that is known to be in range."""
    if isinstance(index, Const) and isinstance(length, Const) and 0 <= index.value < length.value:
        return index
    return Checked("int", index, length, buf, site)


def checked_divisor(b: Expr, a: Expr, buf: str, site: int) -> Expr:
    """The divisor b of `a / b` or `a % b`, checked: b where b != 0, else a failed check
    (site `site`, recording the dividend a) whose value 0 makes fcl_div and fcl_mod give 0.
    Its value is b's wherever the division's is not 0 either (`plain_divisor`)."""
    return select(binop("ne", b, cint(0)), b, Checked("int", a, cint(0), buf, site))


def plain_divisor(e: Expr) -> Expr:
    """b for a divisor that `checked_divisor` checks, else e: `a / b` and `a / e` have the
    same value (0 where b = 0), so analyses see through the check."""
    if isinstance(e, Select) and isinstance(e.b, Checked) and isinstance(e.cond, Bin) and e.cond.op == "ne" \
            and e.cond.a == e.a and is_const(e.cond.b, 0):
        return e.a
    return e


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
            if x.kinds & _KIND_BIT[Checked]:
                raise _Unhoistable
            return x
        children = {name: (strip(getattr(x, name)) if kind == "expr" else tuple(strip(c) for c in getattr(x, name)))
                    for name, kind in _child_fields(type(x)) if kind != "block"}
        return refold(x, **children) if children else x
    try:
        return strip(e), found
    except _Unhoistable:
        return None


class _Unhoistable(Exception):
    pass


def select(c: Expr, a: Expr, b: Expr) -> Expr:
    if isinstance(c, Const):
        return a if c.value else b
    if a == b:
        return a
    return Select(a.ty, c, a, b)


def unop(op: str, a: Expr) -> Expr:
    op = _member(Op, op)
    if isinstance(a, Const):
        if op == "not":
            return Const("bool", not a.value)
        if op == "neg" and a.ty == "int":
            return cint(-a.value)
    return Un(a.ty, op, a)


def call(fn: str, args: tuple, ty: str) -> Expr:
    if fn in ("min", "max") and args[0] == args[1]:
        return args[0]
    if fn == "min" and _rounds_up(args[0], args[1]):
        return args[0]
    if fn in ("min", "max") and ty == "int" and all(isinstance(x, Const) for x in args):
        return cint(_FOLD_INT[fn](args[0].value, args[1].value))
    return Call(ty, fn, tuple(args))


def _rounds_up(a: Expr, b: Expr) -> bool:
    """b is `c * ((a + c - 1) / c)` for a constant c > 0, the quotient perhaps as `max(1, ...)`:
    a rounded up to a whole number of c (the length of a whole number of chunks of c covering
    a), so min(a, b) = a for every a (truncating division: for a <= 0, b >= a + c - 1 or b = 0
    or b >= c)."""
    match b:
        case Bin(op=Op.MUL, a=Const(value=c), b=Call(fn="max", args=(Const(value=1), q))):
            pass
        case Bin(op=Op.MUL, a=Const(value=c), b=q):
            pass
        case _:
            return False
    match q:
        case Bin(op=Op.DIV, a=Bin(op=Op.SUB, a=Bin(op=Op.ADD, a=x, b=Const(value=c2)), b=Const(value=1)),
                 b=Const(value=c3)):
            return c > 0 and c == c2 == c3 and x == a
        case Bin(op=Op.DIV, a=Bin(op=Op.ADD, a=x, b=Const(value=k)), b=Const(value=c3)):
            return c > 0 and k == c - 1 and c == c3 and x == a
    return False


# ---------------------------------------------------------------- traversal (generic, from the dataclass fields)

@functools.cache
def _child_fields(cls) -> tuple[tuple[str, str], ...]:
    """(field name, kind) of the children of a node class, in field order; kind is
    "expr" (an Expr), "exprs" (a tuple of Expr) or "block" (a tuple of Stmt)."""
    hints = typing.get_type_hints(cls)
    kinds = {Expr: "expr", tuple[Expr, ...]: "exprs", tuple[Stmt, ...]: "block"}
    return tuple((f.name, kinds[hints[f.name]]) for f in dataclasses.fields(cls)
                 if hints[f.name] in kinds)


@functools.cache
def _expr_getter(cls):
    """A function giving the expressions directly under a node of class `cls`, in order."""
    fields = [(name, kind) for name, kind in _child_fields(cls) if kind != "block"]
    if all(kind == "expr" for _, kind in fields):     # the common case, without a loop
        if not fields:
            return lambda e: ()
        get = operator.attrgetter(*(name for name, _ in fields))
        return (lambda e: (get(e),)) if len(fields) == 1 else get

    def children(e):
        out = []
        for name, kind in fields:
            value = getattr(e, name)
            out.extend((value,) if kind == "expr" else value)
        return tuple(out)
    return children


def expr_children(e: Expr) -> tuple[Expr, ...]:
    return _expr_getter(type(e))(e)


def stmt_exprs(s: Stmt) -> tuple[Expr, ...]:
    """The expressions directly under a statement (not those of nested bodies), in order."""
    return expr_children(s)


@functools.cache
def _block_getter(cls):
    """A function giving the statement bodies directly under a statement of class `cls`."""
    names = [name for name, kind in _child_fields(cls) if kind == "block"]
    if not names:
        return lambda s: ()
    get = operator.attrgetter(*names)
    return (lambda s: (get(s),)) if len(names) == 1 else get


def stmt_children(s: Stmt) -> tuple[tuple[Stmt, ...], ...]:
    """The statement bodies directly under a statement, in field order."""
    return _block_getter(type(s))(s)


def refold(e: Expr, **children) -> Expr:
    """`e` with these children instead of its own, rebuilt through its smart constructor (fold
    constants again after a rewrite)."""
    def get(name):
        return children.get(name, getattr(e, name))
    if isinstance(e, Bin):
        return binop(e.op, get("a"), get("b"))
    if isinstance(e, Un):
        return unop(e.op, get("a"))
    if isinstance(e, Select):
        return select(get("cond"), get("a"), get("b"))
    if isinstance(e, Call):
        return call(e.fn, get("args"), e.ty)
    return rebuilt(e, children)


def map_expr(f, e: Expr, visit=None) -> Expr:
    """Rebuild `e` bottom-up, applying f to every node (children first); a node whose
    children changed is re-folded before f sees it.  A tree whose root `visit` says False
    of (f changes nothing in it) is kept as it is, unvisited."""
    if visit is not None and not visit(e):
        return e
    cls = type(e)
    if cls is Bin:                      # the common node, without the generic loop
        return f(with_operands(e, map_expr(f, e.a, visit), map_expr(f, e.b, visit)))
    changes = {}
    for name, kind in _child_fields(cls):
        old = getattr(e, name)
        new = map_expr(f, old, visit) if kind == "expr" else tuple(map_expr(f, x, visit) for x in old)
        if _changed(new, old):
            changes[name] = new
    if changes:
        e = refold(e, **changes)
    return f(e)


def with_operands(e: Bin, a: Expr, b: Expr) -> Expr:
    """`refold(e, a=a, b=b)` for a binary node, for the rewrites' common case: `e` itself
    where neither operand changed (the same object or an equal one)."""
    a_new, b_new = a is not e.a and a != e.a, b is not e.b and b != e.b
    return binop(e.op, a if a_new else e.a, b if b_new else e.b) if a_new or b_new else e


def map_own_exprs(s: Stmt, fe, visit=None) -> Stmt:
    """`s` with fe applied (bottom-up, re-folding: map_expr, skipping the trees `visit`
    says False of) to its own expressions, not its bodies'; `s` itself where fe is None."""
    if fe is None:
        return s
    changes = {}
    for name, kind in _child_fields(type(s)):
        old = getattr(s, name)
        if kind == "expr":
            new = map_expr(fe, old, visit)
        elif kind == "exprs":
            new = tuple(map_expr(fe, x, visit) for x in old)
        else:
            continue
        if _changed(new, old):
            changes[name] = new
    return rebuilt(s, changes) if changes else s


def rebuilt(node, changes: dict):
    """`dataclasses.replace(node, **changes)` for IR nodes (every field set by `__init__`),
    without its per-call inspection of the fields: the passes rebuild many nodes."""
    return type(node)(*[changes[n] if n in changes else getattr(node, n) for n in _field_names(type(node))])


def _changed(new, old) -> bool:
    """A rebuilt child differs from the old one: not the same objects (cheap) and not equal."""
    if new is old:
        return False
    if isinstance(new, tuple) and len(new) == len(old) and all(a is b for a, b in zip(new, old)):
        return False
    return new != old


def map_stmts(fs, fe, stmts, visit=None) -> tuple:
    """Rebuild statements: fe maps every expression (via map_expr, skipping the trees
    `visit` says False of; None: none), nested bodies are rebuilt, then fs maps each statement; fs may
    return a statement or a tuple of them (spliced in place)."""
    out = []
    for s in stmts:
        s = map_own_exprs(s, fe, visit)
        changes = {}
        for name, kind in _child_fields(type(s)):
            if kind == "block":
                old = getattr(s, name)
                new = map_stmts(fs, fe, old, visit)
                if _changed(new, old):
                    changes[name] = new
        result = fs(rebuilt(s, changes) if changes else s)
        out.extend(result if isinstance(result, tuple) else (result,))
    return tuple(out)


def walk_expr(e: Expr) -> list:
    """The nodes of an expression tree in pre-order (a list: the passes walk whole trees, and
    a list costs less than a generator's resumptions)."""
    out = []
    stack = [e]
    pop, push, extend = stack.pop, out.append, stack.extend
    while stack:
        node = pop()
        push(node)
        children = _expr_getter(type(node))(node)
        if children:
            extend(children[::-1])
    return out


def walk_stmts(stmts) -> list:
    """The statements in pre-order, nested bodies included (a list, as `walk_expr`)."""
    out = []
    _collect_stmts(stmts, out)
    return out


def _collect_stmts(stmts, out: list):
    for s in stmts:
        out.append(s)
        for body in _block_getter(type(s))(s):
            _collect_stmts(body, out)


def binds(s: Stmt) -> tuple[str, ...]:
    """Names a statement defines or assigns (a loop: its counter, a part loop: also `active`)."""
    if isinstance(s, (Let, DeclVar, Assign, DeclPtr, SeqFor, ParFor, For)):
        return (s.var,)
    if isinstance(s, VLoad):
        return (s.var,) + s.vars
    if isinstance(s, PartFor):
        return (s.var, s.active) if s.active else (s.var,)
    if isinstance(s, SwapPtr):
        return (s.a, s.b)
    return ()


def defined_in(stmts) -> set[str]:
    """Every name defined or assigned anywhere in `stmts` (nested bodies included)."""
    return {name for s in walk_stmts(stmts) for name in binds(s)}


def walk_scoped(stmts, scope: frozenset = frozenset()):
    """Pre-order (statement, scope) pairs: scope holds the names defined before the
    statement in it or in an enclosing body (a loop's counter is in scope in its body)."""
    for s in stmts:
        yield s, scope
        inner = scope | set(binds(s)) if isinstance(s, (SeqFor, ParFor, PartFor, For)) else scope
        for body in stmt_children(s):
            yield from walk_scoped(body, frozenset(inner))
        if not isinstance(s, (SeqFor, ParFor, PartFor, For)):
            scope = scope | set(binds(s))


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


def contains_barrier(stmts) -> bool:
    return any(isinstance(s, Barrier) for s in walk_stmts(stmts))


def accesses(s: Stmt) -> tuple[set[str], set[str]]:
    """(names s itself reads, names it writes): buffers and pointer variables, not those of
    its nested bodies.  A pointer's declaration reads the buffer it starts at; a bounds check
    (`Checked`) reads its buffer."""
    reads = set().union(*(e.buffers_read for e in stmt_exprs(s)))
    writes = set()
    if isinstance(s, (Store, AtomicOr, VStore)):
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


def names_read(stmts) -> set[str]:
    """The variables read anywhere in `stmts` (nested bodies included)."""
    return set().union(*(e.names for s in walk_stmts(stmts) for e in stmt_exprs(s)))


def eval_host(e: Expr, env: dict[str, object], total: bool = False):
    """Evaluate a size expression on the host (params bound in `env`), OpenCL semantics.
    A division or remainder by zero raises ZeroDivisionError, or with `total` gives 0 as
    the kernels' fcl_div and fcl_mod do (a scalar the kernels would have computed)."""
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Var):
        return env[e.name]
    if isinstance(e, Bin):
        a, b = eval_host(e.a, env, total), eval_host(e.b, env, total)
        folded = _fold(e.op, Const(e.a.ty, a), Const(e.b.ty, b))
        if folded is None:
            if total:
                return 0
            raise ZeroDivisionError(e.op)
        return folded.value
    if isinstance(e, Un):
        a = eval_host(e.a, env, total)
        return (not a) if e.op == "not" else scalars.wrap(-a)
    if isinstance(e, Select):
        return eval_host(e.a if eval_host(e.cond, env, total) else e.b, env, total)
    if isinstance(e, Call) and e.fn in ("min", "max"):
        return _FOLD_INT[e.fn](*(eval_host(x, env, total) for x in e.args))
    if isinstance(e, Call) and e.fn == "b2i":
        return 1 if eval_host(e.args[0], env, total) else 0
    if isinstance(e, Call) and e.fn == "abs" and e.ty == "int":
        return scalars.wrap(abs(eval_host(e.args[0], env, total)))
    if isinstance(e, Checked):
        i, n = eval_host(e.index, env, total), eval_host(e.length, env, total)
        if not 0 <= i < n:
            raise CheckFailed(e.site, i, n)
        return i
    raise LookupError(type(e).__name__)


# ---------------------------------------------------------------- printing (--dump kir)

def format_expr(e: Expr) -> str:
    if isinstance(e, Const):
        return str(e.value).lower() if e.ty == "bool" else repr(e.value)
    if isinstance(e, Var):
        return e.name
    if isinstance(e, HwId):
        return f"%{e.name}"
    if isinstance(e, Bin):
        return f"({format_expr(e.a)} {e.op} {format_expr(e.b)})"
    if isinstance(e, Un):
        return f"{e.op}({format_expr(e.a)})"
    if isinstance(e, Call):
        return f"{e.fn}({', '.join(format_expr(a) for a in e.args)})"
    if isinstance(e, Select):
        return f"({format_expr(e.cond)} ? {format_expr(e.a)} : {format_expr(e.b)})"
    if isinstance(e, Load):
        return f"{e.buf}[{format_expr(e.index)}]"
    if isinstance(e, Checked):
        return f"check#{e.site}({format_expr(e.index)} < {format_expr(e.length)})"
    return repr(e)


def format_stmts(stmts, indent: int = 0) -> str:
    pad = "  " * indent
    out = []
    for s in stmts:
        out.append(pad + _format_head(s))
        for i, body in enumerate(stmt_children(s)):
            if isinstance(s, If) and i == 1:
                if not body:
                    continue
                out.append(pad + "else")
            if isinstance(s, Loop) and i == 1:
                out.append(pad + f"  while {format_expr(s.cond)} do")
            out.append(format_stmts(body, indent + 1))
    return "\n".join(x for x in out if x)


def _format_head(s: Stmt) -> str:
    if isinstance(s, Let):
        return f"let {s.var} : {s.expr.ty} = {format_expr(s.expr)}"
    if isinstance(s, DeclVar):
        return f"var {s.var} : {s.init.ty} = {format_expr(s.init)}"
    if isinstance(s, Assign):
        return f"{s.var} := {format_expr(s.expr)}"
    if isinstance(s, Store):
        return f"{s.buf}[{format_expr(s.index)}] := {format_expr(s.value)}"
    if isinstance(s, VLoad):
        return f"let {', '.join(s.vars)} : {s.ty} = {s.buf}[{format_expr(s.index)}]x{len(s.vars)}  (vector {s.var})"
    if isinstance(s, VStore):
        return f"{s.buf}[{format_expr(s.index)}]x{len(s.values)} := ({', '.join(format_expr(v) for v in s.values)})"
    if isinstance(s, SeqFor):
        return f"seqfor {s.var} < {format_expr(s.count)}"
    if isinstance(s, ParFor):
        return f"parfor<{s.level}> {s.var} < {format_expr(s.count)}"
    if isinstance(s, PartFor):
        return f"partfor<{s.level}> {s.var} < {format_expr(s.count)}"
    if isinstance(s, For):
        unroll = "  (unroll)" if s.unroll else ""
        return (f"for {s.var} = {format_expr(s.start)}; {s.var} lt {format_expr(s.stop)}; "
                f"{s.var} += {format_expr(s.step)}{unroll}")
    if isinstance(s, If):
        return f"if {format_expr(s.cond)}"
    if isinstance(s, Loop):
        return "loop"
    if isinstance(s, Fail):
        return f"fail#{s.site}({', '.join(format_expr(v) for v in s.values)})"
    if isinstance(s, AtomicOr):
        return f"atomic_or {s.buf}[{format_expr(s.index)}] {format_expr(s.value)}"
    if isinstance(s, Barrier):
        return f"barrier  // {s.why}" if s.why else "barrier"
    if isinstance(s, DeclPtr):
        return f"ptr {s.var} -> {s.init}"
    if isinstance(s, SwapPtr):
        return f"swap {s.a} {s.b}"
    if isinstance(s, Comment):
        return f"// {s.text}"
    return repr(s)


def format_program(p) -> str:
    """The kernels of a `plan.Plan` (--dump kir)."""
    lines = [f"entry {p.entry}  (#BlockSize={p.block_size}, #WarpSize={p.warp_size}, #NumGroups={p.num_groups})"]
    lines.append("params: " + ", ".join(f"{x.name}:{x.ty}" for x in p.params))
    for b in p.buffers:
        lines.append(f"global {b.name} : {b.ty}[{format_expr(b.size)}]  ({b.role}; {b.origin})")
    versions = {s.fast: s for s in p.launches() if s.fast}
    for k in p.kernels:
        v = versions.get(k.name)
        lines.append(f"kernel {k.name}:" if v is None else
                     f"kernel {k.name}: (unchecked version of {v.kernel}, launched where {format_expr(v.when)})")
        for b in k.locals_ + k.privates:
            per = f" per {b.per}" if b.per else ""
            lines.append(f"  {b.space} {b.name} : {b.ty}[{format_expr(b.size)}]{per}  ({b.origin})")
        lines.append(format_stmts(k.body, 1))
    return "\n".join(lines)
