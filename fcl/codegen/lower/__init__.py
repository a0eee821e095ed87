"""Typed AST -> kernel IR, by partial evaluation (a staged interpreter).

Consumes the declarations of a checked program (prelude first), their typed
core (fcl.types.node_types: the checker's types, read through an `Inst` carried in
the environment, never guessed), the name of an entry point and the concrete
types of its arguments; produces a `plan.Plan` (the host program and its
kernels).  The program is run at compile time over symbolic values:

* `SScalar`: a kernel-IR expression;
* `SPull`: a length expression and an index function (Python closure), so
  `generate`, `mapPull`, `zipWith`, `halve`... fuse into index arithmetic;
* `SPush`: a level, a length and an iteration scheme: given a context and a
  writer it emits the loops that write every element (Obsidian style);
* `SPair`, `SFun`, `SLevelFun`: compile-time only, they vanish.

Only `force`, `while` and the final result allocate memory.  Code is emitted
into a `Ctx`, which knows the level of the hardware unit that runs it
(thread 0, warp 1, block 2, grid 3).  A grid-level `force` ends the current
kernel.  What this pass does not do: optimise (passes on the IR may), or
support a data-dependent `while` at grid or warp level (a clear CompileError).

The modules, each importing only those listed before it:

* `values`: the symbolic values, applying a symbolic function, `BINOPS`;
* `builder`: `Builder` (names, buffers, kernels and host statements of one entry
  point, the current span) and `Ctx` (where code goes, at which level);
* `sizewords`: why the host cannot compute a length, in the program's terms;
* `control`: an `if` decided at run time (`branch`, `emit_if`);
* `claims`: the check that an `interleave` writes no place twice, where not proven;
* `schemes`: iteration schemes (`push`, `concat`, `interleave`), where a forced
  array lives, `force`;
* `loops`: `while` and `power` (two buffers stepped between), `seqfor`,
  `seqConcat`, `foldl`;
* `scatter`: `scatter` and `reduceByIndex`, the combining scatter, with atomics;
* `lookback`: `scanConcat`, parts that exchange values in order (decoupled look-back);
* `primitives`: the primitives as symbolic functions;
* `interpreter`: `Lowerer`, which runs declarations over symbolic values;
* `assemble`: the finished kernels and host statements as a `plan.Plan`;
* `entry`: `lower_entry`, an entry point's arguments and result.
"""
from fcl.codegen.lower.entry import core_of, lower_entry, site_key

__all__ = ["core_of", "lower_entry", "site_key"]
