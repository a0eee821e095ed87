"""Types of FCL: Hindley-Milner inference with level variables and kinds.

Facade: `check_program`, `check_expr`, `prelude_env`, `builtins_env`,
`prelude_path`, the printers `format_scheme`/`format_type`, and `TypeEnv`,
`CheckedProgram`.  Internal types live in `fcl.types.types`.
"""
from fcl.types.infer import (CheckedProgram, TypeEnv, builtins_env, check_expr, check_program,
                             prelude_env, prelude_path, scheme_from_ast)
from fcl.types.printer import format_level, format_scheme, format_type, format_types
from fcl.types.types import Scheme

__all__ = ["CheckedProgram", "TypeEnv", "Scheme", "builtins_env", "check_expr", "check_program",
           "prelude_env", "prelude_path", "scheme_from_ast", "format_level", "format_scheme",
           "format_type", "format_types"]
