"""A pool of worker processes that can be killed: a hard wall-clock limit per request, from any thread.

Signal-based timeouts (``signal.alarm``) only work on the main thread of the main interpreter, so
they break in thread pools, Ray actors and event-loop executors. Here the parent enforces the
clock instead: it waits on the worker's pipe until the request's deadline and, when the deadline
passes, kills that worker and starts a replacement. Nothing in the parent ever blocks on the
worker without a deadline, so a hang in a worker is never a hang in the trainer.

Workers are fresh interpreters (``python -m rewardkit_rl.verifiers.worker``), started lazily on
first use, in background threads, and stopped by ``close()`` or at interpreter exit.

``map`` spreads requests over every worker; ``lease`` holds one worker for one caller, so that
several requests run on that worker one after another with nothing else running on it (a canary,
then the request it vouches for). An outcome says what happened and nothing more: whose fault a
timeout, a ``MemoryError``, an exception or a death is, is for the caller to find out (the ``math``
verifier reproduces it), never guessed here from figures the request could influence.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Literal, cast

_SOURCE_ROOT = str(Path(__file__).resolve().parents[2])


class PoolUnavailableError(RuntimeError):
    """The pool is closed, or no worker could be started (the message has the worker's error)."""


OutcomeStatus = Literal["ok", "error", "memory", "timeout", "died"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened to one request: the worker's value (``ok``), the exception it raised
    (``error``; the worker lives on), its ``MemoryError`` (``memory``: the worker's memory limit
    was reached, the worker lives on), a ``timeout`` (the worker was killed) or a death by a signal
    the pool did not send, or a pipe that broke (``died``: the kernel's OOM killer, a crash in C
    code; the worker is replaced)."""

    status: OutcomeStatus
    value: Any = None
    reason: str = ""


class _Worker:
    __slots__ = ("inbox", "outbox", "process")

    def __init__(self, process: subprocess.Popen[bytes], inbox: Connection, outbox: Connection) -> None:
        self.process = process
        self.inbox = inbox  # results come in here
        self.outbox = outbox  # requests go out here

    def stop(self, grace_s: float) -> None:
        """Close the pipes, give the worker ``grace_s`` to exit, then kill it; always reaps it."""
        for connection in (self.outbox, self.inbox):
            with contextlib.suppress(OSError):
                connection.close()
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


_LIVE_POOLS: weakref.WeakSet[KillablePool] = weakref.WeakSet()


@atexit.register
def _close_live_pools() -> None:
    for pool in list(_LIVE_POOLS):
        pool.close()


class KillablePool:
    """Runs ``target(request)`` (a ``module:function`` path) in ``size`` killable worker processes.

    ``map`` is thread-safe: concurrent callers share the workers. Each request gets ``timeout_s``
    of wall clock from the moment a worker receives it.
    """

    def __init__(
        self,
        target: str,
        size: int,
        *,
        memory_limit_mb: int = 0,
        startup_timeout_s: float = 120.0,
    ) -> None:
        if size < 1:
            raise ValueError(f"a pool needs at least one worker, got size={size}")
        self.target = target
        self.size = size
        self.memory_limit_mb = memory_limit_mb
        self.startup_timeout_s = startup_timeout_s
        self._cond = threading.Condition()
        self._idle: list[_Worker] = []
        self._workers: set[_Worker] = set()
        self._starting = 0
        self._start_error: str | None = None
        self._started = False
        self._closed = False
        self._starters: list[threading.Thread] = []
        self.replaced = 0  # workers killed for a timeout or a crash (a diagnostic)

    # -- lifecycle ---------------------------------------------------------------------------

    def _launch(self) -> _Worker:
        to_child_r, to_child_w = os.pipe()
        to_parent_r, to_parent_w = os.pipe()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [_SOURCE_ROOT, env.get("PYTHONPATH")]))
        try:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "rewardkit_rl.verifiers.worker",
                    str(to_child_r),
                    str(to_parent_w),
                    self.target,
                    str(self.memory_limit_mb),
                ],
                pass_fds=(to_child_r, to_parent_w),
                stdin=subprocess.DEVNULL,
                env=env,
            )
        except BaseException:
            for fd in (to_child_r, to_child_w, to_parent_r, to_parent_w):
                os.close(fd)
            raise
        os.close(to_child_r)
        os.close(to_parent_w)
        inbox = Connection(to_parent_r, writable=False)
        return _Worker(process, inbox, Connection(to_child_w, readable=False))

    def _start_one(self) -> None:
        worker = None
        error = None
        try:
            worker = self._launch()
            if not worker.inbox.poll(self.startup_timeout_s):
                error = f"worker did not start within {self.startup_timeout_s:.0f}s"
            else:
                tag, _ = worker.inbox.recv()
                if tag != "ready":
                    error = f"worker sent {tag!r} instead of 'ready'"
        except (EOFError, OSError) as failure:
            code = worker.process.poll() if worker is not None else None
            error = f"worker exited during start-up (exit code {code}): {failure!r}"
        with self._cond:
            self._starting -= 1
            if error is None and worker is not None and not self._closed:
                self._workers.add(worker)
                self._idle.append(worker)
                self._start_error = None
            else:
                self._start_error = error or self._start_error
            self._cond.notify_all()
        if worker is not None and (error is not None or self._closed):
            worker.stop(0.0)

    def _spawn_replacement(self) -> None:
        """Start one worker in the background; caller holds ``_cond``."""
        if self._closed:
            return
        self._starting += 1
        self._starters = [thread for thread in self._starters if thread.is_alive()]
        thread = threading.Thread(target=self._start_one, name="rewardkit-pool-start", daemon=True)
        self._starters.append(thread)
        thread.start()

    def _ensure_started(self) -> None:
        with self._cond:
            if self._closed:
                raise PoolUnavailableError("the worker pool is closed")
            if not self._started:
                self._started = True
                _LIVE_POOLS.add(self)
                for _ in range(self.size):
                    self._spawn_replacement()

    def close(self) -> None:
        """Stop every worker and reap it; idempotent. Requests in flight elsewhere end as errors."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            workers = list(self._workers)
            self._workers.clear()
            self._idle.clear()
            starters = list(self._starters)
            self._cond.notify_all()
        for worker in workers:
            worker.stop(1.0)
        for thread in starters:
            thread.join(timeout=self.startup_timeout_s)

    def pids(self) -> list[int]:
        """Process ids of the live workers (for tests and diagnostics)."""
        with self._cond:
            return sorted(worker.process.pid for worker in self._workers)

    # -- scheduling --------------------------------------------------------------------------

    def _acquire(self, block: bool) -> _Worker | None:
        with self._cond:
            while True:
                if self._closed:
                    raise PoolUnavailableError("the worker pool was closed while requests were waiting")
                if self._idle:
                    return self._idle.pop()
                if not block:
                    return None
                if not self._workers and not self._starting:
                    raise PoolUnavailableError(f"no worker could be started: {self._start_error}")
                self._cond.wait(timeout=1.0)

    def _release(self, worker: _Worker) -> None:
        with self._cond:
            if self._closed or worker not in self._workers:
                stop = True
            else:
                self._idle.append(worker)
                stop = False
                self._cond.notify()
        if stop:
            worker.stop(0.0)

    def _discard(self, worker: _Worker) -> None:
        """Kill a worker that hung or died, and start a replacement."""
        worker.process.kill()
        worker.stop(5.0)
        with self._cond:
            if worker in self._workers:
                self._workers.discard(worker)
                self.replaced += 1
                self._spawn_replacement()

    def _settle(self, worker: _Worker, outcome: Outcome) -> Outcome:
        """Give ``worker`` back after ``outcome``, or replace it when it died."""
        if outcome.status == "died":
            self._discard(worker)
        else:
            self._release(worker)
        return outcome

    def _timed_out(self, worker: _Worker, timeout_s: float) -> Outcome:
        self._discard(worker)
        return Outcome("timeout", reason=f"timeout: no verdict within {timeout_s:g}s")

    def _send(self, worker: _Worker, request: Any) -> Outcome | None:
        """Send ``request``; the outcome when the pipe broke (the worker is replaced), else None."""
        try:
            worker.outbox.send(request)
        except (OSError, ValueError) as error:
            self._discard(worker)
            return Outcome("died", reason=f"worker pipe failed: {error!r}")
        return None

    def map(self, requests: Sequence[Any], timeout_s: float) -> list[Outcome]:
        """Run every request, in parallel over the workers; one ``Outcome`` per request, in order."""
        if not requests:
            return []
        self._ensure_started()
        results: list[Outcome | None] = [None] * len(requests)
        pending = deque(range(len(requests)))
        inflight: dict[Connection, tuple[_Worker, int, float]] = {}  # -> (worker, index, deadline)
        while pending or inflight:
            while pending:
                worker = self._acquire(block=not inflight)
                if worker is None:
                    break
                index = pending.popleft()
                broken = self._send(worker, requests[index])
                if broken is not None:
                    results[index] = broken
                    continue
                inflight[worker.inbox] = (worker, index, time.monotonic() + timeout_s)
            if not inflight:
                continue
            next_deadline = min(entry[2] for entry in inflight.values())
            # wait() returns those of the objects it was given that are ready: here, connections
            ready = cast(
                "list[Connection]", wait(list(inflight), timeout=max(0.0, next_deadline - time.monotonic()))
            )
            for connection in ready:
                worker, index, _ = inflight.pop(connection)
                results[index] = self._settle(worker, _reply(worker))
            now = time.monotonic()
            for connection, (worker, index, deadline) in list(inflight.items()):
                if deadline <= now and not connection.poll(0):
                    del inflight[connection]
                    results[index] = self._timed_out(worker, timeout_s)
        return [result if result is not None else Outcome("error", reason="lost") for result in results]

    @contextlib.contextmanager
    def lease(self) -> Iterator[Lease]:
        """Hold one idle worker (waiting for one) for the block: the requests run through the lease
        run on that worker, one after another, and nothing else runs on it meanwhile. A worker that
        times out or dies under the lease is replaced, and the lease is spent."""
        self._ensure_started()
        held = Lease(self, self._acquire(block=True))
        try:
            yield held
        finally:
            if held.worker is not None:
                self._release(held.worker)


class Lease:
    """One worker of a ``KillablePool`` held by one caller (see ``KillablePool.lease``)."""

    def __init__(self, pool: KillablePool, worker: _Worker | None) -> None:
        self.pool = pool
        self.worker = worker  # None once it timed out or died

    def run(self, request: Any, timeout_s: float) -> Outcome:
        """Run ``request`` on the held worker with ``timeout_s`` of wall clock."""
        worker = self.worker
        if worker is None:
            return Outcome("died", reason="the leased worker was lost earlier")
        broken = self.pool._send(worker, request)
        if broken is not None:
            self.worker = None
            return broken
        if not worker.inbox.poll(timeout_s):
            self.worker = None
            return self.pool._timed_out(worker, timeout_s)
        outcome = _reply(worker)
        if outcome.status == "died":
            self.worker = None
            self.pool._discard(worker)
        return outcome


def _reply(worker: _Worker) -> Outcome:
    """The outcome of the reply waiting on ``worker``'s pipe (``died`` when the pipe closed instead:
    a signal the pool did not send, such as the OOM killer's, or a crash)."""
    try:
        tag, value = worker.inbox.recv()
    except (EOFError, OSError):
        return Outcome("died", reason=f"worker died (exit code {worker.process.poll()})")
    if tag == "ok":
        return Outcome("ok", value)
    status: Literal["memory", "error"] = "memory" if str(value).startswith("MemoryError") else "error"
    return Outcome(status, reason=str(value))
