"""``rewardkit serve``: the Reward Service under uvicorn, with a graceful drain on SIGTERM.

On SIGTERM (or Ctrl-C) the server stops accepting connections, ``/readyz`` turns 503, requests
already in flight (waiting for capacity or being scored) finish and are answered, and then the
process exits 0. A second signal, or ``drain_timeout_s``, cuts the drain short.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import uvicorn

from rewardkit.plugin import RewardkitConfig, RewardkitError
from rewardkit_service.app import ServiceSettings, create_app
from rewardkit_service.auth import is_loopback

log = logging.getLogger("rewardkit_service")


class _DrainingServer(uvicorn.Server):
    """uvicorn's server, telling the app it is draining as soon as a shutdown signal arrives, and
    calling ``announce`` once it has started (providers preflighted, the socket accepting)."""

    def __init__(self, config: uvicorn.Config, app: Any, announce: Callable[[], Awaitable[None]]) -> None:
        super().__init__(config)
        self._app = app
        self._announce = announce

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            await self._announce()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # uvicorn re-raises the signal after shutdown (exit status -15); a completed drain exits 0.
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def handle_exit(self, sig: int, frame: Any) -> None:
        self._app.service.draining = True
        super().handle_exit(sig, frame)


class ServeRefused(RewardkitError):
    """The service will not start open (no token) on a non-loopback address by accident."""


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (``port`` 0 picks a free one); bound here so the real port can be printed."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def serve(
    config: RewardkitConfig,
    settings: ServiceSettings,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    drain_timeout_s: float | None = None,
    access_log: bool = False,
    log_level: str = "info",
    insecure_no_auth: bool = False,
) -> int:
    """Run the service until SIGTERM/SIGINT; returns the exit code.

    With no token configured it listens only on a loopback address unless ``insecure_no_auth``
    (``--insecure-no-auth``) says an open service is meant; otherwise ``ServeRefused``.
    """
    if not settings.tokens and not insecure_no_auth and not is_loopback(host):
        raise ServeRefused(
            f"refusing to serve on {host} without authentication: it is not a loopback address and "
            "no token is configured (REWARDKIT_TOKENS, --tokens-file or REWARDKIT_TOKENS_FILE). Configure "
            "a token, listen on 127.0.0.1, or pass --insecure-no-auth to run an open service on purpose"
        )
    app = create_app(config, settings)
    sock = bind(host, port)
    actual_port = sock.getsockname()[1]
    uv_config = uvicorn.Config(
        app,
        log_level=log_level,
        access_log=access_log,
        lifespan="on",
        # uvicorn annotates int, but only passes it to asyncio.wait_for, which takes float seconds
        timeout_graceful_shutdown=drain_timeout_s,  # type: ignore[arg-type]
        # The default (64 KiB) is far below a batch of rollouts; the app enforces the real limit.
        h11_max_incomplete_event_size=None,
        server_header=False,
    )
    shown = f"[{host}]" if ":" in host else host

    async def announce() -> None:
        # Printed once providers are preflighted and the socket accepts, for scripts and tests to read.
        auth = "on" if settings.tokens else "OFF (no token configured: anyone who can connect may score)"
        print(f"rewardkit serve: listening on http://{shown}:{actual_port} (auth: {auth})", flush=True)

    server = _DrainingServer(uv_config, app, announce)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    if not server.started:
        print("rewardkit serve: startup failed (see the error above)", file=sys.stderr, flush=True)
        return 1
    print("rewardkit serve: drained and stopped", flush=True)
    return 0
