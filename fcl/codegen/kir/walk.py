"""Generic traversal and rewriting of the kernel IR, and renaming.

Every walk here reads a node's children from its dataclass fields
(nodes.expr_children, nodes.stmt_children), so a new node kind needs no new
case: `walk_expr`/`walk_stmts` list the nodes in pre-order, `walk_scoped`
pairs each statement with the names in scope there (`binds` says what a
statement defines), `map_expr`/`map_stmts`/`map_own_exprs` rebuild a tree
bottom-up through the smart constructors (`refold`), skipping the subtrees a
`visit` test rules out.  Renaming, which the passes that copy code share:
`Names` makes fresh names unique in a kernel, `defines` lists what a body
defines, `rename` renames throughout, and `straight_copies` turns a loop of a
constant count into straight-line copies of its body (`unroll`, `privatise`).
Consumes and produces nodes; builds on nodes.py, memo.py and build.py.
Not here: what a statement reads and writes (facts.py), rewrites under
range facts (analysis/ranges.py: `rewrite_kernels`).
"""
from __future__ import annotations

import dataclasses

from fcl.codegen.kir.build import add, binop, call, cint, lt, select, unop
from fcl.codegen.kir.memo import _field_names
from fcl.codegen.kir.nodes import (Assign, Atomic, Bin, Call, DeclPtr, DeclVar, Expr, For, If, Kernel, Let, Load,
                                   Op, ParFor, PartFor, SeqFor, Select, Stmt, SwapPtr, Un, Var, VLoad, _block_getter,
                                   _child_fields, _expr_getter, stmt_children, stmt_exprs)


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


def strict_children(e: Expr) -> tuple:
    """(child, whether evaluating e always evaluates it) for each child of e: not a select's
    arms, nor the right of && ||."""
    if isinstance(e, Select):
        return ((e.cond, True), (e.a, False), (e.b, False))
    if isinstance(e, Bin) and e.op in (Op.AND, Op.OR):
        return ((e.a, True), (e.b, False))
    return tuple((c, True) for c in _expr_getter(type(e))(e))


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


def walk_blocks(stmts) -> list:
    """The statement sequences in pre-order: `stmts` itself first, then every body nested in it."""
    out = [stmts]
    for s in stmts:
        for body in _block_getter(type(s))(s):
            out.extend(walk_blocks(body))
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
    if isinstance(s, Atomic):
        return (s.var,) if s.var else ()
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


def names_read(stmts) -> set[str]:
    """The variables read anywhere in `stmts` (nested bodies included)."""
    return set().union(*(e.names for s in walk_stmts(stmts) for e in stmt_exprs(s)))


# ---------------------------------------------------------------- renaming

class Names:
    """Fresh names for one kernel (unique across it): `base_tag`, else `base_tag_1`, ..."""

    def __init__(self, k: Kernel):
        self.taken = defined_in(k.body) | {b.name for b in k.locals_ + k.privates} | names_read(k.body)

    def fresh(self, base: str, tag: str) -> str:
        name, extra = f"{base}_{tag}", 0
        while name in self.taken:
            extra += 1
            name = f"{base}_{tag}_{extra}"
        self.taken.add(name)
        return name


def defines(stmts) -> set[str]:
    """Names `stmts` define (not those they only assign or swap: those live outside)."""
    return {name for s in walk_stmts(stmts) if not isinstance(s, (Assign, SwapPtr))
            for name in binds(s)}


_NAME_FIELDS = ("var", "active", "a", "b", "buf", "init")


def rename(stmts, table: dict[str, str]) -> tuple:
    """`stmts` with every name in `table` (defined, assigned, read, or a pointer) renamed."""
    def fe(e: Expr) -> Expr:
        if isinstance(e, Var) and e.name in table:
            return Var(e.ty, table[e.name])
        if isinstance(e, Load) and e.buf in table:
            return dataclasses.replace(e, buf=table[e.buf])
        return e

    def fs(s: Stmt) -> Stmt:
        changes = {f: table[getattr(s, f)] for f in _NAME_FIELDS
                   if isinstance(getattr(s, f, None), str) and getattr(s, f) in table}
        if isinstance(s, VLoad) and not table.keys().isdisjoint(s.vars):
            changes["vars"] = tuple(table.get(v, v) for v in s.vars)
        return dataclasses.replace(s, **changes) if changes else s

    def visit(e: Expr) -> bool:
        return not (e.names.isdisjoint(table) and e.buffers_read.isdisjoint(table))

    return map_stmts(fs, fe, stmts, visit)


def straight_copies(s: For, fewest: int, most: int, names: Names, tag: str) -> tuple:
    """`most` straight-line copies of loop `s`'s body (a positive constant step), copy k after
    `let i_k = start + k * step` and its names renamed (`tag` and k); copies from `fewest` on
    guarded by `if (i_k < stop)`."""
    out = []
    for copy in range(most):
        var = names.fresh(s.var, f"{tag}{copy}")
        renaming = {name: names.fresh(name, f"{tag}{copy}") for name in defines(s.body)}
        renaming[s.var] = var
        out.append(Let(var, add(s.start, cint(copy * s.step.value))))
        body = rename(s.body, renaming)
        out.extend(body if copy < fewest else (If(lt(Var("int", var), s.stop), body),))
    return tuple(out)
