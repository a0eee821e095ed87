"""The evaluator's results, computed once a test run and shared by the tests that compare
with them.

test_codegen checks each test block's evaluation against its expected output and the
compiled kernels against the same evaluation; test_interp runs each block three ways
against one evaluation.  pytest-xdist deals those tests to different worker processes, so
a result is kept in memory and in a directory the whole run shares (FCL_TEST_EVALS, made
and removed by conftest.py), keyed by the program file, the entry, the arguments and the
hardware parameters.  An evaluation that fails is not kept: each test sees the error.
"""
import hashlib
import os
import pickle
from functools import lru_cache
from pathlib import Path

import numpy as np

import fcl

_MEMO: dict[str, object] = {}


@lru_cache(maxsize=None)
def program(path: str):
    return fcl.load_file(path)


def _plain(x):
    """A value of the arguments with numpy arrays spelled out, to hash."""
    if isinstance(x, np.ndarray):
        return ("array", x.dtype.str, x.shape, x.tobytes())
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, tuple(_plain(v) for v in x))
    return (type(x).__name__, repr(x))


def evaluated(path: str, entry: str, args: list, **hw):
    """`fcl.load_file(path).evaluate(entry, *args, **hw)`, computed once a test run."""
    key = hashlib.sha256(pickle.dumps((str(path), entry, _plain(list(args)), sorted(hw.items())))).hexdigest()
    if key in _MEMO:
        return _MEMO[key]
    shared = os.environ.get("FCL_TEST_EVALS")
    file = Path(shared) / key if shared else None
    if file is not None and file.exists():
        _MEMO[key] = pickle.loads(file.read_bytes())
        return _MEMO[key]
    value = program(str(path)).evaluate(entry, *args, **hw)
    _MEMO[key] = value
    if file is not None:
        part = file.with_name(f"{key}.{os.getpid()}")
        part.write_bytes(pickle.dumps(value))
        part.replace(file)                    # whole or absent for the other workers
    return value
