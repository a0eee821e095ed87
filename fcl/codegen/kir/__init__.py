"""The kernel IR: what `lower` produces, what passes rewrite and `opencl` renders.

One module a view of the IR, each building on the ones before it:

* nodes.py: the grammar (expressions, statements, buffers, kernels), then what
  the nodes need to be fast (memo.py: kept values and hashes);
* build.py: smart constructors that fold constants (`add`, `binop`, `cint`...);
* walk.py: generic traversal and rewriting (`walk_stmts`, `map_stmts`,
  `walk_scoped`...) and renaming (`Names`, `rename`, `straight_copies`);
* facts.py: what statements read and write, pointer classes, buffer storage,
  and the bounds-buffer protocol of run-time checks;
* simplify.py: `simplify_kernel`, constant and copy propagation and dead code
  (the `simplify` pass, and the cleanup after `privatise` and `vectorize`);
* host.py: `eval_host`, expressions evaluated on the host;
* printer.py: the `--dump kir` text.

Every name is re-exported here, so `from fcl.codegen import kir as K` and
`K.Let`, `K.map_stmts`, `K.format_program` read as one namespace.
"""
from fcl.base.hw import Level
from fcl.codegen.kir.memo import node_property
from fcl.codegen.kir.nodes import (ATOMIC_OPS, GENERAL_OP, VECTOR_WIDTHS, Assign, Atomic, Barrier, Bin, Buffer,
                                   Call, Checked, Comment, Const, DeclPtr, DeclVar, Expr, Fail, For, Hw, HwId,
                                   If, Kernel, Let, Load, Loop, Op, ParFor, Param, PartFor, Select, SeqFor,
                                   Stmt, Store, SwapPtr, Un, VLoad, VStore, Var, expr_children, kind_bits,
                                   stmt_children, stmt_exprs, _child_fields, holds_check)
from fcl.codegen.kir.build import (COMPARISONS, add, binop, call, checked, checked_divisor, cint, const, div,
                                   is_const, lt, mul, plain_divisor, select, sub, unop, zero)
from fcl.codegen.kir.walk import (Names, binds, defined_in, defines, map_expr, map_own_exprs, map_stmts,
                                  names_read, rebuilt, refold, rename, straight_copies, strict_children, walk_expr, walk_scoped,
                                  walk_blocks, walk_stmts, with_operands)
from fcl.codegen.kir.facts import (BOUNDS_BIT_CAP, BOUNDS_WORDS, CHECK_VALUES, CheckFailed, PointerClasses,
                                   accesses, all_accesses, barrier_segments, buffers_used, checks_covered, contains_barrier,
                                   copies, footprint, hoist_checks, hoist_decls, plain_local, record_failure, used_outside,
                                   without_unused_locals)
from fcl.codegen.kir.host import HOST_CALLS, eval_host, host_evaluable
from fcl.codegen.kir.simplify import simplify_kernel
from fcl.codegen.kir.printer import format_expr, format_program, format_stmts

__all__ = [
    "accesses", "add", "all_accesses", "Assign", "ATOMIC_OPS", "Atomic", "Barrier", "Bin", "binds", "binop",
    "barrier_segments", "BOUNDS_BIT_CAP", "BOUNDS_WORDS", "Buffer", "buffers_used", "call", "Call", "CHECK_VALUES", "checked",
    "Checked", "checks_covered", "checked_divisor", "CheckFailed", "cint", "Comment", "COMPARISONS", "const", "Const",
    "contains_barrier", "copies", "DeclPtr", "DeclVar", "defined_in", "defines", "div", "eval_host", "Expr",
    "expr_children", "Fail", "footprint", "For", "format_expr", "format_program", "format_stmts", "GENERAL_OP",
    "hoist_checks", "hoist_decls", "HOST_CALLS", "host_evaluable", "holds_check", "Hw", "HwId", "If", "is_const", "Kernel", "kind_bits", "Let", "Level", "Load",
    "Loop", "lt", "map_expr", "map_own_exprs", "map_stmts", "mul", "Names", "names_read", "node_property",
    "Op", "Param", "ParFor", "PartFor", "plain_divisor", "plain_local", "PointerClasses", "rebuilt", "record_failure",
    "refold", "rename", "select", "Select", "SeqFor", "simplify_kernel", "Stmt", "stmt_children", "stmt_exprs", "Store",
    "straight_copies", "used_outside", "strict_children", "sub", "SwapPtr", "Un", "unop", "Var", "VECTOR_WIDTHS", "VLoad", "VStore", "walk_expr",
    "walk_blocks", "walk_scoped", "walk_stmts", "with_operands", "without_unused_locals", "zero", "_child_fields",
]
