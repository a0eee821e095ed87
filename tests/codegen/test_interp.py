"""The kernel-IR interpreter against the evaluator, and every pass checked on it.

The first two test blocks of each entry of examples/*.fcl, the conformance
paper.fcl and tests/programs/*.fcl run through the whole pipeline and then the
kernel-IR interpreter (fcl.runtime.emulate, no device), at #BlockSize 32 and 4
work-groups (so parts are virtualised); the result must equal the
evaluator's.  The same, on each entry's first block, with every argument
dynamic (not compiled in) and with all optimising passes off (-O0), and with
each one off alone, so a pass that changes meaning fails here, and the interpreter's
run-time checks (bounds, barrier divergence, the proofs behind `div_nn` and
`add_nw`) catch what the result alone would not.  Time budget: about a
minute on the 2-core CI machine (inputs above MAX_ELEMENTS are skipped).
"""
from pathlib import Path

import numpy as np
import pytest

from fcl.api.literals import parse_arg, values_equal
from fcl.base.errors import CompilerBug
from fcl.codegen import passes
from fcl.tools.testblocks import parse_test_blocks

import evaluations

REPO = Path(__file__).resolve().parents[2]
PAPER = Path("/work/shared/conformance/paper.fcl")
FILES = (sorted((REPO / "examples").glob("*.fcl")) + ([PAPER] if PAPER.exists() else [])
         + sorted((REPO / "tests" / "programs").glob("*.fcl")))
HW = {"block_size": 32, "num_groups": 4}
MAX_ELEMENTS = 4096
OPTIMISING = [p.name for p in passes.PIPELINE if p.optimising and p.default]


program = evaluations.program          # one loaded program a file and worker


def cases():
    out = []
    for path in FILES:
        for case in parse_test_blocks(path.read_text(), str(path)):
            if case.error is None:
                out.append(pytest.param(str(path), case, id=f"{path.name}:{case.line}:{case.entry}"))
    return out


def args_of(case):
    return [parse_arg(a, position=k + 1) for k, a in enumerate(case.args)]


def small(args) -> bool:
    return sum(np.asarray(a).size for a in args if isinstance(a, np.ndarray)) <= MAX_ELEMENTS


def check(path, case, **options):
    args = args_of(case)
    if not small(args):
        pytest.skip("input too large for the interpreter")
    expected = evaluations.evaluated(path, case.entry, args, **HW)
    result = program(path).compile(case.entry, **HW, **options).emulate(*args)
    assert values_equal(expected, result), f"interpreter gave {result}, evaluator {expected}"


def leading_cases(k: int = 2):
    """The first k test blocks of each entry (errors aside), whose input the interpreter takes."""
    out, seen = [], {}
    for p in cases():
        path, case = p.values
        if seen.get((path, case.entry), 0) < k and small(args_of(case)):
            seen[(path, case.entry)] = seen.get((path, case.entry), 0) + 1
            out.append(p)
    return out


@pytest.mark.parametrize("path, case", leading_cases())
def test_interpreter_matches_evaluator(path, case):
    """Each entry's first two blocks (the default device runs every block; the later ones are
    mostly larger inputs, which the interpreter takes a work-item at a time)."""
    check(path, case)


@pytest.mark.parametrize("path, case", leading_cases(1))
def test_interpreter_matches_evaluator_at_O0(path, case):
    """The required passes alone, on each entry's first block (two an entry run with all
    passes on above; one per entry keeps CI's time in bounds, as test_each_pass_off_alone)."""
    check(path, case, opt_level=0)


def scalar_cases():
    """leading_cases(1) of the entries with an int or bool argument: elsewhere the dynamic
    build is the default one (only those arguments are compiled in), which the test above runs."""
    return [p for p in leading_cases(1)
            if any(isinstance(a, (bool, int, np.integer, np.bool_)) for a in args_of(p.values[1]))]


@pytest.mark.parametrize("path, case", scalar_cases())
def test_interpreter_matches_evaluator_with_dynamic_arguments(path, case):
    check(path, case, dynamic=True)       # scalars at run time: the ranges know less


def pass_changes(path, case, name) -> bool:
    """Whether switching pass `name` off changes the OpenCL this block runs."""
    args = args_of(case)
    on = program(path).compile(case.entry, **HW).build_for(*args)
    off = program(path).compile(case.entry, **HW, no_pass=[name]).build_for(*args)
    return on.source != off.source


# entries the pass-off test leaves out: another element type of an entry it runs (the same
# kernels but for the type) or a composition of two it runs (scanSum: scan, then reduce)
SAME_KERNELS = {"maxAllF", "sumAllD", "sumChunksD", "scanAllD", "scanAllF", "scanSum", "composePrefixSum"}


@pytest.mark.parametrize("name", OPTIMISING)
def test_each_pass_off_alone(name):
    """Each entry of three examples (but SAME_KERNELS) with one pass off, on its first small
    test block (two an entry run with all passes on above; one per entry keeps CI's time in
    bounds), where that changes the kernels: an unchanged build is the one the all-on test ran."""
    ran = 0
    for path in (REPO / "examples" / "transpose.fcl", REPO / "examples" / "reduce.fcl", REPO / "examples" / "scan.fcl"):
        seen = set(SAME_KERNELS)
        for case in parse_test_blocks(path.read_text(), str(path)):
            if case.error is None and case.entry not in seen and small(args_of(case)):
                seen.add(case.entry)
                if pass_changes(str(path), case, name):
                    check(str(path), case, no_pass=[name])
                    ran += 1
    assert ran, f"the {name} pass changes none of these kernels"


def test_interpreter_catches_out_of_bounds():
    from fcl.codegen import kir as K
    from fcl.codegen.interp import KernelRun
    k = K.Kernel("k", (K.Store("b", K.HwId("int", "lid"), K.cint(1)),), (), ())
    with pytest.raises(CompilerBug, match="out of bounds"):
        KernelRun(k, 1, 8, 4, {"b": np.zeros(4, np.int32)}, {}, {}).run()


def test_interpreter_catches_divergent_barriers():
    from fcl.codegen import kir as K
    from fcl.codegen.interp import KernelRun
    k = K.Kernel("k", (K.If(K.lt(K.HwId("int", "lid"), K.cint(2)), (K.Barrier(),)),), (), ())
    with pytest.raises(CompilerBug, match="different barriers"):
        KernelRun(k, 1, 8, 4, {}, {}, {}).run()


def test_interpreter_checks_proofs():
    from fcl.codegen import kir as K
    from fcl.codegen.interp import KernelRun
    bad = K.Bin("int", "div_nn", K.sub(K.HwId("int", "lid"), K.cint(4)), K.cint(2))
    k = K.Kernel("k", (K.Store("b", K.HwId("int", "lid"), bad),), (), ())
    with pytest.raises(CompilerBug, match="proved"):
        KernelRun(k, 1, 8, 4, {"b": np.zeros(8, np.int32)}, {}, {}).run()
