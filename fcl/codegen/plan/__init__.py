"""The host plan IR (`nodes`), as one namespace: `from fcl.codegen import plan as P`."""
from fcl.codegen.plan.nodes import *  # noqa: F401,F403
from fcl.codegen.plan.nodes import _source_printer  # noqa: F401
