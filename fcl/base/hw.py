"""Facts about the target shared by every layer: levels, memory spaces,
scalar types and their storage, the default hardware parameters.

The bottom of the package graph beside `errors` and `scalars`: it imports
nothing from FCL, so the syntax, the checker, the evaluator, the code
generator and the runtime all read the same one table.  Not here: anything
that needs a device (that is `runtime.device`).
"""
from __future__ import annotations

import enum

import numpy as np


class Level(enum.IntEnum):
    """The four levels of the hierarchy, ordered: a unit of level l is made of units of l - 1."""
    THREAD = 0
    WARP = 1
    BLOCK = 2
    GRID = 3

    def __str__(self) -> str:
        return self.name.lower()

    __format__ = object.__format__

    @classmethod
    def named(cls, name: str) -> "Level":
        """The level a source keyword names (`Z`, the zero level, is `thread`)."""
        return LEVEL_BY_NAME[name]


LEVEL_KEYWORDS = tuple(str(lv) for lv in Level)            # thread warp block grid
LEVEL_BY_NAME = {**{str(lv): lv for lv in Level}, "Z": Level.THREAD}


class Name(enum.StrEnum):
    """An enumeration of names: equal to, and printed (str and repr) as, its plain string."""

    def __repr__(self) -> str:
        return repr(self.value)


class Space(Name):
    """Where a buffer lives."""
    GLOBAL = "global"
    LOCAL = "local"
    PRIVATE = "private"


class ScalarType(Name):
    """The scalar types of FCL (and of the kernel IR; "long" there only: the compiler's own
    64-bit status words, `scanConcat`'s)."""
    INT = "int"
    FLOAT = "float"
    DOUBLE = "double"
    BOOL = "bool"
    LONG = "long"


# numpy dtype of values the user sees, and of device storage (bool is a byte on the device)
VALUE_DTYPES = {ScalarType.INT: np.dtype(np.int32), ScalarType.DOUBLE: np.dtype(np.float64),
                ScalarType.FLOAT: np.dtype(np.float32), ScalarType.BOOL: np.dtype(np.bool_)}
STORAGE_DTYPES = {ScalarType.INT: np.dtype(np.int32), ScalarType.FLOAT: np.dtype(np.float32),
                  ScalarType.DOUBLE: np.dtype(np.float64), ScalarType.BOOL: np.dtype(np.uint8),
                  ScalarType.LONG: np.dtype(np.int64)}
C_STORAGE = {ScalarType.INT: "int", ScalarType.FLOAT: "float", ScalarType.DOUBLE: "double",
             ScalarType.BOOL: "uchar", ScalarType.LONG: "long"}
STORAGE_BYTES = {t: dtype.itemsize for t, dtype in STORAGE_DTYPES.items()}   # an element of a buffer

# The skewed layout of local buffers ("skew32"): element i lives at i + i/32, a spare word after
# every 32 so that a lane stride of 32 falls in different banks.
SKEW_SHIFT = 5


def skewed_index(i: int) -> int:
    """Where element `i` (non-negative) of a skewed buffer lives."""
    return i + (i >> SKEW_SHIFT)


def skewed_elements(n: int) -> int:
    """The elements of storage a skewed buffer of `n` elements takes (one to spare)."""
    return skewed_index(n) + 1

# #LocalMemory: bytes of local memory a work-group may take.  Compiled for a device, the device's
# (CL_DEVICE_LOCAL_MEM_SIZE), at most this default: NVIDIA's GPUs allow 48 KB, Oclgrind 32 KB;
# Intel's CPU runtime (256 KB) and PoCL (megabytes) get 48 KB, so CPU runs build what the GPU builds.
LOCAL_MEMORY = 49152
DEFAULT_HW = {"#BlockSize": 256, "#WarpSize": 32, "#NumGroups": 4096, "#LocalMemory": LOCAL_MEMORY}
