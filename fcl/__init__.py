"""FCL: a low-level functional GPU kernel language (facade; filled in by the integration step)."""
from fcl.errors import (ArgumentError, CompileError, CompilerBug, EvalError, FCLError,
                        ParseError, TypeCheckError)

__all__ = ["FCLError", "ParseError", "TypeCheckError", "EvalError", "CompileError",
           "ArgumentError", "CompilerBug"]
