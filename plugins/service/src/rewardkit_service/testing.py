"""Run ``rewardkit serve`` as a child process and know its URL: for tests, benchmarks and scripts.

``ServerProcess`` starts the server, waits for the line announcing its address (so the port may be
0, chosen free by the server), and always stops it on exit: SIGTERM for a graceful drain, then
SIGKILL if it has not exited in time, so no server outlives its caller.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

_ANNOUNCE = "rewardkit serve: listening on "
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM when the parent dies, even by SIGKILL.

    Without it a test run killed by a timeout leaves its servers running (seen here).
    """
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class ServerProcess:
    """``with ServerProcess(config_path, overrides) as server: server.url``."""

    def __init__(
        self,
        config: str | os.PathLike[str],
        overrides: Sequence[str] = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        start_timeout_s: float = 60.0,
    ) -> None:
        self.command = [sys.executable, "-m", "rewardkit.cli", "serve", str(config), *overrides,
                        "--host", host, "--port", str(port), *args]  # fmt: skip
        self.env = {**os.environ, **(env or {})}
        self.start_timeout_s = start_timeout_s
        self.url: str = ""
        self.auth: str = ""  # "on" or "OFF", from the start-up line
        self.process: subprocess.Popen[str] | None = None
        self.lines: list[str] = []
        self._announced = threading.Event()
        self._reader: threading.Thread | None = None

    @property
    def output(self) -> str:
        """Everything the server printed so far (stdout and stderr together)."""
        return "".join(self.lines)

    def start(self) -> ServerProcess:
        """Start the server and wait for its address; a started server is returned as it is."""
        if self.process is not None:
            return self
        self.process = subprocess.Popen(
            self.command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            env=self.env,
            preexec_fn=_die_with_parent,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + self.start_timeout_s
        while not self._announced.wait(0.05):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"the Reward Service did not start (exit code {self.process.returncode}); "
                    f"command {self.command}; output:\n{self.output}"
                )
        return self

    def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            if line.startswith(_ANNOUNCE) and not self._announced.is_set():
                self.url = line[len(_ANNOUNCE) :].split()[0]
                self.auth = (
                    line.rsplit("(auth: ", 1)[-1].split(")", 1)[0].split()[0] if "(auth: " in line else ""
                )
                self._announced.set()

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def terminate(self) -> None:
        """Send SIGTERM (graceful drain) without waiting."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def wait(self, timeout_s: float = 30.0) -> int:
        assert self.process is not None
        code = self.process.wait(timeout_s)
        if self._reader is not None:
            self._reader.join(5)
        return code

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """SIGTERM, wait up to ``timeout_s`` for the drain, then SIGKILL; returns the exit code."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if self._reader is not None:
            self._reader.join(5)
        return self.process.returncode

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()


def write_config(folder: Path, text: str, name: str = "service.yaml") -> Path:
    """Write a YAML configuration for a server into ``folder``; returns its path."""
    path = Path(folder) / name
    path.write_text(text, encoding="utf-8")
    return path
