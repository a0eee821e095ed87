"""Type environments: what a program is checked against, and what checking gives back.

`TypeEnv` maps names to schemes (the primitives, the prelude, a program);
`CheckedProgram` is the result of `infer.check_program`.  `builtins_env` is
the primitives alone (`--no-prelude`) and `prelude_path` where the prelude's
text lies; the prelude checked once per process is `infer.prelude_env`, as it
takes the checker.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fcl.base.resources import prelude_path as located_prelude
from fcl.types.builtins import primitive_schemes
from fcl.types.node_types import TypedCore
from fcl.types.terms import Scheme


class TypeEnv:
    """An immutable mapping from names to type schemes (primitives, prelude, program)."""

    def __init__(self, schemes: dict[str, Scheme] | None = None):
        self._schemes: dict[str, Scheme] = dict(schemes or {})

    def lookup(self, name: str) -> Scheme | None:
        return self._schemes.get(name)

    def extend(self, name: str, scheme: Scheme) -> "TypeEnv":
        """A new environment with `name` bound (shadowing any earlier binding)."""
        return TypeEnv({**self._schemes, name: scheme})

    def names(self) -> list[str]:
        return list(self._schemes)

    def as_dict(self) -> dict[str, Scheme]:
        """A copy of the bindings."""
        return dict(self._schemes)

    def __contains__(self, name: str) -> bool:
        return name in self._schemes

    def __getitem__(self, name: str) -> Scheme:
        return self._schemes[name]

    def __iter__(self):
        return iter(self._schemes)

    def __len__(self) -> int:
        return len(self._schemes)

    def __repr__(self) -> str:
        return f"TypeEnv({len(self._schemes)} names)"


@dataclass
class CheckedProgram:
    """The result of `check_program`.

    `schemes`: the program's own declarations, name -> Scheme, in declaration
    order (a redeclared name keeps its first position and its last scheme);
    `decls`: every declaration in order, duplicates included; `env`:
    everything visible after the program, to check further input against;
    `core`: the types the lowering reads (fcl.types.node_types).
    """
    schemes: dict[str, Scheme]
    env: TypeEnv
    decls: list[tuple[str, Scheme]] = field(default_factory=list)
    core: TypedCore = field(default_factory=TypedCore)


def builtins_env() -> TypeEnv:
    """The primitives only (`--no-prelude`)."""
    return TypeEnv(primitive_schemes())


def prelude_path() -> Path:
    """prelude.fcl: installed package data, else the checkout's prelude/ (fcl.base.resources)."""
    return located_prelude()
