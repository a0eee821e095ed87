"""The host plan: what the host does to run one compiled entry point.

`nodes` holds the host statements and `Plan` (with what they mean), `args` how
the entry's arguments are passed, `explain` the printers (`--explain`, `--emit
json`).  The names of all three are here too: `from fcl.codegen import plan as P`
then `P.Launch`, `P.ArrayArg`, `P.explain`.
"""
from fcl.codegen.plan.args import Arg, ArrayArg, NestedArg, PairArg, ScalarArg, ZipArg
from fcl.codegen.plan.explain import explain, groups_text, host_stmt_text, json_text, local_bytes, to_json
from fcl.codegen.plan.nodes import (CAPPED, EXACT_CLAIMS, FIRST_GROUP, GROUP_TOTAL, RECHECK, MAX_DEVICE_STEPS, Alloc, Bind, CheckBounds, CheckSteps, HostStmt,
                                    Launch, Loop, Plan, ReadScalar, Result, SetVar, Site, Swap, Uses, chosen,
                                    failure_message, group_count, kernel_uses, slice_groups, slices, walk)

__all__ = ["Arg", "ArrayArg", "NestedArg", "PairArg", "ScalarArg", "ZipArg",
           "explain", "groups_text", "host_stmt_text", "json_text", "local_bytes", "to_json",
           "CAPPED", "EXACT_CLAIMS", "FIRST_GROUP", "GROUP_TOTAL", "RECHECK", "MAX_DEVICE_STEPS", "Alloc", "Bind", "CheckBounds", "CheckSteps", "HostStmt", "Launch",
           "Loop", "Plan", "ReadScalar", "Result", "SetVar", "Site", "Swap", "Uses", "chosen",
           "failure_message", "group_count", "kernel_uses", "slice_groups", "slices", "walk"]
