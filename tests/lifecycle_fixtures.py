"""A catalog whose provider starts a helper process on first use (``lifecycle_fixtures:catalog``)."""

from __future__ import annotations

import subprocess
import sys
import threading

from rewardkit import RewardProviderSpec
from rewardkit.contracts import RewardCandidateResult, RewardGroupResult, RewardProviderResult


class ProcessBacked:
    """Scores 1.0 for every candidate; keeps one sleeping child process until ``close()``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.process: subprocess.Popen[bytes] | None = None
        self.closed = 0

    def evaluate(self, request):
        with self._lock:
            if self.process is None:
                self.process = subprocess.Popen(
                    [sys.executable, "-c", "import time; time.sleep(600)"],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                print(f"helper-pid {self.process.pid}", flush=True)
        items = tuple(
            RewardCandidateResult(c.trajectory_id, RewardProviderResult({"task": 1.0}))
            for c in request.candidates
        )
        return RewardGroupResult(request.group_id, items)

    def close(self) -> None:
        with self._lock:
            process, self.process = self.process, None
            self.closed += 1
        if process is not None:
            process.terminate()
            process.wait(10)


def catalog() -> list[RewardProviderSpec]:
    return [RewardProviderSpec("process-backed", ProcessBacked, (), "1", ("task",))]
