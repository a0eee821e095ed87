"""FCL's caches on disk: pickled results under a key, as Python keeps `.pyc` files.

Three stores use it: parsed files (`fcl/syntax/cache.py`, folder "ast"),
generated kernels (`fcl/api/kernel_cache.py`, folder "kernels") and tuned
settings (`fcl/tools/tune.py`, folder "tune").  Each keeps at
most `keep` entries in its folder under `fcl.base.resources.user_cache`
($FCL_CACHE_DIR, else ~/.cache/fcl); the least recently written go first.
`FCL_NO_CACHE=1` switches them off.  A folder that cannot be written, or an
entry that cannot be read (missing, damaged, written by something else), only
costs the work the entry would have saved: nothing here raises.  Writes are
a temporary file and a rename, so processes can share a cache.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import sys
import tempfile

from fcl.base.recursion import deep_recursion     # trees nest as deep as the programs
from fcl.base.resources import user_cache


def enabled() -> bool:
    return os.environ.get("FCL_NO_CACHE") != "1"


def source_digest(paths) -> bytes:
    """A digest of the Python version and the source files at `paths` (names and texts):
    what a cache's entries depend on besides their key's own inputs."""
    h = hashlib.sha256(sys.version.encode())
    for path in paths:
        h.update(os.path.basename(path).encode() + b"\0")
        with open(path, "rb") as f:
            h.update(f.read())
    return h.digest()


def entry_path(folder: str, key: bytes) -> str:
    return user_cache(folder, hashlib.sha256(key).hexdigest()[:32] + ".pickle")


def load(entry: str, kind: type):
    """The object kept at `entry` when it is a `kind`, else None."""
    try:
        with open(entry, "rb") as f, deep_recursion():
            value = pickle.load(f)
    except Exception:   # missing, unreadable, written by something else
        return None
    return value if isinstance(value, kind) else None


def store(entry: str, value, keep: int):
    """Keep `value` at `entry` (whole or not at all), then prune the folder to `keep` entries."""
    folder, tmp = os.path.dirname(entry), None
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "wb") as f, deep_recursion():
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, entry)           # whole or not at all, also with another process writing
        _prune(folder, keep)
    except (OSError, pickle.PicklingError, RecursionError, TypeError, AttributeError):
        if tmp is not None:
            with contextlib.suppress(OSError):      # gone already where the rename was done
                os.unlink(tmp)


def _prune(folder: str, keep: int):
    entries = [e for e in os.scandir(folder) if e.name.endswith(".pickle")]
    if len(entries) <= keep:
        return
    entries.sort(key=lambda e: e.stat().st_mtime)
    for e in entries[:len(entries) - keep]:
        with contextlib.suppress(OSError):
            os.unlink(e.path)
