"""The `cut_ifs` pass: an `if` is cut at the barriers at the top of its branches.

A barrier inside an `if` is one every work-item of the group reaches or none does, so the
condition is the same across the work-group (the lowering's `emit_if` makes it so, or
cuts the `if` itself where a warp's condition may differ).  The lowering cannot always
cut: a barrier it puts in a loop over a warp's parts is at the branch's top only once
`unvirtualise` has made that loop an `if (lane < k)`.  PoCL's optimising build runs some
barriers under a uniform `if` wrongly (random-tester seed 32121: a block-level `if` around
a `concat` of warp-level `force`s gave other values than the evaluator's, and no error,
where Oclgrind and Intel's CPU runtime agree with it).  So an `if` whose branches hold
barriers at their top level becomes one `if` a stretch between barriers, each testing the
condition computed once before them:

    if (c) { A; barrier; B } else { C }
 ->
    const bool cut = c;  if (cut) { A } else { C }  barrier;  if (cut) { B }

The same on every device (a test of a variable a stretch costs nothing beside a
barrier).  An `if` around barriers alone (a part loop's barrier before the next part)
stays.  A name a stretch defines and a later one reads is declared before the first
`if` and assigned where it was defined.  Left as it is: an `if` that declares a pointer
(a `while`'s ping-pong), and the barriers of a loop inside a branch (the loop cannot be
cut; no random program has shown PoCL wrong there yet).
Runs last, after `barriers` has dropped the barriers it can.
"""
from __future__ import annotations

import dataclasses

from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.passes.base import Pass, replace_kernels


def cut_ifs(plan: P.Plan) -> P.Plan:
    def rewrite(k: K.Kernel) -> K.Kernel:
        names = K.Names(k)

        def fs(s: K.Stmt):
            if not isinstance(s, K.If):
                return s
            segs_a, segs_b = K.barrier_segments(s.then), K.barrier_segments(s.else_)
            if len(segs_a) + len(segs_b) == 2 or _declares_pointer(s.then) or _declares_pointer(s.else_) \
                    or not any(seg[0] for seg in segs_a + segs_b):     # (only barriers: nothing to cut)
                return s
            out = []
            cond = s.cond
            if not isinstance(cond, K.Const):
                var = names.fresh("cut", "c")
                out.append(K.Let(var, cond))
                cond = K.Var("bool", var)
            segs_a, segs_b = _hoisted(segs_a, out), _hoisted(segs_b, out)
            for j in range(max(len(segs_a), len(segs_b))):
                a = segs_a[j][0] if j < len(segs_a) else ()
                b = segs_b[j][0] if j < len(segs_b) else ()
                if a or b:
                    out.append(K.If(cond, a, b))
                barrier = next((seg[1] for seg in segs_a[j:j + 1] + segs_b[j:j + 1] if seg[1] is not None), None)
                if barrier is not None:
                    out.append(barrier)
            return tuple(out)

        return dataclasses.replace(k, body=K.map_stmts(fs, None, k.body))

    return replace_kernels(plan, rewrite)


def _declares_pointer(stmts: tuple) -> bool:
    return any(isinstance(s, K.DeclPtr) for s in stmts)


def _hoisted(segs: list, out: list) -> list:
    """The stretches with each name that one defines at its top and a later one reads
    declared in `out` (before the `if`s) and assigned where it was defined."""
    result = []
    for j, (stmts, barrier) in enumerate(segs):
        later = K.names_read([s for seg in segs[j + 1:] for s in seg[0]])
        decls, kept = K.hoist_decls(stmts, later.__contains__)
        out.extend(decls)
        result.append((kept, barrier))
    return result


PASS = Pass("cut_ifs", "an `if` whose branches hold barriers at their top becomes one `if` a stretch between them, "
            "the barriers outside (PoCL ran some under a uniform `if` wrongly)", cut_ifs, optimising=False)
