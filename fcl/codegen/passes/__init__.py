"""The pass manager: named kernel-IR -> kernel-IR passes run in a fixed order.

`PIPELINE` lists every pass with a one-line description (`fclc compile
--passes` prints it).  A pass is *required* (the printer needs its result,
e.g. hardware mapping) or *optimising* (off with `-O0`, or one at a time with
`--no-pass NAME`).  `run_pipeline(kprog, options)` returns the rewritten
program and the `--dump kir-after=NAME` texts asked for.  With
`options.verify` (or FCL_VERIFY_PASSES=1 in the environment, as the test
suite sets) the verifier checks the IR after every pass, so a pass that
breaks an invariant fails where it breaks it.  Not here: the passes
themselves, one module each beside this one, named as the pass and ending
in its `PASS` (`PIPELINE` is those, in order); the `Pass` class (base.py).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from fcl.base.errors import ArgumentError
from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.passes import (barriers, bounds, cut_ifs, double_buffer, licm, map_hw, nowrap, privatise, share_local, simplify,
                                skew, strength, unroll, unvirtualise, vectorize)
from fcl.codegen.passes.base import Pass, replace_kernels
from fcl.codegen.passes.bounds import trim_checks

AFTER_LOWERING = "lower"     # --dump kir-after=lower: the IR as the lowering made it

PIPELINE: tuple[Pass, ...] = tuple(m.PASS for m in (
    map_hw, bounds, unvirtualise, skew, licm, unroll, strength, simplify, privatise, nowrap, vectorize, share_local,
    double_buffer, barriers, cut_ifs))

MAP_HW = map_hw.PASS.name
BY_NAME = {p.name: p for p in PIPELINE}


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
    extra: frozenset[str] = frozenset()        # optional passes to run (`with_pass`)

    @staticmethod
    def make(opt_level=None, no_pass=(), dump_after=(), verify=False, bounds_checks=True,
             with_pass=()) -> "PassOptions":
        """Options from user input; an unknown pass name is an ArgumentError."""
        known = BY_NAME
        for name in with_pass:
            if name in known and known[name].default:
                raise ArgumentError(f"pass `{name}` runs by default; --pass names an optional pass: "
                                    f"{', '.join(p.name for p in PIPELINE if not p.default)}")
        for name in list(no_pass) + list(with_pass) + [n for n in dump_after if n != AFTER_LOWERING]:
            if name not in known:
                raise ArgumentError(f"unknown pass `{name}`; the passes are: {', '.join(p.name for p in PIPELINE)}")
        for name in no_pass:
            if not known[name].optimising:
                raise ArgumentError(f"pass `{name}` is required (the OpenCL printer needs it) and cannot be switched off")
        level = 1 if opt_level is None else int(opt_level)
        if level not in (0, 1):
            raise ArgumentError(f"optimisation level {level}: use 0 (required passes only) or 1 (all)")
        return PassOptions(level, frozenset(no_pass), tuple(dump_after), verify, bool(bounds_checks),
                           frozenset(with_pass))

    def enabled(self, p: Pass) -> bool:
        return not p.optimising or (self.opt_level > 0 and p.name not in self.skip
                                    and (p.default or p.name in self.extra))

    def runs(self, p: Pass):
        """What of pass p runs: all of it, its `asked` part (an optional pass not named, on
        what the program marks for it), or nothing (None)."""
        if self.enabled(p):
            return p.run
        return p.asked if p.asked and self.opt_level > 0 and p.name not in self.skip else None


def describe_passes() -> str:
    """The pipeline in order, one pass a line (`fclc compile --passes`)."""
    width = max(len(p.name) for p in PIPELINE)
    kind = {(False, True): "required  ", (True, True): "optimising", (True, False): "optional  "}
    return "\n".join(f"{p.name:<{width}}  {kind[p.optimising, p.default]}  {p.description}" for p in PIPELINE)


def run_pipeline(kp: P.Plan, options: PassOptions = PassOptions()) -> tuple[P.Plan, dict[str, str]]:
    """(rewritten program, {pass name: kernel-IR text after it}) for the dumps asked for."""
    verify = options.verify or os.environ.get("FCL_VERIFY_PASSES") == "1"
    dumps = {}
    if AFTER_LOWERING in options.dump_after:
        dumps[AFTER_LOWERING] = K.format_program(kp)
    mapped = False
    for p in PIPELINE:
        run = options.runs(p)
        if run is None:
            if p.name in options.dump_after:
                dumps[p.name] = f"(pass {p.name} is off)\n" + K.format_program(kp)
            continue
        kp = run(kp)
        mapped = mapped or p.name == MAP_HW
        if verify:
            # imported here: only the tests verify, and the module costs every `import fcl` ~2 ms
            from fcl.codegen.verify import verify_program
            verify_program(kp, after=p.name, mapped=mapped)
        if p.name in options.dump_after:
            dumps[p.name] = K.format_program(kp)
    # a loop the passes found runs no time (matmulF's over the tiles of an empty product)
    # leaves its buffers unused
    return trim_checks(replace_kernels(kp, K.without_unused_locals)), dumps
