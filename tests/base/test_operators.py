"""fcl.base.operators is the one table of binary operators: the parser, the evaluator's
semantics, the lowering, the OpenCL and --explain printers and the kernel-IR interpreter
read it, and its int semantics are fcl.base.scalars'."""
import itertools

from fcl.base import scalars
from fcl.base.operators import BY_SPELLING, COMPARISONS, OPERATORS
from fcl.codegen import kir as K

EDGES = [-(2 ** 31), -7, -1, 0, 1, 3, 31, 32, 2 ** 31 - 1]


def test_every_spelling_has_the_evaluators_semantics():
    logical = {s for s, op in BY_SPELLING.items() if op.kind == "logic"}      # `&&`, `||`: short-circuit
    assert set(scalars.BINARY) == set(BY_SPELLING) - logical
    for spelling, op in BY_SPELLING.items():
        if op.on_ints is not None and int in scalars.BINARY.get(spelling, {}):
            for a, b in itertools.product(EDGES, EDGES):
                if op.name in ("div", "mod") and b == 0:
                    continue
                assert op.on_ints(a, b) == scalars.BINARY[spelling][int](a, b), (spelling, a, b)


def test_the_kernel_ir_has_every_operator():
    assert set(OPERATORS) <= {str(o) for o in K.Op}
    assert COMPARISONS == {n for n, op in OPERATORS.items() if op.kind == "compare"} == set(K.COMPARISONS)


def test_readers_take_their_tables_from_it():
    from fcl.codegen import interp, opencl
    from fcl.codegen.lower.values import BINOPS
    from fcl.syntax.parser import PRECEDENCE
    assert BINOPS == {s: op.name for s, op in BY_SPELLING.items()}
    assert all(PRECEDENCE[s] == op.precedence for s, op in BY_SPELLING.items())
    assert opencl.C_OPS == {n: op.c for n, op in OPERATORS.items()}
    assert all(interp.INT_OPS[K.Op(n)] is op.on_ints for n, op in OPERATORS.items()
               if op.kind in ("arith", "bits") and n not in ("div", "mod"))
