"""Frames and the plain-data value codec spoken between the sandbox's processes.

Runs inside the sandbox (standard library only; loaded by the runner's bootstrap as the
top-level module ``rk_wire``). Whatever the candidate's process sends is untrusted bytes: the
test process decodes it with ``decode``, which builds only exact built-in values (None, bool,
int, float, complex, str, bytes, list, tuple, dict, set, frozenset) or ``Handle``s naming an
object that stays in the candidate's process. Nothing is ever unpickled or evaluated, so a
decoded value has the built-in ``__eq__``, ``__hash__`` and ``__bool__`` whatever the candidate
wrote.

Encoding: JSON, where None, bool, str, finite floats and ints of at most 15 digits stand for
themselves and every JSON array is tagged by its first element:
``["l"|"t"|"s"|"f", *items]`` list, tuple, set, frozenset; ``["d", k1, v1, ...]`` dict;
``["i", hex]`` any int; ``["x", float.hex]`` any float; ``["c", re, im]`` complex;
``["b", hex]`` bytes; ``["p", id, type_name, callable]`` a handle; ``["m", name]`` a module.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable, Iterator
from typing import Any

MAX_FRAME_BYTES = 32 << 20
MAX_DEPTH = 100
MAX_NODES = 2_000_000
_SMALL_INT = 10**15


class WireError(Exception):
    """A frame or value that breaks the protocol (too big, too deep, malformed, unknown tag)."""


class Unsupported(Exception):
    """A value that cannot cross as plain data (a function, an open file, ...)."""


class Handle:
    """An object that lives in the candidate's process, named by its id there."""

    __slots__ = ("ident", "is_callable", "type_name")

    def __init__(self, ident: int, type_name: str, is_callable: bool) -> None:
        self.ident = ident
        self.type_name = type_name
        self.is_callable = is_callable


# -- frames -----------------------------------------------------------------------------------------


def _read_exact(fd: int, count: int) -> bytes | None:
    chunks = []
    while count:
        chunk = os.read(fd, min(count, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, limit: int = MAX_FRAME_BYTES) -> Any:
    """One JSON frame from ``fd``; None at end of file. Raises WireError past ``limit`` bytes."""
    header = _read_exact(fd, 4)
    if header is None:
        return None
    (size,) = struct.unpack(">I", header)
    if size > limit:
        raise WireError(f"a frame of {size} bytes is over the {limit}-byte limit")
    body = _read_exact(fd, size)
    if body is None:
        return None
    try:
        return json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError) as error:
        raise WireError(f"a frame is not JSON: {type(error).__name__}") from None


def frame(payload: Any) -> bytes:
    """``payload`` as one frame: a 4-byte length, then compact JSON."""
    body = json.dumps(payload, separators=(",", ":")).encode("utf-8")
    if len(body) > MAX_FRAME_BYTES:
        raise WireError(f"a frame of {len(body)} bytes is over the {MAX_FRAME_BYTES}-byte limit")
    return struct.pack(">I", len(body)) + body


def write_frame(fd: int, payload: Any) -> None:
    view = memoryview(frame(payload))
    while view:
        written = os.write(fd, view)
        view = view[written:]


# -- encoding ----------------------------------------------------------------------------------------


class Encoder:
    """Turns a value into wire JSON; ``handle_of(obj)`` names anything that is not plain data.

    Subclasses of the plain types cross as their base value, read through the base type's own
    methods, so an overridden ``__iter__`` or ``__eq__`` changes nothing on the other side.
    """

    def __init__(self, handle_of: Callable[[Any], list] | None = None) -> None:
        self.handle_of = handle_of
        self.nodes = 0

    def encode(self, value: Any, depth: int = 0) -> Any:
        self.nodes += 1
        if depth > MAX_DEPTH or self.nodes > MAX_NODES:
            raise Unsupported(f"a value nested deeper than {MAX_DEPTH} or with over {MAX_NODES} parts")
        kind = type(value)
        if value is None or kind is bool or kind is str:
            return value
        if kind is int:
            return value if -_SMALL_INT < value < _SMALL_INT else ["i", format(value, "x")]
        if kind is float:
            return (
                value if value == value and value not in (float("inf"), float("-inf")) else ["x", value.hex()]
            )
        if kind in (list, tuple, set, frozenset, dict):
            return self._container(kind, value, depth)
        if kind is complex:
            return ["c", self.encode(value.real, depth + 1), self.encode(value.imag, depth + 1)]
        if kind is bytes:
            return ["b", value.hex()]
        return self._other(value, depth)

    def _container(self, kind: type, value: Any, depth: int) -> list:
        step = depth + 1
        if kind is dict:
            out = ["d"]
            for key, item in dict.items(value):
                out.append(self.encode(key, step))
                out.append(self.encode(item, step))
            return out
        tag, iterate = _COLLECTIONS[kind]
        return [tag, *(self.encode(item, step) for item in iterate(value))]

    def _other(self, value: Any, depth: int) -> Any:
        # exact plain types were handled above; here come subclasses, then everything else
        for base, read in _BASE_READERS:
            if isinstance(value, base):
                return self.encode(read(value), depth)
        if self.handle_of is None:
            raise Unsupported(f"a {type(value).__name__} cannot cross as plain data")
        return self.handle_of(value)


# The wire tag of each exact collection type but dict, and that type's own iterator.
_COLLECTIONS: dict[type, tuple[str, Callable[[Any], Iterator[Any]]]] = {
    list: ("l", list.__iter__),
    tuple: ("t", tuple.__iter__),
    set: ("s", set.__iter__),
    frozenset: ("f", frozenset.__iter__),
}
# The base type of each plain type, and how to read a subclass's value through the base's methods.
_BASE_READERS: tuple[tuple[type, Callable[[Any], Any]], ...] = (
    (bool, lambda v: bool(int.__int__(v))),
    (int, int.__int__),
    (float, float.__float__),
    (complex, lambda v: complex(complex.real.__get__(v), complex.imag.__get__(v))),
    (str, str.__str__),
    (bytes, lambda v: bytes(memoryview(v))),
    (list, list.copy),
    (tuple, lambda v: tuple.__getitem__(v, slice(None))),
    (dict, dict.copy),
    (set, set.copy),
    (frozenset, lambda v: frozenset(set.union(set(), v))),
)


# -- decoding ----------------------------------------------------------------------------------------


def decode(
    data: Any,
    make_handle: Callable[[Handle], Any] | None = None,
    make_module: Callable[[str], Any] | None = None,
) -> Any:
    """Build exact built-in values from wire JSON; raises WireError on anything else."""
    return _decode(data, 0, make_handle, make_module)


def _decode(
    data: Any,
    depth: int,
    make_handle: Callable[[Handle], Any] | None,
    make_module: Callable[[str], Any] | None,
) -> Any:
    if depth > MAX_DEPTH:
        raise WireError(f"a value nested deeper than {MAX_DEPTH}")
    kind = type(data)
    if data is None or kind is bool or kind is str or kind is int or kind is float:
        return data
    if kind is not list or not data or type(data[0]) is not str:
        raise WireError(f"unexpected {kind.__name__} in a value")
    tag, rest = data[0], data[1:]
    step = depth + 1
    try:
        if tag in ("l", "t", "s", "f"):
            items = [_decode(item, step, make_handle, make_module) for item in rest]
            return {"l": list, "t": tuple, "s": set, "f": frozenset}[tag](items)
        if tag == "d":
            if len(rest) % 2:
                raise WireError("a dict with an odd number of parts")
            out = {}
            for index in range(0, len(rest), 2):
                key = _decode(rest[index], step, make_handle, make_module)
                out[key] = _decode(rest[index + 1], step, make_handle, make_module)
            return out
        if tag == "i" and len(rest) == 1 and type(rest[0]) is str:
            return int(rest[0], 16)
        if tag == "x" and len(rest) == 1 and type(rest[0]) is str:
            return float.fromhex(rest[0])
        if tag == "c" and len(rest) == 2:
            parts = [_decode(item, step, make_handle, make_module) for item in rest]
            if any(type(part) is not float for part in parts):
                raise WireError("a complex number with parts that are not floats")
            return complex(parts[0], parts[1])
        if tag == "b" and len(rest) == 1 and type(rest[0]) is str:
            return bytes.fromhex(rest[0])
        if tag == "p" and make_handle is not None and len(rest) == 3:
            ident, type_name, is_callable = rest
            if type(ident) is not int or type(type_name) is not str or type(is_callable) is not bool:
                raise WireError("a malformed handle")
            return make_handle(Handle(ident, type_name[:200], is_callable))
        if tag == "m" and make_module is not None and len(rest) == 1 and type(rest[0]) is str:
            return make_module(rest[0])
    except TypeError as error:  # an unhashable key or set member
        raise WireError(f"a malformed value: {error}") from None
    except ValueError as error:
        raise WireError(f"a malformed value: {error}") from None
    raise WireError(f"an unknown or malformed tag {tag[:20]!r}")
