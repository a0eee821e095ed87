"""Test blocks in .fcl comments."""
from pathlib import Path

import pytest

from fcl.base.errors import ParseError
from fcl.tools.testblocks import TestCase, parse_test_blocks, split_args

SHARED = Path(__file__).resolve().parents[3] / "shared" / "conformance"

INTERFACE_EXAMPLE = """\
fun f x = x
-- == entry: revDistribute
-- input { 4 [1, 2, 3, 4, 5, 6, 7, 8] }
-- output { [8, 7, 6, 5, 4, 3, 2, 1] }
-- input { 2 [1, 2] } output { [2, 1] }
-- input { 0 [] } error: division
"""


def test_interface_example():
    assert parse_test_blocks(INTERFACE_EXAMPLE, "t.fcl") == [
        TestCase("revDistribute", ("4", "[1, 2, 3, 4, 5, 6, 7, 8]"), "[8, 7, 6, 5, 4, 3, 2, 1]", None, 3),
        TestCase("revDistribute", ("2", "[1, 2]"), "[2, 1]", None, 5),
        TestCase("revDistribute", ("0", "[]"), None, "division", 6),
    ]


def test_multi_line_values_and_separate_entry_line():
    text = """\
-- ==
-- entry: sumPairs
-- input {
--   3
--   [(1, 2),
--    (3, 4)]
-- }
-- output {
--   [3,
--    7]
-- }
"""
    [case] = parse_test_blocks(text, "t.fcl")
    assert case == TestCase("sumPairs", ("3", "[(1, 2), (3, 4)]"), "[3, 7]", None, 3)


def test_entry_holds_until_next_block_and_code_between():
    text = """\
-- == entry: a
-- input { 1 } output { 2 }
fun a x = x + 1

-- A plain comment about input and output is skipped.
-- input { 5 }
-- output { 6 }
-- == entry: b
-- input { iota:1024 random:8:float @data/x.npy } output { (1, [2.5f, true]) }
"""
    cases = parse_test_blocks(text, "t.fcl")
    assert [(c.entry, c.args, c.expected, c.line) for c in cases] == [
        ("a", ("1",), "2", 2),
        ("a", ("5",), "6", 6),
        ("b", ("iota:1024", "random:8:float", "@data/x.npy"), "(1, [2.5f, true])", 9),
    ]


def test_error_expectations():
    text = "-- == entry: f\n-- input { 0 } error:   index out of range  \n-- input { 1 }\n-- error:\n"
    cases = parse_test_blocks(text, "t.fcl")
    assert [(c.args, c.expected, c.error) for c in cases] == [
        (("0",), None, "index out of range"), (("1",), None, "")]


def test_no_blocks_no_tests():
    assert parse_test_blocks("-- just a comment\nfun f x = x\n", "t.fcl") == []
    assert parse_test_blocks("", "t.fcl") == []


def test_conformance_paper_file():
    path = SHARED / "paper.fcl"
    if not path.exists():
        pytest.skip("../shared/conformance is not beside this checkout")
    cases = parse_test_blocks(path.read_text(), str(path))
    assert [c.entry for c in cases] == ["revDistribute"] * 3 + ["transposeTiled"] * 2 + ["sumGrid"] * 2
    assert cases[1].args == ("2", "[1.5, 2.5]") and cases[1].expected == "[2.5, 1.5]"
    assert cases[3].args == ("2", "4", "2", "[0, 1, 2, 3, 4, 5, 6, 7]")
    assert cases[5].args == ("iota:1024",) and cases[5].expected == "[130816, 392960]"
    assert all(c.error is None for c in cases)
    lines = path.read_text().splitlines()
    assert all("input" in lines[c.line - 1] for c in cases)


@pytest.mark.parametrize("text, message, line, col", [
    ("-- input { 1 } output { 2 }\n", "`input` outside a test block", 1, 4),
    ("-- ==\n-- input { 1 } output { 2 }\n", "has no entry", 2, 4),
    ("-- == entry: f\n-- input { 1 }\n", "no `output { ... }` or `error:`", 2, 4),
    ("-- == entry: f\n-- input { 1 }\n-- input { 2 } output { 3 }\n", "no `output", 2, 4),
    ("-- == entry: f\n-- input { 1 }\n-- == entry: g\n", "no `output", 2, 4),
    ("-- == entry: f\n-- output { 1 }\n", "`output` without an `input", 2, 4),
    ("-- == entry: f\n-- input { 1 } error: x\n-- error: y\n", "`error` without an `input", 3, 4),
    ("-- == entry: f\n-- input { [1, 2\n", "`input {` is not closed", 2, 4),
    ("-- == entry: f\n-- input { [1, 2\nfun f x = x\n-- }\n", "`input {` is not closed", 2, 4),
    ("-- == entry: f\n-- input { [1, 2 } output { 1 }\n", "unclosed `[`", 2, 4),
    ("-- == entry: f\n-- input { 1) } output { 1 }\n", "unmatched `)`", 2, 4),
    ("-- == entry: f\n-- input { 1 } output { 1 2 }\n", "must hold one value, found 2", 2, 16),
    ("-- == entry: f\n-- input { 1 } outptu { 1 }\n", "found `outptu`", 2, 16),
    ("-- == entry:\n", "expected a declaration name", 1, 13),
])
def test_malformed_blocks_are_located(text, message, line, col):
    with pytest.raises(ParseError) as info:
        parse_test_blocks(text, "bad.fcl")
    err = info.value
    assert message in err.message
    assert (err.span.line, err.span.col) == (line, col)
    assert err.render().startswith(f"bad.fcl:{line}:{col}: error: ")


@pytest.mark.parametrize("text, args", [
    ("4 [1, 2, 3]", ["4", "[1, 2, 3]"]),
    ("  iota:1024   -3 ", ["iota:1024", "-3"]),
    ("(1, [2, 3]) [[1, 2], [3]] 2.5f", ["(1, [2, 3])", "[[1, 2], [3]]", "2.5f"]),
    ("", []),
    ("[( 1 , 2 )]", ["[( 1 , 2 )]"]),
])
def test_split_args(text, args):
    assert split_args(text) == args


@pytest.mark.parametrize("text", ["[1, 2", "(1, 2]", "1]"])
def test_split_args_rejects_unbalanced(text):
    with pytest.raises(ValueError):
        split_args(text)
