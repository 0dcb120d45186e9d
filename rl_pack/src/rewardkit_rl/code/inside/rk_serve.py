"""The candidate's side: load the program, then answer calls from the test process as data.

Runs inside the sandbox in the candidate's own process (its unprivileged uid, its rlimits). It
holds no verdict and no expected value: it only executes what the test process asks for and
sends the outcome back through ``rk_wire``. The candidate can rewrite anything here (it shares
this interpreter); the most that buys it is a wrong or missing answer, which fails its tests.

Requests (one JSON frame each): ``{"op": "call", "target": id, "args": [...], "kwargs": {...}}``
and ``getattr`` (``name``), ``iter``, ``next``, ``len``, ``str``, ``repr``, ``getitem``
(``key``). Replies: ``{"v": value}`` or ``{"e": [exception type name, message]}``; a call
also returns ``"m": {position: value}``, the list, dict and set arguments as they are after the
call, so a test that checks in-place mutation sees it.
"""

from __future__ import annotations

import sys
from typing import Any

import rk_wire

_MUTABLE = (list, dict, set)


class Server:
    def __init__(self, namespace: dict[str, Any]) -> None:
        self.objects: dict[int, Any] = {}  # handle -> the object it names
        self.ids: dict[int, int] = {}  # id(object) -> its handle
        self.encoder = rk_wire.Encoder(self.handle_of)
        self.namespace = namespace

    def handle_of(self, obj: object) -> list:
        if isinstance(obj, type(sys)):
            return ["m", obj.__name__]
        key = id(obj)
        ident = self.ids.get(key)
        if ident is None:
            ident = len(self.objects) + 1
            self.objects[ident] = obj  # kept alive, so its id() is never reused
            self.ids[key] = ident
        return ["p", ident, type(obj).__name__, callable(obj)]

    def encode(self, value: object) -> Any:
        self.encoder.nodes = 0
        return self.encoder.encode(value)

    def exports(self, expose: list[str]) -> dict[str, Any]:
        names = {}
        for name in expose:
            if name in self.namespace:
                try:
                    names[name] = self.encode(self.namespace[name])
                except rk_wire.Unsupported:
                    continue
        return names

    def _resolve(self, data: Any) -> Any:
        return rk_wire.decode(data, lambda handle: self.objects[handle.ident])

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request["op"]
        target = self.objects[request["target"]]
        if op == "call":
            args = [self._resolve(arg) for arg in request["args"]]
            kwargs = {name: self._resolve(arg) for name, arg in request["kwargs"].items()}
            result = target(*args, **kwargs)
            mutated = {str(i): self.encode(a) for i, a in enumerate(args) if type(a) in _MUTABLE}
            return {"v": self.encode(result), "m": mutated}
        if op == "getattr":
            return {"v": self.encode(getattr(target, request["name"]))}
        if op == "iter":
            return {"v": self.encode(iter(target))}
        if op == "next":
            return {"v": self.encode(next(target))}
        if op == "len":
            return {"v": self.encode(len(target))}
        if op == "str":
            return {"v": self.encode(str(target))}
        if op == "repr":
            return {"v": self.encode(repr(target))}
        if op == "getitem":
            return {"v": self.encode(target[self._resolve(request["key"])])}
        raise rk_wire.WireError(f"unknown op {op!r}")


def _describe(error: BaseException) -> list[str]:
    try:
        message = str(error)[:500]
    except BaseException:
        message = "(unprintable)"
    return [type(error).__name__[:100], message]


def serve(program: str, module_name: str, expose: list[str], calls_fd: int, replies_fd: int) -> None:
    """Run ``program``, report how loading went, then answer calls until the test process leaves."""
    namespace = {"__name__": module_name, "__builtins__": __builtins__, "__file__": "solution.py"}
    try:
        code = compile(program, "solution.py", "exec")
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError) as error:
        rk_wire.write_frame(replies_fd, {"load": "compile_error", "why": _describe(error)})
        return
    try:
        exec(code, namespace)
    except BaseException as error:  # SystemExit too: a program that exits before its tests fails
        rk_wire.write_frame(replies_fd, {"load": "runtime_error", "why": _describe(error)})
        return
    server = Server(namespace)
    rk_wire.write_frame(replies_fd, {"load": "ok", "exports": server.exports(expose)})
    while True:
        request = rk_wire.read_frame(calls_fd)
        if request is None:
            return
        try:
            reply = server.answer(request)
        except BaseException as error:  # KeyboardInterrupt, SystemExit: reported, not obeyed
            reply = {"e": _describe(error)}
        try:  # noqa: SIM105 (the candidate may have patched contextlib)
            sys.stdout.flush()
        except BaseException:
            pass
        try:
            rk_wire.write_frame(replies_fd, reply)
        except rk_wire.WireError as error:
            rk_wire.write_frame(replies_fd, {"e": _describe(error)})
