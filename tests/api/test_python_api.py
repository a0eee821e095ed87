"""Entry points from Python: the program's parameter names (keyword arguments, a
signature and a docstring with the FCL type), ArgumentErrors naming the parameters, device
choice, pyopencl arrays in and out without host copies, and per-call kernel profiles; both
for `Program.compile(...)` kernels and for the module `fclc compile --emit py` writes (run
in-process here; tests/codegen/test_codegen.py runs such modules with pyopencl alone)."""
import importlib.util
import inspect
import sys
from pathlib import Path

import numpy as np
import pytest

import fcl
from fcl.runtime.calling import bind_arguments, python_names
from fcl.tools.cli import main

REPO = Path(__file__).resolve().parents[2]
REVERSE = str(REPO / "examples" / "reverse.fcl")


def device_or_skip():
    from fcl.runtime.device import choose_device
    try:
        return choose_device(None, notes=False)
    except Exception as e:      # no usable OpenCL device: the device tests skip
        pytest.skip(f"no OpenCL device: {e}")


def test_binding_by_position_and_name_and_its_errors():
    names = ["chunkSize", "arr"]
    assert bind_arguments("f", names, (4,), {"arr": [1]}) == [4, [1]]
    assert bind_arguments("f", names, (), {"arr": [1], "chunkSize": 2}) == [2, [1]]
    assert bind_arguments("f", names, ([1],), {}, {0: 8}) == [8, [1]]       # a static one left out
    for args, kwargs, text in (((4,), {}, "takes 2 arguments but 1 was given (its parameters: `chunkSize`, `arr`)"),
                               ((4, [1], 2), {}, "takes 2 arguments but 3 were given"),
                               ((4,), {"ar": [1]}, "has no parameter named `ar` (its parameters: `chunkSize`, `arr`)"),
                               ((4,), {"chunkSize": 2}, "argument 1 (`chunkSize`) of `f` is given twice"),
                               ((), {"chunkSize": 2}, "`arr` is missing")):
        with pytest.raises(fcl.ArgumentError) as info:
            bind_arguments("f", names, args, kwargs)
        assert text in info.value.message
    assert python_names(["x'", "lambda", "self", "x_"], 5) == ["x_", "lambda_", "self_", "x__", "arg5"]


def test_kernel_signature_and_docstring_carry_the_fcl_type():
    k = fcl.load_file(REVERSE).compile("revDistribute")
    assert str(inspect.signature(k)) == "(chunkSize, arr)"
    doc = inspect.getdoc(k)
    assert "revDistribute : int -> ['a] -> ['a]<grid>" in doc
    assert "chunkSize : int -- a Python int (32-bit)" in doc and "arr : ['a] -- a 1-D array" in doc
    tiled = fcl.load_file(str(REPO / "examples" / "transpose.fcl")).compile("transposeTiled", static={"tileDim": 4})
    assert "Static (compiled in; may be left out): tileDim = 4." in tiled.__doc__
    with pytest.raises(fcl.ArgumentError, match='result must be "host" or "device"'):
        fcl.load_file(REVERSE).compile("revGrid", result="gpu")


def test_keyword_arguments_device_arrays_and_profiles():
    import pyopencl as cl
    import pyopencl.array as cla
    device_or_skip()
    prog = fcl.load_file(REVERSE)
    k = prog.compile("revDistribute")
    assert list(k(arr=np.arange(8, dtype=np.int32), chunkSize=4)) == [7, 6, 5, 4, 3, 2, 1, 0]
    assert [name for name, _ in k.last_profile.kernels] == ["revDistribute"]
    assert k.last_profile.total > 0 and "total" in str(k.last_profile)
    with pytest.raises(fcl.ArgumentError, match=r"takes 2 arguments but 1 was given \(its parameters"):
        k(4)
    on_device = prog.compile("revGrid", result="device")
    x = cla.to_device(on_device.queue, np.arange(10, dtype=np.int32))
    y = on_device(x)                        # stays on the device, and is the next call's input
    z = on_device(arr=y)
    on_device(cla.to_device(on_device.queue, np.arange(1 << 22, dtype=np.int32)))
    assert on_device.last_profile.total > 0          # asking for the times waits for the kernels
    first = on_device(x)
    memory = first.data.int_ptr
    del first                                       # its buffer goes back to the queue's pool ...
    assert on_device(x).data.int_ptr == memory      # ... and the next result is written there
    assert isinstance(y, cla.Array) and isinstance(z, cla.Array)
    assert list(z.get()) == list(range(10)) and list(x.get()) == list(range(10))
    # arrays of another context run there; a dtype the parameter takes is converted on the device
    # (the context kept in a variable: Intel's CPU runtime frees one its queue still uses)
    context = cl.Context([x.queue.device])
    queue = cl.CommandQueue(context)
    assert list(k(2, cla.to_device(queue, np.arange(5, dtype=np.int16)))) == [3, 2, 1, 0]
    assert list(k(2, cla.to_device(queue, np.arange(6, dtype=np.float64))[1:])) == [4.0, 3.0, 2.0, 1.0]
    with pytest.raises(fcl.ArgumentError, match=r"argument 2 \(`arr`\): expected \[int\], found a pyopencl array of int64"):
        k(2, cla.to_device(queue, np.arange(6, dtype=np.int64)))
    with pytest.raises(fcl.ArgumentError, match="different OpenCL contexts"):
        fcl.load("sig f : [int] -> [int] -> [int]<grid>\nfun f a b = push <grid> (zipWith (fn x => fn y => x + y) a b)").compile("f")(
            x, cla.to_device(queue, np.arange(10, dtype=np.int32)))


def emitted_module(tmp_path, *argv):
    out = tmp_path / "kmod.py"
    assert main(["compile", *argv, "--emit", "py", "-o", str(out)]) == 0
    spec = importlib.util.spec_from_file_location("kmod", out)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_emitted_module_names_profiles_and_device_arrays(tmp_path):
    import pyopencl.array as cla
    device_or_skip()
    mod = emitted_module(tmp_path, REVERSE, "-e", "revDistribute", "-e", "revGrid")
    assert str(inspect.signature(mod.Kernels.revDistribute)) == "(self, chunkSize, arr)"
    assert "revDistribute : int -> ['a] -> ['a]<grid>" in mod.Kernels.revDistribute.__doc__
    assert "arr : [int] -- a 1-D array of int32" in mod.Kernels.revDistribute.__doc__
    k = mod.Kernels()
    assert list(k.revDistribute(arr=np.arange(5), chunkSize=2)) == [3, 2, 1, 0]
    assert [name for name, _ in k.last_profile.kernels] == ["revDistribute"] and len(k.last_times) == 1
    with pytest.raises(mod.ArgumentError, match=r"takes 2 arguments but 1 was given \(its parameters: "
                                                r"`chunkSize`, `arr`\)"):
        k.revDistribute(2)
    dev = mod.Kernels(device=k.queue.device.name.strip()[:6], result="device")
    x = cla.to_device(dev.queue, np.arange(6, dtype=np.int32))
    y = dev.revGrid(dev.revGrid(x))
    assert isinstance(y, cla.Array) and list(y.get()) == list(range(6))
    with pytest.raises(RuntimeError, match="no OpenCL device matching 'no-such-device'"):
        mod.Kernels(device="no-such-device")
    sys.modules.pop("kmod", None)


def test_emitted_module_runs_a_filter_whose_length_the_device_computes(tmp_path):
    """filter is a packConcat: 64-bit status words, a length read back after its kernel."""
    device_or_skip()
    mod = emitted_module(tmp_path, str(REPO / "tests" / "programs" / "irregular.fcl"), "-e", "evens")
    xs = np.arange(-9000, 11000, 3, dtype=np.int32)
    assert list(mod.Kernels().evens(xs)) == [x for x in xs if x % 2 == 0]
    sys.modules.pop("kmod", None)


@pytest.mark.parametrize("source, what", [
    # the length of a block's array comes from the contents of its own part
    ("fun kernel arr = splitUp 8 arr |> mapPull (fn c => push <block> (force (push <block> "
     "(take (index c 0) c)))) |> concat 8\n", "device-length"),
    # a grid-level force inside the per-element work of a grid-level push
    ("fun kernel arr = push <grid> (generate 4 (fn i => index (force (push <grid> arr)) i))\n",
     "grid-nesting"),
])
def test_what_the_compiler_cannot_do_yet_is_a_located_limitation(source, what):
    prog = fcl.load(source)
    with pytest.raises(fcl.CompilerLimitation) as err:
        prog.compile("kernel").opencl_source
    assert err.value.what == what and err.value.span is not None
    assert isinstance(err.value, fcl.CompileError)


def test_local_memory_is_the_devices_and_sizes_the_scans_chunks():
    """#LocalMemory: the evaluator's 49152 unless told; a kernel's the device's, at most 49152;
    `scan` takes chunks of 8192 ints with 48 KB and 4096 with 32 KB, the same sums either way."""
    device = device_or_skip()
    prog = fcl.load_file(str(REPO / "examples" / "scan.fcl"))
    prog_hw = fcl.load("sig lm : int -> int\nfun lm x = #LocalMemory + x")
    assert prog_hw.evaluate("lm", 0) == 49152 and prog_hw.evaluate("lm", 0, local_memory=32768) == 32768
    assert prog_hw.compile("lm")(0) == min(49152, device.local_mem_size)
    assert prog_hw.compile("lm", local_memory=20000)(1) == 20001
    with pytest.raises(fcl.ArgumentError, match="#LocalMemory must be positive"):
        prog_hw.evaluate("lm", 0, local_memory=0)
    a = np.arange(-10000, 10003, dtype=np.int32) * 7
    for local, words in ((49152, 8449), (32768, 4225)):     # 8192 / 4096 ints, skewed
        kernel = prog.compile("scanAll", local_memory=local)
        assert f"[{words}];  /* force at" in kernel.opencl_source
        assert np.array_equal(kernel(a), np.cumsum(a, dtype=np.int32))
        assert np.array_equal(prog.evaluate("scanAll", a, local_memory=local), np.cumsum(a, dtype=np.int32))
