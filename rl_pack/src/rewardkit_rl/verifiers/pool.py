"""A pool of worker processes that can be killed: a hard wall-clock limit per request, from any thread.

Signal-based timeouts (``signal.alarm``) only work on the main thread of the main interpreter, so
they break in thread pools, Ray actors and event-loop executors. Here the parent enforces the
clock instead: it waits on the worker's pipe until the request's deadline and, when the deadline
passes, kills that worker and starts a replacement. Nothing in the parent ever blocks on the
worker without a deadline, so a hang in a worker is never a hang in the trainer.

Workers are fresh interpreters (``python -m rewardkit_rl.verifiers.worker``), started lazily on
first use, in background threads, and stopped by ``close()`` or at interpreter exit.

Each outcome other than ``ok`` says how much of its wall time the worker spent on a CPU
(``cpu_share``, from ``/proc/<pid>/stat`` at send time and at the reply or the kill; None where
``/proc`` cannot be read): a request that timed out while its worker computed is the request's
doing, one that timed out while the worker waited for a CPU is not. A reply (an error) in under
``_MEASURABLE_S`` is too short to tell (clock ticks are 10 ms) and counts as computed. A worker
that dies of a signal the pool did not send (the kernel's OOM killer) is an ``error``.
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
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Literal, cast

_SOURCE_ROOT = str(Path(__file__).resolve().parents[2])
_MEASURABLE_S = 0.1  # shorter replies are too short for the CPU clock (10 ms ticks) to tell
try:
    _TICKS_PER_S = float(os.sysconf("SC_CLK_TCK"))
except (AttributeError, ValueError, OSError):
    _TICKS_PER_S = 100.0


def _cpu_seconds(pid: int) -> float | None:
    """User and system CPU seconds a process has used (None where /proc cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            data = stat.read()
        fields = data[data.rindex(b")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS_PER_S  # utime, stime: fields 14 and 15
    except (OSError, ValueError, IndexError):
        return None


class PoolUnavailableError(RuntimeError):
    """The pool is closed, or no worker could be started (the message has the worker's error)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened to one request: the worker's value, its error, its ``MemoryError``
    (``memory``: the worker's memory limit was reached, the worker lives on) or a timeout.
    ``cpu_share``: CPU seconds over wall seconds the worker spent on it (not for ``ok``; None
    when unknown)."""

    status: Literal["ok", "error", "memory", "timeout"]
    value: Any = None
    reason: str = ""
    cpu_share: float | None = None


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

    def map(self, requests: Sequence[Any], timeout_s: float) -> list[Outcome]:
        """Run every request, in parallel over the workers; one ``Outcome`` per request, in order."""
        if not requests:
            return []
        self._ensure_started()
        results: list[Outcome | None] = [None] * len(requests)
        pending = deque(range(len(requests)))
        # connection -> (worker, request index, deadline, sent at, worker CPU seconds then)
        inflight: dict[Connection, tuple[_Worker, int, float, float, float | None]] = {}
        while pending or inflight:
            while pending:
                worker = self._acquire(block=not inflight)
                if worker is None:
                    break
                index = pending.popleft()
                cpu = _cpu_seconds(worker.process.pid)
                sent = time.monotonic()
                try:
                    worker.outbox.send(requests[index])
                except (OSError, ValueError) as error:
                    results[index] = Outcome("error", reason=f"worker pipe failed: {error!r}")
                    self._discard(worker)
                    continue
                inflight[worker.inbox] = (worker, index, sent + timeout_s, sent, cpu)
            if not inflight:
                continue
            next_deadline = min(entry[2] for entry in inflight.values())
            # wait() returns those of the objects it was given that are ready: here, connections
            ready = cast(
                "list[Connection]", wait(list(inflight), timeout=max(0.0, next_deadline - time.monotonic()))
            )
            for connection in ready:
                worker, index, _, sent, cpu = inflight.pop(connection)
                try:
                    tag, value = connection.recv()
                except (EOFError, OSError):
                    code = worker.process.poll()  # a signal the pool did not send (the OOM killer)
                    results[index] = Outcome("error", reason=f"worker died (exit code {code})")
                    self._discard(worker)
                    continue
                if tag == "ok":
                    results[index] = Outcome("ok", value)
                else:
                    status: Literal["memory", "error"] = (
                        "memory" if str(value).startswith("MemoryError") else "error"
                    )
                    share = _cpu_share(worker, sent, cpu, reply=True)
                    results[index] = Outcome(status, reason=str(value), cpu_share=share)
                self._release(worker)
            now = time.monotonic()
            for connection, (worker, index, deadline, sent, cpu) in list(inflight.items()):
                if deadline <= now and not connection.poll(0):
                    del inflight[connection]
                    share = _cpu_share(worker, sent, cpu, reply=False)
                    results[index] = Outcome(
                        "timeout", reason=f"timeout: no verdict within {timeout_s:g}s", cpu_share=share
                    )
                    self._discard(worker)
        return [result if result is not None else Outcome("error", reason="lost") for result in results]


def _cpu_share(worker: _Worker, sent: float, cpu_then: float | None, *, reply: bool) -> float | None:
    """CPU seconds over wall seconds of the worker since ``sent`` (see the module docstring)."""
    wall = time.monotonic() - sent
    if reply and wall < _MEASURABLE_S:
        return 1.0
    cpu_now = _cpu_seconds(worker.process.pid)
    if cpu_then is None or cpu_now is None:
        return None
    return max(0.0, cpu_now - cpu_then) / wall
