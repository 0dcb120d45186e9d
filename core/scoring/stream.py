"""Scoring a batch a group at a time, as generation finishes each: ``Reward.stream()`` / ``astream()``.

A trainer that generates groups at staggered times submits each one as it is done and gets back a
future of that group's scored result, so reward work overlaps generation instead of starting after
the last rollout. A stream is one batch: the same validation, composition, advantages and errors as
``score`` on the groups submitted; one rerun budget (``rewardkit.scoring.reproduction.shared_budget``); and
``close()`` returns the batch report merged from the groups' parts by the split-batch finisher, as
one ``score`` call on the whole batch reports it.

Cost. What a stream adds to the last group's own scoring is kept small, since it is what the trainer
waits for after generation: a group of a reward whose every provider is ``cheap`` (the criterion
``score`` uses to score in the calling thread) is scored in ``submit``'s own thread, so its future is
done when ``submit`` returns; a group no stream thread has taken yet when ``close()`` is called is
scored by ``close()``'s own thread, which would only wait; and each group's result and report join
the batch as the group finishes (in submission order, so the report is the same whichever group
finishes first), leaving ``close()`` only the last group's part and the batch report built from the
running merge.

Failure. A group that fails (a ``RewardContractError``, a provider error under ``onError: raise``, a
timeout) fails its own future and the stream: the groups still pending are cancelled, ``submit``
raises the failure from then on, and ``close()`` raises it, so no batch report is published for a
batch that failed. A group whose future its caller cancels before the group is scored (an
``asyncio.wait_for`` that timed out) is left out of the batch, its capacity given back. Groups
already handed back stay handed back: a stream returns values and writes nothing into trajectories,
so there is nothing to roll back; a trainer that must not use part of a failed batch drops the step
when ``close()`` raises, as it would when ``score`` raises.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from types import TracebackType
from typing import TYPE_CHECKING

from rewardkit.contracts.errors import RequestCancelled, RewardkitError
from rewardkit.scoring import cancellation, shared_results
from rewardkit.scoring.batch_input import GroupLike, Rollouts, group_parts
from rewardkit.scoring.reproduction import RerunBudget, shared_budget
from rewardkit.scoring.scored import ScoredBatch, ScoredGroup
from rewardkit.scoring.shared_results import SharedResults
from rewardkit.scoring.split_batch import SplitBatchFinisher

if TYPE_CHECKING:
    from rewardkit.job.provenance import ProviderRecord
    from rewardkit.scoring.backpressure import InflightLimiter
    from rewardkit.seam.protocols import RewardLike

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
    generation loop until ``deadline_s``), then scores the group on the stream's threads (in its own
    thread with ``in_submitting_thread``) and returns a ``Future`` of its ``ScoredGroup``.
    ``close()`` waits for every group and returns the batch; leaving the ``with`` block closes it (a
    no-op after ``close()``), and an exception leaving the block cancels the groups not yet scored.
    ``shared`` makes the groups one batch for equal answers (``rewardkit.scoring.shared_results``), as
    ``rerun_budget`` does for reruns."""

    def __init__(
        self,
        score_one_group: ScoreOneGroup,
        finisher: SplitBatchFinisher,
        *,
        threads: int,
        limiter: InflightLimiter | None = None,
        deadline_s: float | None = None,
        rerun_budget: RerunBudget | None = None,
        shared: SharedResults | None = None,
        in_submitting_thread: bool = False,
    ) -> None:
        self._score_one_group = score_one_group
        self._finisher = finisher
        self._limiter = limiter
        self._deadline_s = deadline_s
        self._budget = rerun_budget
        self._shared = shared
        # A cheap group costs less than handing it to a thread (as in score()); a declared-cheap
        # provider that meets a slow case holds up the submitting loop as it holds up score().
        self._in_submitting_thread = in_submitting_thread
        # The stream's own threads, started as groups need them: a hand-off is a queued group and a
        # token to an idle thread (a ThreadPoolExecutor's submit costs the last group ~15 us more).
        self._max_threads = threads
        self._threads = 0
        self._idle = 0  # threads waiting for a token
        self._tokens: queue.SimpleQueue[bool] = queue.SimpleQueue()  # True: a group is queued; False: stop
        self._scope = cancellation.CancelScope()  # cancels every group of the stream at once
        self._lock = threading.Lock()
        self._order: list[str] = []  # the batch's groups in submission order
        self._submitted: set[str] = set()
        self._started: set[str] = set()  # submitted groups past the wait for capacity
        self._futures: list[tuple[Future[ScoredGroup], int]] = []  # with each group's rollouts
        # Groups whose run (scoring, then merge) has not ended, what close() waits for: a group's
        # future is set before its merge, so that the trainer gets it without waiting for that.
        self._running = 0
        self._ended = threading.Condition(self._lock)
        # Groups handed to the threads and not taken yet, oldest first: a thread takes them until none
        # is left, and close() takes what is left rather than wait for a thread to wake up for it.
        self._queued: deque[Callable[[], None]] = deque()
        # The running batch: groups scored but not merged yet (one submitted before them is still
        # scored), and the merged prefix of ``_order``, groups and report (in the finisher).
        self._unmerged: dict[str, ScoredBatch] = {}
        self._merged_groups: list[ScoredGroup] = []
        self._providers: tuple[ProviderRecord, ...] = ()
        self._failure: BaseException | None = None
        self._closed = False
        self._batch: ScoredBatch | None = None

    # -- submitting ----------------------------------------------------------------------------

    def submit(self, group: GroupLike) -> Future[ScoredGroup]:
        """Score one complete group; the future holds its ``ScoredGroup`` (or its error)."""
        group_id, rollouts = _group_id_and_rollouts(group)
        weight = len(rollouts)
        with self._lock:
            self._check_open()
            if group_id in self._submitted:
                raise RewardkitError(
                    f"group {group_id!r} was already submitted to this stream; a group must be complete in "
                    "one place"
                )
            self._order.append(group_id)  # batch order is submission order
            self._submitted.add(group_id)
            # Capacity free now and nobody waiting for it: taken under this lock, with no wait.
            future = self._start(group_id, rollouts, weight) if self._admitted_now(weight) else None
        if future is None:
            try:
                self._acquire(weight)
            except BaseException:
                with self._lock:
                    self._withdraw(group_id)
                    self._submitted.discard(group_id)
                raise
            with self._lock:
                if self._failure is not None or self._closed:  # failed or left while this one waited
                    self._release(weight)
                    self._withdraw(group_id)
                    self._check_open()
                future = self._start(group_id, rollouts, weight)
        if not self._in_submitting_thread:
            return future
        self._run(future, (group_id, rollouts), weight)
        error = None if future.cancelled() else future.exception()
        if error is not None and not isinstance(error, Exception):
            raise error  # a KeyboardInterrupt while scoring here is the caller's, not the group's
        return future

    def _admitted_now(self, weight: int) -> bool:
        return self._limiter is None or weight == 0 or self._limiter.try_acquire(weight)

    def _start(self, group_id: str, rollouts: Rollouts, weight: int) -> Future[ScoredGroup]:
        """A group past the wait for capacity (under the lock): counted as running and, unless it is
        scored in the submitting thread, handed to the stream's threads."""
        future: Future[ScoredGroup] = Future()
        self._futures.append((future, weight))
        self._running += 1
        self._started.add(group_id)
        if not self._in_submitting_thread:
            context = contextvars.copy_context()
            self._queued.append(lambda: context.run(self._run, future, (group_id, rollouts), weight))
            self._hand_off()  # under the lock: close() cannot stop the threads between the check and this
        return future

    def _hand_off(self) -> None:
        """Wake an idle stream thread for the group just queued, or start one (under the lock); with
        every thread busy, the first to end its group takes it."""
        if self._idle:
            self._idle -= 1
            self._tokens.put(True)
        elif self._threads < self._max_threads:
            self._threads += 1
            # The thread holds the stream weakly while it waits: a stream dropped without close()
            # is collected, and each thread's reference then stops that thread (as an executor's do).
            tokens = self._tokens
            reference = weakref.ref(self, lambda _: _stop(tokens))
            name = f"rewardkit-stream-{self._threads}"
            # A daemon: a process that exits with a stream never closed does not wait for it.
            threading.Thread(target=_serve, args=(reference, tokens), name=name, daemon=True).start()

    def _went_idle(self) -> bool:
        """Score the queued groups, oldest first, then count this thread idle (True) or, once the
        stream is closed, end it (False)."""
        while True:
            while self._run_queued():
                pass
            with self._lock:
                if self._queued:  # queued after the last look, with this thread not idle yet
                    continue
                if self._closed:
                    return False
                self._idle += 1
                return True

    def _run_queued(self) -> bool:
        """Score the oldest group no thread has taken yet; False when there was none."""
        with self._lock:
            if not self._queued:
                return False
            run = self._queued.popleft()
        run()
        return True

    def _withdraw(self, group_id: str) -> None:
        """Take a group that never started out of the batch (under the lock); the groups submitted
        after it, maybe scored meanwhile, no longer wait for it to be merged."""
        if group_id in self._order:  # close() may have taken it out already
            self._order.remove(group_id)
            self._merge_ready()

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

    def _run(self, future: Future[ScoredGroup], group: tuple[str, Rollouts], weight: int) -> None:
        part = None
        try:
            part = self._score(future, group, weight)
        finally:
            with self._lock:
                if part is not None:  # into the running batch, so that close() has only the rest to do
                    self._unmerged[group[0]] = part
                    self._merge_ready()
                self._running -= 1  # last: close() returns only once nothing of the group runs
                self._ended.notify_all()

    def _score(
        self, future: Future[ScoredGroup], group: tuple[str, Rollouts], weight: int
    ) -> ScoredBatch | None:
        """Score the group and set its future; its part of the batch, or None when it has none."""
        try:
            if not future.set_running_or_notify_cancel():
                # Cancelled while queued, by cancel() or by its caller (an asyncio.wait_for that timed
                # out): its capacity is back, and it is no part of the batch.
                self._release(weight)
                with self._lock:
                    self._started.discard(group[0])
                    self._submitted.discard(group[0])
                    self._withdraw(group[0])
                return None
            # In process, every group spends the stream's one rerun budget and shares equal answers
            # with its other groups; a backend scoring in another process has both per request there.
            budget = contextlib.nullcontext() if self._budget is None else shared_budget(self._budget)
            sharing = (
                contextlib.nullcontext() if self._shared is None else shared_results.sharing(self._shared)
            )
            with cancellation.entered(self._scope), budget, sharing:
                self._scope.raise_if_cancelled()
                part = self._score_one_group(group)
                # Work stopped by the cancel may have come back as an error scored by onError:
                # a cancelled group has no answer (as a cancelled score() call has none).
                self._scope.raise_if_cancelled()
                # A lone group's advantages are its advantages in the batch under group or no scaling.
                (scored,) = part.groups
        except BaseException as error:
            self._release(weight)  # capacity is back before anyone sees the group end
            self._fail(error)
            future.set_exception(error)
            return None
        self._release(weight)
        future.set_result(scored)
        return part

    def _merge_ready(self) -> None:
        """Merge, in submission order, every scored group whose predecessors are merged (under the
        lock): the report is then the same whichever group finishes first."""
        try:
            while len(self._merged_groups) < len(self._order):
                part = self._unmerged.pop(self._order[len(self._merged_groups)], None)
                if part is None:
                    return  # the next group in order is not scored yet; its own merge goes on from here
                scored = part.groups[0]
                self._finisher.add_report(part.metrics, part.metric_weights)
                # For the batch's advantage mean: a group's advantages in the batch are its own alone.
                self._finisher.add_advantages([candidate.advantage for candidate in scored.candidates])
                self._merged_groups.append(scored)
                self._providers = self._providers or part.providers
        except Exception as error:
            # A report that cannot be merged: there is no batch report to publish, so close() raises.
            if self._failure is None:
                self._failure = error

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
        for future, _ in futures:
            future.cancel()  # still queued: its capacity is given back as it is taken off the queue
        self._shutdown()

    def _shutdown(self) -> None:
        with self._lock:
            self._closed = True  # from here no thread waits for a token: a busy one ends after its group
            # A group still waiting for capacity is refused when it gets it: it is no part of the batch.
            if len(self._started) < len(self._order):
                for group_id in [group_id for group_id in self._order if group_id not in self._started]:
                    self._withdraw(group_id)
        # The caller would only wait: it scores the groups no thread has started (after the last
        # hand-over, often the last group: no wake-up of a thread, then of the caller, to wait for).
        try:
            while self._run_queued():
                pass
            with self._ended:
                self._ended.wait_for(lambda: not self._running)
        finally:  # even when the wait is interrupted (Ctrl-C): no idle thread is left waiting
            with self._lock:
                # The idle threads are stopped only now, so that none wakes while this thread scores.
                for _ in range(self._idle):
                    self._tokens.put(False)
                self._idle = 0
        # Every group has ended (its count taken down last): what a thread does after that is
        # return, so none needs joining.

    def close(self) -> ScoredBatch:
        """Wait for every submitted group and return the batch: groups in submission order, metrics
        merged as one ``score`` call reports them. Raises the stream's failure, if any. Idempotent."""
        self._shutdown()
        with self._lock:
            if self._failure is not None:
                raise self._failure
            if self._batch is None:
                if len(self._merged_groups) != len(self._order):  # every group ended, none failed
                    raise RewardkitError(
                        f"the stream merged {len(self._merged_groups)} of its {len(self._order)} groups"
                    )
                metrics, weights = self._finisher.report()
                self._batch = ScoredBatch(tuple(self._merged_groups), metrics, self._providers, weights)
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


def _stop(tokens: queue.SimpleQueue[bool]) -> None:
    tokens.put(False)


def _serve(reference: weakref.ref[RewardStream], tokens: queue.SimpleQueue[bool]) -> None:
    """A stream thread: score queued groups, then wait for a token holding no reference to the stream;
    end when stopped, or when the stream was collected."""
    while True:
        stream = reference()
        if stream is None or not stream._went_idle():
            return
        del stream
        if not tokens.get():
            return


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
