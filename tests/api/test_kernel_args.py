"""Kernel arguments that are pairs, arrays of pairs and regular arrays of arrays:
how the plan passes them, the Python API, `--emit py`, and the errors."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fcl
from fcl.codegen import plan as P

from conftest import default_device_env

REPO = Path(__file__).resolve().parents[2]
ARGS = REPO / "tests" / "programs" / "kernel_args.fcl"


def test_plan_passes_components_and_shapes():
    prog = fcl.load_file(str(ARGS))
    plan = prog.compile("mixed").specialise(
        (fcl.api.kernel.value_type([(np.arange(2, dtype=np.int32), 0.5)]),)).plan
    (arg,) = plan.args
    assert isinstance(arg, P.ZipArg) and isinstance(arg.fst, P.NestedArg) and isinstance(arg.snd, P.ArrayArg)
    assert "(flat, row-major)" in P.explain(plan)


def test_python_api_takes_tuples_lists_and_2d_arrays():
    prog = fcl.load_file(str(ARGS))
    m = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert np.array_equal(prog.compile("transposed")(m), m.T.ravel())
    assert np.array_equal(prog.compile("transposed")([[1, 2], [3, 4]]), [1, 3, 2, 4])
    assert np.array_equal(prog.compile("sumPairs")([(1, 2), (3, 4)]), [12, 34])
    got = prog.compile("addPair")((3, np.float32(1.0)), np.array([1, 2], dtype=np.float32))
    assert np.array_equal(got, np.array([4, 7], dtype=np.float32))


def test_irregular_nested_array_is_an_argument_error():
    prog = fcl.load_file(str(ARGS))
    with pytest.raises(fcl.ArgumentError, match="must be regular"):
        prog.compile("transposed")([[1, 2], [3]])


def test_deeper_structures_are_a_located_compile_error():
    prog = fcl.load("sig f : [[[int]]] -> [int]<grid>\nfun f a = push <grid> (generate 1 (fn i => 0))")
    with pytest.raises(fcl.CompileError) as info:
        prog.compile("f")([[[1]]])
    assert "regular arrays of arrays of scalars" in info.value.message


def test_emit_py_unpacks_structured_arguments(tmp_path):
    out = tmp_path / "args_mod.py"
    p = subprocess.run([sys.executable, "-m", "fcl.tools.cli", "compile", str(ARGS), "-e", "sumPairs", "-e", "rowMax",
                        "-e", "pairOfArrays", "--emit", "py", "-o", str(out)],
                       capture_output=True, text=True, cwd=str(REPO), timeout=300)
    assert p.returncode == 0, p.stderr
    runner = (f"import sys, json, numpy as np; sys.path.insert(0, {str(tmp_path)!r}); import args_mod; "
              "k = args_mod.Kernels(); "
              "print(json.dumps([np.asarray(k.sumPairs([(1, 2), (3, 4)])).tolist(), "
              "np.asarray(k.rowMax([[1.0, 2.5], [4.0, -1.0]])).tolist(), "
              "np.asarray(k.pairOfArrays(([5, 6], [1, 2]))).tolist()]))")
    r = subprocess.run([sys.executable, "-c", runner], capture_output=True, text=True, timeout=300,
                       env=default_device_env())
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [[12, 34], [2.5, 4.0], [4, 4]]
