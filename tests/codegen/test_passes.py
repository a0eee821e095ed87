"""Each optimising pass on kernel IR alone: what it rewrites and what it must leave.

Semantics are checked elsewhere (tests/codegen/test_interp.py runs every test block
through the interpreter with all passes, with none, and with each one off);
here each pass is fed small hand-built kernels, and the range analysis is
asked directly.  No device.
"""
import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

import fcl
from fcl.api.literals import values_equal
from fcl.base.errors import EvalError, FCLError
from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.codegen.analysis.ranges import FULL, Interval, Ranges
from fcl.codegen.interp import KernelRun
from fcl.codegen.passes.licm import hoist_invariants
from fcl.codegen.passes.nowrap import mark_no_wrap
from fcl.codegen.passes.simplify import simplify
from fcl.codegen.passes.skew import skew_local_memory
from fcl.codegen.passes.strength import strength_reduce
from fcl.codegen.passes.unroll import unroll_loops
from fcl.codegen.opencl import render
from fcl.codegen.passes.unvirtualise import unvirtualise
from fcl.codegen.plan import ArrayArg, Plan, ScalarArg
from fcl.codegen.verify import verify_program

REPO = Path(__file__).resolve().parents[2]
Op = K.Op
n, a = K.Var("int", "n"), K.Var("int", "a")
lid, gid = K.HwId("int", "lid"), K.HwId("int", "group_id")
i = K.Var("int", "i")


def plan_of(body, locals_=(), num_groups=8):
    k = K.Kernel("k", tuple(body), tuple(locals_), ())
    return Plan("k", (ArrayArg("b", "n", "int"), ScalarArg("a", "int")), (K.Param("n", "int"), K.Param("a", "int")),
                (K.Buffer("b", "global", "int", n, "test"),), (k,), (), 64, 32, num_groups)


def body_of(plan):
    verify_program(plan, after="test", mapped=True)
    return plan.kernels[0].body


def strided(body):
    return [K.For("i", lid, n, K.cint(64), tuple(body))]


def test_ranges_of_ids_lengths_and_arithmetic():
    r = Ranges.for_plan(plan_of([]))
    assert r.of(lid) == Interval(0, 63) and r.of(gid) == Interval(0, 7)
    assert r.of(n) == Interval(0, 2**31 - 1) and r.of(a) == FULL
    assert r.of(K.binop("div", lid, K.cint(4))) == Interval(0, 15)
    assert r.of(K.binop("mod", n, K.cint(10))) == Interval(0, 9)
    assert r.of(K.add(lid, gid)) == Interval(0, 70)
    assert r.of(K.mul(n, K.cint(2))) == FULL          # may wrap
    assert r.of(K.binop("band", a, K.cint(31))) == Interval(0, 31)


def test_strength_reduces_non_negative_division():
    body = strided([K.Store("b", K.binop("div", i, K.cint(32)), K.binop("mod", i, K.cint(8))),
                    K.Store("b", K.binop("div", i, a), K.binop("mod", i, a)),
                    K.Store("b", K.binop("div", i, n), K.binop("mod", i, n))])
    out = body_of(strength_reduce(plan_of(body)))[0].body
    assert out[0].index == K.Bin("int", Op.SHR, i, K.cint(5))
    assert out[0].value == K.Bin("int", Op.BAND, i, K.cint(7))
    assert out[1].index == K.Bin("int", Op.DIV, i, a)     # a may be 0 or negative
    assert out[1].value == K.Bin("int", Op.MOD, i, a)
    # in the loop's body its end n is above its start lid >= 0: n > 0
    assert out[2].index == K.Bin("int", Op.DIV_NN, i, n)
    assert out[2].value == K.Bin("int", Op.MOD_NN, i, n)


def test_strength_uses_c_division_with_a_positive_divisor():
    body = [K.If(K.lt(K.cint(0), n), strided([K.Store("b", i, K.binop("div", i, K.add(n, K.cint(1))))]))]
    out = body_of(strength_reduce(plan_of(body)))
    # n + 1 may wrap (n up to INT_MAX), so no proof; max(n, 1) is positive
    assert out[0].then[0].body[0].value.op == Op.DIV
    body = strided([K.Store("b", i, K.binop("div", i, K.call("max", (n, K.cint(1)), "int")))])
    assert body_of(strength_reduce(plan_of(body)))[0].body[0].value.op == Op.DIV_NN


def test_nowrap_marks_provably_small_arithmetic():
    body = [K.Let("t", K.add(K.mul(gid, K.cint(64)), lid)), K.Store("b", K.Var("int", "t"), K.add(n, K.cint(1)))]
    out = body_of(mark_no_wrap(plan_of(body)))
    assert out[0].expr.op == Op.ADD_NW and out[0].expr.a.op == Op.MUL_NW
    assert out[1].value.op == Op.ADD


def test_licm_hoists_invariant_index_arithmetic():
    origin = K.mul(K.binop("div", gid, a), K.cint(32))
    body = [K.For("p", gid, n, K.HwId("int", "num_groups"),
                  tuple(strided([K.Store("b", K.add(origin, i), K.Load("int", "b", K.add(origin, K.cint(1))))])))]
    out = body_of(simplify(hoist_invariants(plan_of(body))))      # simplify drops the inner copies
    lets = [s for s in out if isinstance(s, K.Let)]
    # outside both loops; the store's index keeps only its variant part
    assert [x.expr for x in lets] == [origin, K.add(origin, K.cint(1))]
    inner = out[-1].body[0].body[0]
    assert inner.index == K.add(K.Var("int", lets[0].var), i)
    assert inner.value == K.Load("int", "b", K.Var("int", lets[1].var))


def test_licm_leaves_loads_and_variant_code():
    body = strided([K.Let("t", K.Load("int", "b", a)), K.Store("b", i, K.add(K.Var("int", "t"), K.mul(a, a)))])
    out = body_of(hoist_invariants(plan_of(body)))
    assert isinstance(out[0], K.Let) and out[0].expr == K.mul(a, a)
    assert out[1].body[0].expr == K.Load("int", "b", a)


def test_simplify_propagates_constants_and_drops_dead_code():
    body = [K.Let("active", K.Const("bool", True)), K.Let("dead", K.mul(a, a)), K.Let("c", lid),
            K.If(K.Var("bool", "active"), (K.Store("b", K.Var("int", "c"), K.cint(1)),), (K.Barrier(),)),
            K.For("j", K.cint(4), K.cint(4), K.cint(1), (K.Store("b", K.cint(0), K.cint(0)),))]
    out = body_of(simplify(plan_of(body)))
    assert out == (K.Store("b", lid, K.cint(1)),)


def test_simplify_keeps_copies_of_mutable_variables():
    body = [K.DeclVar("acc", K.cint(0)), K.Let("old", K.Var("int", "acc")), K.Assign("acc", K.cint(5)),
            K.Store("b", K.cint(0), K.Var("int", "old"))]
    out = body_of(simplify(plan_of(body)))
    assert out[-1].value == K.Var("int", "old")


def test_simplify_merges_barriers_with_nothing_between():
    store = K.Store("b", lid, K.cint(1))
    body = [store, K.Barrier("part"), K.Let("c", lid), K.Barrier("force"), store, K.Barrier("again")]
    out = body_of(simplify(plan_of(body)))
    assert out == (store, K.Barrier("part"), store, K.Barrier("again"))


def test_unvirtualise_only_when_every_part_has_a_group():
    loop = K.For("p", gid, K.cint(8), K.HwId("int", "num_groups"), (K.Store("b", K.Var("int", "p"), K.cint(1)),))
    out = body_of(unvirtualise(plan_of([loop], num_groups=8)))
    assert isinstance(out[0], K.If) and out[0].then[0] == K.Let("p", gid)
    assert body_of(unvirtualise(plan_of([loop], num_groups=4)))[0] == loop
    dyn = K.For("p", gid, n, K.HwId("int", "num_groups"), loop.body)
    assert body_of(unvirtualise(plan_of([dyn])))[0] == dyn


def test_unroll_copies_with_guards_only_where_a_work_item_may_stop():
    # block of 64: lid in [0, 63]; 160 elements: every work-item runs 2 rounds, some 3
    store = (K.Let("t", K.add(i, a)), K.Store("b", i, K.Var("int", "t")))
    out = body_of(unroll_loops(plan_of([K.For("i", lid, K.cint(160), K.cint(64), store)])))
    lets = [s for s in out if isinstance(s, K.Let) and s.var.startswith("i_u")]
    assert [s.expr for s in lets] == [lid, K.add(lid, K.cint(64)), K.add(lid, K.cint(128))]
    assert [type(s).__name__ for s in out] == ["Let", "Let", "Store", "Let", "Let", "Store", "Let", "If"]
    assert out[-1].cond == K.lt(K.Var("int", lets[-1].var), K.cint(160))
    # a run-time stop, too many rounds, or a barrier in the body: left alone
    for loop in (K.For("i", lid, n, K.cint(64), store), K.For("i", lid, K.cint(64 * 17), K.cint(64), store),
                 K.For("i", lid, K.cint(128), K.cint(64), store + (K.Barrier(),))):
        assert body_of(unroll_loops(plan_of([loop]))) == (loop,)


def test_skew_only_for_lane_strided_local_access():
    tile = K.Buffer("t", "local", "int", K.cint(1024), "test")
    column = strided([K.Store("t", K.add(K.mul(K.binop("mod", i, K.cint(32)), K.cint(32)), K.binop("div", i, K.cint(32))), i)])
    runs = strided([K.Store("t", K.add(K.mul(i, K.cint(8)), K.cint(3)), i)])      # 8 lanes a bank
    odd = strided([K.Store("t", K.mul(i, K.cint(3)), i)])                          # no conflict
    for conflicting in (column, runs):
        out = skew_local_memory(plan_of(conflicting, [tile])).kernels[0]
        assert out.locals_[0].layout == "skew32" and "skew(" in K.format_stmts(out.body)
    out = skew_local_memory(plan_of(odd, [tile])).kernels[0]
    assert out.locals_[0].layout == "" and "skew(" not in K.format_stmts(out.body)
    # a row index i / 16 (two values across a warp) times 16: two banks, each a broadcast;
    # i / 4 (eight values) times 16 conflicts
    rows = [K.Store("b", i, K.Load("int", "t", K.add(K.mul(K.binop("div", K.add(i, a), K.cint(d)), K.cint(16)),
                                                       K.cint(3)))) for d in (16, 4)]
    assert skew_local_memory(plan_of(strided(rows[:1]), [tile])).kernels[0].locals_[0].layout == ""
    assert skew_local_memory(plan_of(strided(rows[1:]), [tile])).kernels[0].locals_[0].layout == "skew32"


def test_passes_keep_a_tiled_transpose_exact_in_the_interpreter():
    src = open("examples/transpose.fcl").read() + "\nfun transpose8 cols rows mat = transposeTiled 8 cols rows mat\n"
    prog = fcl.load(src, "t.fcl")
    x = np.arange(48 * 16, dtype=np.int32)
    want = prog.evaluate("transpose8", 48, 16, x, block_size=32, num_groups=4)
    k = prog.compile("transpose8", block_size=32, num_groups=4)
    assert np.array_equal(k.emulate(48, 16, x), want)
    text = k.opencl_source.split("__kernel")[1]
    # element indices: shifts and masks, not guarded division
    assert "fcl_div(i" not in text and "fcl_mod(i" not in text and ">> 3" in text and "& 7" in text


def test_ranges_use_the_condition_of_an_if():
    body = [K.If(K.lt(lid, K.cint(16)), (K.Store("b", K.binop("div", lid, a), K.mul(lid, K.cint(1 << 26))),)),
            K.Store("b", K.cint(0), K.mul(lid, K.cint(1 << 26)))]
    out = body_of(mark_no_wrap(plan_of(body)))
    assert out[0].then[0].value.op == Op.MUL_NW        # lid < 16 there: 15 * 2^26 fits
    assert out[1].value.op == Op.MUL                   # lid up to 63: it may wrap


@pytest.mark.parametrize("c", [1, 2, 8])
def test_ranges_bound_a_part_offset_whose_step_is_a_multiple_of_the_count_divisor(c):
    """p < X / d and k = c d: p k <= c (X - d) = c X - k (scan's chunks of 2048 are c = 2
    steps a part of a work-group's run); without the rule, p k may wrap."""
    d, k, p = K.Var("int", "d"), K.Var("int", "k"), K.Var("int", "p")
    x = K.binop("div", n, K.cint(16))
    r = Ranges.for_plan(plan_of([]))
    r.bind("d", Interval(1, 1000), K.Call("int", "min", (K.Call("int", "max", (a, K.cint(1))), K.cint(1000))))
    r.bind("k", r.of(K.mul(K.cint(c), d)), K.mul(K.cint(c), d))
    inside = r.refined(K.binop("and", K.binop("le", K.cint(0), p), K.lt(p, K.binop("div", x, d))))
    assert inside.of(K.mul(p, k)) == Interval(0, c * ((2**31 - 1) // 16) - c)



def test_ranges_prove_a_min_non_negative_where_each_operand_is():
    """min(i, n - 1) >= 0 where i >= 0 and n - 1 >= 0 (a fact from a condition: a whole
    chunk's branch, p * 2048 <= n - 2048): the index a zipped input is read at in the sort's
    first pass, whose check kept the value's load (not needed to count keys) alive."""
    p = K.Var("int", "p")
    idx = K.Call("int", "min", (K.add(K.mul(p, K.cint(2048)), lid), K.sub(n, K.cint(1))))
    r = Ranges.for_plan(plan_of([]))
    r.bind("p", Interval(0, 1000))
    assert not r.nonneg(idx) and r.below(idx, n)          # n may be 0
    inside = r.refined(K.binop("le", K.mul(p, K.cint(2048)), K.sub(n, K.cint(2048))))
    assert inside.nonneg(idx) and inside.below(idx, n)

def test_ranges_ignore_conditions_on_assigned_variables():
    x = K.Var("int", "x")
    body = [K.DeclVar("x", K.cint(0)),
            K.If(K.lt(x, K.cint(4)), (K.For("j", K.cint(0), n, K.cint(1),
                                            (K.Store("b", K.cint(0), K.add(x, K.cint(2**31 - 4))),
                                             K.Assign("x", K.add(x, K.cint(1))))),))]
    out = body_of(mark_no_wrap(plan_of(body)))
    assert out[1].then[0].body[0].value.op == Op.ADD


def test_simplify_reuses_a_let_of_the_same_expression():
    e = K.mul(gid, K.binop("div", n, a))
    body = [K.Let("u", e), K.Store("b", K.Var("int", "u"), K.cint(1)),
            K.Let("v", e), K.Store("b", K.Var("int", "v"), K.cint(2)),
            K.If(K.lt(lid, n), (K.Let("w", K.add(e, lid)), K.Store("b", K.Var("int", "w"), K.cint(3)))),
            K.Let("x", K.add(e, lid)), K.Store("b", K.Var("int", "x"), K.cint(4))]
    out = body_of(simplify(plan_of(body)))
    assert [type(s).__name__ for s in out] == ["Let", "Store", "Store", "If", "Let", "Store"]
    assert out[2].index == K.Var("int", "u")          # v reused u
    assert out[4].var == "x"                          # w was local to the branch: x is computed again


def test_map_hw_strides_guards_and_the_uniform_loop():
    from fcl.codegen.passes.map_hw import map_hardware
    store = (K.Store("b", i, K.cint(1)),)
    body = [K.ParFor("block", "i", n, store), K.ParFor("block", "i2", K.cint(40), store[:0]),
            K.ParFor("block", "i3", K.cint(64), store[:0]), K.ParFor("grid", "i4", n, store[:0]),
            K.PartFor("block", "p", n, (K.Barrier(),), "act"), K.PartFor("grid", "q", n, (), "act2")]
    out = body_of(map_hardware(plan_of(body)))
    assert out[0] == K.For("i", lid, n, K.cint(64), store)
    assert out[1] == K.If(K.lt(lid, K.cint(40)), (K.Let("i2", lid),))
    assert out[2] == K.Let("i3", lid)                                    # exactly one element each
    assert out[3] == K.For("i4", K.HwId("int", "global_id"), n, K.HwId("int", "global_size"), ())
    uniform = out[4]                                                     # barriers inside: same trip count
    assert uniform.var == "p_base" and uniform.step == K.cint(2)
    assert uniform.body[0] == K.Let("act", K.lt(K.add(K.Var("int", "p_base"), K.HwId("int", "wid")), n))
    assert out[5] == K.For("q", gid, n, K.HwId("int", "num_groups"), (K.Let("act2", K.Const("bool", True)),))


def test_strength_folds_comparisons_the_ranges_decide():
    body = [K.For("c", lid, K.cint(100), K.cint(64),
                  (K.Store("b", K.Var("int", "c"), K.select(K.lt(K.Var("int", "c"), K.cint(200)), a, K.cint(0))),
                   K.Store("b", K.Var("int", "c"), K.select(K.lt(K.Var("int", "c"), K.cint(50)), a, K.cint(0))))),
            K.If(K.binop("ge", lid, K.cint(64)), (K.Barrier(),))]
    out = body_of(simplify(strength_reduce(plan_of(body))))
    loop = out[0]
    assert loop.body[0].value == a                        # c <= 99 < 200: always
    assert isinstance(loop.body[1].value, K.Select)       # c < 50: it depends
    assert len(out) == 1                                  # lid >= 64 never holds


# ---------------------------------------------------------------- vectorize

gsize, global_id = K.HwId("int", "global_size"), K.HwId("int", "global_id")
m = K.Var("int", "m")


def vplan(body, num_groups=3):
    """A kernel over int buffers b (input, n elements) and c (output, n elements), bounds
    buffer err."""
    k = K.Kernel("k", tuple(body), (), ())
    return Plan("k", (ArrayArg("b", "n", "int"), ScalarArg("m", "int")), (K.Param("n", "int"), K.Param("m", "int")),
                (K.Buffer("b", "global", "int", n, "test", role="input"), K.Buffer("c", "global", "int", n, "test"),
                 K.Buffer("err", "global", "int", K.cint(4), "test", role="bounds")),
                (k,), (), 64, 32, num_groups)


def run_vplan(plan, size: int, mm: int = 0, err=None):
    """c after running the plan's kernel on b = 3 * arange(size) - 7 (c starts at -1)."""
    verify_program(plan, after="test", mapped=True)
    b, c = np.arange(size, dtype=np.int32) * 3 - 7, np.full(size, -1, dtype=np.int32)
    err = np.zeros(4, dtype=np.int32) if err is None else err
    KernelRun(plan.kernels[0], plan.num_groups, 64, 32, {"b": b, "c": c, "err": err}, {"n": size, "m": mm}, {}).run()
    return b, c


def kinds(plan) -> list[str]:
    return [type(s).__name__ for s in K.walk_stmts(plan.kernels[0].body)]


def test_vectorize_strip_mines_a_grid_stride_copy_and_keeps_the_tail():
    from fcl.codegen.passes.vectorize import vectorize
    copy = [K.For("i", global_id, n, gsize, (K.Store("c", i, K.Load("int", "b", i)),))]
    out = vectorize(vplan(copy))
    assert kinds(out).count("VLoad") == 1 and kinds(out).count("VStore") == 1
    vload = next(s for s in K.walk_stmts(out.kernels[0].body) if isinstance(s, K.VLoad))
    assert vload.index == K.Var("int", "i_v")           # element 4j: vector j, no shift
    for size in (0, 1, 3, 4, 5, 7, 8, 9, 191, 192, 193, 766, 771, 1029):   # 192 work-items
        b, c = run_vplan(out, size)
        assert np.array_equal(b, c), size
    # not independent: a value carried between iterations, a neighbour of a buffer the loop
    # writes, a checked index, an index that is not the counter
    acc = K.Var("int", "acc")
    carried = [K.DeclVar("acc", K.cint(0)),
               K.For("i", global_id, n, gsize, (K.Assign("acc", K.add(acc, K.Load("int", "b", i))),
                                                K.Store("c", i, acc)))]
    neighbour = [K.For("i", global_id, n, gsize, (K.Store("c", i, K.Load("int", "c", K.add(i, K.cint(1)))),))]
    checked = [K.For("i", global_id, n, gsize, (K.Store("c", i, K.Load("int", "b", K.Checked("int", i, n, "err", 0))),))]
    shifted = [K.For("i", global_id, n, gsize, (K.Store("c", K.sub(n, i), K.Load("int", "b", i)),))]
    for body in (carried, neighbour, checked, shifted):
        assert vectorize(vplan(body)).kernels[0].body == tuple(body)


def test_vectorize_strip_mines_a_block_stride_loop_and_versions_its_guards():
    """`for (i = lid; i < 512; i += 64)` over chunk group_id of b, guarded by t < n: runs of 4
    a work-item; one test of the chunk's last element picks a loop of int4 accesses without
    the guards, else the guarded copies; left alone where an iteration could see another or
    the work-item."""
    from fcl.codegen.passes.vectorize import vectorize
    lid, group = K.HwId("int", "lid"), K.HwId("int", "group_id")
    t = K.Var("int", "t")

    def loop(body, stop=512):
        return [K.For("i", lid, K.cint(stop), K.cint(64), (K.Let("t", K.add(K.mul(group, K.cint(512)), i)),) + body)]
    guarded = (K.If(K.lt(t, n), (K.Store("c", t, K.add(K.select(K.lt(t, n), K.Load("int", "b", t), K.cint(0)),
                                                         K.cint(1))),)),)
    out = vectorize(vplan(loop(guarded)))
    assert kinds(out).count("VLoad") == 1 and kinds(out).count("VStore") == 1
    (test,) = [s for s in out.kernels[0].body if isinstance(s, K.If)]     # the last run's guard, once
    assert all(len(b) == 1 and b[0].unroll and b[0].stop == K.cint(128) for b in (test.then, test.else_))
    assert not any(isinstance(s, K.If) for s in K.walk_stmts(test.then))     # no branch between loads
    for size in (0, 3, 511, 512, 515, 1000, 1535, 1536, 1600):
        b, c = run_vplan(out, size)
        done = min(size, 3 * 512)
        assert np.array_equal(c[:done], b[:done] + 1) and (c[done:] == -1).all(), size
    at_lid = (K.Store("c", t, K.add(K.Load("int", "b", t), lid)),)
    neighbour = (K.Store("c", t, K.Load("int", "c", K.add(t, K.cint(1)))),)
    barrier = (K.Store("c", t, K.Load("int", "b", t)), K.Barrier())
    folded = (K.Store("c", K.add(t, K.div(i, K.cint(32))), K.Load("int", "b", t)),)     # not at i
    for body, stop in ((at_lid, 512), (neighbour, 512), (barrier, 512), (folded, 512), (guarded, 320)):
        assert vectorize(vplan(loop(body, stop))).kernels[0].body == tuple(loop(body, stop))


def test_vectorize_groups_four_aligned_loads_and_stores_in_straight_line_code():
    from fcl.codegen.passes.vectorize import vectorize
    j = K.Var("int", "j")

    def at(k, off=0):
        return K.Load("int", "b", K.add(K.mul(K.cint(4), j), K.cint(k + off)))

    def loop(body):
        # m <= n / 4 runs of 4: every index in range
        return [K.For("j", global_id, m, gsize, tuple(body))]
    total = K.add(K.add(at(0), at(1)), K.add(at(2), at(3)))
    sums = loop([K.Let("s", total), K.Store("c", j, K.Var("int", "s"))])
    out = vectorize(vplan(sums))
    assert kinds(out).count("VLoad") == 1
    for size, runs in ((0, 0), (5, 1), (37, 9), (800, 200)):
        b, c = run_vplan(out, size, runs)
        assert np.array_equal(c[:runs], b[:4 * runs].reshape(runs, 4).sum(axis=1)), size
    # stores: c[4j + k] = b[4j + k] + k, the four in one vector store
    stores = loop([K.Store("c", K.add(K.mul(K.cint(4), j), K.cint(k)), K.add(at(k), K.cint(k))) for k in range(4)])
    out = vectorize(vplan(stores))
    assert kinds(out).count("VStore") == 1 and kinds(out).count("Store") == 0
    b, c = run_vplan(out, 43, 10)
    assert np.array_equal(c[:40], b[:40] + np.tile(np.arange(4), 10)) and (c[40:] == -1).all()
    # left alone: a base that is not a multiple of 4, only three of the four, a checked index,
    # a load under a select's arm, a store to the buffer between the loads
    unaligned = loop([K.Let("s", K.add(K.add(at(1), at(2)), K.add(at(3), at(4))))])
    three = loop([K.Let("s", K.add(K.add(at(0), at(1)), at(2)))])
    checked = loop([K.Let("s", K.add(K.add(K.Load("int", "b", K.Checked("int", K.mul(K.cint(4), j), n, "err", 0)),
                                              at(1)), K.add(at(2), at(3))))])      # one checked, three not
    guarded = loop([K.Let("s", K.add(K.add(at(0), at(1)),
                                     K.select(K.lt(j, K.cint(3)), K.add(at(2), at(3)), K.cint(0))))])
    written = [K.For("j", global_id, m, gsize, (K.Let("s", K.add(K.Load("int", "c", K.mul(K.cint(4), j)),
                                                                 K.Load("int", "c", K.add(K.mul(K.cint(4), j), K.cint(1))))),
                                                K.Store("c", K.add(K.mul(K.cint(4), j), K.cint(2)), K.cint(0)),
                                                K.Let("t", K.add(K.Load("int", "c", K.add(K.mul(K.cint(4), j), K.cint(2))),
                                                                 K.Load("int", "c", K.add(K.mul(K.cint(4), j), K.cint(3)))))))]
    four = [K.Load("int", "c", K.add(K.mul(K.cint(4), j), K.cint(k))) for k in range(4)]
    barrier = [K.Let("s", K.add(four[0], four[1])), K.Barrier(), K.Let("t", K.add(four[2], four[3])),
               K.Store("c", K.cint(0), K.cint(1))]         # c is written: another work-item's store
    for body in (unaligned, three, checked, guarded, written, barrier):
        assert "VLoad" not in kinds(vectorize(vplan(body))), body


def test_vectorize_checks_a_run_of_checked_loads_once():
    """Four checked loads b[4j + k]: one test of the whole run picks the vector load; where it
    fails (j past the end) every check runs as before and records the same sites."""
    from fcl.codegen.passes.vectorize import vectorize
    j = K.Var("int", "j")

    def at(k):
        return K.Load("int", "b", K.Checked("int", K.add(K.mul(K.cint(4), j), K.cint(k)), n, "err", k + 1))
    body = [K.For("j", global_id, m, gsize, (K.Let("s", K.add(K.add(at(0), at(1)), K.add(at(2), at(3)))),
                                             K.Store("c", j, K.Var("int", "s"))))]
    plan = vplan(body)
    out = vectorize(plan)
    assert kinds(out).count("VLoad") == 1 and len([x for x in K.walk_stmts(out.kernels[0].body)
                                                   if isinstance(x, K.If)]) == 1
    for size, runs in ((0, 0), (13, 3), (13, 4), (14, 5), (801, 200), (801, 201)):
        errors = []
        for p in (plan, out):
            err = np.zeros(4, dtype=np.int32)
            errors.append((run_vplan(p, size, runs, err)[1], err))
        (c0, e0), (c1, e1) = errors
        assert np.array_equal(c0, c1) and e0[0] == e1[0], (size, runs, e0, e1)
        assert (e0[0] != 0) == (4 * runs > size)


VECTORISED = [  # (file, entry, arguments for a size n): kernels the vectorize pass changes
    ("bench/programs.fcl", "copyGrid", lambda n: [np.arange(n, dtype=np.int32) - 9]),
    ("tests/programs/foldl_if.fcl", "foldSmall", lambda n: [np.arange(n, dtype=np.int32) * 7]),
    ("examples/reduce.fcl", "sumAll", lambda n: [np.arange(n, dtype=np.int32) - 3]),
    ("tests/programs/kernel_args.fcl", "addPair", lambda n: [(2, 0.5), np.arange(n, dtype=np.float32) / 4]),
    ("examples/reduce.fcl", "sumStride", lambda n: [np.arange(n, dtype=np.int32) * 5 - 1000]),
    ("bench/programs.fcl", "matvecRows4", lambda n: [n, 3, (np.arange(3 * n) % 7 - 3).astype(np.float32),
                                                     (np.arange(n) % 5).astype(np.float32)]),
    ("examples/scan.fcl", "scanAll", lambda n: [np.arange(n, dtype=np.int32) * 3 - 500]),     # chunks of 1024
    ("bench/programs.fcl", "segSums", lambda n: [np.arange(n) % 7 == 0, np.arange(n, dtype=np.int32) - 9]),
    ("tests/programs/arithmetic.fcl", "boolOps", lambda n: [np.arange(n) % 3 == 0, np.arange(n, dtype=np.int32) - 5]),
]


@pytest.mark.parametrize("path, entry, make", VECTORISED, ids=[v[1] for v in VECTORISED])
def test_vectorize_changes_no_result_at_odd_sizes(path, entry, make):
    """With and without the pass, on the interpreter (and on the OpenCL device, where there is
    one): the same results at sizes with every tail length, more runs than work-items."""
    from fcl.runtime.device import choose_device
    prog = fcl.load_file(path)
    on = prog.compile(entry, block_size=32, num_groups=2)
    off = prog.compile(entry, block_size=32, num_groups=2, no_pass=("vectorize",))
    assert "4*)" in on.opencl_source and "4*)" not in off.opencl_source
    try:
        choose_device(None)
        device = True
    except Exception:
        device = False
    for size in (1, 4, 5, 6, 7, 67, 257, 1030):
        args = make(size)
        want = off.emulate(*args)
        assert np.array_equal(on.emulate(*args), want), size
        if device:
            assert np.array_equal(on(*args), want) and np.array_equal(off(*args), want), size


def test_prelude_matmul_reads_its_tiles_as_float4():
    """matmulF's work-item reads 4 consecutive elements of a column of its tile of a, and 4
    consecutive columns of its tile of b, as one float4 of local memory each (neither tile
    skewed), at a shape of one tile and one across tiles with edges; on the OpenCL device
    where there is one, the product at the shape with edges (#BlockSize 256: 64 x 256 tiles
    of C; test_interp.py runs matmulF's test blocks on the interpreter with the pass and
    without it, test_codegen.py on the device; a build of matmulF takes PoCL 13 s)."""
    from fcl.runtime.device import choose_device
    prog = fcl.load_file("examples/matmul.fcl")
    on = prog.compile("matmulF", num_groups=2)
    off = prog.compile("matmulF", num_groups=2, no_pass=("vectorize",))
    rng = np.random.default_rng(7)
    for n_, k_, m_ in ((64, 16, 32), (130, 33, 300)):
        a_ = rng.standard_normal(n_ * k_).astype(np.float32)
        b_ = rng.standard_normal(k_ * m_).astype(np.float32)
        text = on.build_for(n_, k_, m_, a_, b_).source
        reads = re.findall(r"\(\(__local const float4\*\)(l\d+)\)", text)
        assert len(set(reads)) == 2 and len(reads) >= 4 * 16     # both tiles; 2 + 2 a column of the K-tile
        assert "skewed layout" not in text
    assert "__local const float4*" not in off.build_for(n_, k_, m_, a_, b_).source
    try:
        choose_device(None)
    except Exception:
        return
    want = (a_.reshape(n_, k_).astype(np.float64) @ b_.reshape(k_, m_)).ravel()
    assert np.allclose(on(n_, k_, m_, a_, b_), want, rtol=1e-5, atol=1e-5)


def test_vectorize_renders_cast_pointers_and_is_off_with_its_switches():
    prog = fcl.load_file("bench/programs.fcl")
    text = prog.compile("copyGrid").opencl_source
    assert "((__global const int4*)in0_1)[i3_v]" in text
    assert "((__global int4*)out2)[i3_v] = in0_1_v4;" in text          # the loaded vector itself
    assert "out2[i3] = in0_1[i3];" in text                              # the last n0 % 4
    for options in ({"no_pass": ("vectorize",)}, {"opt_level": 0}):
        assert "int4" not in prog.compile("copyGrid", **options).opencl_source
    # bools as uchar4, both ways: a map of bools, and a segmented scan's flags
    text = fcl.load_file("tests/programs/arithmetic.fcl").compile("boolOps").opencl_source
    assert "((__global const uchar4*)in0_1)[" in text and "((__global uchar4*)out3)[" in text
    assert "((__global const uchar4*)in0_1)[" in prog.compile("segSums").opencl_source


def test_verifier_rejects_vector_accesses_it_cannot_print():
    from fcl.base.errors import CompilerBug
    tile = K.Buffer("t", "local", "int", K.cint(64), "test")
    skewed = K.Buffer("s", "local", "int", K.cint(64), "test", layout="skew32")
    sized = K.Buffer("h", "local", "int", n, "test")
    bad = [[K.VLoad("v", ("x", "y", "z"), "int", "b", lid)],                       # 3 wide
           [K.VLoad("v", ("x", "y", "z", "w"), "int", "s", lid)],                  # a skewed layout
           [K.VLoad("v", ("x", "y", "z", "w"), "int", "h", lid)],                  # sized by the host
           [K.VStore("b", lid, (K.cint(1), K.cint(2), K.cint(3), K.Const("float", 4.0)))]]
    for body in bad:
        with pytest.raises(CompilerBug):
            verify_program(plan_of(body, [tile, skewed, sized]), after="test", mapped=True)
    verify_program(plan_of([K.VLoad("v", ("x", "y", "z", "w"), "int", "b", lid),
                            K.VStore("b", lid, tuple(K.Var("int", v) for v in "xyzw")),
                            K.VLoad("u", ("p", "q", "r", "o"), "int", "t", lid)], [tile]), after="test", mapped=True)


def test_vectorize_groups_local_loads_and_skew_leaves_their_buffer_plain():
    """Work-item x writes t[4x + k] = 4x + k and reads back t[4x + k], k = 0..3, in one block:
    the skew pass leaves the tile plain (16-byte vectors at consecutive places are
    conflict-free) and vectorize makes the four stores one VStore and the four loads one
    VLoad, rendered through cast local pointers into a tile declared 16-byte aligned.  Three
    of the four loads, or a lane stride of 8, keep the skew and the scalar accesses."""
    from fcl.codegen.passes.vectorize import vectorize
    tile = K.Buffer("t", "local", "int", K.cint(1024), "test")

    def body(stride, ks):
        at = [K.add(K.mul(lid, K.cint(stride)), K.cint(k)) for k in range(4)]
        total = K.Load("int", "t", at[ks[0]])
        for k in ks[1:]:
            total = K.add(total, K.Load("int", "t", at[k]))
        return [K.Store("t", x, x) for x in at] + [K.Barrier(), K.Store("b", lid, total)]
    out = vectorize(skew_local_memory(plan_of(body(4, range(4)), [tile])))
    assert out.kernels[0].locals_[0].layout == ""
    assert kinds(out).count("VLoad") == 1 and kinds(out).count("VStore") == 1
    text = render(dataclasses.replace(out, body=(P.Launch("k", (n,), P.Uses(("b",), ("n",))),)))
    assert "__local int t[1024] __attribute__((aligned(16)));" in text
    assert "((__local const int4*)t)[fcl_mul(lid, 4) >> 2]" in text and "((__local int4*)t)[fcl_mul(lid, 4) >> 2] = " in text
    b = np.zeros(64, dtype=np.int32)
    KernelRun(out.kernels[0], 1, 64, 32, {"b": b}, {"n": 64, "a": 0}, {"t": 1024}).run()
    assert np.array_equal(b, 16 * np.arange(64) + 6)
    for plain in (body(4, range(3)), body(8, range(4))):
        out = vectorize(skew_local_memory(plan_of(plain, [tile])))
        assert out.kernels[0].locals_[0].layout == "skew32" and "VLoad" not in kinds(out)




def test_barriers_drops_one_between_stretches_that_share_no_buffer():
    """Two forces in a row (stores to t1, a barrier, stores to t2, a barrier, reads of both):
    the first barrier goes, alone and at the top of a loop whose body ends in a barrier after
    one before it, and the results on the interpreter are the same.  It stays where the second
    stretch reads, or writes, what the first writes; where nothing before the loop orders its
    first run; and around a `while`'s pointers."""
    from fcl.codegen.passes.barriers import drop_barriers
    tiles = [K.Buffer(name, "local", "int", K.cint(64), f"force {name}") for name in ("t1", "t2")]
    back = K.sub(K.cint(63), lid)
    forces = [K.Store("t1", lid, lid), K.Barrier(), K.Store("t2", lid, K.mul(lid, K.cint(3))), K.Barrier(),
              K.Store("b", lid, K.add(K.Load("int", "t1", back), K.Load("int", "t2", back)))]

    def barriers(body):
        return sum(isinstance(x, K.Barrier) for x in K.walk_stmts(drop_barriers(plan_of(body, tiles)).kernels[0].body))

    def run(body):
        b = np.zeros(64, dtype=np.int32)
        KernelRun(plan_of(body, tiles).kernels[0], 1, 64, 32, {"b": b}, {"n": 64, "a": 0}, {"t1": 64, "t2": 64}).run()
        return b
    assert barriers(forces) == 1
    out = drop_barriers(plan_of(forces, tiles)).kernels[0]
    verify_program(plan_of(out.body, tiles), after="test", mapped=True)
    assert np.array_equal(run(out.body), run(forces)) and np.array_equal(run(forces), 4 * (63 - np.arange(64)))
    looped = [K.Barrier(), K.For("q", K.cint(0), K.cint(3), K.cint(1), tuple(forces) + (K.Barrier(),))]
    assert barriers(looped) == 1 + 2 and barriers(looped[1:]) == 2      # the top of the kernel: ordered
    assert barriers([K.Store("t2", lid, gid)] + looped[1:]) == 3        # its first run unordered: kept
    reads = [K.Store("t1", lid, lid), K.Barrier(), K.Store("t2", lid, K.Load("int", "t1", back)), K.Barrier()]
    writes = [K.Store("t1", lid, lid), K.Barrier(), K.Store("t1", back, lid), K.Barrier()]
    assert barriers(reads) == 2 and barriers(writes) == 2
    ping = [K.DeclPtr("cur", "local", "int", "t1"), K.Store("t2", lid, lid), K.Barrier(),
            K.Store("cur", lid, lid), K.Barrier()]
    assert barriers(ping) == 2


def test_barriers_takes_a_loop_as_a_cycle():
    """A loop whose barriers are all at its top: the last goes where the stretch before it
    touches only the loop's own buffers and nothing the next step's first stretch touches; not
    where that stretch reads a buffer the code after the loop writes; the first where what
    follows it does not touch what comes before the loop since its barrier.  Same results on the
    interpreter for 0 to 3 steps."""
    from fcl.codegen.passes.barriers import drop_barriers
    tiles = [K.Buffer(name, "local", "int", K.cint(64), f"force {name}") for name in ("t1", "t2", "t3")]
    back = K.sub(K.cint(63), lid)

    def loop(steps, body):
        return K.For("q", K.cint(0), K.cint(steps), K.cint(1), tuple(body))

    # t1 staged and read, then t2 written and read alone (a reduction's last value): the
    # barrier after the read of t2 orders nothing the next step's staging of t1 touches
    body = [K.Store("t1", lid, K.add(lid, K.Var("int", "q"))), K.Barrier(),
            K.Store("t2", lid, K.Load("int", "t1", back)), K.Barrier(),
            K.Store("b", lid, K.add(K.Load("int", "b", lid), K.Load("int", "t2", back))), K.Barrier()]

    def barriers(stmts):
        return sum(isinstance(x, K.Barrier) for x in K.walk_stmts(drop_barriers(plan_of(stmts, tiles)).kernels[0].body))

    def run(stmts):
        b = np.zeros(64, dtype=np.int32)
        KernelRun(plan_of(stmts, tiles).kernels[0], 1, 64, 32, {"b": b}, {"n": 64, "a": 0},
                  {t.name: 64 for t in tiles}).run()
        return b
    for steps in (0, 1, 2, 3):
        stmts = [loop(steps, body)]
        out = drop_barriers(plan_of(stmts, tiles)).kernels[0]
        verify_program(plan_of(out.body, tiles), after="test", mapped=True)
        assert np.array_equal(run(out.body), run(stmts))
        assert np.array_equal(run(stmts), steps * np.arange(64) + steps * (steps - 1) // 2)
    assert barriers([loop(3, body)]) == 2
    # after the loop something writes t2, which the last stretch reads: that barrier stays
    assert barriers([loop(3, body), K.Store("t2", lid, lid)]) == 3
    # the loop in a list with no other barrier (the body of a part loop) may start again: kept
    assert barriers([K.For("p", gid, n, K.cint(64), (loop(3, body),))]) == 3
    assert barriers([K.For("p", gid, n, K.cint(64), (K.Barrier(), loop(3, body)))]) == 1 + 2
    # two stagings in a row: the first barrier goes where nothing before the loop touches t3
    two = [K.Store("t1", lid, lid), K.Barrier(), K.Store("t3", lid, lid), K.Barrier(),
           K.Store("b", lid, K.add(K.Load("int", "t1", back), K.Load("int", "t3", back))), K.Barrier()]
    assert barriers([loop(3, two)]) == 2
    assert barriers([K.Store("t3", lid, gid), loop(3, two)]) == 3


def test_double_buffer_takes_two_steps_a_round_on_two_copies():
    """`--pass double_buffer`: tests/programs/irregular.fcl's tiledSums (a block-level force in
    each step of a work-item's foldl) gives the evaluator's sums on the interpreter (the kernel
    IR verified after every pass: test_interp's check) for 0 to 5 steps, odd and even, its loop
    now a loop over pairs of steps and a loop for the odd one; examples/matmul.fcl's
    matmulPrefetch (5 K steps) one barrier a step in its pairs' loop (two before), its tiles
    twice.  Off by default; only optional passes may be named."""
    prog = fcl.load_file(REPO / "tests" / "programs" / "irregular.fcl")
    for n in (0, 4, 8, 12, 16, 20):
        xs = np.arange(n, dtype=np.int32) - 7
        kernel = prog.compile("tiledSums", block_size=32, with_pass=("double_buffer",))
        assert values_equal(prog.evaluate("tiledSums", xs, block_size=32), kernel.emulate(xs))
    steps = [s.step for s in K.walk_stmts(kernel.plan.kernels[0].body) if isinstance(s, K.For)]
    assert K.cint(2) in steps and K.cint(2) not in [s.step for s in K.walk_stmts(
        prog.compile("tiledSums", block_size=32).plan.kernels[0].body) if isinstance(s, K.For)]
    matmul = fcl.load_file(REPO / "examples" / "matmul.fcl")
    plain = matmul.compile("matmulPrefetch", static={"k": 64}).plan.kernels[0]
    paired = matmul.compile("matmulPrefetch", static={"k": 64}, with_pass=("double_buffer",)).plan.kernels[0]
    [pairs] = [s for s in K.walk_stmts(paired.body) if isinstance(s, K.For) and K.is_const(s.step, 2)]
    [loop] = [s for s in K.walk_stmts(plain.body) if isinstance(s, K.For) and K.is_const(s.stop, 5)]
    assert sum(isinstance(x, K.Barrier) for x in pairs.body) == 2
    assert sum(isinstance(x, K.Barrier) for x in loop.body) == 2
    assert len(paired.locals_) == 2 * len(plain.locals_)
    with pytest.raises(FCLError, match="runs by default"):
        matmul.compile("matmulPrefetch", with_pass=("barriers",))
    with pytest.raises(FCLError, match="unknown pass"):
        matmul.compile("matmulPrefetch", with_pass=("triple_buffer",))



def _pairs(kernel) -> list:
    """The loops over pairs of steps the `double_buffer` pass made in a kernel."""
    return [s for s in K.walk_stmts(kernel.body) if isinstance(s, K.For) and K.is_const(s.step, 2)]


def test_power_double_buffered_asks_for_the_pass_on_its_own_loop():
    """`powerDoubleBuffered` means `power` (the evaluator: the same steps; its errors name it)
    and marks its kernel loop, which the `double_buffer` pass pairs without being named:
    examples/matmul.fcl's matmulPipelined (5 K steps) runs one barrier a step in its pairs'
    loop, its tiles twice, and `--no-pass double_buffer` leaves the loop as it was (two
    barriers a step), printed as marked.  The prelude's matmulF takes that form where its
    tiles are few (2000 x 3000 x 1000: 128 tiles of 64 x 256, matmulPipelines), and not
    where they are fewer (1024^3: 64 tiles, split K), more (3000 x 1000 x 2000: 376, split
    two ways) or the block smaller."""
    matmul = fcl.load_file(REPO / "examples" / "matmul.fcl")
    paired = matmul.compile("matmulPipelined", static={"k": 64})
    plain = matmul.compile("matmulPipelined", static={"k": 64}, no_pass=("double_buffer",))
    [pairs] = _pairs(paired.plan.kernels[0])
    assert sum(isinstance(x, K.Barrier) for x in pairs.body) == 2
    assert not _pairs(plain.plan.kernels[0])
    [loop] = [s for s in K.walk_stmts(plain.plan.kernels[0].body) if isinstance(s, K.For) and K.is_const(s.stop, 5)]
    assert loop.double_buffer and sum(isinstance(x, K.Barrier) for x in loop.body) == 2
    assert len(paired.plan.kernels[0].locals_) == 2 * len(plain.plan.kernels[0].locals_)
    assert "(double-buffered)" in plain.kir()
    few = matmul.compile("matmulF", static={"n": 2000, "k": 3000, "m": 1000})
    assert _pairs(few.plan.kernels[0])
    fewer = matmul.compile("matmulF", static={"n": 1024, "k": 1024, "m": 1024})
    assert not _pairs(fewer.plan.kernels[0])
    prog = fcl.load("""
fun halves xs = powerDoubleBuffered 3 (fn i => fn a => push <block> (generate (lengthPull a) (fn j => index a j / 2 + i)))
                                      (push <block> xs)
fun grows xs = powerDoubleBuffered 2 (fn i => fn a => push <block> (generate (lengthPull a + 1) (fn j => 0))) (push <block> xs)
""")
    xs = np.arange(8, dtype=np.int32) * 8
    assert values_equal(prog.evaluate("halves", xs), [((x // 2) // 2 + 1) // 2 + 2 for x in xs])
    with pytest.raises(EvalError, match="powerDoubleBuffered: step 0 returned an array of length 9"):
        prog.evaluate("grows", xs)

def test_share_local_merges_buffers_a_barrier_apart():
    from fcl.codegen.passes.share_local import share_local_memory
    tiles = [K.Buffer(name, "local", "int", K.cint(size), f"force {name}") for name, size in
             (("t1", 64), ("t2", 128), ("t3", 64))]
    body = [K.Store("t1", lid, lid), K.Barrier(), K.Store("b", lid, K.Load("int", "t1", K.sub(K.cint(63), lid))),
            K.Barrier(), K.Store("t2", lid, gid), K.Barrier(), K.Store("b", lid, K.Load("int", "t2", lid)),
            K.Store("t3", lid, lid), K.Store("b", lid, K.Load("int", "t3", lid))]
    out = share_local_memory(plan_of(body, tiles)).kernels[0]
    verify_program(plan_of(out.body, out.locals_), after="test", mapped=True)
    # t2 takes t1's place (a barrier between), sized 128; t3 is used with no barrier after t2
    assert [(b.name, b.size.value) for b in out.locals_] == [("t1", 128), ("t3", 64)]
    assert {s.buf for s in out.body if isinstance(s, K.Store)} == {"t1", "t3", "b"}
    repeated = [K.For("p", gid, n, K.cint(8), tuple(body[:7]))]     # a part loop: no barrier after t2
    assert len(share_local_memory(plan_of(repeated, tiles)).kernels[0].locals_) == 3
    ping = [K.DeclPtr("cur", "local", "int", "t1"), K.DeclPtr("nxt", "local", "int", "t3"), K.Barrier(),
            K.SwapPtr("cur", "nxt"), K.Barrier(), K.Store("b", lid, K.Load("int", "cur", lid))]
    assert len(share_local_memory(plan_of(ping, tiles)).kernels[0].locals_) == 3   # a while's pair


def test_share_local_keeps_vector_accessed_buffers_plain():
    """A buffer a vector access reaches stays plainly stored: not placed in a skewed one's
    room, which would make its int4 store address skewed words (verify_program refuses it).
    Found where a block's scan in segments (4 stores a work-item, one int4) followed a
    skewed chunk at #BlockSize 32."""
    from fcl.codegen.passes.share_local import share_local_memory
    tiles = [K.Buffer("t1", "local", "int", K.cint(128), "force t1", layout="skew32"),
             K.Buffer("t2", "local", "int", K.cint(64), "force t2")]
    body = [K.Store("t1", lid, lid), K.Barrier(), K.Store("b", lid, K.Load("int", "t1", K.sub(K.cint(63), lid))),
            K.Barrier(), K.VStore("t2", lid, (gid, gid, gid, gid)), K.Barrier(),
            K.Store("b", lid, K.Load("int", "t2", lid))]
    out = share_local_memory(plan_of(body, tiles)).kernels[0]
    verify_program(plan_of(out.body, out.locals_), after="test", mapped=True)
    assert [b.name for b in out.locals_] == ["t1", "t2"]
    plain = [dataclasses.replace(t, layout="") for t in tiles]        # both plain: they share
    assert len(share_local_memory(plan_of(body, plain)).kernels[0].locals_) == 1


def test_share_local_writes_in_place_where_each_work_item_rewrites_its_own_places():
    """B takes A's place though their uses overlap where every work-item reads A only at places
    it then writes in B (a chunk's scan rewriting its elements where they were loaded); not
    where it reads a place after writing it, a place it does not write, or B."""
    from fcl.codegen.passes.share_local import share_local_memory
    tiles = [K.Buffer(name, "local", "int", K.cint(128), f"force {name}") for name in ("ta", "tb")]
    two = K.mul(lid, K.cint(2))
    load = [K.Store("ta", two, gid), K.Store("ta", K.add(two, K.cint(1)), gid), K.Barrier()]
    out = [K.Barrier(), K.Store("b", lid, K.Load("int", "tb", K.sub(K.cint(127), lid)))]

    def shared(middle):
        return share_local_memory(plan_of(load + middle + out, tiles))

    own = [K.Let("x", K.Load("int", "ta", two)), K.Store("tb", two, K.Var("int", "x")),
           K.Let("y", K.add(K.Var("int", "x"), K.Load("int", "ta", K.add(two, K.cint(1))))),
           K.Store("tb", K.add(K.cint(1), two), K.Var("int", "y"))]
    plan = shared(own)
    verify_program(plan, after="test", mapped=True)
    k = plan.kernels[0]
    assert [b.name for b in k.locals_] == ["ta"] and "tb" not in K.buffers_used(k.body)
    after = own[:2] + [K.Let("z", K.Load("int", "ta", two))] + own[2:]          # reads a place it wrote
    neighbour = [K.Let("x", K.Load("int", "ta", K.add(two, K.cint(2)))), K.Store("tb", two, K.Var("int", "x"))]
    reads_b = own + [K.Let("w", K.Load("int", "tb", two))]
    looped = [K.For("q", K.cint(0), K.cint(2), K.cint(1), tuple(own[:2]))]      # every round the same place
    for middle in (after, neighbour, reads_b, looped):
        assert len(shared(middle).kernels[0].locals_) == 2
    q = K.Var("int", "q")
    rounds = [K.For("q", K.cint(0), K.cint(2), K.cint(1), (K.Let("x", K.Load("int", "ta", K.add(two, q))),
                                                            K.Store("tb", K.add(two, q), K.Var("int", "x"))))]
    assert len(shared(rounds).kernels[0].locals_) == 1                         # round q: place 2 lid + q


def test_share_local_lets_matmul_reg_fit_a_gpu_work_group():
    """matmulReg at 3 x 17 x 66: its K-loop of 2 steps is unrolled and each step forces its own
    tiles; shared, the work-group needs 42124 bytes instead of 50448 (an H100 has 49152)."""
    from fcl.codegen.plan import local_bytes
    prog = fcl.load_file("examples/matmul.fcl")
    static = {"n": 3, "k": 17, "m": 66}
    for skip, most in (((), 49152), (("share_local",), None)):
        plan = prog.compile("matmulReg", static=static, no_pass=skip).plan
        used = max(K.eval_host(local_bytes(plan, k), {}) for k in plan.kernels)
        assert (used <= most) if most else used > 49152


def test_unvirtualise_drops_the_part_test_where_every_launch_has_one_group_a_part():
    """transposeTiled at 64 x 64: 4 tiles, 4 work-groups launched: no `group_id < 4` test, so
    its barrier stands under no `if` (PoCL's optimiser crashed on a barrier under such a
    test: fuzz seed 2993); with more groups than parts the test stays."""
    prog = fcl.load_file("examples/transpose.fcl")
    plan = prog.compile("transposeTiled", static={"tileDim": 32, "cols": 64, "rows": 64}).plan
    (k,) = plan.launched()
    assert [type(s).__name__ for s in k.body].count("If") == 0
    assert any(isinstance(s, K.Barrier) for s in k.body)
    body = [K.For("p", gid, K.cint(3), K.HwId("int", "num_groups"), (K.Store("b", gid, lid),))]
    out = unvirtualise(plan_of(body, num_groups=8)).kernels[0].body        # no launch: a test
    assert isinstance(out[0], K.If)


def test_unroll_replaces_a_loop_every_work_item_runs_once_by_its_body():
    """`for (i = lid; i < 64; i += 64)` at #BlockSize 64 runs once in every work-item: its body,
    barrier and all; a loop no work-item runs goes."""
    once = [K.For("i", lid, K.cint(64), K.cint(64), (K.Store("t", i, lid), K.Barrier(),
                                                     K.Store("b", i, K.Load("int", "t", i))))]
    tile = K.Buffer("t", "local", "int", K.cint(64), "test")
    out = body_of(unroll_loops(plan_of(once, [tile])))
    assert out[0] == K.Let("i", lid) and out[2] == K.Barrier() and not any(isinstance(s, K.For) for s in out)
    never = [K.For("i", K.add(lid, K.cint(64)), K.cint(64), K.cint(64), (K.Store("b", i, lid),))]
    assert body_of(unroll_loops(plan_of(never))) == ()


def power_plan(read, store=lid, guard=None):
    """A block-level power as `lower.loops.power_loop` leaves it: state in local t1/t2 (64 ints, one
    a work-item), `a` steps each storing nxt[store] = cur[read] + it, then the result read
    in another distribution (b[lid] = cur[63 - lid])."""
    it = K.Var("int", "it")
    step = K.Store("nxt", store, K.add(K.Load("int", "cur", read), it))
    loop = K.For("it", K.cint(0), a, K.cint(1),
                 (step if guard is None else K.If(guard, (step,)), K.Barrier(), K.SwapPtr("cur", "nxt")))
    body = [K.Store("t1", lid, K.mul(lid, K.cint(10))), K.Barrier(), K.DeclPtr("cur", "local", "int", "t1"),
            K.DeclPtr("nxt", "local", "int", "t2"), loop, K.Store("b", lid, K.Load("int", "cur", K.sub(K.cint(63), lid)))]
    return plan_of(body, [K.Buffer(x, "local", "int", K.cint(64), "power") for x in ("t1", "t2")])


def run_power(plan, steps: int):
    verify_program(plan, after="test", mapped=True)
    b = np.zeros(64, dtype=np.int32)
    KernelRun(plan.kernels[0], 1, 64, 32, {"b": b}, {"n": 64, "a": steps}, {"t1": 64, "t2": 64}).run()
    return b


def test_privatise_keeps_a_power_state_each_work_item_reads_alone_in_registers():
    from fcl.codegen.passes.privatise import privatise
    same = K.sub(K.add(lid, a), a)                       # lid, written another way
    plan = power_plan(same)
    out = privatise(plan)
    k = out.kernels[0]
    assert [b.name for b in k.locals_] == ["t1"]       # t2 is no longer used
    loop = next(s for s in k.body if isinstance(s, K.For))
    assert not any(isinstance(s, K.SwapPtr) for s in loop.body) and "cur" not in K.buffers_used(loop.body)
    for steps in (0, 1, 2, 5):
        want = (63 - np.arange(64)) * 10 + steps * (steps - 1) // 2
        assert np.array_equal(run_power(out, steps), want) and np.array_equal(run_power(plan, steps), want)
    # left alone: a read of another work-item's element, a store that may not run, an index
    # that changes from step to step
    it = K.Var("int", "it")
    for plan in (power_plan(K.sub(K.cint(63), lid)), power_plan(lid, guard=K.lt(lid, a)),
                 power_plan(K.binop("band", K.add(lid, it), K.cint(63)), K.binop("band", K.add(lid, it), K.cint(63)))):
        assert privatise(plan) == plan


def test_privatise_keeps_a_whole_power_state_in_registers_from_its_fill_to_its_last_read():
    """A state the work-group fills with one value (a strided loop) and that every work-item
    then reads only at its own element needs no local memory at all (the prelude's matmulF);
    a fill that depends on the index, or a last read of another work-item's element, keeps
    the buffer (and the copy back after the loop)."""
    from fcl.codegen.passes.privatise import privatise

    def plan(fill, last_read):
        p = power_plan(lid)
        k = p.kernels[0]
        init = K.For("i", lid, K.cint(64), K.cint(64), (K.Store("t1", K.Var("int", "i"), fill),))
        body = (init, *k.body[1:-1], K.Store("b", lid, K.Load("int", "cur", last_read)))
        return dataclasses.replace(p, kernels=(dataclasses.replace(k, body=body),))

    whole = plan(K.cint(7), lid)
    out = privatise(whole).kernels[0]
    assert out.locals_ == () and not any(isinstance(s, K.Barrier) for s in out.body[1:])
    for steps in (0, 1, 2, 5):
        want = 7 + np.full(64, steps * (steps - 1) // 2)
        assert np.array_equal(run_power(privatise(whole), steps), want)
        assert np.array_equal(run_power(whole, steps), want)
    for kept in (plan(K.Var("int", "i"), lid), plan(K.cint(7), K.sub(K.cint(63), lid))):
        assert [b.name for b in privatise(kept).kernels[0].locals_] == ["t1"]


def test_privatise_takes_matmul_reg_tile_of_c_out_of_local_memory():
    """Structure only (test_interp runs matmulReg's test blocks with every pass, and with
    privatise off, against the evaluator): one local buffer fewer, no ping-pong."""
    prog = fcl.load_file("examples/matmul.fcl")
    on = prog.compile("matmulReg", block_size=64)
    off = prog.compile("matmulReg", block_size=64, no_pass=("privatise",))
    assert len(on.plan.kernels[0].locals_) == len(off.plan.kernels[0].locals_) - 1
    assert "tmp = cur" in off.opencl_source and "tmp = cur" not in on.opencl_source


@pytest.mark.parametrize("static", [(2, 3, 2), (100, 64, 100), (4096, 4096, 4096), (0, 2, 3)])
def test_prelude_matmul_keeps_its_tile_of_c_in_registers_at_every_k(static):
    """The prelude's matmulF at #BlockSize 256 (64 x 256 tiles of C, 64 KB) needs only its two
    K-tiles in local memory (64 x 16 of a and 16 x 256 of b, 20 KB), whether the K loop runs once (its loop stays a loop for
    privatise: `unroll` leaves a power's one-step loop), a few times (a long state is not
    unrolled at compile time) or 256 times; and nothing at all for an empty product, whose
    loop over the tiles runs no time (its tiles' buffers go with it)."""
    prog = fcl.load(f"val s = {static[0]}")
    kernel = prog.compile("matmulF", block_size=256, static=dict(zip(("n", "k", "m"), static)))
    for k in kernel.plan.kernels:
        assert sorted(b.size.value for b in k.locals_) in ([], [1024, 4096]), [(b.name, b.size) for b in k.locals_]


SEED_2782 = 'sig ramp : <lvl> -> int -> [int]<lvl>\nfun ramp <lvl> n = push <lvl> (generate n (fn i => (i - 3) / 2 + (i - 7) % 3))\nfun global k arr =\n  let t1 = force (let src2 = generate (lengthPull arr) (fn i4 => (if lengthPull arr > 0 then index arr ((((i4 - 10) mod lengthPull arr) + lengthPull arr) % lengthPull arr) else (i4 - 10))) in concat 5 (mapPull (fn p3 => concat 1 (mapPull (fn p5 => mapPush (fn x6 => index p3 (((k * x6) & 1023) % lengthPull p3)) (zipWithPush (fn x7 => fn y8 => x7 - y8) p5 (ramp <thread> 1))) (splitUp 1 (mapPull (fn x10 => (let q12 = (let v13 = force (push <thread> arr) in arr) in index q12 ((abs ((index p3 ((7 & 1023) % lengthPull p3)) - (index arr ((7 & 1023) % lengthPull arr))) & 1023) % lengthPull q12))) (zipWith (fn x15 => fn y16 => (k - y16)) p3 p3))))) (splitUp 5 src2)))\n  in let dg17 = foldl (fn acc18 => fn x19 => (acc18 * 3) ^ x19) 0 t1\n  in k + (dg17)\n'


def test_a_forced_array_nothing_reads_is_not_stored():
    """Random-tester seed 2782: a per-work-item copy of `arr` that nothing reads (`v13`) is
    left out; stored, it made PoCL's optimising build give a wrong value beside it at
    #BlockSize 6, #WarpSize 2, #NumGroups 5 (Intel's runtime, PoCL -O0 and Oclgrind agree
    with the evaluator).  A store with a run-time check in its value or place stays."""
    prog = fcl.load(SEED_2782, "seed2782.fcl")
    hw = dict(block_size=6, warp_size=2, num_groups=5)
    kernel = prog.compile("global", **hw)
    copy = re.search(r"__local int\* (\w+) +/\* [^*]* per thread", kernel.opencl_source).group(1)
    assert f"{copy}[" not in kernel.opencl_source      # its size still checked by the host, no store
    arr = [-626568123, -27, 2, 0, 8, -43, -30, -17, 1, -40, -37, 39, -2, 34, 28, 43, 36, 19, -38, -16, 40, -20, 31, 3, -13, 45, 6, 44, 45, -32, -2, 45, 41, -31, 41, -36, -47, 2047511012, 1524600336, -14, -30, -23, -392468009, 4, 19, 42, -41, -31, 45, 37, -23, 1278140970, 3, -47, -6, 10, -2, 20, -49, 2, 9, -21, 6, -13, -20, 18, -17, 38, -18, 20, 1627395917, 19, -25, -22, -43, -12, 27, -45, -35, -42, -2052380398, -47, 34, 23, -45, -33, -65489132, 47, -12, -13, -9, 47, -3, 50, -9, 38, -38, 25, -31, -34, -14, 35, 2, 1184198193, -2, 38, 22, -1, 23, -7, -49, -20, -20, -26, 15, 43, 5, -12, -25, -2049946318, -30, 38, 1488862311, -12, -462132444, 40863186, 31, -22, -9, 18, -42, -25, 41, 21, 15, 48, 29, 3, -1229383880, 5, 34, 9, 49, -27, -49, 21, -1130116597, 41, 18, 27, -8, -1513118958, 41, -28, -40, -22, 47, 49, -41, -33, -13, 39, -46, 16, 670469042, -12, 48, 28, 17, 26, -14, 11, -40, -20, -31, -2136837298, 1043298348, 15, -14, 24, 14, -32, 22, 39, 1361348076, 39, 24, 38, 30, -33, 32, 30, -42, -22, -6884751, -3, -18, -6, 9, 359679319]
    assert kernel(0, arr) == prog.evaluate("global", 0, arr, **hw)
    checked = fcl.load("fun f arr = let v = force (push <block> (generate 4 (fn i => index arr (i + 1)))) "
                       "in push <grid> arr\n")
    for run in (lambda: checked.evaluate("f", [1, 2]), lambda: checked.compile("f")([1, 2])):
        with pytest.raises(EvalError, match="index 2 out of range"):
            run()
    # random-tester seed 1322: an unread array of a length the host computes keeps its buffer,
    # whose allocation reports a negative length
    sized = fcl.load("fun g arr = let t = foldl (fn a => fn x => a + 1) 0 (force (seqfor (lengthPull arr - 10) 3 "
                     "(fn s => fn i => (s, i)))) in push <grid> (mapPull (fn x => x + t) arr)\n")
    for run in (lambda: sized.evaluate("g", [1, 2, 3]), lambda: sized.compile("g")([1, 2, 3])):
        with pytest.raises(EvalError, match="negative"):
            run()
    assert list(sized.compile("g")(list(range(12)))) == list(range(2, 14))


def test_unvirtualise_gives_each_part_a_work_group_where_their_number_is_free():
    """A count known only at run time, #NumGroups free: the kernel runs as one launch of
    group_total work-groups in slices (first_group), its loop over parts marked `once`
    (an `if` where FCL_ONE_PART), every hardware id mapped to the whole launch's."""
    loop = K.For("p", gid, n, K.HwId("int", "num_groups"),
                 (K.Store("t", lid, lid), K.Store("b", K.Var("int", "p"), K.HwId("int", "global_id"))))
    tile = K.Buffer("t", "local", "int", K.cint(2048), "test")      # 8 KB: a heavy part
    plan = dataclasses.replace(plan_of([loop], [tile]), body=(P.Launch("k", (n,), P.Uses(("b",), ("n",))),),
                               free_groups=True)
    out = unvirtualise(plan)
    (s,) = body_of(out)
    first, total = K.Var("int", P.FIRST_GROUP), K.Var("int", P.GROUP_TOTAL)
    group = K.add(gid, first)
    assert s.once and s.start == group and s.step == total
    assert s.body[1].value == K.add(K.mul(group, K.cint(64)), lid)
    assert out.body[0].uses.params == ("n", P.FIRST_GROUP, P.GROUP_TOTAL)
    assert "#if FCL_ONE_PART" in render(out)
    assert unvirtualise(dataclasses.replace(plan, free_groups=False)).kernels[0].body == (loop,)
    light = dataclasses.replace(plan, kernels=(dataclasses.replace(plan.kernels[0], locals_=(
        dataclasses.replace(tile, size=K.cint(256)),)),))                # 1 KB: the loop stays
    assert unvirtualise(light).kernels[0].body == (loop,)


def test_slices_number_every_work_group_of_the_launch_once():
    uses = P.Uses((), ("n", P.FIRST_GROUP, P.GROUP_TOTAL))
    assert P.slices(8, 64, P.Uses((), ("n",)), [100]) == [(0, 8)]
    assert P.slices(8, 64, uses, [0]) == [(0, 1)]
    assert P.slices(8, 64, uses, [100, 7]) == [(0, 100)]
    big = P.slice_groups(64)
    assert P.slices(8, 64, uses, [big + 5]) == [(0, big), (big, 5)]
    with pytest.raises(ValueError):
        P.slices(8, 64, uses, [2 ** 31 - 1])
