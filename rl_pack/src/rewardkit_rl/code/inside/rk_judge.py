"""The test process: runs the task's tests and decides every verdict.

Runs inside the sandbox under its own unprivileged uid, never the candidate's, so the candidate
can neither signal it nor read its memory. The tests, the expected values and the result
descriptor live only here. The candidate's functions, classes and objects appear in the tests'
namespace as ``CandidateObject`` proxies: calling one, reading an attribute, iterating or taking
its length sends a request to the candidate's process and gets plain data back. A proxy compares,
hashes and tests for truth like a bare ``object`` (equal only to itself, always truthy), so a
custom ``__eq__``, ``__hash__`` or ``__bool__`` in the candidate's code decides nothing here.

Verdict lines on the result descriptor: ``program <status> <detail>``, ``test <i> <status>``
and ``end``; a run without ``end`` counts as unfinished.
"""

from __future__ import annotations

import builtins
import importlib
import os
import sys
from types import ModuleType
from typing import Any

import rk_wire


class CandidateError(Exception):
    """An exception raised in the candidate's process that is not a built-in one."""


class CandidateGone(Exception):
    """The candidate's process stopped answering (it exited, crashed or broke the protocol)."""


class UnsupportedCase(Exception):
    """The test does something that cannot be judged across processes; the case is skipped."""


class Link:
    """The request/reply channel to the candidate's process."""

    def __init__(self, calls_fd: int, replies_fd: int) -> None:
        self.calls_fd = calls_fd
        self.replies_fd = replies_fd
        self.broken: str | None = None

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.broken:
            raise CandidateGone(self.broken)
        try:
            rk_wire.write_frame(self.calls_fd, request)
            reply = rk_wire.read_frame(self.replies_fd)
        except (OSError, rk_wire.WireError) as error:
            self.broken = f"the candidate's process broke the protocol: {error}"
            raise CandidateGone(self.broken) from None
        if reply is None:
            self.broken = "the candidate's process exited"
            raise CandidateGone(self.broken)
        # Every reply holds a value or an exception; anything else (a stray frame a process the
        # candidate forked wrote into the pipe) is no answer to this request.
        if type(reply) is not dict or ("v" not in reply and "e" not in reply):
            self.broken = "the candidate's process sent a malformed reply"
            raise CandidateGone(self.broken)
        return reply

    def value(self, request: dict[str, Any], mutable_args: dict[int, Any] | None = None) -> Any:
        reply = self.ask(request)
        if "e" in reply:
            raise _exception_from(reply["e"])
        try:
            value = decode(reply.get("v"), self)
            if mutable_args:
                _write_back(mutable_args, reply.get("m"), self)
        except rk_wire.WireError as error:
            raise CandidateGone(f"the candidate's process sent a malformed value: {error}") from None
        return value


def _exception_from(described: Any) -> BaseException:
    if type(described) is not list or len(described) != 2 or not all(type(p) is str for p in described):
        return CandidateGone("the candidate's process sent a malformed exception")
    name, message = described
    if name == "StopIteration":
        return StopIteration()
    found = getattr(builtins, name, None)
    # Only plain built-in exceptions are rebuilt; SystemExit, KeyboardInterrupt and anything
    # the candidate defined arrive as CandidateError, which a test cannot mistake for success.
    if isinstance(found, type) and issubclass(found, Exception) and found.__module__ == "builtins":
        try:
            return found(message)
        except Exception:
            pass
    return CandidateError(f"{name}: {message}")


def _plain_only(_: object) -> Any:
    raise rk_wire.WireError("a mutated argument came back holding a module or an object of the candidate's")


def _write_back(args: dict[int, Any], mutated: Any, link: Link) -> None:
    """Put the candidate's in-place changes into the test's own arguments: plain data only.

    A module or a handle written into a test's list would make the test's next call skip
    instead of fail (it cannot be sent back), so such a reply fails the call that sent it.
    """
    if type(mutated) is not dict:
        raise rk_wire.WireError("malformed mutation record")
    for position, arg in args.items():
        if str(position) not in mutated:
            continue
        after = rk_wire.decode(mutated[str(position)], _plain_only, _plain_only)
        if type(after) is not type(arg):
            raise rk_wire.WireError("a mutated argument changed type")
        if after != arg:
            if type(arg) is list:
                arg[:] = after
            else:
                arg.clear()
                arg.update(after)


def decode(data: Any, link: Link) -> Any:
    return rk_wire.decode(data, lambda handle: CandidateObject(link, handle), _stdlib_module)


def _stdlib_module(name: str) -> ModuleType:
    # The test process imports its own clean copy; the candidate's (maybe patched) one stays there.
    top = name.split(".")[0]
    if top not in sys.stdlib_module_names:
        raise rk_wire.WireError(f"module {name!r} is not in the standard library")
    try:
        return importlib.import_module(name)
    except Exception as error:
        raise rk_wire.WireError(f"module {name!r} does not import: {error}") from None


class _Args:
    """Test-side arguments turned into wire data; lists, dicts and sets are kept for write-back."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.encoder = rk_wire.Encoder(self._handle)

    def _handle(self, value: object) -> list:
        if type(value) is CandidateObject:
            return ["p", _ident(value), "", False]
        raise UnsupportedCase(f"a test passes a {type(value).__name__} to the candidate's code")

    def encode(self, value: object) -> Any:
        self.encoder.nodes = 0
        try:
            return self.encoder.encode(value)
        except rk_wire.Unsupported as error:
            raise UnsupportedCase(str(error)) from None


def _ident(proxy: CandidateObject) -> int:
    return object.__getattribute__(proxy, "_rk_handle").ident


def _link(proxy: CandidateObject) -> Link:
    return object.__getattribute__(proxy, "_rk_link")


class CandidateObject:
    """A function, class or object of the candidate's, reached only through requests."""

    __slots__ = ("_rk_handle", "_rk_link")

    def __init__(self, link: Link, handle: rk_wire.Handle) -> None:
        object.__setattr__(self, "_rk_link", link)
        object.__setattr__(self, "_rk_handle", handle)

    def _ask(self, op: str, **fields: Any) -> Any:
        return _link(self).value({"op": op, "target": _ident(self), **fields})

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        link = _link(self)
        wire = _Args(link)
        request = {
            "op": "call",
            "target": _ident(self),
            "args": [wire.encode(arg) for arg in args],
            "kwargs": {str(name): wire.encode(arg) for name, arg in kwargs.items()},
        }
        mutable = {i: arg for i, arg in enumerate(args) if type(arg) in (list, dict, set)}
        return link.value(request, mutable)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_rk_"):
            raise AttributeError(name)
        return self._ask("getattr", name=name)

    def __setattr__(self, name: str, value: object) -> None:
        raise UnsupportedCase("a test sets an attribute on a candidate object")

    def __iter__(self) -> Any:
        return self._ask("iter")

    def __next__(self) -> Any:
        return self._ask("next")

    def __len__(self) -> int:
        value = self._ask("len")
        if type(value) is not int or value < 0:
            raise TypeError("len() of a candidate object did not give a non-negative int")
        return value

    def __getitem__(self, key: object) -> Any:
        return self._ask("getitem", key=_Args(_link(self)).encode(key))

    def __str__(self) -> str:
        value = self._ask("str")
        if type(value) is not str:
            raise TypeError("str() of a candidate object did not give a str")
        return value

    def __repr__(self) -> str:
        value = self._ask("repr")
        if type(value) is not str:
            raise TypeError("repr() of a candidate object did not give a str")
        return value

    def __bool__(self) -> bool:
        # Truthy like a bare object: the candidate's own __bool__ or __len__ is never asked, so
        # it cannot answer differently depending on which assert is looking.
        return True

    __hash__ = object.__hash__

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other


def judge(request: dict[str, Any], calls_fd: int, replies_fd: int, result_fd: int) -> None:
    """Run every test against the candidate behind ``calls_fd``/``replies_fd``; report on ``result_fd``."""

    def report(*fields: object) -> None:
        os.write(result_fd, (" ".join(str(field) for field in fields) + "\n").encode("ascii", "replace"))

    link = Link(calls_fd, replies_fd)
    try:
        hello = rk_wire.read_frame(replies_fd)
    except rk_wire.WireError:
        hello = None
    if type(hello) is not dict or hello.get("load") not in ("ok", "compile_error", "runtime_error"):
        report("program", "no_report", "-")
        report("end")
        return
    if hello["load"] != "ok":
        why = hello.get("why")
        name = why[0] if type(why) is list and why and type(why[0]) is str else "-"
        report("program", hello["load"], _token(name))
        report("end")
        return
    namespace = {"__name__": "__rk_tests__", "__builtins__": builtins}
    tests = [compile(source, f"<test {index}>", "exec") for index, source in enumerate(request["tests"])]
    try:
        if request["trusted"]:
            exec(compile(request["trusted"], "<task code>", "exec"), namespace)
        exports = hello.get("exports")
        if type(exports) is not dict:
            raise CandidateGone("the candidate's process sent malformed exports")
        wanted = set(request["expose"])
        for name, data in exports.items():
            # only the names the host allowed: never a builtin or a module the tests rely on
            if type(name) is str and name in wanted:
                try:
                    namespace[name] = decode(data, link)
                except rk_wire.WireError:
                    continue
        if request["setup"]:
            exec(compile(request["setup"], "<test setup>", "exec"), namespace)
    except BaseException as error:
        report("program", "setup_error", _token(type(error).__name__))
        report("end")
        return
    report("program", "ok", "-")
    for index, test in enumerate(tests):
        try:
            exec(test, namespace)
        except AssertionError:
            report("test", index, "fail")
        except UnsupportedCase as error:
            report("test", index, "skip:" + _token(str(error)))
        except CandidateGone:
            report("test", index, "error:CandidateGone")
        except BaseException as error:
            report("test", index, "error:" + _token(type(error).__name__))
        else:
            report("test", index, "pass")
    report("end")


def _token(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in text[:120]) or "-"
