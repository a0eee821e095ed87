"""The kernel IR on its own: smart constructors, generic traversal, the
verifier, the bottom-layer tables, and the pass manager's switches (API and
`fclc`).  No device, no OpenCL."""
import subprocess
import sys
from pathlib import Path

import pytest

import fcl
from fcl.base import hw
from fcl.base.errors import ArgumentError, CompilerBug
from fcl.codegen import kir as K
from fcl.codegen import passes
from fcl.codegen.plan import Plan
from fcl.codegen.verify import verify_program

REPO = Path(__file__).resolve().parents[2]
x, y = K.Var("int", "x"), K.Var("int", "y")


def test_enums_validate_names():
    with pytest.raises(ValueError):
        K.Bin("int", "plus", x, y)
    with pytest.raises(ValueError):
        K.Buffer("b", "shared", "int", K.cint(1), "test")
    assert K.Bin("int", "add", x, y).op is K.Op.ADD
    assert K.ParFor("grid", "i", x, ()).level is hw.Level.GRID
    assert K.ParFor(2, "i", x, ()).level is hw.Level.BLOCK
    assert f"a {hw.Level.WARP}-level array" == "a warp-level array"


def test_one_table_of_level_names():
    from fcl.syntax import grammar, parser
    from fcl.types import terms as types
    assert hw.LEVEL_KEYWORDS == ("thread", "warp", "block", "grid")
    assert grammar.LEVEL_KEYWORDS is hw.LEVEL_KEYWORDS
    assert parser.LEVEL_NAMES == hw.LEVEL_KEYWORDS + ("Z",)
    assert [types.level_depth(types.LEVEL_NAMES[n]) for n in parser.LEVEL_NAMES] == [0, 1, 2, 3, 0]


def test_code_generation_does_not_load_the_evaluator():
    code = ("import sys, fcl.codegen.kir, fcl.codegen.opencl, fcl.codegen.passes, fcl.codegen.lower; "
            "print('fcl.eval.machine' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False"


def test_folding_and_identities():
    assert K.add(K.cint(2), K.cint(3)) == K.cint(5)
    assert K.add(K.cint(2**31 - 1), K.cint(1)) == K.cint(-2**31)
    assert K.binop("div", K.cint(-7), K.cint(2)) == K.cint(-3)
    assert K.binop("mod", K.cint(-7), K.cint(2)) == K.cint(-1)
    assert K.binop("div", x, K.cint(0)) == K.Bin("int", "div", x, K.cint(0))   # not folded: the device decides
    assert K.mul(x, K.cint(1)) == x and K.add(K.cint(0), x) == x
    assert K.add(K.add(x, K.cint(2)), K.cint(3)) == K.add(x, K.cint(5))
    assert K.binop("div_nn", K.cint(7), K.cint(2)) == K.cint(3)


def test_min_of_a_length_and_its_whole_chunks_is_the_length():
    def chunks(a, c):           # c * max(1, (a + c - 1) / c): a rounded up to whole chunks of c
        c = K.cint(c)
        rounds = K.Bin("int", "div", K.Bin("int", "sub", K.Bin("int", "add", a, c), K.cint(1)), c)
        return K.Bin("int", "mul", c, K.Call("int", "max", (K.cint(1), rounds)))
    assert K.call("min", (x, chunks(x, 2048)), "int") == x
    assert isinstance(K.call("min", (x, chunks(y, 2048)), "int"), K.Call)       # another length
    assert isinstance(K.call("max", (x, chunks(x, 2048)), "int"), K.Call)
    for a in (-3, 0, 1, 2047, 2048, 2049, 10**6):                              # the identity it uses
        assert min(a, K.eval_host(chunks(K.cint(a), 2048), {})) == a

    def whole(a, c):            # c * ((a + (c - 1)) / c), the form a constant c folds to
        return K.Bin("int", "mul", K.cint(c), K.Bin("int", "div", K.Bin("int", "add", a, K.cint(c - 1)), K.cint(c)))
    assert K.call("min", (x, whole(x, 4)), "int") == x
    short = K.Bin("int", "mul", K.cint(4), K.Bin("int", "div", K.Bin("int", "add", x, K.cint(2)), K.cint(4)))
    assert isinstance(K.call("min", (x, short), "int"), K.Call)                # x + 2, not x + 3: no fold
    for a in (-9, -3, 0, 1, 3, 4, 5, 10**6):
        assert min(a, K.eval_host(whole(K.cint(a), 4), {})) == a


def test_traversal_is_generic_over_fields():
    store = K.Store("b", K.add(x, K.cint(1)), y)
    loop = K.For("i", K.cint(0), x, K.cint(1), (store,))
    assert K.stmt_exprs(loop) == (K.cint(0), x, K.cint(1))
    assert K.stmt_children(loop) == ((store,),)
    assert K.stmt_exprs(store) == (store.index, y)
    assert list(K.walk_stmts((loop,))) == [loop, store]
    assert K.expr_children(K.Call("int", "min", (x, y))) == (x, y)


def test_substitution_refolds():
    e = K.add(K.mul(x, K.cint(4)), y)
    out = K.map_expr(lambda n: K.cint(3) if n == x else (K.cint(5) if n == y else n), e)
    assert out == K.cint(17)
    stmts = (K.If(K.lt(x, K.cint(10)), (K.Store("b", x, y),)),)
    out = K.map_stmts(lambda s: s, lambda n: K.cint(1) if n == x else n, stmts)
    assert out[0].cond == K.Const("bool", True)


def test_map_stmts_splices_tuples():
    stmts = (K.Comment("a"), K.Comment("b"))
    out = K.map_stmts(lambda s: (s, s) if s.text == "a" else s, lambda e: e, stmts)
    assert [s.text for s in out] == ["a", "a", "b"]


def test_scoped_walk_and_defined_names():
    body = (K.Let("t", K.add(K.Var("int", "i"), x)), K.Store("b", K.Var("int", "t"), x))
    stmts = (K.Let("u", x), K.For("i", K.cint(0), x, K.cint(1), body), K.Comment("after"))
    scopes = {type(s).__name__ + getattr(s, "var", ""): sc for s, sc in K.walk_scoped(stmts)}
    assert scopes["Fori"] == {"u"}
    assert scopes["Lett"] == {"u", "i"}
    assert scopes["Store"] == {"u", "i", "t"}
    assert scopes["Comment"] == {"u"}
    assert K.defined_in(stmts) == {"u", "i", "t"}


def program_with(body, buffers=(K.Buffer("b", "global", "int", K.cint(4), "test"),)):
    kernel = K.Kernel("k", tuple(body), (), ())
    return Plan("k", (), (K.Param("n", "int"),), tuple(buffers), (kernel,), (), 256, 32, 1024)


@pytest.mark.parametrize("body, message", [
    ([K.Store("b", K.cint(0), K.Var("int", "v"))], "`v` is read before it is defined"),
    ([K.Let("v", K.cint(1)), K.Let("v", K.cint(2))], "`v` is defined twice"),
    ([K.Store("c", K.cint(0), K.cint(1))], "unknown buffer `c`"),
    ([K.Store("b", K.cint(0), K.Const("float", 1.0))], "holds int, accessed as float"),
    ([K.Let("v", K.cint(1)), K.Assign("v", K.cint(2))], "not a int variable"),
    ([K.If(K.Var("int", "n"), ())], "a condition of type int"),
    ([K.ParFor("block", "i", K.Var("int", "n"), (K.Barrier(),))], "barrier in per-element code"),
])
def test_verifier_rejects(body, message):
    with pytest.raises(CompilerBug, match=message):
        verify_program(program_with(body), after="test")


def test_verifier_accepts_scoped_code():
    body = [K.DeclVar("acc", K.cint(0)),
            K.For("i", K.cint(0), K.Var("int", "n"), K.cint(1),
                  (K.Let("t", K.add(K.Var("int", "acc"), K.Var("int", "i"))), K.Assign("acc", K.Var("int", "t")))),
            K.Store("b", K.cint(0), K.Var("int", "acc"))]
    verify_program(program_with(body), after="test")


def test_verifier_rejects_unmapped_loops_after_mapping():
    body = [K.ParFor("grid", "i", K.Var("int", "n"), (K.Store("b", K.Var("int", "i"), K.cint(1)),))]
    verify_program(program_with(body))
    with pytest.raises(CompilerBug, match="left after hardware mapping"):
        verify_program(program_with(body), mapped=True)


# ---------------------------------------------------------------- pass manager

def test_pass_options_reject_unknown_and_required_passes():
    with pytest.raises(ArgumentError, match="unknown pass `nope`"):
        passes.PassOptions.make(no_pass=["nope"])
    with pytest.raises(ArgumentError, match="optimisation level 3"):
        passes.PassOptions.make(opt_level=3)
    required = [p.name for p in passes.PIPELINE if not p.optimising]
    for name in required:
        with pytest.raises(ArgumentError, match="required"):
            passes.PassOptions.make(no_pass=[name])


def test_every_pass_has_a_unique_name_and_a_description():
    names = [p.name for p in passes.PIPELINE]
    assert len(names) == len(set(names)) and passes.AFTER_LOWERING not in names
    assert all(p.description for p in passes.PIPELINE)


TRANSPOSE = REPO / "examples" / "transpose.fcl"


def test_no_pass_and_dump_after_in_the_api():
    prog = fcl.load_file(str(TRANSPOSE))
    on = prog.compile("transposeTiled", dump_after=["lower", "skew"])
    off = prog.compile("transposeTiled", no_pass=["skew"])
    o0 = prog.compile("transposeTiled", opt_level=0)
    assert "fcl_skew(i" in on.opencl_source.split("__kernel")[1]
    assert "fcl_skew(" not in off.opencl_source.split("__kernel")[1] + o0.opencl_source.split("__kernel")[1]
    assert "skew(" not in on.kir(after="lower") and "skew(" in on.kir(after="skew")
    with pytest.raises(ArgumentError):
        off.kir(after="skew")


def run_fclc(*argv):
    code = "import sys; from fcl.tools.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=120)


def test_fclc_lists_the_passes():
    p = run_fclc("compile", "--passes")
    assert p.returncode == 0, p.stderr
    assert [line.split()[0] for line in p.stdout.splitlines()] == [x.name for x in passes.PIPELINE]


def test_fclc_pass_switches():
    p = run_fclc("compile", str(TRANSPOSE), "-e", "transposeTiled", "--dump", "kir-after=lower")
    assert p.returncode == 0, p.stderr
    assert "kernel transposeTiled" in p.stdout and "skew(" not in p.stdout
    p = run_fclc("compile", str(TRANSPOSE), "-e", "transposeTiled", "--no-pass", "skew")
    assert p.returncode == 0 and "fcl_skew(" not in p.stdout.split("__kernel")[1]
    p = run_fclc("compile", str(TRANSPOSE), "-e", "transposeTiled", "-O0")
    assert p.returncode == 0 and "fcl_skew(" not in p.stdout.split("__kernel")[1]
    p = run_fclc("compile", str(TRANSPOSE), "-e", "transposeTiled", "--no-pass", "nope")
    assert p.returncode == 1 and "unknown pass `nope`" in p.stderr and "Traceback" not in p.stderr


def test_opencl_parenthesises_operands_that_compilers_warn_about():
    """`(a + b) >> 6`, `(a & b) | c`, `(p && q) || r`: right by precedence without the
    parentheses, but clang warns ("1 warning generated." on a run's stderr)."""
    from fcl.codegen.opencl import OpenCLRenderer
    r = OpenCLRenderer.__new__(OpenCLRenderer)
    a, b, c = (K.Var("int", n) for n in "abc")
    p, q = K.Var("bool", "p"), K.Var("bool", "q")
    six = K.Const("int", 6)
    assert r.expr(K.Bin("int", K.Op.SHR, K.Bin("int", K.Op.ADD_NW, a, b), six)) == "(a + b) >> 6"
    assert r.expr(K.Bin("int", K.Op.BOR, K.Bin("int", K.Op.BAND, a, b), c)) == "(a & b) | c"
    assert r.expr(K.Bin("bool", K.Op.OR, K.Bin("bool", K.Op.AND, p, q), p)) == "(p && q) || p"
    assert r.expr(K.Bin("int", K.Op.ADD_NW, K.Bin("int", K.Op.MUL_NW, a, b), c)) == "a * b + c"


def test_node_equality_and_kept_hash():
    """Nodes compare by value (identity, then the kept hash, then the fields): equal trees
    built apart are equal with equal hashes, as dict keys; a difference anywhere is seen."""
    def tree(leaf):
        return K.Bin("int", "add", K.Bin("int", "mul", x, K.cint(4)), K.Load("int", "buf", leaf))
    a, b, c = tree(y), tree(K.Var("int", "y")), tree(K.Var("int", "z"))
    assert a is not b and a == b and hash(a) == hash(b) and {a: 1}[b] == 1
    assert a != c and not (a == c)
    assert K.Const("int", 1) != K.Const("float", 1) and K.Var("int", "x") != K.Var("bool", "x")
    assert K.Var("int", "x") != K.Const("int", "x")          # another class is never equal
    assert len({a, b, c, tree(y)}) == 2
    assert K.rebuilt(a, {"b": K.cint(0)}) == K.Bin("int", "add", a.a, K.cint(0))


def test_host_sizes_are_computed_again_for_other_values():
    """eval_host compiles an expression once and remembers its values: the same expression
    object over other values of its variables gives their value (as the smart constructors
    fold it with those values as constants), a division by zero raises every time it is
    met, and an expression that reads memory reads it every time."""
    n, c = K.Var("int", "n"), K.Var("int", "c")
    size = K.Call("int", "max", (K.cint(1), K.Bin("int", "div", K.add(n, K.sub(c, K.cint(1))), c)))
    for nv, cv in [(100, 8), (7, 8), (100, 8), (-5, 3), (2 ** 31 - 1, 2)]:
        folded = K.Call("int", "max", (K.cint(1), K.binop("div", K.add(K.cint(nv), K.sub(K.cint(cv), K.cint(1))),
                                                           K.cint(cv))))
        assert K.eval_host(size, {"n": nv, "c": cv}) == K.eval_host(folded, {})
    for _ in range(2):
        with pytest.raises(ZeroDivisionError):
            K.eval_host(size, {"n": 5, "c": 0})
        assert K.eval_host(size, {"n": 5, "c": 0}, total=True) == 1
    reads = []
    word = K.Load("int", "buf", n)
    for v in (3, 3, 4):
        assert K.eval_host(word, {"n": v}, load=lambda b, ty, i: reads.append(i) or 10 * i) == 10 * v
    assert reads == [3, 3, 4]
    with pytest.raises(LookupError):
        K.eval_host(word, {"n": 3})
