"""The pass manager: named kernel-IR -> kernel-IR passes run in a fixed order.

`PIPELINE` lists every pass with a one-line description (`fclc compile
--passes` prints it).  A pass is *required* (the printer needs its result,
e.g. hardware mapping) or *optimising* (off with `-O0`, or one at a time with
`--no-pass NAME`).  `run_pipeline(kprog, options)` returns the rewritten
program and the `--dump kir-after=NAME` texts asked for.  With
`options.verify` (or FCL_VERIFY_PASSES=1 in the environment, as the test
suite sets) the verifier checks the IR after every pass, so a pass that
breaks an invariant fails where it breaks it.  Not here: the passes
themselves (one module each beside this one).
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Callable

from fcl.base.errors import ArgumentError
from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.passes.bounds import elide_checks, trim_checks
from fcl.codegen.passes.licm import hoist_invariants
from fcl.codegen.passes.map_hw import map_hardware
from fcl.codegen.passes.privatise import privatise
from fcl.codegen.passes.share_local import share_local_memory
from fcl.codegen.passes.simplify import simplify
from fcl.codegen.passes.skew import skew_local_memory
from fcl.codegen.passes.strength import mark_no_wrap, strength_reduce
from fcl.codegen.passes.unroll import unroll_loops
from fcl.codegen.passes.unvirtualise import unvirtualise
from fcl.codegen.passes.vectorize import vectorize

AFTER_LOWERING = "lower"     # --dump kir-after=lower: the IR as the lowering made it


@dataclass(frozen=True)
class Pass:
    name: str
    description: str
    run: Callable[[P.Plan], P.Plan]
    optimising: bool = True


MAP_HW = "map_hw"

PIPELINE: tuple[Pass, ...] = (
    Pass(MAP_HW, "parallel loops -> loops over hardware ids: strides, guards, unrolling marks, "
                 "warp-uniform loops and the `active` flag", map_hardware, optimising=False),
    Pass("bounds", "bounds checks of `index` removed where the range analysis proves the index "
                   "in range (the rest stay: --no-bounds-checks drops them all)", elide_checks),
    Pass("unvirtualise", "a part or element per work-group/work-item, without a loop, where a constant "
                         "count fits the launch", unvirtualise),
    Pass("skew", "skewed layout (i + i/32) for local buffers of more than 32 elements read with a "
                 "lane stride: no bank conflicts", skew_local_memory),
    Pass("licm", "loop-invariant index arithmetic computed once before its loop (shared when repeated)",
         hoist_invariants),
    Pass("unroll", "loops of at most 16 iterations with a constant step whose trip count the ranges bound "
                   "-> straight-line copies (guarded where a work-item may run fewer); not around barriers", unroll_loops),
    Pass("strength", "x / y and x % y as C operators where x >= 0 and y >= 1 (range analysis); "
                     "by 2^k as shifts and masks; comparisons the ranges decide folded", strength_reduce),
    Pass("simplify", "constant and copy propagation, common lets, constant branches, dead lets", simplify),
    Pass("privatise", "a block-level power's state in registers where each work-item reads only the elements "
                      "it writes (then back to local memory once, after the loop)", privatise),
    Pass("nowrap", "plain + - * where the range analysis proves no 32-bit overflow", mark_no_wrap),
    Pass("vectorize", "int4/float4 loads and stores of global buffers: grid-stride loops of independent "
                      "elements in runs of 4 a work-item (then the last n % 4), and 4 unchecked accesses "
                      "a[4k] .. a[4k + 3] in straight-line code", vectorize),
    Pass("share_local", "local buffers never in use at the same time (a barrier between) share memory",
         share_local_memory),
)


@dataclass(frozen=True)
class PassOptions:
    """Which passes run: all at opt_level 1, only the required ones at 0, minus `skip`;
    `dump_after` names passes (or "lower") whose output to keep as text.  `bounds_checks`
    False: the lowering checks no `index` on the device (an index out of range then reads
    an unspecified element, or memory outside the array)."""
    opt_level: int = 1
    skip: frozenset[str] = frozenset()
    dump_after: tuple[str, ...] = ()
    verify: bool = False
    bounds_checks: bool = True

    @staticmethod
    def make(opt_level=None, no_pass=(), dump_after=(), verify=False, bounds_checks=True) -> "PassOptions":
        """Options from user input; an unknown pass name is an ArgumentError."""
        known = {p.name for p in PIPELINE}
        for name in list(no_pass) + [n for n in dump_after if n != AFTER_LOWERING]:
            if name not in known:
                raise ArgumentError(f"unknown pass `{name}`; the passes are: {', '.join(p.name for p in PIPELINE)}")
        for name in no_pass:
            if not next(p for p in PIPELINE if p.name == name).optimising:
                raise ArgumentError(f"pass `{name}` is required (the OpenCL printer needs it) and cannot be switched off")
        level = 1 if opt_level is None else int(opt_level)
        if level not in (0, 1):
            raise ArgumentError(f"optimisation level {level}: use 0 (required passes only) or 1 (all)")
        return PassOptions(level, frozenset(no_pass), tuple(dump_after), verify, bool(bounds_checks))

    def enabled(self, p: Pass) -> bool:
        return not p.optimising or (self.opt_level > 0 and p.name not in self.skip)


def describe_passes() -> str:
    """The pipeline in order, one pass a line (`fclc compile --passes`)."""
    width = max(len(p.name) for p in PIPELINE)
    return "\n".join(f"{p.name:<{width}}  {'required  ' if not p.optimising else 'optimising'}  {p.description}"
                     for p in PIPELINE)


def run_pipeline(kp: P.Plan, options: PassOptions = PassOptions()) -> tuple[P.Plan, dict[str, str]]:
    """(rewritten program, {pass name: kernel-IR text after it}) for the dumps asked for."""
    verify = options.verify or os.environ.get("FCL_VERIFY_PASSES") == "1"
    dumps = {}
    if AFTER_LOWERING in options.dump_after:
        dumps[AFTER_LOWERING] = K.format_program(kp)
    mapped = False
    for p in PIPELINE:
        if not options.enabled(p):
            if p.name in options.dump_after:
                dumps[p.name] = f"(pass {p.name} is off)\n" + K.format_program(kp)
            continue
        kp = p.run(kp)
        mapped = mapped or p.name == MAP_HW
        if verify:
            from fcl.codegen.verify import verify_program
            verify_program(kp, after=p.name, mapped=mapped)
        if p.name in options.dump_after:
            dumps[p.name] = K.format_program(kp)
    return trim_checks(kp), dumps


def replace_kernels(kp: P.Plan, f: Callable[[K.Kernel], K.Kernel]) -> P.Plan:
    """`kp` with every kernel rewritten by f (most passes work kernel by kernel)."""
    return dataclasses.replace(kp, kernels=tuple(f(k) for k in kp.kernels))
