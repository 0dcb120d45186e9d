"""One monitor per client run, for the Reward Service: a request naming its run (the
``X-Rewardkit-Run`` header) is observed by that run's monitor; a request without one is not."""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from pathlib import Path

from rewardkit.config import RewardkitConfig
from rewardkit.errors import RewardkitError
from rewardkit.observers import ObservedBatch
from rewardkit_monitor.monitor import RewardMonitor, build_reference
from rewardkit_monitor.settings import MonitorSettings, parse_settings

# Runs watched at once; the least recently observed one is closed (its step finished) past this.
MAX_RUNS = 64
# A run id becomes a folder name under rl.monitor.logdir.
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


class RunMonitors:
    """The monitors of the runs a service scores for, keyed by run id; each logs to
    ``LOGDIR/<run id>/monitor.jsonl`` and writes its stop file at ``<stop file's folder>/<run
    id>/<stop file's name>``. They share one reference grader, built here."""

    def __init__(self, config: RewardkitConfig, max_runs: int = MAX_RUNS) -> None:
        if max_runs < 1:
            raise ValueError(f"max_runs must be at least 1, got {max_runs}")
        self.settings = parse_settings(config.rl.monitor or {})
        self.max_runs = max_runs
        self.reference = build_reference(config, self.settings)
        self._runs: OrderedDict[str, RewardMonitor] = OrderedDict()
        self._lock = threading.Lock()
        self._closed = False

    def __len__(self) -> int:
        return len(self._runs)

    def __contains__(self, run_id: str) -> bool:
        return run_id in self._runs

    def monitor(self, run_id: str) -> RewardMonitor:
        """The run's monitor, made at its first batch. ``RewardkitError`` for an id that cannot
        name a folder (letters, digits, ``_ . -``, at most 128)."""
        if not isinstance(run_id, str) or not RUN_ID.match(run_id):
            raise RewardkitError(
                f"run id {run_id!r} must be 1-128 letters, digits, '_', '.' or '-', starting with a "
                "letter or digit"
            )
        evicted = []
        with self._lock:
            if self._closed:
                raise RewardkitError("these run monitors are closed")
            monitor = self._runs.get(run_id)
            if monitor is not None:
                self._runs.move_to_end(run_id)
                return monitor
            monitor = self._runs[run_id] = RewardMonitor(
                self._settings_of(run_id), self.reference, owns_reference=False
            )
            while len(self._runs) > self.max_runs:
                evicted.append(self._runs.popitem(last=False)[1])
        for old in evicted:
            old.close()
        return monitor

    def observe(self, run_id: str, batch: ObservedBatch) -> dict[str, float]:
        """The run's monitor observes ``batch``; the metrics it returns."""
        return self.monitor(run_id).observe(batch)

    def close(self) -> None:
        """Close every run's monitor and the shared reference grader."""
        with self._lock:
            self._closed = True
            monitors, self._runs = list(self._runs.values()), OrderedDict()
        for monitor in monitors:
            monitor.close()
        if self.reference is not None:
            self.reference.close()
            self.reference = None

    def _settings_of(self, run_id: str) -> MonitorSettings:
        settings = self.settings
        update: dict[str, Path] = {}
        if settings.logdir is not None:
            update["logdir"] = settings.logdir / run_id
        if settings.stop_file is not None:
            update["stop_file"] = settings.stop_file.parent / run_id / settings.stop_file.name
        return settings.model_copy(update=update)
