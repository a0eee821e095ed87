"""Generated kernels kept on disk: a build whose inputs were compiled before is read back
instead of lowered, optimised and rendered again (as Triton and Numba keep theirs).

Code generation is most of a compile (0.1 to 0.5 s an entry on a 2-core machine),
and every `fclc run`, `fclc compile` and `fclc test` process compiles its entries
afresh; reading a build back takes a few milliseconds.  An entry is the pickled
`fcl.api.kernel.Build` (host plan, OpenCL source, buffer spans, kernel-IR dumps) of
one entry point under a key of everything the build depends on:

* the program: a digest of its declarations, the prelude's included (their
  spans too, so a message points where the text now is);
* the entry's name, argument types, static values and parameter names; the
  hardware parameters and the launch cap; every pass option; whether the
  verifier runs after each pass;
* the compiler: the source of every module of the `fcl` package and the
  Python version, so a changed FCL never reads a stale kernel.

Only builds that succeed are kept: a compile error is always found by
compiling.  Folder "kernels" of FCL's disk cache (`fcl/base/diskcache.py`: where,
how many entries, `FCL_NO_CACHE=1`).  The OpenCL build of the source is
pyopencl's to cache, as before.
"""
from __future__ import annotations

import functools
import hashlib
import os
import pickle

from fcl.base import diskcache
from fcl.base.recursion import deep_recursion
from fcl.syntax.loader import prelude_decls

KEEP = 256          # entries kept; the oldest written go first


@functools.cache
def _compiler_digest() -> bytes:
    """The Python version and the source of every module of the fcl package."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))     # fcl/
    return diskcache.source_digest(sorted(os.path.join(folder, name) for folder, _, files in os.walk(root)
                                          for name in files if name.endswith(".py")))


_DIGESTS: dict[int, tuple[tuple, bytes]] = {}     # id(declarations) -> (them, digest)


def decls_digest(decls: tuple) -> bytes:
    """A digest of declarations (pickled: names, trees and spans), worked out once per tuple
    of them: the prelude's is shared by every program of a process."""
    kept = _DIGESTS.get(id(decls))
    if kept is None or kept[0] is not decls:
        if len(_DIGESTS) >= 64:
            _DIGESTS.clear()
        with deep_recursion():
            digest = hashlib.sha256(pickle.dumps(decls, protocol=pickle.HIGHEST_PROTOCOL)).digest()
        kept = _DIGESTS[id(decls)] = (decls, digest)
    return kept[1]


def entry(kernel, arg_types: tuple, static: tuple) -> str | None:
    """The cache entry of `kernel`'s build for these argument types and static values, or
    None where the cache is off."""
    if not diskcache.enabled():
        return None
    program, o = kernel.program, kernel.options
    try:
        decls = decls_digest(prelude_decls() if program.prelude else ()) + decls_digest(program.ast.decls)
    except (pickle.PicklingError, RecursionError, TypeError, AttributeError):
        return None
    verify = o.verify or os.environ.get("FCL_VERIFY_PASSES") == "1"
    inputs = (kernel.name, tuple(map(repr, arg_types)), static, tuple(kernel.param_names),
              tuple(sorted(kernel.hw.items())), kernel.launch_groups,
              o.opt_level, tuple(sorted(o.skip)), tuple(sorted(o.extra)), tuple(o.dump_after), o.bounds_checks, verify)
    return diskcache.entry_path("kernels", _compiler_digest() + decls + repr(inputs).encode())
