"""Cancelling the work of one request end to end: ``CancelScope`` and ``current()``.

A scope stands for one request (a service call, a ``Reward.score`` call); its owner cancels it
(timeout, client gone). Code working for it, in any thread (the worker runs executor chunks in a
copy of the caller's context), finds it with ``current()`` and checks it (``raise_if_cancelled()``)
or registers a callback that stops what cannot check (kill a sandbox, cancel an HTTP call).
Callbacks run in the thread that cancels, maybe the service's event loop: they must only signal
(SIGKILL, cancel a future), never wait; the working thread cleans up itself.
"""

from __future__ import annotations

import copy
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from rewardkit.contracts.errors import RequestCancelled, RequestTimeout, RewardkitError

__all__ = [
    "CancelScope",
    "RequestCancelled",
    "RequestTimeout",
    "current",
    "entered",
    "run_bounded",
    "timeout_of",
]

log = logging.getLogger("rewardkit.scoring.cancellation")
# What a callback returns is ignored (``future.cancel`` answers a bool); a remover returns nothing.
Callback = Callable[[], object]
Remover = Callable[[], None]
T = TypeVar("T")


class CancelScope:
    """A thread-safe cancellation token for one request, with an optional ``time.monotonic()``
    ``deadline``; passing it cancels nothing unless ``expiring()`` runs or the owner cancels."""

    def __init__(self, *, timeout_s: float | None = None, deadline: float | None = None) -> None:
        if timeout_s is not None:
            if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not timeout_s > 0:
                raise ValueError(f"a timeout is a positive number of seconds, got {timeout_s!r}")
            at = time.monotonic() + timeout_s
            deadline = at if deadline is None else min(deadline, at)
        self.deadline = deadline
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._error: RequestCancelled | None = None
        self._callbacks: dict[int, Callback] = {}
        self._next_key = 0
        self._running: tuple[int, int] | None = None  # (callback key, thread id) being run by cancel
        self._done = threading.Condition(self._lock)

    def __repr__(self) -> str:
        state = f"cancelled: {self._error}" if self._error is not None else "active"
        return f"CancelScope({state}, deadline={self.deadline})"

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    @property
    def error(self) -> RequestCancelled | None:
        """What ``raise_if_cancelled`` raises: the reason given to ``cancel``; None while active."""
        return self._error

    def remaining(self) -> float | None:
        """Seconds until the deadline (at least 0), or None without one."""
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def raise_if_cancelled(self) -> None:
        """Raise the cancellation error if the scope was cancelled; a cheap check between steps. Each
        call raises its own copy: one shared instance would collect every thread's traceback."""
        if self._event.is_set():
            assert self._error is not None
            raise copy.copy(self._error).with_traceback(None)

    def wait(self, timeout_s: float | None) -> bool:
        """Block up to ``timeout_s`` for a cancellation; True when cancelled."""
        return self._event.wait(timeout_s)

    def cancel(self, reason: RequestCancelled | str = "the request was cancelled") -> bool:
        """Cancel once: record why, run every callback (errors logged); False if already cancelled."""
        error = reason if isinstance(reason, RequestCancelled) else RequestCancelled(reason)
        with self._lock:
            if self._error is not None:
                return False
            self._error = error
            keys = list(self._callbacks)
            self._event.set()
        for key in keys:
            # Taken one at a time, so a remover called meanwhile still keeps its callback from running.
            with self._lock:
                callback = self._callbacks.pop(key, None)
                if callback is None:
                    continue
                self._running = (key, threading.get_ident())
            try:
                _run(callback)
            finally:
                with self._lock:
                    self._running = None
                    self._done.notify_all()
        return True

    def time_out(self) -> bool:
        """Cancel with ``RequestTimeout`` naming the timeout (what a passed deadline does)."""
        shown = f"{self._timeout_s:g} s " if self._timeout_s is not None else ""
        message = (
            f"the request timeout ({shown}request_timeout_s) passed before the request was answered; "
            "its work was cancelled. Raise the timeout or send smaller requests"
        )
        return self.cancel(RequestTimeout(message))

    def add_callback(self, callback: Callback) -> Remover:
        """Run ``callback`` on cancellation (at once if already cancelled); returns its remover. Call
        the remover when the work has ended, so a late cancel cannot kill what the same process or
        slot does for someone else by then: once it returns, the callback has run to its end or never
        will (it waits for a callback another thread is running right then)."""
        with self._lock:
            if self._error is None:
                key = self._next_key
                self._next_key += 1
                self._callbacks[key] = callback

                def remove() -> None:
                    with self._lock:
                        self._callbacks.pop(key, None)
                        while self._running is not None and self._running[0] == key:
                            if self._running[1] == threading.get_ident():
                                return  # the callback removing itself
                            self._done.wait()

                return remove
        _run(callback)
        return _nothing

    @contextmanager
    def expiring(self) -> Iterator[CancelScope]:
        """Within the block, a timer thread times the scope out at its deadline (no deadline: none)."""
        if self.deadline is None:
            yield self
            return
        timer = threading.Timer(max(0.0, self.deadline - time.monotonic()), self.time_out)
        timer.daemon = True
        timer.start()
        try:
            yield self
        finally:
            timer.cancel()


class _NeverCancelled(CancelScope):
    """The scope outside any request: never cancelled, keeps no callbacks (nothing would run them)."""

    def cancel(self, reason: RequestCancelled | str = "") -> bool:
        raise RewardkitError("the default cancel scope (no request) cannot be cancelled")

    def add_callback(self, callback: Callback) -> Remover:
        return _nothing


def _nothing() -> None:
    return None


def _run(callback: Callback) -> None:
    try:
        callback()
    except Exception:  # one failing callback must not keep the others from stopping their work
        log.exception("a cancellation callback failed")


NEVER = _NeverCancelled()
_CURRENT: ContextVar[CancelScope] = ContextVar("rewardkit_cancel_scope", default=NEVER)


def current() -> CancelScope:
    """The scope of the request this code works for; a never-cancelled one outside any request."""
    return _CURRENT.get()


@contextmanager
def entered(scope: CancelScope) -> Iterator[CancelScope]:
    """Make ``scope`` the ``current()`` one in this context for the block."""
    token = _CURRENT.set(scope)
    try:
        yield scope
    finally:
        _CURRENT.reset(token)


def timeout_of(*candidates: float | None) -> float | None:
    """The smallest of the given timeouts in seconds (None ones ignored); None when none is given."""
    given = [value for value in candidates if value is not None and not math.isnan(value)]
    return min(given) if given else None


def run_bounded(timeout_s: float | None, call: Callable[[], T]) -> T:
    """``call()`` in a scope of its own, cancelled with the one around it, that times out after
    ``timeout_s`` (None: in the current one). Past the timeout the call raises ``RequestTimeout``
    whatever the work raised or returned: a cancelled request has no answer."""
    if timeout_s is None:
        return call()
    outer = current()
    scope = CancelScope(timeout_s=timeout_s)
    remove = outer.add_callback(lambda: scope.cancel(outer.error or RequestCancelled("cancelled")))
    try:
        with scope.expiring(), entered(scope):
            try:
                result = call()
            except Exception:
                if scope.remaining() == 0:
                    scope.time_out()  # e.g. a capacity wait bounded by the same deadline ended first
                scope.raise_if_cancelled()
                raise
            scope.raise_if_cancelled()
            return result
    finally:
        remove()
