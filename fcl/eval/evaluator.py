"""The reference evaluator's front: declarations in, Python values and costs out.

`Evaluator(decls, hw)` keeps the declarations (each compiled by closures.py and
evaluated on first use, once) and one `Machine` (machine.py); `run` applies a
declaration to Python arguments, `eval_expr` evaluates an expression (REPL).
`evaluator_for_source` / `evaluator_for_file` parse a program and put the
prelude's declarations (`prelude_decls`) before it.
"""
from __future__ import annotations

import sys

import numpy as np

from fcl.base.errors import ArgumentError, EvalError, FCLError, NO_SPAN
from fcl.eval.closures import Compiler
from fcl.eval.machine import Machine
from fcl.eval.values import LevelFn, from_python, is_function, to_python
from fcl.syntax import ast, load_program, parse_program
from fcl.syntax.loader import prelude_decls

_UNSET = object()     # the value of a declaration not evaluated yet


class _Cell:
    """A declaration, compiled and evaluated on first use (once)."""

    __slots__ = ("decl", "index", "value", "busy")

    def __init__(self, decl: ast.Val, index: int):
        self.decl = decl
        self.index = index
        self.value = _UNSET
        self.busy = False


class Evaluator:
    """The reference evaluator of FCL programs.

    ``Evaluator(decls, hw)``: `decls` are the prelude's then the program's
    declarations (includes expanded; `Sig`s are ignored); a declaration sees
    the earlier ones only, and later ones shadow earlier ones.  `hw` overrides
    #BlockSize (256), #WarpSize (32), #NumGroups (4096).

    ``run(name, args, cost=False) -> (result, CostReport | None)`` applies a
    declaration to Python arguments (see values.from_python / to_python).
    """

    def __init__(self, decls, hw: dict[str, int] | None = None):
        self.machine = Machine(hw)
        self._cells: list[_Cell] = []
        self._by_name: dict[str, list[int]] = {}
        self.add_decls(decls)

    @property
    def hw(self) -> dict[str, int]:
        return dict(self.machine.hw)

    def names(self) -> list[str]:
        """The visible declaration names (for completion)."""
        return sorted(self._by_name)

    def add_decls(self, decls) -> None:
        """Append declarations (REPL); they shadow earlier ones of the same name."""
        if isinstance(decls, ast.Program):
            decls = decls.decls
        for d in decls:
            if isinstance(d, ast.Val):
                cell = _Cell(d, len(self._cells))
                self._cells.append(cell)
                self._by_name.setdefault(d.name, []).append(cell.index)
            elif isinstance(d, ast.Include):
                raise EvalError(f"include \"{d.path}\" was not expanded before evaluation", d.span)

    # ------------------------------------------------------------ globals

    def _lookup(self, limit: int):
        """Global lookup for code that sees declarations with index < limit."""
        def lookup(name: str):
            indices = self._by_name.get(name)
            if not indices:
                return None
            visible = [i for i in indices if i < limit]
            if not visible:
                return None
            cell = self._cells[visible[-1]]
            return lambda: cell.value if cell.value is not _UNSET else self._force_cell(cell)
        return lookup

    def _force_cell(self, cell: _Cell):
        if cell.busy:
            raise EvalError(f"'{cell.decl.name}' refers to itself", cell.decl.span)
        cell.busy = True
        m = self.machine
        saved = (m.loc, m.ctx, m.span)
        m.loc = m.ctx = 3
        m.span = [0, 0, 0, 0]
        try:
            code = Compiler(m, self._lookup(cell.index)).compile(cell.decl.value, ())
            cell.value = code(None)
        finally:
            m.loc, m.ctx, m.span = saved
            cell.busy = False
        return cell.value

    # ------------------------------------------------------------ running

    def run(self, name: str, args: list, cost: bool = False):
        """Apply declaration `name` to `args`; return (result, CostReport or None)."""
        indices = self._by_name.get(name)
        if not indices:
            raise ArgumentError(f"no declaration named '{name}'")
        cell = self._cells[indices[-1]]
        span = cell.decl.name_span if cell.decl.name_span is not NO_SPAN else cell.decl.span

        def go():
            f = self._force_cell(cell) if cell.value is _UNSET else cell.value
            if isinstance(f, LevelFn):
                raise ArgumentError(f"'{name}' takes a level first (it is level-polymorphic); "
                                    "an entry point must have a fixed level", span)
            v = f
            for k, arg in enumerate(args):
                if not callable(v):
                    raise ArgumentError(f"'{name}' takes {k} argument{'s' * (k != 1)} but "
                                        f"{len(args)} were given", span)
                v = v(from_python(arg, self.machine, f"argument {k + 1} of '{name}'"))
            if is_function(v):
                raise ArgumentError(f"'{name}' needs more than the {len(args)} argument"
                                    f"{'s' * (len(args) != 1)} given (its result is a function)",
                                    span)
            return to_python(v, self.machine, span)
        return self._guarded(go, cost)

    def eval_expr(self, expr: ast.Expr, cost: bool = False):
        """Evaluate an expression that sees every declaration (REPL); (result, report)."""
        def go():
            code = Compiler(self.machine, self._lookup(len(self._cells))).compile(expr, ())
            return to_python(code(None), self.machine, getattr(expr, "span", None))
        return self._guarded(go, cost)

    def _guarded(self, go, cost: bool):
        m = self.machine
        m.reset()
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 20000))
        try:
            with np.errstate(all="ignore"):
                result = go()
        except FCLError:
            raise
        except RecursionError:
            raise EvalError("evaluation nested too deeply (more than the Python recursion "
                            "limit allows)") from None
        except Exception as exc:   # an ill-typed program reaching Python's own checks
            raise EvalError(f"evaluation failed: {type(exc).__name__}: {exc} (is the program "
                            "well typed?)") from exc
        finally:
            sys.setrecursionlimit(limit)
        return result, (m.report() if cost else None)


def evaluator_for_source(text: str, name: str = "<input>", hw: dict[str, int] | None = None,
                         prelude: bool = True) -> Evaluator:
    """Program text -> an Evaluator over the prelude (unless prelude=False) and the program.
    No type checking is done here; includes are not allowed (use evaluator_for_file)."""
    decls = parse_program(text, name).decls
    return Evaluator((prelude_decls() if prelude else ()) + tuple(decls), hw)


def evaluator_for_file(path: str, hw: dict[str, int] | None = None,
                       prelude: bool = True) -> Evaluator:
    """A .fcl file (includes expanded) -> an Evaluator over the prelude and its declarations."""
    decls = load_program(str(path)).decls
    return Evaluator((prelude_decls() if prelude else ()) + tuple(decls), hw)
