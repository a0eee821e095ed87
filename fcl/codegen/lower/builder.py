"""Where the lowering builds: `Builder`, `Ctx` and the records they keep.

`Builder` holds what the lowering of one entry point makes: fresh names, buffers
(`BufRec`), the kernels closed so far, the host statements (a launch is a
`PendingLaunch` until the kernels are named), the sites of run-time checks, and the
current span (`Builder.at`), where buffers are placed and errors reported.  `Ctx` is
where code is emitted and the level of the unit that runs it; inside the per-element
work of a block-level push, its `ElemLoop` tracks the names whose values differ
between the block's work-items.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

from fcl.base.errors import CompileError, CompilerLimitation, Span
from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.lower.values import SPair, SScalar, SVal, checked_scalars


SHARE_MIN = 12            # scalar expressions of this many nodes or more are named before being copied


@dataclass
class BufRec:
    """A buffer being built; its element type comes from the typed core (or is the
    fixed type of a buffer of the compiler's own: flags, guards, carried scalars)."""
    name: str
    space: str
    size: K.Expr
    origin: str
    span: Span | None
    role: str
    per: str = ""
    ty: str = ""


class Builder:
    """Fresh names, buffers and the kernels of one entry point."""

    def __init__(self, hw: dict[str, int], dry: bool = False, checks: bool = True):
        # dry: a probe whose code is thrown away (`probe`)
        self.hw = hw
        self.dry = dry
        self.checks = checks                    # bounds-check every `index` (see `checked_index`)
        self.counter = 0
        self.globals: list[BufRec] = []
        self.kernels: list[tuple[list, list, list]] = []   # (stmts, locals, privates)
        self.host: list = []                # host statements; launches as PendingLaunch
        self.top: list = []
        self.locals: list[BufRec] = []
        self.privates: list[BufRec] = []
        self.span: Span | None = None
        self.bufs: dict[str, BufRec] = {}
        self.params: set[str] = set()
        self.host_vars: list[K.Param] = []
        self.guard: BufRec | None = None        # see loops._guarded_loop
        self.guarded: list[str] = []
        self.bounds: BufRec | None = None       # see checked_index
        self.sites: list[P.Site] = []
        self.length_spans: dict[str, Span | None] = {}  # host length variable -> its while/power
        self.parent: Builder | None = None      # a dry probe whose expressions the real plan keeps
        self.hw_read: set[str] = set()          # hardware parameters the generated code depends on
        self.read_backs: dict = {}              # (host block, size) -> host variable (`read_back`)
        self.unwritten: set[str] = set()        # buffers a kernel not yet built writes (`read_back`)
        self.after: list = []                   # kernels launched after the current one (`kernel_after`)

    def probe(self, keep_checks: bool, params=()) -> "Builder":
        """A dry builder for trying code out (thrown away), with this one's parameters (and
        `params`), span and names kept apart from its own.  `keep_checks`: its run-time checks
        and expressions become this plan's (`loops._host_final_length` keeps its lengths);
        else its checks go nowhere (`loops._forces_grid_arrays` only asks what happens)."""
        probe = Builder(self.hw, dry=True)
        probe.parent = self if keep_checks else None
        probe.params = set(self.params) | set(params)
        probe.counter = self.counter + 100000
        probe.span = self.span
        return probe

    @contextlib.contextmanager
    def at(self, span: Span | None):
        """Inside the `with` block, the current span is `span` (what is built there is placed
        and reports at it); after it, the span it replaced."""
        saved, self.span = self.span, span
        try:
            yield
        finally:
            self.span = saved

    def checked_index(self, i: K.Expr, n: K.Expr) -> K.Expr:
        """`i` as the index of an `index` at the current span into an array of length n:
        a `K.Checked` (a site of its own, recording a failure in the plan's bounds buffer)
        unless checks are off; the `bounds` pass removes those the range analysis proves."""
        root = self.parent or self
        if not root.checks or isinstance(K.checked(i, n, "", -1), K.Const):
            return i
        return K.checked(i, n, *self.check_site("index"))

    def check_site(self, kind: str, span: Span | None = None) -> tuple[str, int]:
        """(the plan's bounds buffer, a new site) for a run-time check of `kind` (see
        plan.failure_message) at `span` (by default the current one); ("", -1) in a probe
        whose code is thrown away."""
        root = self.parent or self
        if root.dry:
            return "", -1
        if root.bounds is None:         # (named without the counter: other names stay as they were)
            root.bounds = BufRec("bounds", "global", K.cint(K.BOUNDS_WORDS), "device run-time checks", None,
                                 "bounds", ty="int")
            root.bufs[root.bounds.name] = root.bounds
            root.globals.append(root.bounds)
            root.host.append(P.Alloc(root.bounds.name))
        root.sites.append(P.Site(kind, span or self.span))
        return root.bounds.name, len(root.sites) - 1

    def checked_divisor(self, a: K.Expr, b: K.Expr, op: str, span: Span | None) -> K.Expr:
        """The divisor `b` of the int `a / b` or `a % b` at `span`: the evaluator reports a
        zero divisor, so where b is not a nonzero constant it is `b` where nonzero and else a
        failed check that records the dividend (and gives 0: fcl_div and fcl_mod are total)."""
        if isinstance(b, K.Const) and b.value != 0:
            return b
        return K.checked_divisor(b, a, *self.check_site(op, span))

    def host_computable(self, e: K.Expr, loads: bool = False) -> bool:
        """True when the host can compute `e` from the arguments (sizes stay so); with `loads`,
        also reading int and long elements of global buffers at places it computes so, a
        long's low word taken (kir.eval_host with a `load`: a `P.ReadScalar`'s expression)."""
        return e.names <= self.params and K.host_evaluable(e, loads)

    def read_back(self, n: K.Expr, what: str) -> K.Var | None:
        """A host variable holding the int `n`, which the kernels can compute but the host
        cannot (a count in an array a kernel before wrote, say): the host reads the elements
        n loads itself where their indexes are its own scalars (`host_computable` with loads), else a
        one-work-item kernel, launched before the current one, stores n in a global word the
        host reads back (`P.ReadScalar`, once per size and host block).  None where n reads what only the
        current kernel knows: a work-item's id, its own names, or a buffer it writes."""
        if self.dry:
            return None
        lets = self._shared_lets(n)
        known = self.params | {s.var for s in lets}
        written = K.all_accesses(self.top)[1]
        for e in [n] + [s.expr for s in lets]:
            if not e.names <= known:
                return None
            for x in K.walk_expr(e):
                if isinstance(x, K.HwId) or isinstance(x, K.Load) and (
                        x.buf in written or x.buf in self.unwritten or self.bufs.get(x.buf) is None
                        or self.bufs[x.buf].space != "global"):
                    return None
        key = (id(self.host), n)
        if key in self.read_backs:
            return self.read_backs[key]
        var = K.Var("int", self.fresh("hsize"))
        if not lets and self.host_computable(n, loads=True):
            # the host reads the words n needs itself (a packConcat's length: its last part's
            # status word), no kernel: on an H200 that kernel took 3 to 7 us of a filter's 170
            self.host.append(P.ReadScalar(var.name, "", n))
        else:
            word = self.buffer("global", K.cint(1), f"length of {what}, computed on the device", "size",
                               prefix="size", ty="int")
            self.kernel_before(tuple(lets) + (K.If(K.binop("eq", K.HwId("int", "global_id"), K.cint(0)),
                                                   (K.Store(word.name, K.cint(0), n),)),))
            self.host.append(P.ReadScalar(var.name, word.name))
        self.params.add(var.name)
        self.host_vars.append(K.Param(var.name, "int"))
        self.length_spans[var.name] = self.span
        self.read_backs[key] = var
        return var

    def kernel_before(self, stmts):
        """A kernel of `stmts` (global memory only) launched before the current one, whose
        statements so far stay where they are."""
        kept = self.top, self.locals, self.privates, self.after
        self.top, self.locals, self.privates, self.after = list(stmts), [], [], []
        self.close_kernel()
        self.top, self.locals, self.privates, self.after = kept

    def kernel_after(self, stmts):
        """A kernel of `stmts` (global memory only) launched right after the current one."""
        self.after.append(tuple(stmts))

    def exact_claims(self) -> K.Var:
        """The host scalar P.EXACT_CLAIMS (which check of a grid-level interleave's places the
        kernels run: `lower.claims`), a parameter of the plan once asked for."""
        if P.EXACT_CLAIMS not in self.params:
            self.params.add(P.EXACT_CLAIMS)
            self.host_vars.append(K.Param(P.EXACT_CLAIMS, "int"))
        return K.Var("int", P.EXACT_CLAIMS)

    def _shared_lets(self, e: K.Expr) -> list:
        """The `Let`s at the top of kernels (the names `Ctx.share` gave) that `e` needs, those
        they need in turn, in the order they were made: the statements before `e` in a kernel
        of its own.  (Substituting their values instead grows a chain of lets that each use
        the one before several times exponentially: random-tester seed 2513.)"""
        defs = {s.var: s for stmts in [k[0] for k in self.kernels] + [self.top]
                for s in stmts if isinstance(s, K.Let)}
        need, todo = set(), list(e.names & defs.keys())
        while todo:
            name = todo.pop()
            if name not in need:
                need.add(name)
                todo.extend(defs[name].expr.names & defs.keys())
        return [s for name, s in defs.items() if name in need]

    def host_scalar(self, e: K.Expr) -> K.Var:
        """A host variable set to the host-computable int `e` before the next launch
        and passed to the kernels that use it (a shared size or scalar is computed
        once, not copied into every use)."""
        name = self.fresh("hs")
        self.params.add(name)
        if not self.dry:
            self.host.append(P.SetVar(name, e, size=False))
            self.host_vars.append(K.Param(name, "int"))
        return K.Var("int", name)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def buffer(self, space: str, size: K.Expr, origin: str, role: str, per: str = "", prefix: str = "",
               ty: str = "") -> BufRec:
        rec = BufRec(self.fresh(prefix or {"global": "g", "local": "l", "private": "p"}[space]),
                     space, size, origin, self.span, role, per, ty)
        self.bufs[rec.name] = rec
        if not self.dry:
            {"global": self.globals, "local": self.locals, "private": self.privates}[space].append(rec)
            if space == "global" and role not in ("input", "alias"):
                self.host.append(P.Alloc(rec.name))
        return rec

    def split_kernel(self):
        """End the current kernel here (a grid-level force needs a kernel boundary)."""
        if self.dry or not self.top:
            return
        self.close_kernel()

    def finish(self):
        """Close the last kernel (a program always has at least one)."""
        if self.top or not self.kernels:
            self.close_kernel()

    def close_kernel(self):
        self.host.append(PendingLaunch(len(self.kernels)))
        self.kernels.append((self.top, self.locals, self.privates))
        self.top, self.locals, self.privates = [], [], []
        after, self.after = self.after, []
        for stmts in after:
            self.host.append(PendingLaunch(len(self.kernels)))
            self.kernels.append((list(stmts), [], []))


@dataclass(frozen=True)
class PendingLaunch:
    """A launch of kernel number `index`, resolved to a `plan.Launch` when the kernels are named."""
    index: int


@dataclass
class ElemLoop:
    """The per-element work of a block-level push array: `var` is the element index;
    `varying` the names whose value differs between the block's work-items; a
    block- or warp-level force inside it makes it `collective` (every work-item
    then runs the same number of rounds, see `schemes.push_scheme`)."""
    level: int
    var: str
    varying: set
    collective: bool = False

    def reads_varying(self, e: K.Expr, warp_uniform: bool = False) -> list[str]:
        """The varying names `e` reads (the warp id counts only unless `warp_uniform`:
        a warp-level array's place in local memory depends on it, its values must not)."""
        ids = (K.Hw.LID, K.Hw.LANE, K.Hw.GLOBAL_ID) + (() if warp_uniform else (K.Hw.WID,))
        names = [x.name for x in K.walk_expr(e) if isinstance(x, K.Var) and x.name in self.varying]
        if any(isinstance(x, K.HwId) and x.name in ids for x in K.walk_expr(e)):
            names.append("the work-item's id")
        return names


class Ctx:
    """Where code is emitted, and the level of the unit that runs it; inside the
    per-element work of a block-level push, the element loop and the conditions and
    loop counts on the way (`guards`)."""

    def __init__(self, b: Builder, level: int, stmts: list | None, top: bool = False):
        self.b = b
        self.level = level
        self._stmts = stmts
        self.top = top
        self.elem: ElemLoop | None = None
        self.guards: tuple = ()

    @property
    def stmts(self) -> list:
        return self.b.top if self.top else self._stmts

    def emit(self, s: K.Stmt):
        if self.elem is not None:
            self._track(s)
        self.stmts.append(s)

    def _track(self, s: K.Stmt):
        """Names defined from varying values vary; loop-carried variables are taken to vary."""
        e = self.elem
        if isinstance(s, K.Let) and e.reads_varying(s.expr):
            e.varying.add(s.var)
        elif isinstance(s, K.DeclVar):
            e.varying.add(s.var)
        elif isinstance(s, K.Assign) and e.reads_varying(s.expr):
            e.varying.add(s.var)
        elif isinstance(s, K.SeqFor) and e.reads_varying(s.count):
            e.varying.add(s.var)

    def sub(self, level: int | None = None, guard: K.Expr | None = None) -> "Ctx":
        """A nested context (loop or branch body) with its own statement list; `guard`
        is the condition or loop count that decides whether and how often it runs."""
        c = Ctx(self.b, self.level if level is None else level, [])
        c.elem = self.elem
        c.guards = self.guards + ((guard,) if guard is not None and self.elem is not None else ())
        return c

    def bind(self, e: K.Expr, prefix: str = "t") -> K.Expr:
        """Name a non-trivial expression once (never at a kernel's top level)."""
        if self.top or isinstance(e, (K.Const, K.Var, K.HwId)) or self.b.host_computable(e):
            return e
        name = self.b.fresh(prefix)
        self.emit(K.Let(name, e))
        return K.Var(e.ty, name)

    def make_checks(self, v: SVal):
        """The run-time checks of v (an `index`, a divisor) made here, where the evaluator
        computes v, whether or not its value is used (a literal's index that no choice reads,
        the part of a pair `fst` drops, the elements a `zipWithPush` drops): each checked
        scalar bound eagerly (`share`), a copy the passes drop once they prove its checks."""
        for d in checked_scalars(v):
            self.share(SScalar(d), eager=True)

    def share(self, v: SVal, eager: bool = False) -> SVal:
        """Name the large scalar expressions in a value that is about to be copied (a
        function's argument, a let's value), so each copy is a variable, not the whole
        expression again (nested lets and maps would otherwise grow the code
        exponentially).  Unlike `bind`, also at a kernel's top: a name used after a
        kernel boundary is carried across it (`carry_scalars`).  `eager`: the value of a
        `let` or an element of an array literal, which the evaluator computes where it is
        written, so its run-time checks (an `index`, a divisor) are made here, used or not."""
        if isinstance(v, SPair):
            return SPair(self.share(v.a, eager), self.share(v.b, eager))
        if not isinstance(v, SScalar) or isinstance(v.e, (K.Const, K.Var, K.HwId)):
            return v
        checks = K.holds_check(v.e)
        if sum(1 for _ in K.walk_expr(v.e)) < SHARE_MIN and not (eager and checks):
            return v
        # stays host-computable (it may be a size); but the host computes its variables before
        # each launch, whatever the kernel's branches and loops do, so a bounds-checked index
        # (an error when out of range) goes there only from a kernel's top, which always runs
        if self.b.host_computable(v.e) and v.e.ty == "int":
            if self.top or not checks:
                return SScalar(self.b.host_scalar(v.e))
            hoisted = K.hoist_checks(v.e)
            if hoisted is not None:     # the host computes it; here the kernel makes its checks
                plain, checks = hoisted
                for failed, check in (c for c in checks if c[1].site >= 0):
                    self.emit(K.If(failed, (K.Fail(check.buf, check.site, (check.index,)),)))
                return SScalar(self.b.host_scalar(plain))
        name = self.b.fresh("sh")
        self.emit(K.Let(name, v.e))
        return SScalar(K.Var(v.e.ty, name))

    def error(self, message: str, notes=None) -> CompileError:
        return CompileError(message, self.b.span, notes)

    def limitation(self, what: str, message: str, notes=None) -> CompilerLimitation:
        """What the compiler cannot do yet (`what`: an entry of errors.LIMITATIONS), here."""
        return CompilerLimitation(what, message, self.b.span, notes)


def origin_of(span: Span | None, what: str) -> str:
    if span is None:
        return what
    return f"{what} at {span.source.name}:{span.line}"
