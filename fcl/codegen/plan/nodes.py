"""The host plan IR: what the host does to run one compiled entry point.

Produced by `lower` (with the kernels it builds), rewritten by passes on its
kernels, interpreted by `fcl.runtime.launch` (the one interpreter of its
meaning) and printed by `plan.explain` (`explain`, `to_json`) and by
`fcl.runtime.pymodule` (Python host code).  A `Plan` holds the entry's
arguments (`plan.args`), the host scalars (`params`: argument scalars, array
lengths, host variables), the global buffers, the kernels and the host
program `body`, a sequence of:

* `Alloc(buffer)`: allocate a global buffer (its size is a host expression);
* `SetVar(var, expr, size)`: set a host int scalar (a length when `size`);
* `Bind(alias, buffer)` / `Swap(a, b)`: point an alias at a buffer, exchange
  two aliases (the ping-pong buffers of a grid-level `while`);
* `Launch(kernel, groups, uses, fast, when)`: run a kernel on min(#NumGroups,
  max(1, groups...)) work-groups; `uses` lists the global buffers (or aliases)
  and host scalars it takes as arguments, in order: each kernel receives only
  those.  With `fast` set, the host runs kernel `fast` instead (the same work
  without the bounds checks that the host facts `when` prove) where `when`
  holds for this launch's host scalars (`chosen`);
* `ReadScalar(var, buffer)`: copy element 0 of an int buffer to a host scalar;
* `Loop(head, cond, body)`: `while true: head; if not cond: break; body`;
* `CheckSteps(buffer, loops)`: read the int `buffer` (a "guard" buffer, zero
  when allocated); bit k (k < 30) set means the device-side `while` holding
  buffer `loops[k]` stopped with its condition still true, on an empty array
  or (bit CAPPED also set) after MAX_DEVICE_STEPS steps: a run-time error
  located at that `while`;
* `CheckBounds(buffer, sites, kinds)`: read the bounds buffer (kir.BOUNDS_WORDS
  ints, zero when allocated; see `kir.record_failure`): when a run-time check
  failed (a `kir.Checked` index out of range or a zero divisor, a `kir.Fail`:
  a part of the wrong length...), a run-time error located at `sites[k]` (the
  `file:line:col` of that check), in the evaluator's words (`failure_message`
  of `kinds[k]` and the values recorded), for the site k recorded first.  It stands
  after the last launch and before every ReadScalar (a value read back may be
  garbage after a failure);
* `Result(kind, buffer, ty, length, parts)`: the value the entry returns (last).

Host expressions are kernel-IR expressions over `params` (`kir.eval_host`).
Not here: device code (kir), how a device runs a plan (runtime), printing (`explain`).
"""
from __future__ import annotations

import functools

from dataclasses import dataclass
from typing import Iterator

from fcl.base.hw import LOCAL_MEMORY
from fcl.base.scalars import INT_MAX
from fcl.codegen import kir as K
from fcl.codegen.plan.args import Arg


# ---------------------------------------------------------------- host statements

@dataclass(frozen=True)
class Uses:
    buffers: tuple[str, ...]
    params: tuple[str, ...]


@dataclass(frozen=True)
class HostStmt:
    pass


@dataclass(frozen=True)
class Alloc(HostStmt):
    buffer: str


@dataclass(frozen=True)
class SetVar(HostStmt):
    var: str
    expr: K.Expr
    size: bool = True       # a length (never negative); False: any int scalar


@dataclass(frozen=True)
class Bind(HostStmt):
    alias: str
    buffer: str


@dataclass(frozen=True)
class Swap(HostStmt):
    a: str
    b: str


@dataclass(frozen=True)
class Launch(HostStmt):
    kernel: str
    groups: tuple[K.Expr, ...]
    uses: Uses
    fast: str = ""                  # the unchecked version of `kernel`, run where `when` holds
    when: K.Expr | None = None

    def kernels(self) -> tuple[str, ...]:
        return (self.kernel, self.fast) if self.fast else (self.kernel,)


def group_count(num_groups: int, sizes) -> int:
    """The work-groups a launch takes: min(#NumGroups, max(1, its grid sizes...))."""
    return max(1, min(num_groups, max(sizes, default=1)))


# The kernel parameters of a launch in slices: a kernel that takes them runs as one launch
# of `group_total` = max(1, its grid sizes...) work-groups, in launches of slice_groups()
# work-groups, `first_group` the id of the first work-group of each (`unvirtualise`;
# `slices` gives the launches).
FIRST_GROUP = "first_group"
GROUP_TOTAL = "group_total"
SLICE_GROUPS = 0        # when set, the work-groups of a slice (tests: many slices of a few)

# The host scalar that picks how a grid-level `interleave` whose places come from the data
# checks that it writes no place twice (`lower.claims`): 0, a tag a place and a coverage check
# after the kernel ("interleave-recheck" where a place was left unwritten); 1, an atomic claim
# a place, which names the parts that collide.  The host runs with 0 and, where the coverage
# check fails, runs the whole plan again with 1 for the evaluator's error (`Launcher.start`).
EXACT_CLAIMS = "exact_claims"
RECHECK = "interleave-recheck"


def slice_groups(block_size: int) -> int:
    """The most work-groups of one slice: as many as keep its work-item ids in an int."""
    return SLICE_GROUPS or INT_MAX // block_size


def slices(num_groups: int, block_size: int, uses: Uses, sizes) -> list[tuple[int, int]]:
    """(first work-group, work-groups) of each launch that runs a kernel taking `uses`: one
    of group_count's size, or, for a kernel taking FIRST_GROUP, max(1, sizes...) in all, in
    slices of slice_groups (ValueError past INT_MAX - slice_groups work-groups)."""
    if FIRST_GROUP not in uses.params:
        return [(0, group_count(num_groups, sizes))]
    cap = slice_groups(block_size)
    total = max(1, max(sizes, default=1))
    if total > INT_MAX - cap:
        raise ValueError(f"{total} work-groups: more than a launch in slices of {cap} can number")
    return [(g, min(cap, total - g)) for g in range(0, total, cap)]


def chosen(s: Launch, env: dict) -> str:
    """The kernel launch `s` runs with host scalars `env`: its unchecked version where the
    version's host facts hold, else the kernel itself."""
    return s.fast if s.fast and K.eval_host(s.when, env, total=True) else s.kernel


@dataclass(frozen=True)
class ReadScalar(HostStmt):
    """var := element 0 of the int buffer `buffer`; or, with `expr`, var := expr, which the
    host computes reading the elements of global buffers it loads (`Builder.host_computable`: a
    packConcat's length, the last part's status word), without a kernel to store it."""
    var: str
    buffer: str
    expr: K.Expr | None = None


@dataclass(frozen=True)
class Loop(HostStmt):
    head: tuple[HostStmt, ...]
    cond: K.Expr
    body: tuple[HostStmt, ...]
    length: str = ""        # set when the loop runs over this length alone (a device while's
    origin: str = ""        # sizes, that while's buffer): a length seen twice repeats forever


@dataclass(frozen=True)
class CheckSteps(HostStmt):
    buffer: str
    loops: tuple[str, ...]


@dataclass(frozen=True)
class CheckBounds(HostStmt):
    buffer: str
    sites: tuple[str, ...]
    kinds: tuple[str, ...] = ()     # what each site checks (failure_message); "index" where left out

    def kind(self, site: int) -> str:
        return self.kinds[site] if 0 <= site < len(self.kinds) else "index"


@dataclass(frozen=True)
class Site:
    """A run-time check of the program: what it checks (a kind of failure_message) and the
    span of the source it checks."""
    kind: str
    span: object


def failure_message(kind: str, values) -> str:
    """The evaluator's words for run-time check `kind` that failed with `values` (the ints
    recorded with it: kir.record_failure).  Self-contained: `--emit py` modules print it."""
    a, b, c, d = (list(values) + [0, 0, 0, 0])[:4]
    if kind == "index":
        return f"index {a} out of range for an array of length {b}"
    if kind == "div":
        return f"integer division by zero ({a} / 0)"
    if kind == "mod":
        return f"integer division by zero in remainder ({a} % 0)"
    if kind.startswith("length:"):       # "length:NAME" or "length:NAME:WHAT" (WHAT: "the length" if left out)
        name, _, what = kind[7:].partition(":")
        return f"{name}: {what or 'the length'} must not be negative, got {a}"
    if kind in ("concat", "scanConcat"):    # part a has b elements, the part length is c, d parts
        if b < c:
            return (f"{kind}: part {a} has {b} elements but the part length is {c}, so "
                    f"positions {a * c + b}..{a * c + c - 1} are never written")
        if a * c + c >= c * d:
            return (f"{kind}: part {a} has {b} elements but the part length is {c}; "
                    f"position {a * c + c} is outside the result (length {c * d})")
        return (f"{kind}: part {a} has {b} elements but the part length is {c}, so "
                f"position {a * c + c} is written twice (by parts {a} and {a + 1})")
    if kind == "seqConcat-step":        # step a returned b elements, the part length is c
        return f"seqConcat: step {a} returned an array of length {b}, but every part must have length {c}"
    if kind in ("packConcat", "packThreads"):   # part a has b elements, more than the part length c
        return f"{kind}: part {a} has {b} elements, more than the part length {c}"
    if kind == "reduceByIndex-lengths":
        return f"reduceByIndex: {a} indices but {b} values"
    if kind == "scatter-lengths":
        return f"scatter: {a} indices but {b} values"
    if kind == "scatter-twice":         # position a, claimed by element b, written by element c
        return f"scatter: position {a} is written twice (by elements {min(b, c)} and {max(b, c)})"
    if kind == "reduceByIndex-bins":
        return f"reduceByIndex: the number of bins must not be negative, got {a}"
    name, _, check = kind.partition("-")
    if name in ("interleave", "placeConcat"):
        if check == "part":         # part a has b elements, more than the part length c
            return f"{name}: part {a} has {b} elements, more than the part length {c}"
        if check == "holes":        # part a has b elements, fewer than the part length c
            return (f"{name} leaves holes: positions are never written (part {a} has {b} "
                    f"elements, fewer than the part length {c})")
        if check == "twice":        # position a, claimed by part b, written by part c
            return (f"{name} is not injective: position {a} is written twice (write conflict "
                    f"between part {min(b, c)} and part {max(b, c)})")
        if check == "recheck":      # position a was never written (the run is repeated to name the parts)
            return (f"{name} is not injective: position {a} is never written, so another is "
                    f"written twice")
        if check == "position":     # part a, element b goes to position c of d
            return (f"{name}: part {a}, element {b} goes to position {c}, "
                    f"outside the result (length {d})")
    return f"run-time check {kind} failed with {list(values)}"


# A device-side (block, warp or thread level) while stops after this many steps
# and reports it through its plan's CheckSteps: a loop that never ends must not
# hang the device (the evaluator reports one that makes no progress).
MAX_DEVICE_STEPS = 1 << 20
CAPPED = 1 << 30        # in a guard buffer: a loop stopped at MAX_DEVICE_STEPS


@dataclass(frozen=True)
class Result(HostStmt):
    """kind: "array" (`length` elements of `buffer`), "scalar" (element 0), "pair" (a pair
    of the two results `parts`) or "zip" (an array of pairs: `parts`, its two components,
    arrays of `length` elements or zips of them)."""
    kind: str
    buffer: str
    ty: str
    length: K.Expr
    single_group: bool = False
    parts: tuple = ()

    def leaves(self) -> list["Result"]:
        """The array and scalar results this one is made of, in order."""
        return [self] if not self.parts else [x for p in self.parts for x in p.leaves()]


@dataclass(frozen=True)
class Plan:
    entry: str
    args: tuple[Arg, ...]
    params: tuple[K.Param, ...]
    buffers: tuple[K.Buffer, ...]
    kernels: tuple[K.Kernel, ...]
    body: tuple[HostStmt, ...]
    block_size: int
    warp_size: int
    num_groups: int
    # the program never reads #NumGroups: how many work-groups run a kernel does not change
    # its results, so `unvirtualise` may give every part its own work-group, the host
    # launching such a kernel in slices of num_groups (`first_group` below)
    free_groups: bool = False
    # #LocalMemory: the bytes of local memory a work-group may take (`double_buffer` adds
    # buffers only where they fit)
    local_memory: int = LOCAL_MEMORY

    @property
    def result(self) -> Result:
        return self.body[-1]

    def kernel(self, name: str) -> K.Kernel:
        return self._by_name[name]

    @functools.cached_property
    def _by_name(self) -> dict[str, K.Kernel]:
        """The kernels by name (the launcher looks one up for every launch)."""
        return {k.name: k for k in self.kernels}

    def launched(self) -> list[K.Kernel]:
        """The kernels the host program launches, without their unchecked versions (which
        `kernels` holds too, for the passes and the renderer)."""
        fast = {s.fast for s in self.launches()}
        return [k for k in self.kernels if k.name not in fast]

    def launches(self) -> list[Launch]:
        return [s for s in walk(self.body) if isinstance(s, Launch)]

    def version(self, kernel: str) -> tuple[str, K.Expr] | None:
        """(its unchecked version, the host facts under which launches run it) for a kernel
        the host launches, or None."""
        return next(((s.fast, s.when) for s in self.launches() if s.kernel == kernel and s.fast), None)

    def launch_groups(self, kernel: str) -> int | None:
        """The work-groups every launch of `kernel` takes, where that is one constant, else None."""
        counts = set()
        for s in self.launches():
            if kernel in s.kernels():
                if FIRST_GROUP in s.uses.params or not all(isinstance(g, K.Const) for g in s.groups):
                    return None
                counts.add(group_count(self.num_groups, [g.value for g in s.groups]))
        return counts.pop() if len(counts) == 1 else None

    def uses_of(self, kernel: str) -> Uses:
        """What kernel `kernel` takes (the same at every launch of it)."""
        return next(s.uses for s in self.launches() if kernel in s.kernels())

    def buffer(self, name: str) -> K.Buffer:
        return next(b for b in self.buffers if b.name == name)

    def check_count(self) -> int:
        """The run-time checks (`kir.Checked`, `kir.Fail`) left in the kernels (not counting
        their unchecked versions, which hold a subset) and the host program: every copy
        (an unrolled loop's, a kernel's), so at least `len(check_sites())`."""
        return len(self._checks())

    def check_sites(self) -> set[int]:
        """The program's run-time checks (its `CheckBounds` sites) that some check left
        in the kernels or the host program may still report."""
        return {x.site for x in self._checks()}

    def _checks(self) -> list:
        stmts = [s for k in self.launched() for s in K.walk_stmts(k.body)]
        exprs = [e for s in stmts for e in K.stmt_exprs(s)]
        exprs += [e for s in walk(self.body) for e in vars(s).values() if isinstance(e, K.Expr)]
        return ([x for e in exprs for x in K.walk_expr(e) if isinstance(x, K.Checked)]
                + [s for s in stmts if isinstance(s, K.Fail)])

    def check_kind(self, site: int) -> str:
        """What run-time check number `site` checks (`CheckBounds.kind`)."""
        found = next((s for s in walk(self.body) if isinstance(s, CheckBounds)), None)
        return found.kind(site) if found is not None else "index"


def walk(stmts) -> Iterator[HostStmt]:
    """Pre-order iterator over host statements, loop heads and bodies included."""
    for s in stmts:
        yield s
        if isinstance(s, Loop):
            yield from walk(s.head)
            yield from walk(s.body)


def kernel_uses(k: K.Kernel, buffers, params) -> Uses:
    """The global buffers (in the order of `buffers`) and host scalars (in the order of
    `params`) that the body of kernel `k` reads or writes."""
    bufs = K.buffers_used(k.body)
    names = K.names_read(k.body)
    return Uses(tuple(b.name for b in buffers if b.name in bufs),
                tuple(p.name for p in params if p.name in names))
