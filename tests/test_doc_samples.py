"""The command samples of README.md, docs/tutorial.md and docs/compiler.md print what the tools print.

A sample is a fenced block in which lines starting with `$ ` are shell
commands (run from the repository root with this checkout's `fclc`), each
followed by its expected output (stdout and stderr together); an expected
line ending in `...` stands for any line that starts with the text before
it (device names differ between machines).  Every
```fcl block of the tutorial must also appear verbatim in one of the
program files, so the code shown is the code run.
`pytest tests/test_doc_samples.py --update-golden` rewrites the expected
outputs in the documents after a deliberate change of output.
"""
from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "docs" / "tutorial.md", ROOT / "docs" / "compiler.md"]
FENCE = re.compile(r"^```[a-z]*\n(.*?)^```\n", re.M | re.S)


def samples(doc: Path) -> list[tuple[str, str]]:
    """(command, expected output) for every `$ ` line of every fenced block of `doc`."""
    found = []
    for block in FENCE.findall(doc.read_text()):
        command, lines = None, []
        for line in block.splitlines():
            if line.startswith("$ "):
                if command is not None:
                    found.append((command, "\n".join(lines)))
                command, lines = line[2:], []
            elif command is not None:
                lines.append(line)
        if command is not None:
            found.append((command, "\n".join(lines)))
    return found


@pytest.fixture(scope="module")
def fclc_path(tmp_path_factory, repo_env):
    """An environment whose PATH starts with an `fclc` that runs this checkout."""
    bin_dir = tmp_path_factory.mktemp("bin")
    script = bin_dir / "fclc"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} -m fcl.tools.cli \"$@\"\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    env = dict(repo_env)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env.pop("NO_COLOR", None)
    env["COLUMNS"] = "100"
    return env


@pytest.fixture(scope="module")
def repo_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def matches(expected: str, actual: str) -> bool:
    """Line by line; an expected line that ends in `...` matches any line with the text before."""
    exp, act = expected.split("\n"), actual.split("\n")
    return len(exp) == len(act) and all(
        a == e or (e.endswith("...") and a.startswith(e[:-3])) for e, a in zip(exp, act))


def kept_wildcards(expected: str, actual: str) -> str:
    """`actual` with each line that ends in `...` in `expected` (a device's name, its local
    memory) kept as the document has it wherever it still matches, so updates keep them."""
    exp, act = expected.split("\n"), actual.split("\n")
    marks = {e[:-3]: e for e in exp if e.endswith("...")}
    return "\n".join(next((e for p, e in marks.items() if a.startswith(p)), a) for a in act)


def run_sample(command: str, env: dict) -> str:
    done = subprocess.run(command, shell=True, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=120)
    return done.stdout.rstrip("\n")


CASES = [(doc, cmd, out) for doc in DOCS for cmd, out in samples(doc)]


def test_documents_have_samples():
    for doc in DOCS:
        assert samples(doc), f"{doc.name} has no `$ fclc` samples"
    assert len(samples(ROOT / "docs" / "tutorial.md")) >= 10


@pytest.mark.parametrize("doc, command, expected", CASES,
                         ids=[f"{d.name}:{c[:60]}" for d, c, _ in CASES])
def test_sample_output(doc, command, expected, fclc_path, update_golden):
    actual = run_sample(command, fclc_path)
    if update_golden and not matches(expected, actual):
        text = doc.read_text()
        old, new = f"$ {command}\n{expected}\n", f"$ {command}\n{kept_wildcards(expected, actual)}\n"
        assert text.count(old) == 1, f"cannot update the sample `{command}` in {doc.name}"
        doc.write_text(text.replace(old, new))
        return
    assert matches(expected, actual), (f"{doc.name}: `{command}` printed something else than the document "
                                f"shows; fix the tool or run pytest {__file__} --update-golden")


def tutorial_programs() -> str:
    files = list((ROOT / "docs" / "tutorial").glob("*.fcl")) + list((ROOT / "examples").glob("*.fcl"))
    return "\n".join(f.read_text() for f in files)


def test_tutorial_code_is_the_code_run():
    text = (ROOT / "docs" / "tutorial.md").read_text()
    programs = tutorial_programs()
    blocks = re.findall(r"^```fcl\n(.*?)^```\n", text, re.M | re.S)
    assert len(blocks) >= 4
    for block in blocks:
        assert block in programs, f"this tutorial code is in no program file:\n{block}"
