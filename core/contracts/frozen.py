"""Deep-freezing of JSON values and type-strict structural equality.

Common inputs (prompt, reference) reach providers frozen and detached from the caller's storage,
so no provider can mutate a trajectory or another provider's request. Equality is type-strict:
JSON ``1``, ``1.0`` and ``true`` are three different values, which stops one malformed candidate
from borrowing another's superficially equal reference."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

JSONValue = Any
_SCALARS = (str, int, float, bool, type(None))


class NotJSONError(ValueError):
    """A value is not JSON-compatible; ``path`` says where inside it."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def freeze(value: JSONValue, path: str = "$") -> JSONValue:
    """Return a read-only deep copy of a JSON value: mappings become read-only, sequences tuples.
    Raises ``NotJSONError`` for non-string keys, non-finite floats and non-JSON types."""
    kind = type(value)
    if kind is float and not math.isfinite(value):
        raise NotJSONError(path, f"non-finite number {value!r}")
    if kind in _SCALARS:
        return value
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise NotJSONError(path, f"mapping key {key!r} is not a string")
            out[key] = freeze(item, f"{path}.{key}")
        return MappingProxyType(out)
    if isinstance(value, (list, tuple)):
        return tuple(freeze(item, f"{path}[{index}]") for index, item in enumerate(value))
    raise NotJSONError(path, f"{kind.__name__} is not a JSON type")


def thaw(value: JSONValue) -> JSONValue:
    """Return a mutable, JSON-serialisable copy of a (possibly frozen) JSON value."""
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(item) for item in value]
    return value


def strictly_equal(left: JSONValue, right: JSONValue) -> bool:
    """Structural equality that also requires equal JSON types at every level (lists and tuples
    are both arrays, dicts and read-only mappings both objects)."""
    if left is right:
        return True
    left_kind, right_kind = type(left), type(right)
    if left_kind is right_kind and left_kind in _SCALARS:
        return bool(left == right)
    if isinstance(left, Mapping):
        if not isinstance(right, Mapping) or len(left) != len(right):
            return False
        return all(key in right and strictly_equal(item, right[key]) for key, item in left.items())
    if isinstance(left, (list, tuple)):
        if not isinstance(right, (list, tuple)) or len(left) != len(right):
            return False
        return all(strictly_equal(a, b) for a, b in zip(left, right))
    return False
