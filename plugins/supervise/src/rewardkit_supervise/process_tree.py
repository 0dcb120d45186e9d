"""A command and everything it starts, from start to the last PID's end (``docs/serving.md``).

``ProcessTree`` runs the command in a new session, so every process it forks (even one that leaves
the process group) is signalled on ``stop``: SIGTERM, a grace period, then SIGKILL, as vLLM needs
(it ignores SIGTERM while its engine starts; its workers survive a SIGKILL of the main PID). If the
owner dies no ``finally`` runs: a watchdog (``sessions.py``) holding a pipe from the owner kills the
session when the pipe closes, and the main process gets SIGKILL as its parent-death signal."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType

from rewardkit.plugin import RewardkitError
from rewardkit_supervise.sessions import end_session, session_pids

_PR_SET_PDEATHSIG = 1
_WATCHDOG = str(Path(__file__).with_name("sessions.py"))


class StartError(RewardkitError):
    """The command exited or did not become ready in time; the message ends with its log's tail."""


def _parent_death_kills() -> None:
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class ProcessTree:
    """``with ProcessTree(argv, log_path=...) as tree: tree.wait_ready(check)``."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        log_path: str | os.PathLike[str],
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        name: str = "process",
        grace_s: float = 10.0,
    ) -> None:
        self.argv = [str(part) for part in argv]
        self.log_path = Path(log_path)
        self.env = dict(env) if env is not None else dict(os.environ)
        self.cwd = cwd
        self.name = name
        self.grace_s = grace_s
        self.process: subprocess.Popen[bytes] | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RewardkitError(f"{self.name} was not started")
        return self.process.pid

    def start(self) -> ProcessTree:
        if self.process is not None:
            return self
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            try:
                self.process = subprocess.Popen(
                    self.argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=self.env,
                    cwd=self.cwd,
                    start_new_session=True,
                    preexec_fn=_parent_death_kills,
                )
            except OSError as error:
                raise StartError(f"{self.name}: cannot start {self.argv[0]}: {error}") from None
        self._watchdog = subprocess.Popen(
            [sys.executable, "-I", "-S", _WATCHDOG, str(self.process.pid), str(self.grace_s)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        return self

    def pids(self) -> list[int]:
        """Every live process of the tree now (the session)."""
        return session_pids(self.process.pid) if self.process is not None else []

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_bytes()[-64_000:].decode("utf-8", "replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def wait_ready(self, check: Callable[[], bool], timeout_s: float, interval_s: float = 0.5) -> None:
        """Poll ``check`` until it is true; fail (and stop the tree) on exit or timeout."""
        process = self.process
        if process is None:
            raise RewardkitError(f"{self.name} was not started")
        started = time.monotonic()
        deadline = started + timeout_s
        while True:
            code = process.poll()
            if code is not None:
                self.stop()
                raise StartError(
                    f"{self.name} exited with code {code} after {time.monotonic() - started:.1f} s "
                    f"before it was ready; log {self.log_path}, last lines:\n{self.log_tail()}"
                )
            with contextlib.suppress(Exception):  # an exception: not answering yet
                if check():
                    return
            if time.monotonic() > deadline:
                self.stop()
                raise StartError(
                    f"{self.name} was not ready after {timeout_s:g} s and was stopped; "
                    f"log {self.log_path}, last lines:\n{self.log_tail()}"
                )
            time.sleep(interval_s)

    def stop(self) -> int | None:
        """End every process of the tree: SIGTERM, ``grace_s``, SIGKILL. Returns the main exit code."""
        process = self.process
        if process is None:
            return None
        end_session(process.pid, self.grace_s)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(5)
        if self._watchdog is not None:
            with contextlib.suppress(OSError):
                assert self._watchdog.stdin is not None
                self._watchdog.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._watchdog.wait(10)
            self._watchdog = None
        return process.returncode

    def __enter__(self) -> ProcessTree:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()
