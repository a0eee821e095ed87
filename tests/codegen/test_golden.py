"""Golden files: the OpenCL C and the launch plan generated for the paper's programs.

A change in code generation shows up as a diff here; after checking it,
`pytest tests/codegen/test_golden.py --update-golden` rewrites the files.
"""
from pathlib import Path

import pytest

import fcl

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).with_name("golden")
CASES = [("reverse.fcl", "revDistribute"), ("transpose.fcl", "transposeTiled"), ("reduce.fcl", "sumGrid")]


def generated(file: str, entry: str) -> str:
    """OpenCL source and explained plan, with the checkout path taken out."""
    kernel = fcl.load_file(str(ROOT / "examples" / file)).compile(entry, block_size=256)
    text = kernel.explain() + "\n\n" + kernel.opencl_source
    return text.replace(str(ROOT) + "/", "")


@pytest.mark.parametrize("file, entry", CASES)
def test_generated_code_matches_golden(file, entry, update_golden):
    path = GOLDEN / f"{entry}.cl"
    text = generated(file, entry)
    if update_golden:
        path.write_text(text)
    assert path.exists(), f"no golden file {path}; run with --update-golden"
    assert text == path.read_text(), f"generated code for {entry} changed; see {path}"
