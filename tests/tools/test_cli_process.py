"""How `fclc` ends as a process: Ctrl-C during run/bench/test (one line, exit
130, promptly, even while a kernel runs), a reader that stops reading
(`| head`: quiet, exit 141), and an output path that cannot be written (exit 1)."""
import os
import signal
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def start(repo_env, *args, **kw):
    env = dict(repo_env)
    env.pop("PYOPENCL_CTX", None)
    return subprocess.Popen([sys.executable, "-m", "fcl.tools.cli", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def interrupt_after(proc, seconds: float) -> tuple[float, str]:
    """Send SIGINT after `seconds`; (seconds until it ended, its stderr)."""
    time.sleep(seconds)
    assert proc.poll() is None, "the command ended before it could be interrupted"
    t = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return time.monotonic() - t, err


# A kernel that runs for minutes on a CPU device in a few KB of memory: the `run`
# case interrupts it, not a transfer of gigabytes whose memory the exit must free.
SPIN = "fun spin n arr = push <grid> (mapPull (fn x => foldl (fn a => fn i => a * 3 + i + x) 0 (iota n)) arr)\n"


@pytest.mark.parametrize("args", [
    ["bench", "examples/reverse.fcl", "-e", "revDistribute", "256", "iota:1000000", "--repeat", "1000000"],
    ["run", "SPIN", "-e", "spin", "200000000", "iota:1024"],
    ["test"] + sorted(os.path.join("examples", f) for f in os.listdir(os.path.join(REPO, "examples"))
                      if f.endswith(".fcl")) * 20,
], ids=["bench", "run", "test"])
def test_ctrl_c_stops_promptly_with_one_line(repo_env, tmp_path, args):
    if "SPIN" in args:
        (tmp_path / "spin.fcl").write_text(SPIN)
        args = [str(tmp_path / "spin.fcl") if a == "SPIN" else a for a in args]
    proc = start(repo_env, *args)
    waited, err = interrupt_after(proc, 6.0)     # well inside the command, past start-up
    assert proc.returncode == 130
    assert err == "fclc: interrupted\n"
    assert waited < 5


def test_eval_into_a_closed_pipe_ends_quietly(repo_env):
    env = dict(repo_env)
    proc = subprocess.run(f"{sys.executable} -m fcl.tools.cli eval examples/reverse.fcl -e revDistribute 4 --full "
                          f"iota:200000 | head -c 20; exit ${{PIPESTATUS[0]}}", shell=True,
                          executable="/bin/bash", cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.stdout == "[199999, 199998, 199"
    assert proc.stderr == ""
    assert proc.returncode == 141


@pytest.mark.parametrize("args", [
    ["run", "examples/reverse.fcl", "-e", "revDistribute", "4", "iota:16"],
    ["eval", "examples/reverse.fcl", "-e", "revDistribute", "4", "iota:16"],
    ["compile", "examples/reverse.fcl", "-e", "revDistribute"],
])
def test_unwritable_output_is_a_user_error(repo_env, tmp_path, args):
    target = str(tmp_path / "missing-folder" / "out.npy")
    proc = subprocess.run([sys.executable, "-m", "fcl.tools.cli", *args, "-o", target], cwd=REPO,
                          env=repo_env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (f"error: -o {target}: cannot write it: the folder "
                                   f"{tmp_path / 'missing-folder'} does not exist")
