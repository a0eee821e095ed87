"""Shrinking a failing case to a small program that fails the same way.

Greedy reduction over the AST of the entry's body: replace a subexpression
by one of its own subexpressions, or by a literal, keep the change when the
program still type-checks and the runner gives the same verdict; then try
shorter arguments.  Bounded by `attempts` runs and optionally by a time budget.
"""
from __future__ import annotations

import dataclasses

from fcl.api.program import load
from fcl.base.errors import FCLError
from fcl.fuzz.gen import Case
from fcl.syntax import ast as A
from fcl.syntax import parse_program
from fcl.syntax.pretty import print_decl


def subexprs(e: A.Expr):
    """(path, node) for every subexpression of e, outermost first; a path is a
    tuple of (field name, tuple index or None) steps."""
    out = [((), e)]
    for f in dataclasses.fields(e):
        v = getattr(e, f.name)
        if isinstance(v, A.Expr):
            out += [(((f.name, None),) + p, x) for p, x in subexprs(v)]
        elif isinstance(v, tuple):
            for i, x in enumerate(v):
                if isinstance(x, A.Expr):
                    out += [(((f.name, i),) + p, y) for p, y in subexprs(x)]
    return out


def children(e: A.Expr) -> list[A.Expr]:
    out = []
    for f in dataclasses.fields(e):
        v = getattr(e, f.name)
        if isinstance(v, A.Expr):
            out.append(v)
        elif isinstance(v, tuple):
            out += [x for x in v if isinstance(x, A.Expr)]
    return out


def replace_at(e: A.Expr, path, new: A.Expr) -> A.Expr:
    if not path:
        return new
    (name, i), rest = path[0], path[1:]
    v = getattr(e, name)
    if i is None:
        return dataclasses.replace(e, **{name: replace_at(v, rest, new)})
    items = list(v)
    items[i] = replace_at(items[i], rest, new)
    return dataclasses.replace(e, **{name: tuple(items)})


def _entry_decl(program: A.Program, entry: str):
    for k in range(len(program.decls) - 1, -1, -1):
        d = program.decls[k]
        if isinstance(d, A.Val) and d.name == entry:
            return k, d
    raise LookupError(entry)


def candidates(body: A.Expr):
    """Smaller bodies: each subexpression replaced by a child or a literal."""
    for path, node in subexprs(body):
        for c in children(node):
            yield replace_at(body, path, c)
        if not isinstance(node, (A.IntLit, A.BoolLit, A.Var)):
            yield replace_at(body, path, A.IntLit(0))
            yield replace_at(body, path, A.BoolLit(True))


def minimize(case: Case, status: str, runner, attempts: int = 300, seconds: float | None = None) -> Case:
    """The smallest variant of `case` found that still gets verdict `status`, within
    `attempts` runs and (when given) about `seconds` of wall-clock time."""
    import time
    deadline = None if seconds is None else time.monotonic() + seconds

    def same(c: Case) -> bool:
        nonlocal left
        if deadline is not None and time.monotonic() > deadline:
            left = 0
            return False
        try:
            load(c.source)
        except FCLError:
            return False
        return runner.run(c)["status"] == status

    best = case
    left = attempts
    improved = True
    while improved and left > 0:
        improved = False
        program = parse_program(best.source, "fuzz.fcl")
        _, d = _entry_decl(program, best.entry)
        body = _body(d.value)
        size = len(subexprs(body))
        for cand in candidates(body):
            if len(subexprs(cand)) >= size:
                continue
            trial = dataclasses.replace(best, source=source_with_for(best, cand))
            left -= 1
            if same(trial):
                best, improved = trial, True
                break
            if left <= 0:
                break
    for k, a in enumerate(best.args):          # shorter arrays
        if a.startswith("[") and "," in a and left > 0:
            items = a[1:-1].split(",")
            for n in (0, 1, len(items) // 2):
                args = list(best.args)
                args[k] = "[" + ",".join(items[:n]) + "]"
                trial = dataclasses.replace(best, args=args)
                left -= 1
                if same(trial):
                    best = trial
                    break
    return best


def _body(v: A.Expr) -> A.Expr:
    while isinstance(v, A.Lam):
        v = v.body
    return v


def _with_body(v: A.Expr, body: A.Expr) -> A.Expr:
    if isinstance(v, A.Lam):
        return dataclasses.replace(v, body=_with_body(v.body, body))
    return body


def source_with_for(case: Case, body: A.Expr) -> str:
    program = parse_program(case.source, "fuzz.fcl")
    k, d = _entry_decl(program, case.entry)
    decls = list(program.decls)
    decls[k] = dataclasses.replace(d, value=_with_body(d.value, body))
    return "\n".join(print_decl(x) for x in decls) + "\n"


def kept_text(case: Case, result: dict) -> str:
    """A failure as it is kept: a comment with the verdict, then the case as an FCL
    file with a test block (ready for tests/programs/fuzz_regressions.fcl once the
    expected output is filled in from the evaluator)."""
    first = result["detail"].strip().splitlines()[0][:200] if result["detail"].strip() else ""
    return f"-- {result['status']}: {first}\n" + case.program_text()


def minimize_failures(failures, runner, seconds: float, each: float = 60.0) -> list[str]:
    """kept_text of each failure, minimised while the time budget `seconds` lasts
    (at most `each` seconds per failure); later ones are kept as they are."""
    import time
    end = time.monotonic() + seconds
    out = []
    for case, r in failures:
        left = end - time.monotonic()
        small = minimize(case, r["status"], runner, seconds=min(each, left)) if left > 1 else case
        out.append(kept_text(small, r))
    return out
