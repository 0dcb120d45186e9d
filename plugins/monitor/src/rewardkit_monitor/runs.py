"""One monitor per client run, for the Reward Service: a request naming its run (the
``X-Rewardkit-Run`` header) is observed by that run's monitor; a request without one is not.

A run belongs to the client that opened it (the service names a client by its token): another
client is refused with ``RunOwnedElsewhere``, so it can neither feed the run's monitor, raise its
alarm nor write its stop file. Ownership outlives the run's monitor: it is kept for the life of the
process and, with a ``logdir``, in the run's folder (a salted, stretched digest, never the token),
so a restarted service still knows whose run it is.

Each client watches at most ``max_runs`` runs at once, whatever other clients do. An active run is
never closed to make room: only one idle for ``idle_s`` (its trainer ended or crashed: a service is
never told), the least recently seen first; with none, the client's new run is refused with
``TooManyRuns``. We keep active runs open rather than restore them from their log because a
monitor's detection state (warm-ups, sums, fitted exchanges, per-prompt memory) is more than its log
records: a run closed and rebuilt would start its detectors afresh. A closed run that comes back
continues its log (appended, never re-created) and keeps its alarms (``RewardMonitor(resume=True)``);
its detectors warm up again.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rewardkit.plugin import ObservedBatch, RewardkitConfig, RewardkitError
from rewardkit_monitor.monitor import RewardMonitor, build_reference
from rewardkit_monitor.settings import PREFIX, MonitorSettings

logger = logging.getLogger("rewardkit.monitor")

# Runs one client watches at once.
MAX_RUNS = 64
# A run not seen for this long is over (a training step takes minutes): it may be closed for a new one.
IDLE_S = 3600.0
# A run id becomes a folder name under rl.monitor.logdir.
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
# The run's owner, in its log folder: a salted PBKDF2 digest of the client's name.
OWNER_NAME = ".owner.json"
OWNER_ITERATIONS = 20_000  # about 15 ms, once per run id and process


class RunOwnedElsewhere(RewardkitError):
    """A client named a run that another client opened (the service answers 403)."""

    def __init__(self, run_id: str) -> None:
        super().__init__(
            f"run {run_id!r} belongs to another client token; only the token that opened it may post "
            "under it: name a run id of your own"
        )
        self.run_id = run_id


class TooManyRuns(RewardkitError):
    """A client at its cap of active runs named a new one (the service answers 429)."""

    def __init__(self, run_id: str, max_runs: int, idle_s: float) -> None:
        super().__init__(
            f"cannot open run {run_id!r}: this client token already watches {max_runs} runs, each seen "
            f"in the last {idle_s:g} s; post under one of them, wait until one is idle that long, or "
            "use another token"
        )
        self.run_id = run_id
        self.max_runs = max_runs


@dataclass
class _Run:
    monitor: RewardMonitor
    client: str | None
    seen: float  # the clock when a batch last named it
    observing: int = 0  # batches being observed now: a run with any is never closed


class RunMonitors:
    """The monitors of the runs a service scores for, keyed by run id; each logs to
    ``LOGDIR/<run id>/monitor.jsonl`` and writes its stop file at ``<stop file's folder>/<run
    id>/<stop file's name>``. They share one reference grader, built here.

    ``client`` names who asks (the service: a digest of the request's token); None, for a service
    without tokens, is one owner for all. ``clock`` (seconds) is for tests."""

    def __init__(
        self,
        config: RewardkitConfig,
        max_runs: int = MAX_RUNS,
        idle_s: float = IDLE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_runs < 1:
            raise ValueError(f"max_runs must be at least 1, got {max_runs}")
        self.settings = config.section(PREFIX, MonitorSettings) or MonitorSettings()
        self.max_runs = max_runs
        self.idle_s = idle_s
        self.reference = build_reference(config, self.settings)
        self._clock = clock
        self._runs: OrderedDict[str, _Run] = OrderedDict()  # open runs, least recently seen first
        self._owners: dict[str, str | None] = {}  # every run id claimed in this process
        self._lock = threading.Lock()
        self._closed = False

    def __len__(self) -> int:
        return len(self._runs)

    def __contains__(self, run_id: str) -> bool:
        return run_id in self._runs

    def monitor(self, run_id: str, client: str | None = None) -> RewardMonitor:
        """The run's monitor, opened at its first call (the service's, before scoring).
        ``RewardkitError`` for an id that cannot name a folder (letters, digits, ``_ . -``, at most
        128), ``RunOwnedElsewhere`` for a run another client opened, ``TooManyRuns`` past the
        client's cap."""
        _check_run_id(run_id)
        with self._lock:
            return self._open(run_id, client).monitor

    def observe(self, run_id: str, batch: ObservedBatch, client: str | None = None) -> dict[str, float]:
        """The run's monitor observes ``batch``; the metrics it returns."""
        _check_run_id(run_id)
        with self._lock:
            run = self._open(run_id, client)
            run.observing += 1
        try:
            return run.monitor.observe(batch)
        finally:
            with self._lock:
                run.observing -= 1
                run.seen = self._clock()  # a long batch does not make its run look idle

    def close(self) -> None:
        """Close every run's monitor and the shared reference grader."""
        with self._lock:
            self._closed = True
            runs, self._runs = list(self._runs.values()), OrderedDict()
        for run in runs:
            run.monitor.close()
        if self.reference is not None:
            self.reference.close()
            self.reference = None

    def _check_open(self) -> None:
        if self._closed:
            raise RewardkitError("these run monitors are closed")

    def _open(self, run_id: str, client: str | None) -> _Run:
        """The run, opened if needed and made the most recent; the caller holds the lock."""
        self._check_open()
        self._claim(run_id, client)
        now = self._clock()
        run = self._runs.get(run_id)
        if run is not None:
            self._runs.move_to_end(run_id)
            run.seen = now
            return run
        self._make_room(run_id, client, now)
        monitor = RewardMonitor(self._settings_of(run_id), self.reference, owns_reference=False, resume=True)
        run = self._runs[run_id] = _Run(monitor, client, now)
        return run

    def _make_room(self, run_id: str, client: str | None, now: float) -> None:
        """Close the client's least recently seen idle run when it is at its cap, else refuse. Under
        the lock, so a closed run that comes back finds everything its monitor knew in its log."""
        mine = [(key, run) for key, run in self._runs.items() if run.client == client]
        if len(mine) < self.max_runs:
            return
        for key, run in mine:  # least recently seen first
            if not run.observing and now - run.seen >= self.idle_s:
                del self._runs[key]
                run.monitor.close()
                return
        raise TooManyRuns(run_id, self.max_runs, self.idle_s)

    def _claim(self, run_id: str, client: str | None) -> None:
        if run_id in self._owners:
            if self._owners[run_id] != client:
                raise RunOwnedElsewhere(run_id)
            return
        if client is not None and self.settings.logdir is not None:
            _claim_on_disk(self.settings.logdir / run_id / OWNER_NAME, run_id, client)
        self._owners[run_id] = client

    def _settings_of(self, run_id: str) -> MonitorSettings:
        settings = self.settings
        update: dict[str, Path] = {}
        if settings.logdir is not None:
            update["logdir"] = settings.logdir / run_id
        if settings.stop_file is not None:
            update["stop_file"] = settings.stop_file.parent / run_id / settings.stop_file.name
        return settings.model_copy(update=update)


def _check_run_id(run_id: str) -> None:
    if not isinstance(run_id, str) or not RUN_ID.match(run_id):
        raise RewardkitError(
            f"run id {run_id!r} must be 1-128 letters, digits, '_', '.' or '-', starting with a "
            "letter or digit"
        )


def _digest(client: str, salt: bytes) -> bytes:
    # Stretched, so a readable log folder does not make a weak token cheap to guess.
    return hashlib.pbkdf2_hmac("sha256", client.encode("utf-8"), salt, OWNER_ITERATIONS)


def _claim_on_disk(path: Path, run_id: str, client: str) -> None:
    """Record ``client`` as the owner in the run's folder, or check it against the recorded one
    (a run opened before the service restarted)."""
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
        salt, digest = bytes.fromhex(recorded["salt"]), bytes.fromhex(recorded["digest"])
    except FileNotFoundError:
        salt = secrets.token_bytes(16)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.partial")  # a crash never leaves half an owner
        partial.write_text(json.dumps({"salt": salt.hex(), "digest": _digest(client, salt).hex()}) + "\n")
        os.replace(partial, path)
        return
    except (OSError, ValueError, KeyError, TypeError) as error:
        # An owner that cannot be read is not nobody: refuse rather than hand the run to anyone.
        logger.warning("run %r: its owner record %s is unreadable (%s); refusing it", run_id, path, error)
        raise RunOwnedElsewhere(run_id) from None
    if not hmac.compare_digest(_digest(client, salt), digest):
        raise RunOwnedElsewhere(run_id)
