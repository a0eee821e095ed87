"""Source spans and the two kinds of error.

A user's mistake is an `FCLError` (or subclass) carrying a `Span`; it renders
as ``FILE:LINE:COL: error: message``, the source line, and a caret under the
span.  A broken compiler invariant is `CompilerBug`, never shown as a user
error.
"""
from __future__ import annotations

from dataclasses import dataclass, field


class Source:
    """A named program text; spans point into it."""

    def __init__(self, name: str, text: str):
        self.name = name
        self.text = text
        self._line_starts = [0]
        for i, ch in enumerate(text):
            if ch == "\n":
                self._line_starts.append(i + 1)

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset."""
        import bisect

        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self._line_starts, offset) - 1
        return line + 1, offset - self._line_starts[line] + 1

    def line_text(self, line: int) -> str:
        """The text of a 1-based line, without its newline."""
        start = self._line_starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start:] if end < 0 else self.text[start:end]

    def __repr__(self) -> str:
        return f"Source({self.name!r})"


@dataclass(frozen=True)
class Span:
    """A half-open character range [start, end) in a Source."""

    source: Source = field(compare=False, repr=False)
    start: int
    end: int

    @property
    def line(self) -> int:
        return self.source.line_col(self.start)[0]

    @property
    def col(self) -> int:
        return self.source.line_col(self.start)[1]

    def to(self, other: "Span") -> "Span":
        """The span from the start of self to the end of other."""
        return Span(self.source, self.start, max(self.end, other.end))

    def location(self) -> str:
        line, col = self.source.line_col(self.start)
        return f"{self.source.name}:{line}:{col}"

    def excerpt(self) -> str:
        """The source line with a caret/underline under the span."""
        line, col = self.source.line_col(self.start)
        text = self.source.line_text(line)
        end_line, end_col = self.source.line_col(self.end)
        width = (end_col - col) if end_line == line else len(text) - col + 1
        width = max(1, width)
        gutter = f"{line:>4} | "
        marks = "^" + "~" * (width - 1)
        return f"{gutter}{text}\n{' ' * (len(gutter) - 2)}| {' ' * (col - 1)}{marks}"


NO_SOURCE = Source("<unknown>", "")
NO_SPAN = Span(NO_SOURCE, 0, 0)


_COLOURS = {"error": "1;31", "note": "1;36", "location": "1", "caret": "1;31", "gutter": "34"}


def paint(text: str, what: str, color: bool) -> str:
    """`text` in the ANSI colour for `what` (error, note, location, caret, gutter) when `color`."""
    return f"\033[{_COLOURS[what]}m{text}\033[0m" if color and text else text


class FCLError(Exception):
    """A mistake in the user's program or arguments, located by a span.

    `notes` are one-line remarks; `related` are (text, span) pairs for other places that
    the mistake involves (the `sig` and the definition that disagrees with it), each
    rendered as `FILE:LINE:COL: note: text` with its source line.
    """

    kind = "error"

    def __init__(self, message: str, span: Span | None = None, notes: list[str] | None = None,
                 related: list[tuple[str, Span]] | None = None):
        super().__init__(message)
        self.message = message
        self.span = span
        self.notes = list(notes or [])
        self.related = list(related or [])

    def render(self, color: bool = False) -> str:
        """FILE:LINE:COL: error: message, the source line, a caret, notes, related places."""
        label = paint("error:", "error", color)
        if self.span is None or self.span.source is NO_SOURCE:
            head = f"{label} {self.message}"
            body = ""
        else:
            head = f"{paint(self.span.location() + ':', 'location', color)} {label} {self.message}"
            body = "\n" + _excerpt(self.span, color)
        notes = "".join(f"\n  = {paint('note:', 'note', color)} {n}" for n in self.notes)
        related = "".join(f"\n{paint(span.location() + ':', 'location', color)} "
                          f"{paint('note:', 'note', color)} {text}\n{_excerpt(span, color)}"
                          for text, span in self.related if span is not None and span.source is not NO_SOURCE)
        return head + body + notes + related

    def __str__(self) -> str:
        return self.render()


def _excerpt(span: Span, color: bool) -> str:
    text = span.excerpt()
    if not color:
        return text
    source_line, marks = text.split("\n", 1)
    gutter, _, code = source_line.partition("| ")
    pad, _, caret = marks.partition("| ")
    return (f"{paint(gutter + '|', 'gutter', color)} {code}\n"
            f"{paint(pad + '|', 'gutter', color)} {paint(caret, 'caret', color)}")


class ParseError(FCLError):
    """The program text does not follow the grammar."""


class TypeCheckError(FCLError):
    """The program is not well typed (including kind and level errors)."""


class _Several:
    """Several independent errors of one program, in source order.  Its message, span and
    notes are the first one's; `render` shows all, then how many."""

    def __init__(self, errors: list[FCLError]):
        first = errors[0]
        super().__init__(first.message, first.span, first.notes, first.related)
        self.errors = list(errors)

    def render(self, color: bool = False) -> str:
        return "\n".join(e.render(color) for e in self.errors) + f"\n{len(self.errors)} errors"


class ErrorList(_Several, TypeCheckError):
    """Several declarations that do not check."""


class ParseErrorList(_Several, ParseError):
    """Several syntax errors (the parse resumes at the next declaration after each)."""


class EvalError(FCLError):
    """A run-time error of the reference evaluator (index, division, conflict...)."""


class CompileError(FCLError):
    """The program cannot be compiled or launched as asked (e.g. too much local memory)."""


# What the compiler cannot do yet: each a located error, never a wrong result (the evaluator
# runs these programs).  docs/compiler.md lists them from this table (tests/test_docs.py).
LIMITATIONS = {
    "device-length": "an array whose length depends on what a work-item computes for its own "
                     "part (a length from arrays an earlier kernel wrote is read back by the "
                     "host; a `while` whose condition reads only the length runs on the host)",
    "force-placement": "a block- or warp-level `force` inside the per-element work of a warp- or "
                       "grid-level push, one that depends on the element, or one under a "
                       "condition that differs between the work-items of the block",
    "grid-nesting": "a grid-level `force`, `while`, `power`, `scatter` or `reduceByIndex` below the top level of a kernel "
                    "(inside a part of a concat or per-element work), `seqConcat` over "
                    "grid-level parts, and a local array used after a grid-level `force`",
    "host-step-count": "a warp-level `power` or `seqConcat`, or a grid-level `power`, whose step "
                       "count depends on array contents",
    "warp-branch": "an `if` whose condition differs between the warps of a block around code "
                   "that synchronises the whole block inside a loop",
    "kernel-interface": "entry arguments nested deeper than arrays of pairs and regular arrays of "
                        "arrays (pass them flat and split them with `splitUp`), results other "
                        "than arrays of scalars or of pairs of them, scalars, and pairs of those",
    "element-types": "push array elements and loop states other than scalars and (nested) pairs "
                     "of scalars",
    "combining-operator": "a `reduceByIndex` whose operator the device has no atomic operation "
                          "for (it combines ints with +, min, max, &, | and ^, and floats with +)",
    "local-size": "a `packThreads` whose part length or number of parts is not a constant (its "
                  "parts are staged in local memory)",
    "scan-prefix": "a `scanConcat` part that calls its prefix function anywhere but at its top, "
                   "by the whole block (inside a branch, a loop or per-element work)",
}


class CompilerLimitation(CompileError):
    """A program the evaluator runs but the compiler cannot compile yet.  `what` names its
    entry in LIMITATIONS."""

    def __init__(self, what: str, message: str, span: Span | None = None,
                 notes: list[str] | None = None, related: list[tuple[str, Span]] | None = None):
        if what not in LIMITATIONS:
            raise CompilerBug(f"no compiler limitation is called {what!r}")
        super().__init__(message, span, notes, related)
        self.what = what


class ArgumentError(FCLError):
    """A bad argument to an entry point: wrong count, type, shape or value."""


class EnvironmentProblem(Exception):
    """The tool's own environment is missing something (no OpenCL platform, ...). Exit 2."""


class CompilerBug(Exception):
    """An internal invariant was broken: a bug in FCL, not in the user's program."""
