"""What a pass module declares itself with: `Pass`, and `replace_kernels` for passes that go kernel by kernel.

A pass is a function plan -> plan with a name and a one-line description;
each module of this package ends with its `PASS = Pass(name, description,
run)` (the name is the module's), and the package's `__init__` lists them
in the order they run (`PIPELINE`).  `optimising` False marks a pass the
OpenCL printer needs (it runs at every optimisation level); `default` False an optional
one, which runs only where a compilation names it (`fclc --pass NAME`, `with_pass`), and
otherwise only its `asked` part, on what the program marks for it.  Consumes and
produces `plan.Plan`s.  Not here: the order, the options and the driver
(`passes/__init__.py`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from fcl.codegen import kir as K
from fcl.codegen import plan as P


@dataclass(frozen=True)
class Pass:
    """A named kernel-IR pass: `run` rewrites a plan."""
    name: str
    description: str
    run: Callable[[P.Plan], P.Plan]
    optimising: bool = True
    default: bool = True        # False: an optional pass, run only where asked for (`with_pass`)
    # an optional pass's run on only what the program itself asks for (`double_buffer`: the
    # loops of `powerDoubleBuffered`), which runs where the pass is not named but could be
    asked: Callable[[P.Plan], P.Plan] | None = None


def replace_kernels(kp: P.Plan, f: Callable[[K.Kernel], K.Kernel]) -> P.Plan:
    """`kp` with every kernel rewritten by f (most passes work kernel by kernel)."""
    return dataclasses.replace(kp, kernels=tuple(f(k) for k in kp.kernels))
