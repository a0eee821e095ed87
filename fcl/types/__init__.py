"""Types of FCL: Hindley-Milner inference with level variables and kinds.

Facade: `check_program`, `check_expr`, `prelude_env`, `builtins_env`,
`prelude_path`, the printers `format_scheme`/`format_type`, and `TypeEnv`,
`CheckedProgram`.  Internal types live in `fcl.types.terms`.
"""
from fcl.types.env import CheckedProgram, TypeEnv, builtins_env, prelude_path
from fcl.types.infer import check_expr, check_program, prelude_env
from fcl.types.terms import Scheme, format_level, format_scheme, format_type, format_types
from fcl.types.written import scheme_from_ast

__all__ = ["CheckedProgram", "TypeEnv", "Scheme", "builtins_env", "check_expr", "check_program",
           "prelude_env", "prelude_path", "scheme_from_ast", "format_level", "format_scheme",
           "format_type", "format_types"]
