"""The kernel IR: one module, nodes.py, re-exported here (the next commit splits it by idea)."""
from fcl.codegen.kir.nodes import *  # noqa: F403
from fcl.codegen.kir.nodes import _child_fields  # noqa: F401
