"""The budgets of one judge endpoint: requests and tokens per minute, retries per minute, and the
pause a 429 asks for.

A rate-limited judge answers 429 once a client sends more than its plan allows. Treating that as a
failure turns a busy endpoint into retries until the group's deadline, then into errors that fail
the batch, although nothing was wrong but the pace. So the runner paces itself: before each request
it waits until the endpoint's last minute holds room for one more request (``requests_per_minute``)
and for its estimated tokens (``tokens_per_minute``), and a 429 that still comes is waited out,
every request to the endpoint pausing for the ``Retry-After`` it gives. Waiting stops only at the
group's deadline: a request that cannot start before it fails as the infrastructure's, never charged
to a candidate. The seconds a question waited are its ``rate_wait_s`` diagnostic.

The retry budget (``retries_per_minute``) bounds the retries of 408, 5xx, timeouts and dropped
connections across every request to the endpoint: a judge that is down is then not flooded with
``retries`` times every request, and the batch learns it sooner.

Tokens are counted as OpenAI's rate limits count them before a reply exists: the prompt's estimated
tokens (a quarter of its characters, rounded up) plus ``max_tokens``. A request whose estimate alone
exceeds ``tokens_per_minute`` starts only when the minute holds nothing else (it would wait forever).

Everything here runs on the runner's one event loop thread, so nothing needs a lock.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Callable, Sequence

# Characters per token of the estimate (the common rule of thumb for English text and code).
CHARS_PER_TOKEN = 4


class NoRoom(Exception):
    """The budgets leave no room for the request before the group's deadline: it could start in
    ``ready_in_s`` seconds, held by ``why``."""

    def __init__(self, ready_in_s: float, why: str) -> None:
        super().__init__(why)
        self.ready_in_s = ready_in_s
        self.why = why


def estimated_tokens(texts: Sequence[str], max_tokens: int) -> int:
    """The tokens a request counts against ``tokens_per_minute``: its prompt's estimate plus the
    reply it may write."""
    characters = sum(len(text) for text in texts)
    return math.ceil(characters / CHARS_PER_TOKEN) + max_tokens


class EndpointBudgets:
    """The budgets of one endpoint over a sliding window of ``window_s`` seconds (a minute)."""

    def __init__(
        self,
        *,
        requests_per_minute: int | None,
        tokens_per_minute: int | None,
        retries_per_minute: int | None,
        window_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self.retries_per_minute = retries_per_minute
        self.window_s = window_s
        self.clock = clock
        self._started: deque[tuple[float, int]] = deque()  # (when, estimated tokens) in the window
        self._tokens = 0  # the sum of the tokens in _started
        self._retries: deque[float] = deque()
        self._paused_until = 0.0  # the endpoint said 429: nothing starts before this

    def pause(self, seconds: float) -> None:
        """The endpoint answered 429 asking for ``seconds``: no request to it starts before then."""
        self._paused_until = max(self._paused_until, self.clock() + seconds)

    async def admit(self, tokens: int, deadline: float) -> float:
        """Wait until a request of ``tokens`` fits the budgets and count it; the seconds waited.
        ``NoRoom`` when it could not start before ``deadline``."""
        began = self.clock()
        slept = False
        while True:
            now = self.clock()
            ready, why = self._ready_at(now, tokens)
            if ready <= now:
                self._started.append((now, tokens))
                self._tokens += tokens
                return now - began if slept else 0.0
            if ready >= deadline:
                raise NoRoom(ready - now, why)
            await asyncio.sleep(ready - now)
            slept = True

    def take_retry(self) -> bool:
        """Spend one retry of the endpoint's budget; False when the last minute holds none."""
        if self.retries_per_minute is None:
            return True
        now = self.clock()
        while self._retries and self._retries[0] <= now - self.window_s:
            self._retries.popleft()
        if len(self._retries) >= self.retries_per_minute:
            return False
        self._retries.append(now)
        return True

    def _ready_at(self, now: float, tokens: int) -> tuple[float, str]:
        """When a request of ``tokens`` may start (``now`` or later), and what holds it."""
        started = self._started
        while started and started[0][0] <= now - self.window_s:
            self._tokens -= started.popleft()[1]
        ready, why = self._paused_until, "the judge answered 429 (rate limited)"
        limit = self.requests_per_minute
        if limit is not None and len(started) >= limit:
            # the oldest requests must leave the window until one fewer than the limit is left
            leaves = started[len(started) - limit][0] + self.window_s
            if leaves > ready:
                ready, why = leaves, f"requests_per_minute {limit}"
        budget = self.tokens_per_minute
        if budget is not None and started and self._tokens + tokens > budget:
            # the oldest requests must leave the window until this one's tokens fit (or none is left)
            left = self._tokens
            leaves = now
            for when, counted in started:
                left -= counted
                leaves = when + self.window_s
                if left + tokens <= budget:
                    break
            if leaves > ready:
                ready, why = leaves, f"tokens_per_minute {budget}"
        return ready, why
