"""Python's recursion limit, raised for walks over trees as deep as the programs."""
import sys
from contextlib import contextmanager

_RECURSION_LIMIT = 12000  # about 700 nested parentheses or `let`s


@contextmanager
def deep_recursion():
    """Raise Python's recursion limit while walking trees as deep as the programs
    (the parser, the visitors and pickle recurse once per nesting level); restore it afterwards."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, _RECURSION_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)
