"""FCL values on the Python side: argument literals in, result literals out.

Consumes argument text (`17`, `2.5f`, `[1, 2]`, `(1, [2, 3])`, `@a.npy`,
`iota:N`, `random:N:float`) and Python/NumPy values; produces the canonical
Python representation every other package uses:

* int -> Python `int` (32-bit range), double -> Python `float`,
  float -> `np.float32`, bool -> Python `bool`;
* an array of scalars -> a 1-D NumPy array (int32, float64, float32, bool);
* an array of arrays or of pairs -> a Python `list` of those values;
* a pair -> a Python 2-`tuple`;
* `[]` before its type is known -> `EMPTY` (an `EmptyArray`), which
  `coerce_arg` turns into an empty array of the parameter's element type.

It does not know the parser or the evaluator: types come in as
`fcl.types.terms` objects.
"""
from __future__ import annotations

import math
import re

import numpy as np

from fcl.base.errors import ArgumentError
from fcl.base.hw import VALUE_DTYPES
from fcl.base.scalars import INT_MAX, INT_MIN
from fcl.eval.values import EMPTY, EmptyArray
from fcl.types.terms import TCon, TFunT, TLevelFunT, TPairT, TPullT, TPushT, TVarT, Type, format_type

DTYPES = {str(t): dt for t, dt in VALUE_DTYPES.items()}    # element name -> numpy dtype the user sees
ELEMENT_NAMES = {dt: name for name, dt in DTYPES.items()}


# ---------------------------------------------------------------- reading literals

_NUMBER = re.compile(r"""-?(?:
      (?P<inf>inf) | (?P<nan>nan)
    | \d+ (?P<frac>\.\d+)? (?P<exp>[eE][+-]?\d+)?
    ) (?P<f>f)?""", re.X)


_TOKEN = re.compile(r"[\w.'+-]+|\S")


class _Reader:
    """Recursive descent over one literal; raises ArgumentError on bad text."""

    def __init__(self, text: str, where: str):
        self.text = text
        self.pos = 0
        self.where = where

    def fail(self, what: str) -> ArgumentError:
        token = _TOKEN.match(self.text, self.pos)
        at = f"found `{token.group(0)}`" if token else "found the end"
        return ArgumentError(f"could not read {self.where}: expected {what}, {at}")

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        self.skip()
        return self.text[self.pos:self.pos + 1]

    def expect(self, ch: str) -> None:
        if self.peek() != ch:
            raise self.fail(f"`{ch}`")
        self.pos += 1

    def whole(self):
        value = self.value()
        if self.peek():
            raise self.fail("the end of the argument")
        return value

    def value(self):
        ch = self.peek()
        if ch == "[":
            return self.array()
        if ch == "(":
            return self.pair()
        for word, val in (("true", True), ("false", False)):
            if self.text.startswith(word, self.pos) and not self._ident_char(self.pos + len(word)):
                self.pos += len(word)
                return val
        return self.number()

    def _ident_char(self, i: int) -> bool:
        return i < len(self.text) and (self.text[i].isalnum() or self.text[i] in "_'")

    def number(self):
        m = _NUMBER.match(self.text, self.pos)
        if m is None or self._ident_char(m.end()):
            raise self.fail("a value (a number, `true`, `false`, `[...]` or `(..., ...)`)")
        self.pos = m.end()
        value = _number_value(m)
        if value is None:
            lexeme = m.group(0)
            shown = lexeme if len(lexeme) <= 20 else f"{lexeme[:12]}... ({len(lexeme)} characters)"
            raise ArgumentError(f"could not read {self.where}: {shown} does not fit in a 32-bit int")
        return value

    def flat_array(self) -> list | None:
        """Fast path for `[scalar, ...]` (large literal arrays): the elements, or
        None when the general reader must read it (nesting, or a mistake it reports)."""
        end = self.text.find("]", self.pos)
        inner = self.text[self.pos:end]
        if end < 0 or "[" in inner or "(" in inner:
            return None
        items = []
        for token in inner.split(","):
            token = token.strip()
            if token in ("true", "false"):
                items.append(token == "true")
                continue
            m = _NUMBER.fullmatch(token)
            value = None if m is None else _number_value(m)
            if value is None:
                return None
            items.append(value)
        self.pos = end + 1
        return items

    def array(self):
        self.expect("[")
        if self.peek() == "]":
            self.pos += 1
            return EMPTY
        items = self.flat_array()
        if items is None:
            items = self.general_array()
        try:
            return make_array(items)
        except ArgumentError as e:
            raise ArgumentError(f"could not read {self.where}: {e.message}") from None

    def general_array(self) -> list:
        """Elements up to and including the closing `]`, any nesting."""
        items = [self.value()]
        while self.peek() == ",":
            self.pos += 1
            items.append(self.value())
        if self.peek() != "]":
            raise self.fail("`,` or `]`")
        self.pos += 1
        return items

    def pair(self):
        self.expect("(")
        first = self.value()
        if self.peek() == ")":        # a parenthesised value, not a pair
            self.pos += 1
            return first
        self.expect(",")
        second = self.value()
        self.expect(")")
        return (first, second)


def _number_value(m: re.Match):
    """A matched number lexeme -> int / float / np.float32; None for an int out of range."""
    lexeme = m.group(0)
    if m.group("f"):
        return np.float32(lexeme[:-1])
    if m.group("frac") or m.group("exp") or m.group("inf") or m.group("nan"):
        return float(lexeme)
    if len(lexeme.lstrip("+-").lstrip("0")) > 12:      # out of range (and past Python's 4300-digit limit)
        return None
    n = int(lexeme)
    return n if INT_MIN <= n <= INT_MAX else None


def _scalar_kind(v) -> str | None:
    """'bool', 'int', 'float', 'double' for a canonical scalar, else None."""
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, (int, np.integer)):
        return "int"
    if isinstance(v, np.float32):
        return "float"
    if isinstance(v, (float, np.floating)):
        return "double"
    return None


def make_array(items: list):
    """Homogeneous canonical array from parsed elements: ints widen to float/double."""
    kinds = {_scalar_kind(v) for v in items}
    if None not in kinds:
        if kinds <= {"int", "double"} or kinds <= {"int", "float"} or len(kinds) == 1:
            kind = "double" if "double" in kinds else "float" if "float" in kinds else kinds.pop()
            return np.array(items, dtype=DTYPES[kind])
        raise ArgumentError(f"array elements mix {' and '.join(sorted(kinds))}")
    if all(isinstance(v, tuple) for v in items):
        return list(items)
    if all(_is_array(v) for v in items):
        return list(items)
    raise ArgumentError("array elements mix scalars, arrays and pairs")


def _is_array(v) -> bool:
    return isinstance(v, (np.ndarray, list, EmptyArray))


def os_problem(e: OSError, path: str, writing: bool = False) -> str:
    """Why `path` could not be read (or written), in plain words, from the OSError."""
    import errno
    import os
    folder = os.path.dirname(os.path.abspath(path))
    if isinstance(e, IsADirectoryError) or os.path.isdir(path):
        return f"{path} is a folder, not a file"
    if isinstance(e, PermissionError):
        return f"you have no permission to {'write' if writing else 'read'} {path}"
    if isinstance(e, FileNotFoundError) and not writing:
        return f"there is no file {path} (looked in {folder})" if not os.path.isabs(path) \
            else f"there is no file {path}"
    if writing and not os.path.isdir(folder):
        return f"the folder {folder} does not exist"
    if writing and os.path.exists(path):
        return f"{path} exists and cannot be overwritten ({e.strerror or e})"
    if writing and e.errno in (errno.ENOENT, errno.EACCES, errno.EROFS, errno.EPERM, errno.EIO):
        return f"no file can be created in the folder {folder} ({e.strerror})"
    return e.strerror or str(e)


def _load_npy(path: str, where: str) -> np.ndarray:
    try:
        arr = np.load(path, allow_pickle=False)
    except OSError as e:
        raise ArgumentError(f"could not read {where}: {os_problem(e, path)}") from None
    except ValueError as e:
        with open(path, "rb") as f:
            npy = f.read(6) == b"\x93NUMPY"
        why = str(e) if npy else "it does not start as one does; write arrays with numpy.save"
        raise ArgumentError(f"could not read {where}: {path} is not a NumPy .npy file ({why})") from None
    if not isinstance(arr, np.ndarray) or arr.ndim != 1:
        raise ArgumentError(f"could not read {where}: expected a 1-D array, found "
                            f"{getattr(arr, 'ndim', '?')} dimensions")
    if arr.dtype not in ELEMENT_NAMES:
        raise ArgumentError(f"could not read {where}: dtype {arr.dtype} is not supported "
                            "(use int32, float32, float64 or bool)")
    return arr


DEFAULT_SEED = 1      # `random:N` without --seed: `fclc eval` and `fclc run` of one command agree


def _generate(kind: str, rest: str, seed: int | None, position: int | None, where: str):
    parts = rest.split(":")
    usage = "`iota:N`" if kind == "iota" else "`random:N` or `random:N:TYPE` (int, double, float, bool)"
    if not parts[0].isdigit() or len(parts) > (1 if kind == "iota" else 2):
        raise ArgumentError(f"could not read {where}: expected {usage}")
    n = int(parts[0]) if len(parts[0].lstrip("0")) <= 12 else INT_MAX + 1
    if n > INT_MAX:
        shown = parts[0] if len(parts[0]) <= 20 else f"{parts[0][:12]}... ({len(parts[0])} digits)"
        raise ArgumentError(f"could not read {where}: {shown} does not fit in a 32-bit int")
    if kind == "iota":
        return np.arange(n, dtype=np.int32)
    elem = parts[1] if len(parts) == 2 else "int"
    seed = DEFAULT_SEED if seed is None else seed
    if seed < 0:
        raise ArgumentError(f"could not read {where}: --seed {seed} is negative; give a seed of 0 or more")
    rng = np.random.default_rng([seed, position or 0])
    if elem == "int":
        return rng.integers(0, 100, n, dtype=np.int32)
    if elem == "double":
        return rng.random(n, dtype=np.float64)
    if elem == "float":
        return rng.random(n, dtype=np.float32)
    if elem == "bool":
        return rng.integers(0, 2, n).astype(np.bool_)
    raise ArgumentError(f"could not read {where}: unknown element type `{elem}`; expected {usage}")


def rejoin(texts: list[str]) -> list[str]:
    """Arguments the shell split inside brackets (`[1,` `2]`) -> whole literals (`[1, 2]`)."""
    out: list[str] = []
    depth = 0
    for text in texts:
        if depth > 0:
            out[-1] += " " + text
        else:
            out.append(text)
        depth += sum((ch in "([") - (ch in ")]") for ch in text)
    return out


def parse_arg(text: str, seed: int | None = None, position: int | None = None):
    """Argument text -> canonical value (see module doc); ArgumentError naming the text.

    `random:` draws from `seed` (DEFAULT_SEED when None), so the same text gives the same
    values in every process; with a `position`, each argument position gets its own
    stream, so two `random:N` arguments differ.
    """
    shown = text if len(text) <= 60 else f"{text[:40]}...({len(text)} characters)"
    where = f"argument {position} `{shown}`" if position is not None else f"argument `{shown}`"
    stripped = text.strip()
    if stripped.startswith("@"):
        return _load_npy(stripped[1:], where)
    for kind in ("iota", "random"):
        if stripped.startswith(kind + ":"):
            return _generate(kind, stripped[len(kind) + 1:], seed, position, where)
    if stripped == "random":
        raise ArgumentError(f"could not read {where}: expected `random:N`")
    return _Reader(text, where).whole()


# ---------------------------------------------------------------- printing

def _float32_text(x) -> str:
    return str(np.float32(x))


def _scalar_text(v, kind: str) -> str:
    if kind == "bool":
        return "true" if v else "false"
    if kind == "int":
        return str(int(v))
    if kind == "float":
        return _float32_text(v) + "f"
    return repr(float(v))


def format_value(v) -> str:
    """A value (canonical, or any NumPy array / list / tuple of them) -> FCL literal text."""
    kind = _scalar_kind(v)
    if kind is not None:
        return _scalar_text(v, kind)
    if isinstance(v, EmptyArray):
        return "[]"
    if isinstance(v, np.void) and v.dtype.names:        # an element of an array of pairs
        return f"({format_value(v[0])}, {format_value(v[1])})"
    if isinstance(v, np.ndarray):
        if v.dtype.names:           # an array of pairs (structured, fields f0 and f1)
            return "[" + ", ".join(_format_pairs(v)) + "]"
        if v.ndim == 0:
            return format_value(v[()])
        if v.ndim > 1:
            return "[" + ", ".join(format_value(row) for row in v) + "]"
        return "[" + ", ".join(_format_elements(v)) + "]"
    if isinstance(v, tuple) and len(v) == 2:
        return f"({format_value(v[0])}, {format_value(v[1])})"
    if isinstance(v, list):
        return "[" + ", ".join(format_value(x) for x in v) + "]"
    raise TypeError(f"format_value: not an FCL value: {v!r}")


ELIDE_THRESHOLD = 1000     # arrays longer than this print elided (NumPy's threshold)
ELIDE_EDGE = 3             # elements shown at each end


def format_elided(v) -> str:
    """format_value, but arrays of more than ELIDE_THRESHOLD elements show only their first
    and last ELIDE_EDGE elements around `...`, NumPy style: `[0, 1, 2, ..., 97, 98, 99]`."""
    if isinstance(v, tuple) and len(v) == 2:
        return f"({format_elided(v[0])}, {format_elided(v[1])})"
    if isinstance(v, (np.ndarray, list)) and not isinstance(v, EmptyArray) and np.ndim(v) >= 1:
        items = list(v) if isinstance(v, list) or np.ndim(v) > 1 else None
        if len(v) > ELIDE_THRESHOLD:
            if _is_pairs(v):
                shown = _format_pairs(v[:ELIDE_EDGE]) + ["..."] + _format_pairs(v[-ELIDE_EDGE:])
            elif items is None:
                shown = _format_elements(v[:ELIDE_EDGE]) + ["..."] + _format_elements(v[-ELIDE_EDGE:])
            else:
                shown = ([format_elided(x) for x in items[:ELIDE_EDGE]] + ["..."]
                         + [format_elided(x) for x in items[-ELIDE_EDGE:]])
            return "[" + ", ".join(shown) + "]"
        if items is not None:
            return "[" + ", ".join(format_elided(x) for x in items) + "]"
    return format_value(v)


def count_elements(v) -> int:
    """The number of scalars in a value (for `N elements` notes)."""
    if isinstance(v, tuple):
        return sum(count_elements(x) for x in v)
    if isinstance(v, list):
        return sum(count_elements(x) for x in v)
    if isinstance(v, np.ndarray):
        return int(v.size)
    return 1


def _format_pairs(arr: np.ndarray) -> list[str]:
    """The elements of a structured array of pairs, as FCL pairs."""
    first, second = (_format_pairs(arr[f]) if arr[f].dtype.names else _format_elements(arr[f])
                     for f in arr.dtype.names)
    return [f"({a}, {b})" for a, b in zip(first, second)]


def _format_elements(arr: np.ndarray) -> list[str]:
    kind = _dtype_kind(arr.dtype)
    if kind == "float":
        return [_float32_text(x) + "f" for x in arr]
    if kind == "double":
        return [repr(x) for x in arr.tolist()]
    if kind == "bool":
        return ["true" if x else "false" for x in arr.tolist()]
    if kind == "int":
        return [str(x) for x in arr.tolist()]
    raise TypeError(f"format_value: unsupported array dtype {arr.dtype}")


def _dtype_kind(dtype: np.dtype) -> str | None:
    if dtype == np.bool_:
        return "bool"
    if np.issubdtype(dtype, np.integer):
        return "int"
    if dtype == np.float32:
        return "float"
    if np.issubdtype(dtype, np.floating):
        return "double"
    return None


# ---------------------------------------------------------------- type-directed checking

def show_type(ty: Type) -> str:
    """A type as messages write it (the checker's canonical printer)."""
    return format_type(ty)


def describe(v) -> str:
    """What a value is, for messages: `an int`, `a double array`, `a pair`."""
    kind = _scalar_kind(v)
    if kind is not None:
        return {"int": "an int", "bool": "a bool", "float": "a float", "double": "a double"}[kind]
    if isinstance(v, EmptyArray):
        return "an empty array"
    if isinstance(v, np.ndarray):
        if v.ndim > 1:
            return f"a {v.ndim}-D array"
        kind = _dtype_kind(v.dtype)
        return f"an {kind} array" if kind == "int" else f"a {kind or v.dtype} array"
    if isinstance(v, list):
        return "an array of arrays" if v and _is_array(v[0]) else "an array of pairs" if v else "an empty array"
    if isinstance(v, tuple):
        return "a pair" if len(v) == 2 else f"a {len(v)}-tuple"
    return f"a Python {type(v).__name__}"


def canonical(v):
    """Python-API values -> canonical form: lists of scalars become arrays,
    2-D arrays become lists of rows, NumPy scalars become Python scalars
    (np.float32 stays), an element of a structured array of pairs a pair.
    Raises ArgumentError for what is no FCL value."""
    if isinstance(v, np.void) and v.dtype.names:
        return (canonical(v[0]), canonical(v[1]))
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, np.float32):
        return v
    if isinstance(v, (float, np.floating)):
        return float(v)
    if isinstance(v, EmptyArray):
        return v
    if isinstance(v, np.ndarray):
        if v.ndim == 0:
            return canonical(v[()])
        if v.ndim > 1:
            return [canonical(row) for row in v]
        return v
    if isinstance(v, tuple):
        if len(v) != 2:
            raise ArgumentError(f"FCL has pairs, not {len(v)}-tuples")
        return (canonical(v[0]), canonical(v[1]))
    if isinstance(v, list):
        return make_array([canonical(x) for x in v]) if v else EMPTY
    raise ArgumentError(f"{describe(v)} is not an FCL value")


def coerce_arg(value, ty: Type, position: int, name: str = ""):
    """Check one argument against its parameter type and convert it to that type.

    int literals widen to float/double, int and double arrays widen to double
    or float arrays, `[]` takes the element type; anything else that does not
    fit raises ArgumentError("argument N: expected T, found ...").  A type
    variable accepts any value and keeps its type.
    """
    label = f"{position} (`{name}`)" if name else position
    try:
        value = canonical(value)
    except ArgumentError as e:
        raise ArgumentError(f"argument {label}: {e.message}") from None
    return _Coercer(ty, label).coerce(value, ty)


class _Coercer:
    def __init__(self, whole: Type, position):
        self.whole = whole
        self.position = position

    def mismatch(self, v, ty: Type) -> ArgumentError:
        inner = "" if ty == self.whole else f" (inside {show_type(self.whole)})"
        return ArgumentError(f"argument {self.position}: expected {show_type(ty)}, "
                             f"found {describe(v)}{inner}")

    def coerce(self, v, ty: Type):
        if isinstance(ty, TCon):
            return self.scalar(v, ty)
        if isinstance(ty, TVarT):
            return self.variable(v, ty)
        if isinstance(ty, TPairT):
            if not isinstance(v, tuple):
                raise self.mismatch(v, ty)
            return (self.coerce(v[0], ty.fst), self.coerce(v[1], ty.snd))
        if isinstance(ty, TPullT):
            return self.array(v, ty)
        if isinstance(ty, (TFunT, TPushT, TLevelFunT)):
            raise ArgumentError(f"argument {self.position}: a parameter of type {show_type(ty)} "
                                "cannot be given from outside FCL")
        raise self.mismatch(v, ty)

    def scalar(self, v, ty: TCon):
        kind = _scalar_kind(v)
        name = ty.name
        if kind == name or (kind == "int" and name in ("float", "double")) or \
                (kind in ("float", "double") and name in ("float", "double")):
            if name == "int":
                return self.int_in_range(v)
            if name == "bool":
                return bool(v)
            return np.float32(v) if name == "float" else float(v)
        raise self.mismatch(v, ty)

    def int_in_range(self, v) -> int:
        if not INT_MIN <= int(v) <= INT_MAX:
            raise ArgumentError(f"argument {self.position}: {int(v)} does not fit in a 32-bit int")
        return int(v)

    def variable(self, v, ty: TVarT):
        kind = _scalar_kind(v)
        if ty.kind == "NUM" and kind not in ("int", "float", "double"):
            raise ArgumentError(f"argument {self.position}: expected a number, found {describe(v)}")
        if ty.kind == "BT" and kind is None:
            raise ArgumentError(f"argument {self.position}: expected a scalar, found {describe(v)}")
        if kind == "int":
            return self.int_in_range(v)
        if isinstance(v, EmptyArray):
            return np.empty(0, dtype=np.int32)
        if isinstance(v, np.ndarray):
            return self.numeric_array(v, None, ty)
        if isinstance(v, list):
            return [self.variable(x, TVarT("a", "GT")) for x in v]
        if isinstance(v, tuple):
            return (self.variable(v[0], TVarT("a")), self.variable(v[1], TVarT("b")))
        return v

    def array(self, v, ty: TPullT):
        elem = ty.elem
        if isinstance(v, EmptyArray):
            if isinstance(elem, TCon):
                return np.empty(0, dtype=DTYPES[elem.name])
            return [] if isinstance(elem, (TPullT, TPairT)) else np.empty(0, dtype=np.int32)
        if isinstance(v, np.ndarray):
            if isinstance(elem, TCon):
                return self.numeric_array(v, elem.name, ty)
            if isinstance(elem, TVarT):
                return self.numeric_array(v, None, ty)
            raise self.mismatch(v, ty)
        if isinstance(v, list):
            if isinstance(elem, TCon):
                raise self.mismatch(v, ty)
            return [self.coerce(x, elem) for x in v]
        raise self.mismatch(v, ty)

    def numeric_array(self, v: np.ndarray, want: str | None, ty: Type) -> np.ndarray:
        have = _dtype_kind(v.dtype)
        if want is None:
            if have == "int" and v.dtype != np.int32:
                return self.int32_array(v)
            if have == "double" and v.dtype != np.float64:
                return v.astype(np.float64)
            if have is None:
                raise self.mismatch(v, ty)
            return v
        if have == want:
            return self.int32_array(v) if want == "int" else v.astype(DTYPES[want], copy=False)
        if want in ("float", "double") and have in ("int", "float", "double"):
            return v.astype(DTYPES[want])
        raise self.mismatch(v, ty)

    def int32_array(self, v: np.ndarray) -> np.ndarray:
        if v.dtype == np.int32:
            return v
        if v.size and (v.min() < INT_MIN or v.max() > INT_MAX):
            raise ArgumentError(f"argument {self.position}: array values do not fit in 32-bit ints")
        return v.astype(np.int32)


# ---------------------------------------------------------------- comparing

def values_equal(expected, actual, rel_tol: float = 1e-6, abs_tol: float = 1e-12) -> bool:
    """Same shape and values: ints and bools exactly, floats/doubles within
    `rel_tol` (or `abs_tol` near 0; NaN equals NaN); arrays element-wise."""
    if _is_pairs(expected) or _is_pairs(actual):        # arrays of pairs: component by component
        if _length(expected) == 0 or _length(actual) == 0:
            return _length(expected) == _length(actual)
        e, a = components(expected), components(actual)
        return e is not None and a is not None and values_equal(e, a, rel_tol, abs_tol)
    try:
        expected, actual = canonical(expected), canonical(actual)
    except ArgumentError:
        return False
    ek, ak = _scalar_kind(expected), _scalar_kind(actual)
    if ek is not None or ak is not None:
        if ek is None or ak is None or (ek == "bool") != (ak == "bool"):
            return False
        if ek in ("int", "bool") and ak in ("int", "bool"):
            return int(expected) == int(actual)
        return _close(float(expected), float(actual), rel_tol, abs_tol)
    if isinstance(expected, tuple) or isinstance(actual, tuple):
        return (isinstance(expected, tuple) and isinstance(actual, tuple)
                and all(values_equal(e, a, rel_tol, abs_tol) for e, a in zip(expected, actual)))
    if len(expected) != len(actual):
        return False
    if len(expected) == 0:
        return True
    if isinstance(expected, np.ndarray) and isinstance(actual, np.ndarray):
        return _arrays_close(expected, actual, rel_tol, abs_tol)
    if isinstance(expected, list) and isinstance(actual, list):
        return all(values_equal(e, a, rel_tol, abs_tol) for e, a in zip(expected, actual))
    return False


def _length(v) -> int | None:
    """The length of an array (None for anything else)."""
    return len(v) if isinstance(v, (list, np.ndarray, EmptyArray)) else None


def _is_pairs(v) -> bool:
    """A structured array of pairs (as compiled kernels and the evaluator return arrays of pairs)."""
    return isinstance(v, np.ndarray) and bool(v.dtype.names)


def components(v):
    """An array of pairs as the pair of its components' arrays (nested pairs nested): from a
    structured array or a list of pairs; None for anything else."""
    if _is_pairs(v):
        return tuple(components(v[f]) if v[f].dtype.names else v[f] for f in v.dtype.names)
    if isinstance(v, list) and v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
        return tuple(components(part) if isinstance(part[0], tuple) else make_array([canonical(x) for x in part])
                     for part in ([x[0] for x in v], [x[1] for x in v]))
    return None


def _close(e: float, a: float, rel_tol: float, abs_tol: float) -> bool:
    if math.isnan(e) or math.isnan(a):
        return math.isnan(e) and math.isnan(a)
    return e == a or math.isclose(e, a, rel_tol=rel_tol, abs_tol=abs_tol)


def _arrays_close(e: np.ndarray, a: np.ndarray, rel_tol: float, abs_tol: float) -> bool:
    ek, ak = _dtype_kind(e.dtype), _dtype_kind(a.dtype)
    if ek is None or ak is None or (ek == "bool") != (ak == "bool"):
        return False
    if ek in ("int", "bool") and ak in ("int", "bool"):
        return bool(np.array_equal(e, a))
    e64, a64 = e.astype(np.float64), a.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        tol = np.maximum(rel_tol * np.maximum(np.abs(e64), np.abs(a64)), abs_tol)
        ok = (e64 == a64) | (np.abs(e64 - a64) <= tol) | (np.isnan(e64) & np.isnan(a64))
    return bool(ok.all())
