"""Why the host cannot compute an array length, in the program's own terms.

The lowering (fcl/codegen/lower/) needs the length of every array it allocates (a `force`,
a `while`, a result) on the host, before the kernels run: only int arguments, the lengths of
array arguments, constants and int arithmetic on them.  When a length needs more, the error
says what, in FCL: `index arr 0` (an element of argument 1 `arr`), `d2i d` (a conversion the
host does not compute), a loop counter or a foldl result.  This module turns the length, a
kernel-IR expression over the compiler's own names (`in0_1`, `arg0`, `n0`, `part3`), into those
words; it reads the builder's buffers, parameters and argument names and changes nothing.
"""
from __future__ import annotations

import re

from fcl.base.errors import CompilerLimitation
from fcl.base.operators import OPERATORS
from fcl.codegen import kir as K


FCL_OPS = {name: op.fcl[0] for name, op in OPERATORS.items()}   # kernel-IR operator -> FCL's (`/`)

# fresh-name prefixes of the lowering -> what such a variable holds
KERNEL_VALUES = {"part": "the index of the part (chunk) a work-group builds",
                 "i": "the index of the element being written",
                 "k": "the counter of a sequential loop (foldl, seqFor)",
                 "it": "the step counter of a power", "hit": "the step counter of a power",
                 "round": "the round of a block-level loop",
                 "acc": "the result of a foldl", "st": "the state of a loop",
                 "len": "the length of a while loop's result", "hlen": "the length of a while loop's result",
                 "cur": "the length of a while loop's result", "nxt": "the length of a while loop's result"}


def length_error(b, e: K.Expr, what: str, span, stmts=()) -> CompilerLimitation:
    """The error at `span` for a length `e` the host cannot compute; `what`: "the array this
    force stores", "the result of `f`", ...  A checked `index` that the length reads is
    shown as a note at its place in the program."""
    words = _Words(b)
    reasons = words.reasons(e, _definitions(b, stmts))
    said = reasons[0] if len(reasons) == 1 else ", ".join(reasons[:-1]) + " and " + reasons[-1]
    message = (f"the length of {what} depends on {said}; the host must know every length before "
               f"the kernel that needs it runs, to allocate memory")
    notes = ["a length may use int arguments, the lengths of array arguments, constants and int "
             "arithmetic on them, and values an earlier kernel computed at the top level (the "
             "count of a filter: the host reads it back), but not what a work-item computes for "
             "its own part: pass what it needs as an int argument, or compute it over the whole "
             "array first"]
    mine = [where for where in words.index_sites(e, _definitions(b, stmts))
            if span is None or where.source.name == span.source.name]     # not the prelude's
    related = [("the length reads the element this `index` gives", where) for where in mine[:1]]
    return CompilerLimitation("device-length", message, span, notes, related)


def host_length_error(ctx, n: K.Expr, what: str, span=None) -> CompilerLimitation:
    """The error for the length `n` of `what`, which needs values only the kernels know,
    at `span`, else the current span of `ctx`'s builder (the statements of `ctx` may define
    it)."""
    return length_error(ctx.b, n, what, span or ctx.b.span, ctx.stmts)


class _Words:
    """The kernel IR of one entry in the program's terms: `b` is the lowering's Builder (its
    parameters, buffers, and `arg_names`, the entry's parameter names)."""

    def __init__(self, b):
        self.b = b
        self.names = list(getattr(b, "arg_names", ()) or ())

    def reasons(self, e: K.Expr, lets: dict) -> list[str]:
        out: list[str] = []
        loads: dict[str, list[K.Load]] = {}            # buffer -> its loads, in order

        def add(text):
            if text not in out:
                out.append(text)

        seen = set()        # a shared subexpression once: the trees are DAGs, exponential as trees

        def visit(x, depth=0):
            if x in seen:
                return
            seen.add(x)
            if isinstance(x, K.Load):
                if x.buf not in loads:
                    loads[x.buf] = []
                    add(x.buf)                         # replaced by its words below
                loads[x.buf].append(x)
                return                                 # its index is the array's business
            if isinstance(x, K.HwId):
                add("the position of the work-item running it")
                return
            if isinstance(x, K.Var) and x.name not in self.b.params:
                if x.name in lets and depth < 8:
                    visit(lets[x.name], depth + 1)
                else:
                    prefix = re.match(r"[a-z]*", x.name).group(0)
                    add(KERNEL_VALUES.get(prefix, "a value computed inside the kernel")
                        + ", which only the kernel knows")
                return
            if isinstance(x, K.Call) and x.fn not in K.HOST_CALLS and self.host_only(x):
                kind = "a conversion" if re.fullmatch(r"[bifd]2[bifd]", x.fn) else f"`{x.fn}`"
                add(f"`{self.text(x)}`, {kind} the host does not compute in a length")
                return
            if isinstance(x, K.Bin) and x.op not in K.COMPARISONS and x.a.ty in ("double", "float") \
                    and self.host_only(x):
                add(f"`{self.text(x)}`, arithmetic on {x.a.ty}s (the host computes lengths with ints only)")
                return
            for c in K.expr_children(x):
                visit(c, depth)
        visit(e)
        out = [self.load_words(loads[r]) if r in loads else r for r in out]
        return out or ["values computed on the device"]

    def index_sites(self, e: K.Expr, lets: dict) -> list:
        """The spans of the checked `index` expressions whose elements `e` reads."""
        root = getattr(self.b, "parent", None) or self.b
        sites, out, seen = getattr(root, "sites", []), [], set()

        def visit(x, depth=0):
            if isinstance(x, K.Var) and x.name in lets and x.name not in seen and depth < 8:
                seen.add(x.name)
                visit(lets[x.name], depth + 1)
            for y in K.walk_expr(x):
                if isinstance(y, K.Load) and isinstance(y.index, K.Checked) and 0 <= y.index.site < len(sites):
                    span = getattr(sites[y.index.site], "span", sites[y.index.site])
                    if span is not None and span not in out:
                        out.append(span)
                elif isinstance(y, K.Var) and y is not x:
                    visit(y, depth)
        visit(e)
        return out

    def host_only(self, x: K.Expr) -> bool:
        """`x` reads only host values (arguments and lengths), no array element or kernel variable."""
        return x.names <= self.b.params and not any(isinstance(y, (K.Load, K.HwId)) for y in K.walk_expr(x))

    def load_words(self, loads: list) -> str:
        """The elements of one buffer that a length reads: `index arr 0` where the index is
        written in the program's terms, else which array."""
        m = re.fullmatch(r"in(\d+(?:_\d)*)_\d+", loads[0].buf)
        texts = [t for t in dict.fromkeys(self.text(x) for x in loads) if "..." not in t]
        shown = f"`{texts[0]}`" + (f" (and {len(loads) - 1} more)" if len(loads) > 1 else "") + ", " \
            if texts else ""
        many = "elements" if len(loads) > 1 else "an element"
        if m:
            k = int(m.group(1).split("_")[0])
            return (f"{shown}{many} of argument {k + 1} (`{self.argument(m.group(1))}`), which only "
                    f"the kernels read")
        rec = self.b.bufs.get(loads[0].buf)
        if rec is not None and rec.role == "ticket":
            return f"the number of a part of the {rec.origin.split(': ')[0]}, which its work-group takes as it runs"
        if rec is not None and rec.role == "status":
            return (f"the length of the {rec.origin.split(': ')[0]}, known once its kernel has run (force it, "
                    f"then take `lengthPull`)")
        where = f"the {rec.origin}" if rec is not None else "the device"
        return f"{many} of the array stored by {where}, which only the kernels read"

    def text(self, e: K.Expr) -> str:
        def go(x, top=False):
            s = self.node_text(x, go)
            return s if top or " " not in s or s.startswith(("(", "[")) else f"({s})"
        return go(e, top=True)

    def node_text(self, x, go) -> str:
        if isinstance(x, K.Const):
            if x.ty == "bool":
                return "true" if x.value else "false"
            if x.ty == "float":
                return f"{float(x.value)!r}f"
            return repr(float(x.value)) if x.ty == "double" else str(x.value)
        if isinstance(x, K.Var):
            return self.var_text(x.name)
        if isinstance(x, K.Load):
            return f"index {self.buffer_text(x.buf)} {go(x.index)}"
        if isinstance(x, K.Checked):
            return self.node_text(x.index, go)
        if isinstance(x, K.Call):
            return " ".join([x.fn] + [go(a) for a in x.args])
        if isinstance(x, K.Bin):
            return f"{go(x.a)} {FCL_OPS.get(str(x.op), str(x.op))} {go(x.b)}"
        if isinstance(x, K.Un):
            return f"not {go(x.a)}" if str(x.op) == "not" else f"-{go(x.a)}"
        if isinstance(x, K.Select):
            return f"if {go(x.cond)} then {go(x.a)} else {go(x.b)}"
        return "..."

    def argument(self, path: str) -> str:
        """`arr`, `fst p`: argument `path` ("0", "1_0") by the program's parameter names."""
        k, *parts = path.split("_")
        k = int(k)
        name = self.names[k] if k < len(self.names) and self.names[k] else f"argument {k + 1}"
        for p in parts:
            name = f"{'fst' if p == '0' else 'snd'} {_paren(name)}"
        return name

    def var_text(self, name: str) -> str:
        m = re.fullmatch(r"(arg|n|r|c)(\d+(?:_\d)*)", name)
        if not m or name not in self.b.params:
            return "..."
        arg = _paren(self.argument(m.group(2)))
        return {"arg": arg, "n": f"length {arg}", "r": f"length {arg}",
                "c": f"length (index {arg} 0)"}[m.group(1)]

    def buffer_text(self, buf: str) -> str:
        m = re.fullmatch(r"in(\d+(?:_\d)*)_\d+", buf)
        return _paren(self.argument(m.group(1))) if m else "(the array stored there)"


def _paren(text: str) -> str:
    return f"({text})" if " " in text else text


def _definitions(b, stmts) -> dict:
    """{name: expression} of the lets among `stmts` and the kernels built so far."""
    out = {}
    lists = [list(stmts), list(getattr(b, "top", None) or [])] + [list(k[0]) for k in getattr(b, "kernels", [])]
    for lst in lists:
        for s in K.walk_stmts(lst):
            if isinstance(s, K.Let):
                out.setdefault(s.var, s.expr)
    return out
