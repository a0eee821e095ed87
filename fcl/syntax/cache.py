"""Parsed program files kept on disk, as Python keeps `.pyc` files: a file whose text
was parsed before is read back instead of parsed again.

Parsing is most of the front end's time (the prelude's 23 KB take about 0.2 s
on a 2-core machine, reading them back about 10 ms), and every `fclc` process
parses the prelude.  An entry is the pickled `ast.Program` of one (path, text)
under a key that also holds a digest of the parser's own source (`ast.py`,
`grammar.py`, `parser.py`, `errors.py`) and the Python version, so a changed
file, a changed parser or another Python never reads a stale tree.  Only
texts that parse are kept; errors are always found by parsing.  Where:
folder "ast" of FCL's disk cache (`fcl/diskcache.py`: where, how many entries,
`FCL_NO_CACHE=1`); a folder that cannot be written, or an entry that cannot
be read, only costs the parse.
"""
from __future__ import annotations

import functools

from fcl.base import diskcache, errors
from fcl.syntax import ast as A
from fcl.syntax import grammar, parser
from fcl.syntax.parser import parse_program

KEEP = 256          # entries kept; the oldest written go first


@functools.cache
def _parser_digest() -> bytes:
    """What the trees depend on besides the text: the parser's source and the Python version."""
    return diskcache.source_digest(m.__file__ for m in (A, grammar, parser, errors))


def _entry(path: str, text: str) -> str:
    return diskcache.entry_path("ast", _parser_digest() + path.encode("utf-8", "surrogatepass") + b"\0"
                                + text.encode("utf-8", "surrogatepass"))


def parse_file(text: str, path: str) -> A.Program:
    """`parser.parse_program(text, path)`, read from the cache where this text of this path
    was parsed before (and kept there after a parse)."""
    if not diskcache.enabled():
        return parse_program(text, path)
    entry = _entry(path, text)
    program = diskcache.load(entry, A.Program)
    if program is None:
        program = parse_program(text, path)
        diskcache.store(entry, program, KEEP)
    return program
