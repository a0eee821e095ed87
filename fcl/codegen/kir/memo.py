"""The machinery under the kernel-IR node classes (nodes.py), apart from the grammar.

A node is immutable, so what the passes ask of every node can be worked out once
and kept: `node_property` (a cached property), `_keep_hash` (a hash kept in the
node, and an equality that answers from identity or the hashes where it can) and
`_fields_state` (pickling keeps the fields only, never what was worked out from
them).  Consumes node classes (frozen dataclasses); knows none of them by name.
Not here: the nodes, their kinds and children (nodes.py).
"""
from __future__ import annotations

import dataclasses
import functools
import operator


class node_property:
    """A value a node works out once and keeps (in its `__dict__`): functools.cached_property
    without the lock that Python 3.11's takes on every first access."""

    def __init__(self, f):
        self.f = f
        self.__doc__ = f.__doc__

    def __set_name__(self, owner, name: str):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.f(obj)
        return value


@functools.cache
def _field_names(cls) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def _keep_hash(cls):
    """Give node class `cls` a hash worked out once (kept in the node's `__dict__`) and an
    equality that answers from identity or from the hashes where it can: the dataclass's own
    hash and `==` walk the whole tree on every call, and the passes hash and compare
    subtrees (memo tables, common-subexpression keys, `changed?` tests) all the time.
    A hash depends on the process (strings'), so it is never pickled (`Expr.__getstate__`)."""
    names = _field_names(cls)
    get = operator.attrgetter(*names) if len(names) > 1 else (lambda e, g=operator.attrgetter(names[0]): (g(e),))

    def __hash__(self):
        h = self.__dict__.get("_hash")
        if h is None:
            h = self.__dict__["_hash"] = hash((cls, get(self)))
        return h

    def __eq__(self, other):
        if self is other:
            return True
        if other.__class__ is not cls:
            return NotImplemented
        return hash(self) == hash(other) and get(self) == get(other)
    cls.__hash__, cls.__eq__ = __hash__, __eq__


def _fields_state(node) -> dict:
    """Pickling keeps the fields, not what the node worked out from them (a kept hash
    holds only in the process that worked it out: strings hash differently in each)."""
    return {name: node.__dict__[name] for name in _field_names(type(node))}
