"""The one-to-one proof of interleave position functions (fcl.codegen.analysis.injective):
the placements the examples use are proven, functions that write a place twice are not, and
every proof holds when the function is enumerated (hypothesis draws the formulas)."""
from hypothesis import given, settings
from hypothesis import strategies as st

from fcl.codegen import kir as K
from fcl.codegen.analysis.injective import one_to_one

P, J = K.Var("int", "p"), K.Var("int", "j")


def v(name):
    return K.Var("int", name)


def c(k):
    return K.cint(k)


def mod(a, b):
    return K.binop("mod", a, b)


def proven(pos, parts, n):
    conds = one_to_one(pos, "p", parts, "j", n)
    return None if conds is None else [K.format_expr(x) for x in conds]


def test_strided_and_concatenated_placements_need_no_condition():
    C, N = v("C"), v("N")
    assert proven(K.add(K.mul(J, C), P), C, N) == []                   # j * parts + p
    assert proven(K.add(K.mul(P, N), J), C, N) == []                   # concat
    assert proven(K.add(K.mul(K.sub(K.sub(N, c(1)), J), C), P), C, N) == []    # reversed elements


def test_a_count_the_host_computes_is_the_expression_it_names():
    # radixCounts: (j % 16) * (nb * 8) + p * 8 + j / 16 over nb parts of 128, where the launch
    # counts its parts in a host scalar hs := nb (a name in defs); the coefficient is nb * 8
    nb = K.div(K.add(v("nc"), c(7)), c(8))
    pos = K.add(K.add(K.mul(mod(J, c(16)), K.mul(nb, c(8))), K.mul(P, c(8))), K.div(J, c(16)))
    assert one_to_one(pos, "p", v("hs"), "j", c(128), {"hs": nb}) == []
    assert one_to_one(pos, "p", v("hs"), "j", c(128)) is None        # hs unknown: no proof


def test_tiles_of_a_matrix_hold_for_positive_sizes():
    # concat2DGrid t cols: ((p / across) * t + x / t) * cols + (p % across) * t + x % t
    t, cols, rows = v("t"), v("cols"), v("rows")
    across = K.div(cols, t)
    pos = K.add(K.add(K.mul(K.add(K.mul(K.div(P, across), t), K.div(J, t)), cols), K.mul(mod(P, across), t)), mod(J, t))
    conds = proven(pos, K.mul(K.div(rows, t), across), K.mul(t, t))
    assert conds is not None and "(t gt 0)" in conds and "((cols div t) gt 0)" in conds


def test_a_split_and_rejoined_index_is_one_to_one():
    # matmulCached's write-back: t = p * 32 + x / 64, e = x % 64 over 8 parts of 2048
    t = K.add(K.mul(P, c(32)), K.div(J, c(64)))
    e = mod(J, c(64))
    pos = K.add(K.add(K.mul(K.add(K.div(t, c(16)), K.mul(c(16), K.div(e, c(8)))), c(128)), mod(t, c(16))),
                K.mul(c(16), mod(e, c(8))))
    assert proven(pos, c(8), c(2048)) == []


def test_eight_digits_are_ordered_by_their_coefficients():
    # matmulF's write-back (tw = 4, wy = 2: tiles of 16 x 32 results, 8 x 8 a work-item): x's
    # five digits and p's two, rows of across * 32 places; eight coefficients (more than the
    # permutations tried) in the order of their sizes, and checked by enumeration
    across, tw, wy = v("across"), 4, 2
    bm, bn = 8 * wy, 8 * tw
    t, i, jj = K.div(J, c(64)), K.div(mod(J, c(64)), c(8)), mod(J, c(8))
    row = K.add(K.add(K.mul(c(4), K.div(t, c(tw))), mod(i, c(4))), K.mul(c(4 * wy), K.div(i, c(4))))
    col = K.add(K.add(K.mul(c(4), mod(t, c(tw))), mod(jj, c(4))), K.mul(c(4 * tw), K.div(jj, c(4))))
    pos = K.add(K.add(K.mul(K.add(K.mul(K.div(P, across), c(bm)), row), K.mul(across, c(bn))),
                      K.mul(mod(P, across), c(bn))), col)
    conds = proven(pos, K.mul(c(3), across), c(bm * bn))
    assert conds == ["(across gt 0)"]
    assert _enumerate(pos, 3 * 2, bm * bn, {"across": 2})
    twice = K.add(K.add(K.mul(K.add(K.mul(K.div(P, across), c(bm)), row), K.mul(across, c(bn))),
                        K.mul(mod(P, across), c(bn // 2))), col)          # tiles overlap by half
    assert not _enumerate(twice, 3 * 2, bm * bn, {"across": 2})
    assert proven(twice, K.mul(c(3), across), c(bm * bn)) is None


def test_places_written_twice_have_no_proof():
    C, N = v("C"), v("N")
    assert proven(P, C, N) is None                                     # j left out
    assert proven(K.add(J, P), C, N) is None
    assert proven(K.div(K.add(K.mul(J, C), P), c(2)), C, N) is None
    assert proven(K.add(K.mul(J, v("k")), P), C, N) is None            # k may be below the parts
    assert proven(K.add(K.mul(J, c(3)), P), c(4), c(5)) is None         # 3 < 4 parts


def _enumerate(pos, parts: int, n: int, env: dict) -> bool:
    seen = set()
    for p in range(parts):
        for j in range(n):
            x = K.eval_host(pos, {**env, "p": p, "j": j}, total=True)
            if x in seen:
                return False
            seen.add(x)
    return True


_LEAF = st.sampled_from(["p", "j", "1", "2", "3", "4", "8", "k"])


@st.composite
def formulas(draw, depth=4):
    """Int formulas of p, j and a size k: sums, products, and / and % by constants or k."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        leaf = draw(_LEAF)
        return v(leaf) if leaf in "pjk" else c(int(leaf))
    op = draw(st.sampled_from(["add", "mul", "div", "mod", "sub"]))
    a = draw(formulas(depth - 1))
    b = draw(formulas(depth - 1)) if op in ("add", "mul", "sub") else draw(st.sampled_from([c(1), c(2), c(4), v("k")]))
    return K.binop(op, a, b)


@settings(max_examples=400, deadline=None)
@given(formulas(), st.integers(1, 6), st.integers(1, 8), st.integers(1, 9))
def test_every_proof_holds_when_enumerated(pos, parts, n, k):
    conds = one_to_one(pos, "p", c(parts), "j", c(n))
    env = {"k": k}
    if conds is not None and all(K.eval_host(x, env, total=True) for x in conds):
        assert _enumerate(pos, parts, n, env), K.format_expr(pos)
