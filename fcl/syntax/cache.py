"""Parsed program files kept on disk, as Python keeps `.pyc` files: a file whose text
was parsed before is read back instead of parsed again.

Parsing is most of the front end's time (the prelude's 23 KB take about 0.2 s
on a 2-core machine, reading them back about 10 ms), and every `fclc` process
parses the prelude.  An entry is the pickled `ast.Program` of one (path, text)
under a key that also holds a digest of the parser's own source (`ast.py`,
`grammar.py`, `parser.py`, `errors.py`) and the Python version, so a changed
file, a changed parser or another Python never reads a stale tree.  Only
texts that parse are kept; errors are always found by parsing.  Where:
`fcl.resources.user_cache("ast")` ($FCL_CACHE_DIR, else ~/.cache/fcl); at most
`KEEP` entries (the least recently written go).  `FCL_NO_CACHE=1` switches it
off.  A folder that cannot be written, or an entry that cannot be read, only
costs the parse.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
import sys
import tempfile

from fcl.syntax import ast as A
from fcl.syntax.parser import deep_recursion, parse_program

KEEP = 256          # entries kept; the oldest written go first


@functools.cache
def _parser_digest() -> bytes:
    """What the trees depend on besides the text: the parser's source and the Python version."""
    from fcl import errors
    from fcl.syntax import grammar, parser
    h = hashlib.sha256(sys.version.encode())
    for module in (A, grammar, parser, errors):
        with open(module.__file__, "rb") as f:
            h.update(f.read())
    return h.digest()


def _entry(path: str, text: str) -> str:
    key = hashlib.sha256(_parser_digest() + path.encode("utf-8", "surrogatepass") + b"\0"
                         + text.encode("utf-8", "surrogatepass")).hexdigest()
    from fcl.resources import user_cache
    return user_cache("ast", key[:32] + ".pickle")


def parse_file(text: str, path: str) -> A.Program:
    """`parser.parse_program(text, path)`, read from the cache where this text of this path
    was parsed before (and kept there after a parse)."""
    if os.environ.get("FCL_NO_CACHE") == "1":
        return parse_program(text, path)
    entry = _entry(path, text)
    try:
        with open(entry, "rb") as f, deep_recursion():
            program = pickle.load(f)
        if isinstance(program, A.Program):
            return program
    except Exception:   # missing, unreadable, written by something else: parse instead
        pass
    program = parse_program(text, path)
    _store(entry, program)
    return program


def _store(entry: str, program: A.Program):
    folder, tmp = os.path.dirname(entry), None
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "wb") as f, deep_recursion():
            pickle.dump(program, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, entry)           # whole or not at all, also with another process writing
        _prune(folder)
    except (OSError, pickle.PicklingError, RecursionError):
        if tmp is not None:
            with contextlib.suppress(OSError):      # gone already where the rename was done
                os.unlink(tmp)


def _prune(folder: str):
    entries = [e for e in os.scandir(folder) if e.name.endswith(".pickle")]
    if len(entries) <= KEEP:
        return
    entries.sort(key=lambda e: e.stat().st_mtime)
    for e in entries[:len(entries) - KEEP]:
        try:
            os.unlink(e.path)
        except OSError:
            pass
