"""The asyncio twin of ``rewardkit.scoring.backpressure.InflightLimiter`` for the service's event loop.

Same semantics: a weighted limit in rollouts, waiters admitted strictly in arrival order (so a
large request at the head is admitted as soon as the work ahead of it drains, and small requests
never overtake it forever), a request larger than the limit refused at once, and a waiter whose
deadline passes leaves the queue with ``BackpressureTimeout``.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from rewardkit.plugin import BackpressureTimeout, RequestTooLarge

__all__ = ["AsyncInflightLimiter", "BackpressureTimeout", "RequestTooLarge"]


class AsyncInflightLimiter:
    """Counts rollouts in flight on one event loop; ``admit(weight, deadline)`` waits its turn."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"in-flight capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self.in_flight = 0
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()

    @property
    def waiting(self) -> int:
        return sum(1 for _, future in self._waiters if not future.done())

    def _wake(self) -> None:
        # Grant capacity to the head of the queue while it fits; never skip past a head that does not.
        while self._waiters:
            weight, future = self._waiters[0]
            if future.done():  # cancelled or timed out: already gave up its place
                self._waiters.popleft()
                continue
            if self.in_flight + weight > self.capacity:
                return
            self._waiters.popleft()
            self.in_flight += weight
            future.set_result(None)

    async def acquire(self, weight: int, deadline: float | None) -> float:
        """Wait until ``weight`` rollouts fit, in arrival order; return seconds waited.

        ``deadline`` is an instant of the running loop's clock (``loop.time()``); ``None`` waits forever.
        """
        if weight > self.capacity:
            raise RequestTooLarge(
                f"a request of {weight} rollouts exceeds rewards.max_inflight={self.capacity}; "
                "split it or raise the limit"
            )
        loop = asyncio.get_running_loop()
        start = loop.time()
        if not self._waiters and self.in_flight + weight <= self.capacity:
            self.in_flight += weight
            return 0.0
        future: asyncio.Future[None] = loop.create_future()
        self._waiters.append((weight, future))
        try:
            timeout = None if deadline is None else max(0.0, deadline - loop.time())
            await asyncio.wait_for(asyncio.shield(future), timeout)
        except asyncio.TimeoutError:
            if future.done() and not future.cancelled():
                return loop.time() - start  # granted in the same tick the deadline passed: keep it
            future.cancel()
            self._wake()
            waited = loop.time() - start
            raise BackpressureTimeout(
                f"waited {waited:.2f}s for capacity for {weight} rollouts ({self.in_flight}/"
                f"{self.capacity} in flight, {self.waiting} others waiting) and the deadline passed; "
                "retry later or raise rewards.max_inflight / the deadline",
                waited_s=waited,
            ) from None
        except BaseException:
            # Cancelled (the client went away): give back what was granted, or our place in line.
            if future.done() and not future.cancelled():
                self.release(weight)
            else:
                future.cancel()
                self._wake()
            raise
        return loop.time() - start

    def release(self, weight: int) -> None:
        self.in_flight -= weight
        self._wake()

    @asynccontextmanager
    async def admit(self, weight: int, deadline: float | None) -> AsyncIterator[float]:
        waited = await self.acquire(weight, deadline)
        try:
            yield waited
        finally:
            self.release(weight)
