"""The reference evaluator of FCL (the definition of meaning and the oracle for kernels).

`Evaluator(decls, hw)` (evaluator.py) runs declarations on Python arguments
under the small-step semantics of paper section 5.2: expressions compiled to
closures (closures.py) on an environment machine (machine.py), which reports
costs (cost.py); fcl/base/scalars.py defines every scalar operation once, as
OpenCL C does.
`evaluator_for_file` / `evaluator_for_source` add the prelude (untyped: the
caller type-checks first when it wants diagnostics for ill-typed programs).
"""
from fcl.base.hw import DEFAULT_HW
from fcl.eval.cost import CostReport
from fcl.eval.evaluator import Evaluator, evaluator_for_file, evaluator_for_source, prelude_decls
from fcl.eval.machine import Machine

__all__ = ["Evaluator", "CostReport", "Machine", "DEFAULT_HW", "evaluator_for_file",
           "evaluator_for_source", "prelude_decls"]
