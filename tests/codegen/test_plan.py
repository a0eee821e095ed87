"""The host plan IR: structure, per-kernel uses, and its printers (--explain, --emit json, --emit py).

Device-free: lowering and printing only (the runs of plans are in test_codegen).
"""
import json
from pathlib import Path

import pytest

import fcl
from fcl.codegen import kir as K
from fcl.codegen import plan as P
from fcl.runtime.pymodule import emit_module

REPO = Path(__file__).resolve().parents[2]
HOST_WHILE = REPO / "tests/programs/grid_host_while.fcl"


def plan_of(path, entry, **kw):
    return fcl.load_file(str(path)).compile(entry, **kw).plan


def test_every_kernel_takes_only_what_its_body_uses():
    plan = plan_of(HOST_WHILE, "pairSums")
    for launch in plan.launches():
        k = plan.kernel(launch.kernel)
        used = K.buffers_used(k.body)
        names = K.names_read(k.body)
        assert set(launch.uses.buffers) == used & {b.name for b in plan.buffers}
        assert set(launch.uses.params) == names & {p.name for p in plan.params}
    first = plan.launches()[0]
    assert "flag" not in " ".join(first.uses.buffers) and not any(p.startswith("hlen") for p in first.uses.params)


def test_kernel_signatures_follow_uses():
    k = fcl.load_file(str(HOST_WHILE)).compile("pairSums")
    source = k.opencl_source
    for launch in k.plan.launches():
        head = source.split(f"void {launch.kernel}(")[1].split(")\n{")[0]
        params = [line.split("/*")[0].split()[-1] for line in head.split(",\n")]
        assert params == list(launch.uses.buffers + launch.uses.params)


def test_host_loop_shape_and_allocation_outside_the_loop():
    plan = plan_of(HOST_WHILE, "pairSums")
    top = [type(s).__name__ for s in plan.body]
    assert top[-1] == "Result" and "Loop" in top
    (loop,) = [s for s in plan.body if isinstance(s, P.Loop)]
    assert not any(isinstance(s, P.Alloc) for s in P.walk(loop.head + loop.body))
    swap = loop.body[-1]
    binds = {s.alias for s in plan.body if isinstance(s, P.Bind)}
    assert isinstance(swap, P.Swap) and {swap.a, swap.b} == binds
    allocated = {s.buffer for s in P.walk(plan.body) if isinstance(s, P.Alloc)}
    assert allocated == {b.name for b in plan.buffers if b.role not in ("input", "alias")}


def test_explain_shows_arguments_kernels_and_host_program():
    text = fcl.load_file(str(HOST_WHILE)).compile("pairSums").explain()
    lines = text.splitlines()
    assert lines[0].startswith("entry pairSums: 4 kernels, #BlockSize 256")
    assert lines[1] == "arguments: bound int -> arg0, arr int[n1] -> in1_1"
    assert "host program:" in lines
    body = lines[lines.index("host program:") + 1:]
    assert body[-1].startswith("  result: array in out")
    loop = next(i for i, line in enumerate(body) if line.startswith("  loop (grid-level while on the host):"))
    assert body[loop + 1].startswith("    launch pairSums_k1 on 1 work-group x 256 work-items (")
    assert body[loop + 2].startswith("    go") and "read flag" in body[loop + 2]
    assert body[loop + 3].startswith("    stop unless")
    assert body[loop + 6].startswith("    swap cur")


def test_json_is_the_plan():
    plan = plan_of(HOST_WHILE, "pairSums")
    doc = json.loads(P.json_text([plan]))
    assert doc["entry"] == "pairSums"
    assert [a["kind"] for a in doc["arguments"]] == ["scalar", "array"]
    assert [k["name"] for k in doc["kernels"]] == [k.name for k in plan.kernels]
    ops = [s["op"] for s in doc["host"]]
    assert ops[-1] == "result" and "loop" in ops and ops.count("launch") == 2
    loop = next(s for s in doc["host"] if s["op"] == "loop")
    assert [s["op"] for s in loop["head"]] == ["launch", "read"]
    assert [s["op"] for s in loop["body"]] == ["launch", "set", "swap"]
    for k in doc["kernels"]:
        launch = next(s for s in P.walk(plan.body) if isinstance(s, P.Launch) and s.kernel == k["name"])
        assert k["takes"] == list(launch.uses.buffers + launch.uses.params)
    two = json.loads(P.json_text([plan, plan]))
    assert isinstance(two, list) and len(two) == 2


@pytest.mark.parametrize("file, entry", [("tests/programs/grid_host_while.fcl", "pairSums"),
                                         ("examples/transpose.fcl", "transposeTiled"),
                                         ("examples/reduce.fcl", "sumGrid")])
def test_emit_py_prints_the_plan_as_straight_line_code(file, entry):
    k = fcl.load_file(str(REPO / file)).compile(entry)
    text = emit_module([k.plan], [k.opencl_source], file)
    compile(text, "kernels_mod.py", "exec")
    method = text.split(f"    def _{entry}(self")[1].split("\n\n")[0]
    launches = k.plan.launches()
    assert method.count("self._launch(") == len(launches)
    for launch in launches:
        assert f"{launch.kernel!r}" in method
    loops = sum(isinstance(s, P.Loop) for s in P.walk(k.plan.body))
    assert method.count("for _step in range(") == loops
    assert "PLANS" not in text and "def _run" not in text


def test_grid_force_plan_launches_in_order():
    plan = plan_of(REPO / "tests/programs/force_levels.fcl", "forceGrid")
    names = [s.kernel for s in plan.body if isinstance(s, P.Launch)]
    assert names == [k.name for k in plan.launched()]
    forced = next(b for b in plan.buffers if b.role == "force")
    first, second = plan.launches()
    assert forced.name in first.uses.buffers and forced.name in second.uses.buffers


def test_nested_host_loops_allocate_where_sizes_change():
    plan = plan_of(REPO / "tests/programs/host_loops.fcl", "nested")
    (outer,) = [s for s in plan.body if isinstance(s, P.Loop)]
    (inner,) = [s for s in outer.body if isinstance(s, P.Loop)]
    inner_len = next(s.var for s in outer.body if isinstance(s, P.SetVar))
    outer_len = next(s.var for s in plan.body if isinstance(s, P.SetVar))
    # the inner loop's buffers follow the outer loop's length: allocated in its body;
    # the one-element flags are allocated once, before both loops
    in_body = [plan.buffer(s.buffer) for s in outer.body if isinstance(s, P.Alloc)]
    assert in_body and all(outer_len in b.size.names for b in in_body)
    flags = {b.name for b in plan.buffers if b.role == "flag"}
    assert flags == {s.buffer for s in plan.body if isinstance(s, P.Alloc)} & flags and len(flags) == 2
    assert not any(isinstance(s, P.Alloc) for s in P.walk(inner.head + inner.body))
    assert isinstance(inner.body[-1], P.Swap) and isinstance(outer.body[-1], P.Swap)
    assert any(isinstance(s, P.SetVar) and s.var == inner_len for s in inner.body)


def test_a_step_of_several_kernels_launches_them_all_in_the_loop():
    plan = plan_of(REPO / "tests/programs/host_loops.fcl", "twoStep")
    (loop,) = [s for s in plan.body if isinstance(s, P.Loop)]
    assert sum(isinstance(s, P.Launch) for s in loop.body) == 2
