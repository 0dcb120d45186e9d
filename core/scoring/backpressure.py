"""Back-pressure, not rejection: a weighted in-flight limit with first-come, first-served waiting.

Past ``rewards.max_inflight`` rollouts a caller waits for capacity until its deadline, so a trainer
slows down instead of failing a step. Waiters are admitted strictly in arrival order (a large
request is never starved by small ones); a request larger than the whole limit is refused at once."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

from rewardkit.contracts.errors import RewardkitError


class BackpressureTimeout(RewardkitError):
    """A caller's deadline passed while it waited for in-flight capacity."""

    def __init__(self, message: str, *, waited_s: float) -> None:
        super().__init__(message)
        self.waited_s = waited_s


class RequestTooLarge(RewardkitError):
    """A single request needs more capacity than the limit allows."""


class InflightLimiter:
    """Counts rollouts in flight; ``admit(weight, deadline)`` waits its turn for capacity."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"in-flight capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self.in_flight = 0
        self._queue: deque[object] = deque()
        self._condition = threading.Condition()

    @property
    def waiting(self) -> int:
        return len(self._queue)

    def acquire(self, weight: int, deadline: float | None) -> float:
        """Wait until ``weight`` rollouts fit, in arrival order, until ``deadline`` (a
        ``time.monotonic()`` instant; ``None`` waits forever); return seconds waited."""
        if type(weight) is not int or weight < 1:
            raise ValueError(f"an in-flight weight is a positive number of rollouts, got {weight!r}")
        if weight > self.capacity:
            raise RequestTooLarge(
                f"a request of {weight} rollouts exceeds rewards.max_inflight={self.capacity}; "
                "split it or raise the limit"
            )
        start = time.monotonic()
        ticket = object()
        with self._condition:
            self._queue.append(ticket)
            try:
                while self._queue[0] is not ticket or self.in_flight + weight > self.capacity:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        waited = time.monotonic() - start
                        raise BackpressureTimeout(
                            f"waited {waited:.2f}s for capacity for {weight} rollouts "
                            f"({self.in_flight}/{self.capacity} in flight, {len(self._queue) - 1} "
                            "others waiting) and the deadline passed; retry later or raise "
                            "rewards.max_inflight / the deadline",
                            waited_s=waited,
                        )
                    self._condition.wait(remaining)
                self.in_flight += weight
            finally:
                self._queue.remove(ticket)
                self._condition.notify_all()
        return time.monotonic() - start

    def try_acquire(self, weight: int) -> bool:
        """Take ``weight`` rollouts now if they fit and nobody is waiting before them; never waits."""
        with self._condition:
            if self._queue or self.in_flight + weight > self.capacity:
                return False
            self.in_flight += weight
            return True

    def release(self, weight: int) -> None:
        with self._condition:
            self.in_flight -= weight
            self._condition.notify_all()

    @contextmanager
    def admit(self, weight: int, deadline: float | None) -> Iterator[float]:
        waited = self.acquire(weight, deadline)
        try:
            yield waited
        finally:
            self.release(weight)
