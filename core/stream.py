"""Scoring a batch a group at a time, as generation finishes each: ``Reward.stream()`` / ``astream()``.

A trainer that generates groups at staggered times submits each one as it is done and gets back a
future of that group's scored result, so reward work overlaps generation instead of starting after
the last rollout. A stream is one batch: the same validation, composition, advantages and errors as
``score`` on the groups submitted; one rerun budget (``rewardkit.reproduction.shared_budget``); and
``close()`` returns the batch report merged from the groups' parts by the split-batch finisher, as
one ``score`` call on the whole batch reports it.

Failure. A group that fails (a ``RewardContractError``, a provider error under ``onError: raise``, a
timeout) fails its own future and the stream: the groups still pending are cancelled, ``submit``
raises the failure from then on, and ``close()`` raises it, so no batch report is published for a
batch that failed. Groups already handed back stay handed back: a stream returns values and writes
nothing into trajectories, so there is nothing to roll back; a trainer that must not use part of a
failed batch drops the step when ``close()`` raises, as it would when ``score`` raises.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from types import TracebackType
from typing import TYPE_CHECKING

from rewardkit import cancellation
from rewardkit.batch_input import GroupLike, Rollouts, group_parts
from rewardkit.errors import RequestCancelled, RewardkitError
from rewardkit.reproduction import RerunBudget, shared_budget
from rewardkit.scored import ScoredBatch, ScoredGroup
from rewardkit.split_batch import SplitBatchFinisher

if TYPE_CHECKING:
    from rewardkit.backpressure import InflightLimiter
    from rewardkit.protocols import RewardLike

__all__ = ["AsyncRewardStream", "RewardStream", "StreamFailed", "astream_of", "stream_of"]

# Threads of a stream over a backend that scores elsewhere (requests in flight, not CPU work here).
REMOTE_STREAM_THREADS = 8

ScoreOneGroup = Callable[[GroupLike], ScoredBatch]


class StreamFailed(RequestCancelled):
    """A group of a stream was cancelled because another group failed or the stream was left early."""


def _group_id_and_rollouts(group: GroupLike) -> tuple[str, Rollouts]:
    group_id, rollouts = group_parts(group)
    # Read once here, so a one-shot iterable is not spent before the group is scored.
    return group_id, rollouts if isinstance(rollouts, (list, tuple)) else list(rollouts)


class RewardStream:
    """One batch submitted a group at a time; use ``Reward.stream()`` to make one.

    ``submit(group)`` waits for in-flight capacity (``rewards.max_inflight``, back-pressure on the
    generation loop until ``deadline_s``), then scores the group on the stream's threads and returns
    a ``Future`` of its ``ScoredGroup``. ``close()`` waits for every group and returns the batch;
    leaving the ``with`` block closes it (a no-op after ``close()``), and an exception leaving the
    block cancels the groups not yet scored."""

    def __init__(
        self,
        score_one_group: ScoreOneGroup,
        finisher: SplitBatchFinisher,
        *,
        threads: int,
        limiter: InflightLimiter | None = None,
        deadline_s: float | None = None,
        rerun_budget: RerunBudget | None = None,
    ) -> None:
        self._score_one_group = score_one_group
        self._finisher = finisher
        self._limiter = limiter
        self._deadline_s = deadline_s
        self._budget = rerun_budget
        # Every group on the stream's threads, cheap providers' too: a "cheap" check that meets a slow
        # case (a pathological formula) must not hold up the generation loop that submits.
        self._executor = ThreadPoolExecutor(threads, thread_name_prefix="rewardkit-stream")
        self._scope = cancellation.CancelScope()  # cancels every group of the stream at once
        self._lock = threading.Lock()
        self._order: list[str] = []
        self._submitted: set[str] = set()
        self._parts: dict[str, ScoredBatch] = {}
        self._futures: list[tuple[Future[ScoredGroup], int]] = []  # with each group's rollouts
        self._failure: BaseException | None = None
        self._closed = False
        self._batch: ScoredBatch | None = None

    # -- submitting ----------------------------------------------------------------------------

    def submit(self, group: GroupLike) -> Future[ScoredGroup]:
        """Score one complete group; the future holds its ``ScoredGroup`` (or its error)."""
        group_id, rollouts = _group_id_and_rollouts(group)
        with self._lock:
            self._check_open()
            if group_id in self._submitted:
                raise RewardkitError(
                    f"group {group_id!r} was already submitted to this stream; a group must be complete in "
                    "one place"
                )
            self._order.append(group_id)  # batch order is submission order
            self._submitted.add(group_id)
        weight = len(rollouts)
        try:
            self._acquire(weight)
        except BaseException:
            with self._lock:
                self._order.remove(group_id)
                self._submitted.discard(group_id)
            raise
        future: Future[ScoredGroup] = Future()
        with self._lock:
            if self._failure is not None or self._closed:  # failed or left while this one waited
                self._release(weight)
                self._order.remove(group_id)
                self._check_open()
            self._futures.append((future, weight))
            # Under the lock: close() cannot shut the threads down between the check and this.
            self._executor.submit(
                contextvars.copy_context().run, self._score, future, (group_id, rollouts), weight
            )
        return future

    def _check_open(self) -> None:
        if self._failure is not None:
            raise self._failure
        if self._closed:
            raise RewardkitError("this stream is closed; open another with reward.stream()")

    def _acquire(self, weight: int) -> None:
        if self._limiter is None or weight == 0:
            return  # an empty group takes no capacity: scoring refuses it as score() does
        deadline = None if self._deadline_s is None else time.monotonic() + self._deadline_s
        timeout_at = cancellation.current().deadline  # no wait outlives the caller's own timeout
        if timeout_at is not None:
            deadline = timeout_at if deadline is None else min(deadline, timeout_at)
        self._limiter.acquire(weight, deadline)

    def _release(self, weight: int) -> None:
        if self._limiter is not None:
            self._limiter.release(weight)

    def _score(self, future: Future[ScoredGroup], group: tuple[str, Rollouts], weight: int) -> None:
        try:
            if not future.set_running_or_notify_cancel():
                return  # cancelled while queued; cancel() gave its capacity back
            # In process, every group spends the stream's one rerun budget; a backend scoring in
            # another process has one per request there.
            shared = shared_budget(self._budget) if self._budget is not None else contextlib.nullcontext()
            with cancellation.entered(self._scope), shared:
                self._scope.raise_if_cancelled()
                part = self._score_one_group(group)
                # Work stopped by the cancel may have come back as an error scored by onError:
                # a cancelled group has no answer (as a cancelled score() call has none).
                self._scope.raise_if_cancelled()
        except BaseException as error:
            self._release(weight)  # capacity is back before anyone sees the group end
            self._fail(error)
            future.set_exception(error)
            return
        self._release(weight)
        with self._lock:
            self._parts[group[0]] = part
        # A lone group's advantages are its advantages in the batch under group or no scaling.
        future.set_result(part.groups[0])

    def _fail(self, error: BaseException) -> None:
        """The first failure that is not a consequence of another fails the stream and stops the rest."""
        with self._lock:
            if self._failure is None and not isinstance(error, StreamFailed):
                self._failure = error
        self._scope.cancel(StreamFailed("another group of the stream failed, so its batch failed"))

    # -- ending --------------------------------------------------------------------------------

    def cancel(self, reason: str = "the stream was cancelled") -> None:
        """Cancel the groups not yet scored (their futures are cancelled, running ones stopped) and
        wait until nothing of the stream runs; ``close()`` then raises."""
        with self._lock:
            if self._failure is None:
                self._failure = StreamFailed(reason)
            futures = list(self._futures)
        self._scope.cancel(StreamFailed(reason))
        for future, weight in futures:
            if future.cancel():  # still queued: it will never run, so its capacity is back now
                self._release(weight)
        self._shutdown()

    def _shutdown(self) -> None:
        with self._lock:
            self._closed = True
            futures = [future for future, _ in self._futures]
        wait(futures)
        # Every group has ended (a future is set last): the idle threads need no joining.
        self._executor.shutdown(wait=False)

    def close(self) -> ScoredBatch:
        """Wait for every submitted group and return the batch: groups in submission order, metrics
        merged as one ``score`` call reports them. Raises the stream's failure, if any. Idempotent."""
        self._shutdown()
        with self._lock:
            if self._failure is not None:
                raise self._failure
            if self._batch is None:
                parts = [self._parts[group_id] for group_id in self._order]
                self._batch = self._finisher.finish(parts, group_order=self._order)
            return self._batch

    def __enter__(self) -> RewardStream:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if error is not None:
            self.cancel(f"the block using the stream raised {kind.__name__ if kind else 'an error'}")
            return
        self.close()


class AsyncRewardStream:
    """``RewardStream`` for asyncio: ``await s.submit(group)`` waits for capacity off the event loop
    and returns an awaitable future of the group's ``ScoredGroup``; ``await s.close()`` returns the
    batch. ``async with reward.astream() as s`` closes it on leaving, or cancels it on an exception
    (a cancelled task included)."""

    def __init__(self, stream: RewardStream) -> None:
        self._stream = stream

    async def submit(self, group: GroupLike) -> asyncio.Future[ScoredGroup]:
        future = await asyncio.to_thread(self._stream.submit, group)
        return asyncio.wrap_future(future)

    async def close(self) -> ScoredBatch:
        return await asyncio.to_thread(self._stream.close)

    async def cancel(self, reason: str = "the stream was cancelled") -> None:
        await asyncio.to_thread(self._stream.cancel, reason)

    async def __aenter__(self) -> AsyncRewardStream:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if error is not None:
            # Not awaited in a thread: a cancelled task must still stop every group before it goes.
            self._stream.cancel(f"the block using the stream raised {kind.__name__ if kind else 'an error'}")
            return
        await self.close()


def stream_of(reward: RewardLike) -> RewardStream | None:
    """A stream on any backend: ``reward.stream()`` in process; over a backend without one (the Reward
    Service, Ray actors), one ``score`` request per group, concurrently, finished alike (each request
    has its own rerun budget and back-pressure there). ``None`` under ``batch`` scaling, where only a
    whole batch has advantages: the caller scores whole batches then."""
    rl = reward.config.rl
    if rl.advantage_scaling == "batch":
        return None
    own = getattr(reward, "stream", None)
    if callable(own):
        made: RewardStream = own()
        return made

    def score_one_group(group: GroupLike) -> ScoredBatch:
        return reward.score([group])

    threads = reward.config.rewards.concurrency or REMOTE_STREAM_THREADS
    return RewardStream(score_one_group, SplitBatchFinisher.for_config(rl), threads=threads)


def astream_of(reward: RewardLike) -> AsyncRewardStream | None:
    """``stream_of`` for asyncio callers."""
    stream = stream_of(reward)
    return None if stream is None else AsyncRewardStream(stream)
