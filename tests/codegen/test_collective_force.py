"""A block- or warp-level force inside per-element work: the block computes
the array together in rounds every work-item runs; what cannot be compiled is refused
with the construct, its place and what to write instead."""
from pathlib import Path

import pytest

import fcl
from fcl.codegen import kir as K

REPO = Path(__file__).resolve().parents[2]
PROGRAM = REPO / "tests" / "programs" / "force_in_elements.fcl"


def test_elements_run_in_uniform_rounds_with_barriers_around_the_force():
    plan = fcl.load_file(str(PROGRAM)).compile("tileColumns").plan
    (k,) = plan.launched()
    loops = [s for s in K.walk_stmts(k.body) if hasattr(s, "body") and hasattr(s, "var")]
    rounds = [s for s in loops if s.var.startswith("round")]
    assert rounds, "the element loop is a loop of rounds"
    assert all(not isinstance(getattr(s, "start", None), K.HwId) for s in rounds), \
        "every work-item starts at round 0"
    assert k.barriers >= 2


@pytest.mark.parametrize("body, words", [
    ("index (force (push <block> (generate 2 (fn x => x + e)))) 0", "depends on the element"),
    ("if e > 1 then index (force (push <block> (generate 2 (fn x => x)))) 0 else 0",
     "differs between the work-items"),
    ("foldl (fn acc => fn q => acc + index (force (push <block> (generate 2 (fn x => x)))) 0) 0 (iota e)",
     "differs between the work-items"),
])
def test_what_cannot_be_computed_together_is_a_located_error(body, words):
    src = f"fun bad arr = generate 1 (fn p => push <block> (generate 4 (fn e => {body}))) |> concat 4\n"
    prog = fcl.load(src, "bad.fcl")
    with pytest.raises(fcl.CompileError) as info:
        prog.compile("bad")([1, 2, 3])
    err = info.value
    assert words in err.message and "force" in err.message
    assert err.span is not None and err.span.line == 1
    assert err.notes, "the error says what to write instead"


def test_evaluator_runs_the_force_for_the_block():
    prog = fcl.load_file(str(PROGRAM))
    assert list(prog.evaluate("warpShared", 3, [5, 6, 7])) == [7, 7, 7]
