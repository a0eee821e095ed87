"""The entry's arguments as a host plan passes them (`Plan.args`): a scalar as a host scalar
(or compiled in), an array as an input buffer and its length, a pair as its components,
an array of pairs as one array per component, a regular array of arrays as one flat
buffer and its shape.

Not here: splitting a value by these specs (`fcl.runtime.calling.split_arg`).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ScalarArg:
    """An entry argument passed as a host scalar `param`; `value` is set when the
    argument is static (compiled in as a constant: the kernels never see it)."""
    param: str
    ty: str
    name: str = ""
    value: object = None


@dataclass(frozen=True)
class ArrayArg:
    """An entry argument uploaded to input `buffer`; its length is host scalar `length`."""
    buffer: str
    length: str
    ty: str
    name: str = ""


@dataclass(frozen=True)
class PairArg:
    """An entry argument that is a pair: its components are passed as `fst` and `snd`."""
    fst: object
    snd: object
    name: str = ""


@dataclass(frozen=True)
class ZipArg:
    """An array of pairs, passed as one array per component (`fst`, `snd`: array
    arguments of the same length)."""
    fst: object
    snd: object
    name: str = ""


@dataclass(frozen=True)
class NestedArg:
    """A regular array of arrays, passed as one flat row-major buffer (`flat`, whose
    length is rows * cols) and its shape in host scalars `rows` and `cols`."""
    flat: ArrayArg
    rows: str
    cols: str
    name: str = ""


Arg = ScalarArg | ArrayArg | PairArg | ZipArg | NestedArg
