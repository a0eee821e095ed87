"""The kernel IR's nodes: the grammar of what `lower` produces, passes rewrite and `opencl` renders.

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
they hold.  The grammar comes first, in one block: operators and hardware
ids, expressions, statements, buffers and kernels.  Below it, what the nodes
need at run time: fields given as plain strings turned into enum members,
each expression class's kept hash and kind bit (`kind_bits`), and each node
class's children, read from its dataclass fields (`expr_children`,
`stmt_children`), on which walk.py builds.  Consumes `fcl.base.hw` and
memo.py; every other module of the package builds on this one.
"""
from __future__ import annotations

import dataclasses
import functools
import operator
import typing
from dataclasses import dataclass

from fcl.base.hw import Level, Name, ScalarType, Space
from fcl.codegen.kir.memo import _fields_state, _keep_hash, node_property




# ---------------------------------------------------------------- operators and hardware ids

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


class Hw(Name):
    """Hardware indices and counts of the work-item running the code."""
    LID = "lid"                    # local id, [0, #BlockSize)
    WID = "wid"                    # warp in the work-group, [0, #BlockSize / #WarpSize)
    LANE = "lane"                  # lane in the warp, [0, #WarpSize)
    GROUP_ID = "group_id"          # [0, num_groups)
    NUM_GROUPS = "num_groups"      # work-groups launched, [1, #NumGroups]
    GLOBAL_ID = "global_id"        # [0, global_size)
    GLOBAL_SIZE = "global_size"    # num_groups * #BlockSize


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

    __getstate__ = _fields_state      # the fields only, not what was worked out (memo.py)


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


@dataclass(frozen=True)
class HwId(Expr):
    """A hardware index or count (an `Hw`), an int."""
    name: Hw

    def __post_init__(self):
        super().__post_init__()
        _as_member(self, "name", Hw)


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
    """for (var = 0; var < count; var++) body — one work-item's sequential loop.
    `double_buffer`: the program asked for the loop's local tiles in two copies
    (`powerDoubleBuffered`; the `double_buffer` pass)."""
    var: str
    count: Expr
    body: tuple[Stmt, ...]
    double_buffer: bool = False


@dataclass(frozen=True)
class ParFor(Stmt):
    level: Level
    var: str
    count: Expr
    body: tuple[Stmt, ...]
    groups: int | None = None       # grid level: at most this many work-groups (the launch's cap)

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
    `unroll` asks the target compiler to unroll (constant trip count); `once`: the loop
    runs at most once (start + step >= stop: a work-group's one part, `unvirtualise`),
    so a target may render it `if (start < stop)`; `double_buffer` as SeqFor's."""
    var: str
    start: Expr
    stop: Expr
    step: Expr
    body: tuple[Stmt, ...]
    unroll: bool = False
    once: bool = False
    double_buffer: bool = False


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


ATOMIC_OPS = ("add", "min", "max", "and", "or", "xor", "xchg", "fadd")


@dataclass(frozen=True)
class Atomic(Stmt):
    """`atomic_<op>(&buf[index], value)` on an int of a local or global buffer (ATOMIC_OPS:
    "or", a work-group wide "any"; "xchg", claiming a place; add ... xor, a combining
    scatter; "fadd", float `+=` by compare-and-swap on the float's bits), or a long of a
    global buffer ("xchg" and "add": `atom_xchg`, `atom_add`, `scanConcat`'s status words).
    With `var`, it declares `var` (of the element's type), the element's value before the
    operation."""
    op: str
    buf: str
    index: Expr
    value: Expr
    var: str = ""


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
    role: str = "temp"          # input | output | temp | force | while | scattered (local: written by
                                # neighbouring work-items at places the data decides; laid out skewed)
    per: str = ""               # "" | "warp" | "thread"
    layout: str = ""            # "" | "skew32" (element i stored at i + i/32: no bank conflicts)

    def __post_init__(self):
        _as_member(self, "space", Space)
        _as_member(self, "ty", ScalarType)


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
        return _count_barriers(self.body)


# ---------------------------------------------------------------- below the grammar: fields given as strings

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


def _level(x) -> Level:
    return Level.named(x) if isinstance(x, str) else Level(x)


# ---------------------------------------------------------------- kept hashes and kinds

for _cls in (Const, Var, Bin, Un, Call, Select, Load, Checked, HwId):
    _keep_hash(_cls)


# A node's kind: its operator for a Bin or Un, else its class.
_KIND_BIT = {k: 1 << i for i, k in enumerate((*Op, Const, Var, Call, Select, Load, Checked, HwId))}


def kind_bits(*kinds) -> int:
    """The bits of these kinds of node (operators, node classes), as `Expr.kinds` has them."""
    return functools.reduce(operator.or_, (_KIND_BIT[k] for k in kinds), 0)


def holds_check(e: Expr) -> bool:
    """Whether evaluating e makes a run-time check (a `Checked`: an index, a divisor), which a
    rewrite must not drop with the part of e that holds it."""
    return bool(e.kinds & _KIND_BIT[Checked])


# ---------------------------------------------------------------- children, from the dataclass fields

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


def _count_barriers(stmts) -> int:
    """Barrier statements in `stmts`, nested bodies included."""
    return sum(isinstance(s, Barrier) + sum(_count_barriers(body) for body in stmt_children(s)) for s in stmts)
