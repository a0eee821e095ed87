"""Declarations that take a level, applied to levels (tests/programs/level_params.fcl runs
them against the evaluator on the device in test_codegen): the checker keeps a part level
that only a signature's `<lvl>` decides bound by the definition's own level abstraction,
the typed core instantiates it per use, and an entry point that still takes a level is a
located error that says how to apply it."""
from pathlib import Path

import pytest

import fcl
from fcl.syntax import ast as A
from fcl.tools.cli import main
from fcl.types import node_types as NT
from fcl.types.terms import INT, LVarT, TFunT, TLevelFunT, TPullT, TPushT, TVarT
from fcl.types.unify import Subst, level_vars

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "level_params.fcl"

PLACE = """\
sig place : forall 'a. <lvl> -> int -> [['a]<lvl>] -> ['a]<1+lvl>
fun place <lvl> n arr = concat n arr
fun lvlConcat n xs = splitUp n xs |> mapPull (push <block>) |> place <block> n
"""


def decl(prog, name):
    return next(d for d in prog.ast.decls if isinstance(d, A.Val) and d.name == name)


def concat_of(prog, name):
    [var] = [v for v in A.free_uses(decl(prog, name).value) if v.name == "concat"]
    return var


def test_a_part_level_only_the_signature_decides_is_the_abstractions_own():
    """`concat`'s part level in `place` is the level variable of `fun place <lvl>`, which the
    lowering binds when it applies `place` to a level (it used to be a name of the
    signature check's own, which nothing binds)."""
    prog = fcl.load(PLACE, "place.fcl")
    place = decl(prog, "place")
    rigid = prog.core.rigid_level(place.value)
    t = prog.core.decl_type(place)
    assert isinstance(t, TLevelFunT) and t.lvar == rigid and level_vars(t) == []
    concat = prog.core.var_type(concat_of(prog, "place"))
    assert concat.res.arg.elem.level == LVarT(rigid)
    for depth in (0, 1, 2):
        at = NT.Inst(prog.core).with_level(rigid, depth).at(concat_of(prog, "place"))
        assert NT.depth(NT.result(at).level, "concat") == depth + 1


def test_level_abstractions_unify_under_the_binder_of_the_side_with_open_levels():
    sub = Subst()
    open_level = sub.fresh_level(1)
    rigid = TLevelFunT("a#1", TFunT(INT, TPushT(INT, LVarT("a#1"))))
    loose = TLevelFunT("b#2", TFunT(INT, TPushT(INT, open_level)))
    sub.unify(rigid, loose)           # the found side has the open level: its binder
    assert sub.zonk(loose) == TLevelFunT("b#2", TFunT(INT, TPushT(INT, LVarT("b#2"))))
    sub = Subst()
    open_level = sub.fresh_level(1)
    loose = TLevelFunT("b#2", TFunT(INT, TPushT(INT, open_level)))
    sub.unify(loose, rigid)           # the expected side has it
    assert sub.zonk(loose) == TLevelFunT("b#2", TFunT(INT, TPushT(INT, LVarT("b#2"))))


def test_binding_a_level_also_resolves_bindings_that_name_it():
    """`match` binds a declaration's level variable to the name of the level abstraction
    whose body decides it; applying the abstraction resolves that binding too."""
    inst = NT.Inst(NT.TypedCore(), {"t": TPullT(TPushT(INT, LVarT("l#3")))}, {"m": LVarT("l#3")})
    inst = inst.with_level("l#3", 2)
    assert inst.resolve(TPushT(INT, LVarT("m"))) == TPushT(INT, NT.level_of_depth(2))
    assert inst.resolve(TVarT("t")) == TPullT(TPushT(INT, NT.level_of_depth(2)))


@pytest.mark.parametrize("entry", ["threeLevels", "weaveWarps", "nested", "twiceGrid", "partialMap",
                                   "localUp", "pick", "bothGrid", "matmulThreads", "sumGrid", "seqThreads"])
def test_every_entry_lowers(entry):
    """Without a device: the lowering finds every level (a CompilerBug before)."""
    prog = fcl.load_file(str(PROGRAM))
    assert prog.compile(entry, block_size=64).plan is not None
    assert prog.compile(entry, block_size=64, opt_level=0).plan is not None


WRAPPER = "apply it to a level in a wrapper and run that, e.g. `fun placeBlock n arr = place <block> n arr`"


def test_an_entry_that_takes_a_level_is_a_located_error_from_python():
    prog = fcl.load(PLACE, "place.fcl")
    for call in (lambda: prog.compile("place"), lambda: prog.evaluate("place", 2, [])):
        with pytest.raises(fcl.ArgumentError) as info:
            call()
        assert WRAPPER in info.value.message
        assert "takes a level (its type is forall 'a. <lvl> -> int" in info.value.message
        assert info.value.span.location() == "place.fcl:2:5"


@pytest.mark.parametrize("command", ["eval", "run", "bench", "compile"])
def test_an_entry_that_takes_a_level_is_a_located_error_from_fclc(capsys, tmp_path, command):
    """Before any device is chosen: `run` and `bench` said `place` takes 0 arguments,
    `compile` that a kernel cannot return a level function."""
    path = tmp_path / "place.fcl"
    path.write_text(PLACE)
    args = [] if command == "compile" else ["2", "[]"]
    code = main([command, str(path), "-e", "place", *args])
    err = capsys.readouterr().err
    assert code == 1
    assert f"{path}:2:5: error: `place` takes a level" in err and WRAPPER in err


def test_fclc_test_reports_the_entry_that_takes_a_level(capsys, tmp_path):
    path = tmp_path / "place.fcl"
    path.write_text(PLACE + "-- == entry: place\n-- input { 2 [] } output { [] }\n")
    code = main(["test", "--evaluator-only", str(path)])
    out = capsys.readouterr().out
    assert code == 1 and f"{path}:2:5: error: `place` takes a level" in out and WRAPPER in out


@pytest.mark.parametrize("name, wrapper", [
    ("roundTrip", "fun roundTripGrid xs = roundTrip <grid> xs"),
    ("placeTwice", "fun placeTwiceWarp n m arr = placeTwice <warp> n m arr"),
    ("both", "fun bothBlock n arr = let f1 = both <block> n in f1 <block> arr"),
])
def test_the_wrapper_suggested_makes_a_grid_result_and_parses(name, wrapper):
    prog = fcl.load_file(str(PROGRAM))
    with pytest.raises(fcl.ArgumentError) as info:
        prog.compile(name)
    assert f"e.g. `{wrapper}`" in info.value.message
    fcl.load(PROGRAM.read_text() + wrapper + "\n", "wrapped.fcl")      # checks
