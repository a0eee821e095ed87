"""The `skew` pass: kernel IR -> kernel IR with the same meaning.

`skew_local_memory`: every local buffer stores element i at i + i/32, so a
warp that reads a column of a 32-wide tile (stride 32) hits 32 different
banks instead of one; contiguous accesses stay conflict-free.  Applied to
every access of the buffer, through `while` pointers too, so the layout is
invisible to the program.  Buffers of at most 32 elements are left alone.
"""
from __future__ import annotations

import dataclasses

from fcl.codegen import kir as K
from fcl.codegen import plan as P


def skew_local_memory(kp: P.Plan) -> P.Plan:
    kernels = tuple(_skew_kernel(k) for k in kp.kernels)
    return dataclasses.replace(kp, kernels=kernels)


def _worth_skewing(b: K.Buffer) -> bool:
    return b.space == "local" and not (isinstance(b.size, K.Const) and b.size.value <= 32 and not b.per)


def _skew_kernel(k: K.Kernel) -> K.Kernel:
    skewed = {b.name for b in k.locals_ if _worth_skewing(b)}
    if not skewed:
        return k
    # pointer variables of a while loop point at skewed buffers: skew through them too
    for s in K.walk_stmts(k.body):
        if isinstance(s, K.DeclPtr) and s.init in skewed:
            skewed.add(s.var)

    def skew(i: K.Expr) -> K.Expr:
        return K.Call("int", "skew", (i,))

    def fe(e: K.Expr) -> K.Expr:
        if isinstance(e, K.Load) and e.buf in skewed:
            return K.Load(e.ty, e.buf, skew(e.index))
        return e

    def fs(s: K.Stmt) -> K.Stmt:
        if isinstance(s, (K.Store, K.AtomicOr)) and s.buf in skewed:
            return dataclasses.replace(s, index=skew(s.index))
        return s

    locals_ = tuple(dataclasses.replace(b, layout="skew32") if b.name in skewed else b for b in k.locals_)
    return dataclasses.replace(k, body=K.map_stmts(fs, fe, k.body), locals_=locals_)
