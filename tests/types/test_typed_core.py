"""The typed core (fcl.types.node_types): the checker's types at the places the lowering reads
them, per instantiation; and what the lowering does with them (tests/programs/typed_core.fcl
runs the programs against the evaluator in test_codegen)."""
from pathlib import Path

import pytest

import fcl
from fcl.base.errors import CompilerBug
from fcl.codegen.lower.entry import lower_entry
from fcl.syntax import ast as A
from fcl.syntax import parse_program
from fcl.types import node_types as NT
from fcl.types.terms import (BLOCK, BOOL, DOUBLE, FLOAT, GRID, INT, TFunT, THREAD, TPullT, TPushT,
                             WARP)

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "typed_core.fcl"

SOURCE = """\
sig g : [double] -> [double]
fun g xs = force (concat 2 (generate 3 (fn p => push <warp> (take 2 xs))))

fun keep a = force (push <block> a)

sig both : [float] -> [bool] -> int
fun both xs bs = lengthPull (keep xs) + lengthPull (keep bs)

sig cats : [int] -> [int]<block>
fun cats xs =
  let cat = fn parts => concat 2 parts
  in splitUp 4 xs |> mapPull (fn b => splitUp 2 b |> mapPull (push <thread>) |> cat) |> cat
"""


def nodes(e, kind, name=None):
    """The nodes of type `kind` (named `name`) in an AST, in source order."""
    out = []

    def walk(x):
        if isinstance(x, kind) and (name is None or getattr(x, "name", None) == name):
            out.append(x)
        for f in getattr(x, "__dataclass_fields__", {}):
            v = getattr(x, f)
            if isinstance(v, A.Expr):
                walk(v)
    walk(e)
    return out


@pytest.fixture(scope="module")
def prog():
    return fcl.load(SOURCE, "core.fcl")


def decl(prog, name):
    return next(d for d in prog.ast.decls if isinstance(d, A.Val) and d.name == name)


def test_primitive_occurrences_carry_element_types_and_part_levels(prog):
    g = decl(prog, "g")
    [force] = nodes(g.value, A.Var, "force")
    [concat] = nodes(g.value, A.Var, "concat")
    core = prog.core
    assert core.var_type(force) == TFunT(TPushT(DOUBLE, BLOCK), TPullT(DOUBLE))
    assert core.var_type(concat) == TFunT(INT, TFunT(TPullT(TPushT(DOUBLE, WARP)), TPushT(DOUBLE, BLOCK)))


def test_a_polymorphic_declaration_is_typed_per_instance(prog):
    """`keep` is checked once, with a variable; each occurrence instantiates it."""
    core = prog.core
    keep, both = decl(prog, "keep"), decl(prog, "both")
    [force] = nodes(keep.value, A.Var, "force")
    assert isinstance(NT.result(core.var_type(force)).elem, NT.TVarT)
    inst, result = NT.entry_inst(core, both, [TPullT(FLOAT), TPullT(BOOL)])
    assert result == INT
    uses = nodes(both.value, A.Var, "keep")
    elems = [NT.scalar(NT.result(inst.for_decl(keep, inst.at(u)).at(force)).elem, "keep") for u in uses]
    assert elems == ["float", "bool"]


def test_a_polymorphic_let_is_typed_per_use(prog):
    """`cat` is generalised over the level of its parts: thread parts at one use, warp
    parts (of blocks) at the other."""
    core = prog.core
    cats = decl(prog, "cats")
    [let] = nodes(cats.value, A.Let)
    _, tq, lq = core.let_info(let)
    assert tq and lq
    [concat] = nodes(let.value, A.Var, "concat")
    inst, _ = NT.entry_inst(core, cats, [TPullT(INT)])
    levels = []
    for use in nodes(let.body, A.Var, "cat"):
        at = inst.for_let(let, inst.at(use))
        levels.append(NT.depth(NT.result(at.at(concat)).level, "cat"))
    assert sorted(levels) == [1, 2]


def test_level_lambdas_record_their_rigid_level():
    prog = fcl.load("fun up <l> a = force (push <l> a)\nsig f : [int] -> [int]\nfun f a = up <warp> a\n")
    up = decl(prog, "up")
    name = prog.core.rigid_level(up.value)
    [force] = nodes(up.value, A.Var, "force")
    assert prog.core.var_type(force).arg.level.name == name
    inst = NT.Inst(prog.core).with_level(name, 1)
    assert inst.at(force).arg.level == WARP


def test_open_variables_default_to_int_and_thread():
    """A type nothing decides (an empty literal's elements) is int, as numerals default."""
    prog = fcl.load("sig f : int -> int\nfun f n = lengthPull (force (push <grid> []))\n")
    f = decl(prog, "f")
    [force] = nodes(f.value, A.Var, "force")
    assert prog.core.var_type(force) == TFunT(TPushT(INT, GRID), TPullT(INT))
    assert THREAD == NT.level_of_depth(0)


def test_the_lowering_reads_every_type_from_the_core(prog):
    """Without the core's types the lowering stops with a CompilerBug: it guesses none."""
    with pytest.raises(CompilerBug, match="typed core"):
        lower_entry(list(prog.decls), "g", [TPullT(DOUBLE)], {"#BlockSize": 64, "#WarpSize": 32,
                                                                "#NumGroups": 4}, core=NT.TypedCore())


def test_without_a_core_the_lowering_checks_the_declarations(prog):
    hw = {"#BlockSize": 64, "#WarpSize": 32, "#NumGroups": 4}
    plan, _ = lower_entry(list(prog.decls), "g", [TPullT(DOUBLE)], hw)
    assert plan.body[-1].ty == "double"


@pytest.mark.parametrize("entry, ty", [("emptySeq", "double"), ("emptyBools", "bool"),
                                       ("emptyFloatParts", "float"), ("emptyLit", "float")])
def test_buffers_never_written_have_their_declared_type(entry, ty):
    """Their element type used to be guessed (int) when no store told it."""
    plan = fcl.load_file(str(PROGRAM)).compile(entry).plan
    assert plan.body[-1].ty == ty
    assert {b.ty for b in plan.buffers if b.role in ("force", "output")} == {ty}


def test_no_dry_run_finds_the_level_of_parts(monkeypatch):
    """The levels of concat's parts are read from the core; the only dry Builder left is
    `_host_final_length`'s (a while run over lengths on the host), which `hier` has none of."""
    from fcl.codegen.lower import builder
    monkeypatch.setenv("FCL_NO_CACHE", "1")         # the lowering runs, not the kernel cache
    made = []
    original = builder.Builder.__init__

    def counting(self, hw, dry=False, checks=True):
        made.append(dry)
        original(self, hw, dry, checks)
    monkeypatch.setattr(builder.Builder, "__init__", counting)
    prog = fcl.load_file(str(PROGRAM.with_name("concat_levels.fcl")))
    prog.compile("hier").plan
    prog.compile("warpsInBlock").plan
    assert made == [False, False]


def test_an_extended_program_keeps_a_flat_core(prog):
    """The REPL extends its program once per line: the chain of cores stays flat."""
    p = prog
    for k in range(5):
        p = p.extend(parse_program(f"fun h{k} x = x + {k}\n", "repl").decls)
    assert all(not part.parts for part in p.core.parts)
    assert len(p.core.parts) == 1 + 1 + 5      # the prelude's, the program's, five lines
    assert p.compile("g").plan.body[-1].ty == "double"
