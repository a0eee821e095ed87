"""A program file -> `ast.Program` with every `include "x.fcl"` expanded.

Files are parsed through `cache.parse_file` (a text parsed before is read
back from disk).  The path of an include is relative to the file that contains it.  The
included file's declarations replace the `Include` in place and keep spans
into their own `Source`.  A missing or unreadable file and an include cycle
are ParseErrors located at the offending `include`.  A file included twice
along different paths is spliced twice (no deduplication).
"""
from __future__ import annotations

import os

from fcl.base.errors import ParseError, Span
from fcl.base.resources import prelude_path
from fcl.syntax import ast as A
from fcl.syntax.cache import parse_file


def load_program(path: str) -> A.Program:
    """File path -> Program with includes expanded; ParseError if the file
    (or an included one) cannot be read or parsed."""
    return expand_includes(parse_file(_read(path, None), path), path)


def expand_includes(program: A.Program, path: str) -> A.Program:
    """A parsed Program and the path it was read from (or a name such as
    `<string>`, then includes are relative to the current directory) -> the
    Program with every `include` replaced by the included declarations."""
    decls = _expand(program, path, (os.path.realpath(path),))
    return A.Program(decls, program.span)


def _read(path: str, at: Span | None) -> str:
    """Path -> file text; an unreadable file is a ParseError at `at`."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise ParseError(f"cannot find the file `{path}`", at) from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ParseError(f"cannot read the file `{path}`: {reason}", at) from None


def _expand(program: A.Program, path: str, chain: tuple[str, ...]) -> tuple[A.Decl, ...]:
    """Declarations of `program` (read from `path`) -> the same with includes
    spliced in; `chain` holds the real paths of the files being included."""
    out: list[A.Decl] = []
    for decl in program.decls:
        if isinstance(decl, A.Include):
            out.extend(_include(decl, path, chain))
        else:
            out.append(decl)
    return tuple(out)


def _include(decl: A.Include, path: str, chain: tuple[str, ...]) -> tuple[A.Decl, ...]:
    """One `include` in file `path` -> the declarations of the included file."""
    target = os.path.join(os.path.dirname(path), decl.path)
    real = os.path.realpath(target)
    if real in chain:
        cycle = " -> ".join(os.path.basename(p) for p in chain + (real,))
        raise ParseError(f"include cycle: {cycle}", decl.span)
    if os.path.isdir(target):
        raise ParseError(f"cannot include `{decl.path}`: it is a directory", decl.span)
    text = _read(target, decl.span)
    program = parse_file(text, target)
    return _expand(program, target, chain + (real,))


__all__ = ["load_program", "expand_includes"]


_PRELUDE_CACHE: dict[str, tuple] = {}


def prelude_decls() -> tuple:
    """The prelude's declarations, parsed once per process."""
    path = str(prelude_path())
    if path not in _PRELUDE_CACHE:
        with open(path, encoding="utf-8") as f:
            _PRELUDE_CACHE[path] = parse_file(f.read(), path).decls
    return _PRELUDE_CACHE[path]
