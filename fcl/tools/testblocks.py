"""Test blocks written in a .fcl file's `--` comments -> a list of TestCase.

A block starts at a comment line `-- ==`; `entry: NAME` (on that line or a
later comment line) names the declaration under test, and holds until the
next `-- ==`.  After it, comment lines hold tests:

    -- input { 4 [1, 2, 3, 4] }
    -- output { [4, 3, 2, 1] }
    -- input { 2 [1, 2] } output { [2, 1] }
    -- input { 0 [] } error: division

`{ ... }` may run over several comment lines.  A comment line that does not
start with `==`, `entry:`, `input {`, `output {` or `error:` is ordinary
text and is skipped.  Argument texts are split at top level (outside `[]`
and `()`) on white space; reading them as values is `fcl.api.literals`' job.
Block comments `(* *)` are not searched, and neither are comments that
follow code on a line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from fcl.base.errors import ParseError, Source, Span


@dataclass(frozen=True)
class TestCase:
    """One `input` with its expected `output` text or expected `error` text."""

    __test__ = False          # not a pytest class

    entry: str
    args: tuple[str, ...]
    expected: str | None
    error: str | None
    line: int


_KEYWORD = re.compile(r"(?P<kw>input|output)\s*\{|(?P<colon>entry|error)\s*:")
_ENTRY_NAME = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_']*)")


def split_args(text: str) -> list[str]:
    """`4 [1, 2] (1, 2)` -> ["4", "[1, 2]", "(1, 2)"]; ValueError on unbalanced brackets."""
    args: list[str] = []
    start: int | None = None
    closing = {"]": "[", ")": "("}
    stack: list[str] = []
    for i, ch in enumerate(text):
        if ch.isspace() and not stack:
            if start is not None:
                args.append(text[start:i])
                start = None
            continue
        if start is None:
            start = i
        if ch in "[(":
            stack.append(ch)
        elif ch in closing:
            if not stack or stack.pop() != closing[ch]:
                raise ValueError(f"unmatched `{ch}`")
    if stack:
        raise ValueError(f"unclosed `{stack[-1]}`")
    if start is not None:
        args.append(text[start:])
    return args


class _Scanner:
    """Walks the comment lines of one file, building TestCases."""

    def __init__(self, text: str, name: str):
        self.source = Source(name, text)
        self.cases: list[TestCase] = []
        self.in_block = False
        self.entry: str | None = None
        self.pending: tuple[tuple[str, ...], int, int] | None = None   # args, line, offset
        self.brace: dict | None = None     # an open `{` still to be closed

    def error(self, message: str, start: int, end: int | None = None) -> ParseError:
        return ParseError(message, Span(self.source, start, end if end is not None else start + 1))

    def run(self) -> list[TestCase]:
        offset = 0
        for number, line in enumerate(self.source.text.split("\n"), start=1):
            stripped = line.lstrip()
            if stripped.startswith("--"):
                start = offset + len(line) - len(stripped) + 2
                self.comment_line(stripped[2:], start, number)
            elif self.brace is not None:
                raise self.unclosed()
            offset += len(line) + 1
        if self.brace is not None:
            raise self.unclosed()
        self.finish_block()
        return self.cases

    def unclosed(self) -> ParseError:
        b = self.brace
        return self.error(f"`{b['kw']} {{` is not closed by `}}` within the comment", b["offset"],
                          b["offset"] + len(b["kw"]))

    def comment_line(self, body: str, base: int, number: int) -> None:
        """One comment line's text after `--`; `base` is its offset in the file."""
        pos = 0
        if self.brace is not None:
            pos = self.continue_brace(body, 0)
            if pos is None:
                return
        else:
            head = body.lstrip()
            if head.startswith("=="):
                self.finish_block()
                self.in_block, self.entry = True, None
                pos = body.index("==") + 2
            elif not _KEYWORD.match(head):
                return                                     # an ordinary comment
        self.keywords(body, pos, base, number)

    def keywords(self, body: str, pos: int, base: int, number: int) -> None:
        """Read `entry:`/`input {`/`output {`/`error:` items from body[pos:]."""
        while True:
            while pos < len(body) and body[pos].isspace():
                pos += 1
            if pos >= len(body):
                return
            m = _KEYWORD.match(body, pos)
            if m is None:
                word = body[pos:].split()[0]
                raise self.error(f"expected `input {{`, `output {{`, `error:` or `entry:` in the "
                                 f"test block, found `{word}`", base + pos, base + pos + len(word))
            kw = m.group("kw") or m.group("colon")
            at = base + pos
            if not self.in_block:
                raise self.error(f"`{kw}` outside a test block: start the block with "
                                 "`-- == entry: NAME`", at, at + len(kw))
            if kw == "entry":
                pos = self.read_entry(body, m.end(), base)
            elif kw == "error":
                self.expect_pending(kw, at)
                self.add_case(None, body[m.end():].strip())
                return
            else:
                if kw == "input":
                    self.check_entry(at)
                else:
                    self.expect_pending(kw, at)
                self.brace = {"kw": kw, "offset": at, "line": number, "parts": []}
                pos = self.continue_brace(body, m.end())
                if pos is None:
                    return

    def read_entry(self, body: str, pos: int, base: int) -> int:
        m = _ENTRY_NAME.match(body, pos)
        if m is None:
            raise self.error("expected a declaration name after `entry:`", base + pos)
        if self.pending is not None:
            raise self.missing_result()
        self.entry = m.group(1)
        return m.end()

    def check_entry(self, at: int) -> None:
        if self.pending is not None:
            raise self.missing_result()
        if self.entry is None:
            raise self.error("test `input` has no entry: write `entry: NAME` after `-- ==`", at, at + 5)

    def expect_pending(self, kw: str, at: int) -> None:
        if self.pending is None:
            raise self.error(f"`{kw}` without an `input {{ ... }}` before it", at, at + len(kw))

    def missing_result(self) -> ParseError:
        _, _, offset = self.pending
        return self.error("test `input` has no `output { ... }` or `error:` after it",
                          offset, offset + 5)

    def continue_brace(self, body: str, pos: int) -> int | None:
        """Add body[pos:] to the open brace; the position after `}` or None (still open)."""
        b = self.brace
        close = body.find("}", pos)
        b["parts"].append(body[pos:] if close < 0 else body[pos:close])
        if close < 0:
            return None
        self.brace = None
        self.close_brace(b)
        return close + 1

    def close_brace(self, b: dict) -> None:
        text = " ".join(part.strip() for part in b["parts"]).strip()
        try:
            items = split_args(text)
        except ValueError as e:
            raise self.error(f"in `{b['kw']} {{ ... }}`: {e}", b["offset"], b["offset"] + len(b["kw"])) from None
        if b["kw"] == "input":
            self.pending = (tuple(items), b["line"], b["offset"])
        elif len(items) != 1:
            raise self.error(f"`output {{ ... }}` must hold one value, found {len(items)}",
                             b["offset"], b["offset"] + 6)
        else:
            self.add_case(items[0], None)

    def add_case(self, expected: str | None, error: str | None) -> None:
        args, line, _ = self.pending
        self.cases.append(TestCase(self.entry, args, expected, error, line))
        self.pending = None

    def finish_block(self) -> None:
        if self.pending is not None:
            raise self.missing_result()


def parse_test_blocks(text: str, name: str) -> list[TestCase]:
    """A .fcl file's text (named `name` in messages) -> its tests, in file order.

    Raises fcl.base.errors.ParseError located in the file for a malformed block.
    """
    return _Scanner(text, name).run()
