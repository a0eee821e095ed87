"""How an entry point runs over several processes: which arguments are split, and how the
processes' results make the whole one (docs/distributed.md).

The meaning of a distributed run is the run of the entry on the whole data, which the
evaluator defines.  Each process (an MPI rank) runs the entry on a contiguous block of every
split argument; `Distribution` says how those results combine:

- `reduce`: the entry's body is the prelude's `reduce op ne e` (or `reduceComm`), `e` an
  array whose element i depends on element i of the split arguments only (a split argument,
  or `mapPull`/`zipWith` of them): the ranks' one-element results are combined with `op` in
  rank order, so an operator that is not commutative stays right;
- `scan`: the body is the prelude's `scan op ne e`: each rank's result is the scan of its
  block; rank r's carry is the combination, in rank order, of the last elements of the ranks
  before it, combined with every element of its block (`op carry x`);
- `local`, with a halo h the user states (`--halo h`): element i of the result depends on
  elements i - h .. i + h of the split arguments only, and the result is as long as they
  are (a map for h = 0, a stencil whose ends are the array's ends): each rank runs the entry
  on its block with h elements of each neighbour's beside it and keeps its own part.

An entry of another form cannot be distributed yet: `distribution` says why, at the body.
"""
from __future__ import annotations

from dataclasses import dataclass

from fcl.base.errors import ArgumentError
from fcl.syntax import ast as A
from fcl.types import terms as T

REDUCES = ("reduce", "reduceComm")
SCANS = ("scan",)
ELEMENTWISE = {"mapPull": 1, "zipWith": 2}     # prelude function -> its array arguments
COMBINING = ("mapPull",)          # what run.py's declarations call


@dataclass(frozen=True)
class Distribution:
    """How entry `entry` runs over ranks: `kind` (reduce, scan or local), the 0-based
    positions of its split parameters, and for reduce and scan the operator and neutral
    element as written in its body (expressions over its parameters)."""
    entry: str
    params: tuple[str, ...]
    split: tuple[int, ...]
    kind: str
    halo: int = 0
    op: A.Expr | None = None
    ne: A.Expr | None = None

    def describe(self) -> str:
        names = ", ".join(self.params[k] for k in self.split)
        how = {"reduce": "the ranks' results combined with its operator in rank order",
               "scan": "each rank's scan carried on from the ranks before it",
               "local": f"each rank's block with {self.halo} element{'s' * (self.halo != 1)} of its "
                        f"neighbours' beside it"}[self.kind]
        return f"`{self.entry}` split over {names}: {how}"


def distribution(prog, entry: str, halo: int | None = None, replicate=()) -> Distribution:
    """The Distribution of `entry` of the loaded Program `prog`: every array parameter split
    in blocks unless named (or numbered from 1) in `replicate`; `halo` states that the
    entry is local (section above), else its body must be a prelude `reduce` or `scan`."""
    decl = next((d for d in reversed(prog.ast.decls) if isinstance(d, A.Val) and d.name == entry), None)
    if decl is None:
        raise ArgumentError(f"`{entry}` is not declared in this program: a distributed run takes an entry "
                            f"of the file (`fun {entry} ... = reduce op ne a`, say)")
    params = tuple(prog.param_names(entry))
    types = prog.param_types(entry, len(params))
    split = tuple(k for k, t in enumerate(types) if _is_array(t) and not _named(k, params, replicate))
    for r in replicate:
        if not any(_named(k, params, (r,)) for k in range(len(params))):
            raise ArgumentError(f"--replicate {r}: `{entry}` has no parameter of that name or position "
                                f"(its parameters: {', '.join(params) or 'none'})", prog.span_of(entry))
    if not split:
        raise ArgumentError(f"`{entry}` has no array parameter to split over the ranks", prog.span_of(entry))
    if halo is not None:
        if halo < 0:
            raise ArgumentError(f"--halo {halo}: a halo is a number of elements, at least 0")
        return Distribution(entry, params, split, "local", halo=halo)
    body = _body(decl.value)
    call = _call(body)
    own = {d.name for d in prog.ast.decls if isinstance(d, A.Val)} | set(params)
    split_names = {params[k] for k in split}
    if call is not None and call[0].name in REDUCES + SCANS and call[0].name not in own and len(call[1]) == 3:
        op, ne, arr = call[1]
        for what, e in (("operator", op), ("neutral element", ne)):
            used = sorted({v.name for v in A.free_uses(e)} & split_names)
            if used:
                raise ArgumentError(f"cannot distribute `{entry}`: the {what} of its `{call[0].name}` reads the "
                                    f"split argument `{used[0]}`, whose elements each rank has only a block of",
                                    _span(e, body))
        _elementwise(arr, split_names, own, entry)
        for d in prog.ast.decls:
            if isinstance(d, A.Val) and d.name in COMBINING:
                raise ArgumentError(f"cannot distribute `{entry}`: the ranks' results are combined with the "
                                    f"prelude's `{d.name}`, which this program declares anew", d.name_span)
        return Distribution(entry, params, split, "reduce" if call[0].name in REDUCES else "scan", op=op, ne=ne)
    raise ArgumentError(
        f"cannot distribute `{entry}`: its body is not a call of the prelude's `reduce`, `reduceComm` or "
        f"`scan` on its split arguments; if element i of its result depends only on elements i - h .. i + h "
        f"of them (a map: h = 0; a stencil), say so with --halo h", _span(body, decl.value))


def _is_array(t) -> bool:
    return isinstance(t, (T.TPullT, T.TPushT))


def _named(k: int, params, names) -> bool:
    return any(str(n) == params[k] or str(n) == str(k + 1) for n in names)


def _body(e: A.Expr) -> A.Expr:
    while isinstance(e, (A.Lam, A.LevelLam)):
        e = e.body
    return e


def _call(e: A.Expr):
    """(the function's Var, its arguments) of an application of a named function, with
    `x |> f a` read as `f a x`; else None."""
    args = []
    while True:
        if isinstance(e, A.BinOp) and e.op == "|>":
            args.insert(0, e.left)
            e = e.right
        elif isinstance(e, A.App):
            args.insert(0, e.arg)
            e = e.fn
        else:
            break
    return (e, args) if isinstance(e, A.Var) else None


def _elementwise(e: A.Expr, split: set, own: set, entry: str) -> None:
    """ArgumentError at the part of `e` whose element i may depend on other elements of a
    split argument than its i-th."""
    call = _call(e)
    if isinstance(e, A.Var) and e.name in split:
        return
    if call is not None and call[0].name in ELEMENTWISE and call[0].name not in own \
            and len(call[1]) == 1 + ELEMENTWISE[call[0].name]:
        f, *arrays = call[1]
        used = sorted({v.name for v in A.free_uses(f)} & split)
        if used:
            raise ArgumentError(f"cannot distribute `{entry}`: the function that `{call[0].name}` applies reads "
                                f"the split argument `{used[0]}` whole, and each rank has only a block of it",
                                _span(f, e))
        for a in arrays:
            _elementwise(a, split, own, entry)
        return
    raise ArgumentError(f"cannot distribute `{entry}`: the array it combines must be a split argument, or "
                        f"`mapPull`/`zipWith` of split arguments (element i from their elements i), so that "
                        f"each rank's block gives its block of it", _span(e, e))


def _span(e: A.Expr, fallback: A.Expr):
    return getattr(e, "span", None) or getattr(fallback, "span", None)
