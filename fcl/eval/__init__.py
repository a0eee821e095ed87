"""The reference evaluator of FCL (the definition of meaning and the oracle for kernels).

`Evaluator(decls, hw)` runs declarations on Python arguments under the
small-step semantics of paper section 5.2 (machine.py) and reports costs
(cost.py); fcl/scalars.py defines every scalar operation once, as OpenCL C does.
`evaluator_for_file` / `evaluator_for_source` add the prelude (untyped: the
caller type-checks first when it wants diagnostics for ill-typed programs).
"""
from fcl.base.hw import DEFAULT_HW
from fcl.eval.cost import CostReport
from fcl.eval.machine import (Evaluator, Machine, evaluator_for_file,
                              evaluator_for_source, prelude_decls)

__all__ = ["Evaluator", "CostReport", "Machine", "DEFAULT_HW", "evaluator_for_file",
           "evaluator_for_source", "prelude_decls"]
