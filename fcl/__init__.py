"""FCL: a low-level functional GPU kernel language.

    prog = fcl.load_file("examples/reverse.fcl")      # or fcl.load(text)
    prog.type_of("revDistribute")                     # canonical type string
    prog.evaluate("revDistribute", 4, [1, 2, 3, 4])   # reference evaluator
    kernel = prog.compile("revDistribute", block_size=256)
    kernel.opencl_source; kernel(4, np.arange(16, dtype=np.int32))

Errors are `FCLError` subclasses with a source location.

Importing fcl registers Intel's CPU OpenCL runtime with the ICD loader (no
OpenCL call: fcl.runtime.platforms); the loader reads that only at the
process's first OpenCL call, so import fcl before using pyopencl.
"""
from fcl.runtime.platforms import register_intel_cpu_runtime as _register_intel
_register_intel()
from fcl.api.program import Kernel, Program, load, load_file
from fcl.base.errors import (ArgumentError, CompileError, CompilerBug, CompilerLimitation, EvalError,
                             FCLError, ParseError, TypeCheckError)
from fcl.base.resources import prelude_path

__all__ = ["load", "load_file", "Program", "Kernel", "prelude_path", "FCLError", "ParseError",
           "TypeCheckError", "EvalError", "CompileError", "CompilerLimitation", "ArgumentError", "CompilerBug"]
