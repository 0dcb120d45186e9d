"""The client of the decoded-media reward service (the Cosmos-RL reward service protocol).

One sample is scored in three steps, all inside one absolute deadline (``time.monotonic()``):

1. **Enqueue, exactly once.** ``POST <enqueue_url>`` with a body of one line of JSON, ``\\n``,
   then the ``numpy.save(..., allow_pickle=False)`` bytes of the sample, streamed from a private
   spool file. The service has no idempotency key, so enqueue is never retried: a failure after
   the body was sent may have left the task queued (orphaned), and retrying could score it twice.
   The answer must carry a non-empty ``uuid``.
2. **Pull until scored.** ``POST <pull_url>`` with form fields ``uuid`` (that exact UUID) and
   ``type``, once per requested reward type. A 202 must repeat the UUID with
   ``status="pending"``; a 400 whose body is exactly ``{"message": "Not found scores for <uuid>"}``
   is the legacy pending answer; any other 400 (or other 4xx) is terminal and is not polled
   again. Transient failures (a dropped connection, 408, 429, 5xx) are retried with capped,
   jittered backoff; waiting between pending polls doubles up to a cap.
3. **Accept a score** only from a 200 that holds nothing but the singleton positional score of
   the one sample sent: ``scores`` with exactly one value per key (one finite number for each key
   read), beside the service's own metadata (``ANSWER_METADATA``); any other field, a ``uuid`` of
   another task, or a key with more or fewer values than one is refused. Only before the deadline.

The service answers a failed task exactly like a pending one, so when the deadline passes the
error says the task is still pending *or* failed remotely, and carries the UUID for the operator.
The bearer token travels in the ``Authorization`` header; it is read from the environment
variable the config names and never appears in a log line or an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import reprlib
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rewardkit.plugin import HttpClient, HttpError, HttpTimeout, RetryPolicy, RewardkitError
from rewardkit_media.spool import Spool, spool_bytes

log = logging.getLogger("rewardkit_media")

PENDING_MESSAGE = "Not found scores for {uuid}"
# What a scored 200 carries besides ``scores``: the fields the Cosmos-RL reward service (0.4.7)
# adds about the run, and ``type``, which must name the type pulled. Anything else (an error, a
# status, a message) says the answer may not be the score of the sample sent.
ANSWER_METADATA = frozenset({"type", "input_info", "duration", "decoded_duration"})
# A pull call retries transient failures a few times itself; the poll loop goes on after that.
_PULL_RETRY_ATTEMPTS = 4


class MediaServiceError(RewardkitError):
    """Scoring a sample failed; ``uuid`` is the service's task id when one was issued."""

    def __init__(self, message: str, *, uuid: str | None = None, url: str | None = None) -> None:
        super().__init__(message)
        self.uuid = uuid
        self.url = url


class EnqueueError(MediaServiceError):
    """The enqueue call failed or its answer was not a task id. Never retried."""


class ServiceProtocolError(MediaServiceError):
    """The service answered something the protocol does not allow (a terminal failure)."""


class ServiceDeadlineError(MediaServiceError):
    """No score arrived before the absolute deadline."""


@dataclass
class ScoringTrace:
    """What happened to one sample so far (filled in as it goes, read after any outcome)."""

    uuid: str | None = None
    stage: str = "start"
    enqueue_calls: int = 0
    polls: int = 0
    pending_answers: int = 0
    transient_failures: int = 0
    uploaded_bytes: int = 0
    last_answer: str = ""
    enqueued_at: float | None = None


@dataclass(frozen=True)
class ServiceScores:
    """The accepted scores of one sample, by score key, and how they were obtained."""

    scores: Mapping[str, float]
    uuid: str
    seconds: float
    trace: ScoringTrace = field(repr=False, compare=False, default_factory=ScoringTrace)


def _split(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise RewardkitError(f"{url!r} is not an http(s) URL")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return f"{parts.scheme}://{parts.netloc}", path


def _excerpt(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


class MediaServiceClient:
    """Scores one sample at a time against the service; safe to share, one call per sample.

    The HTTP sessions live for one ``score`` call (each call may run on its own event loop).
    """

    def __init__(
        self,
        *,
        enqueue_url: str,
        pull_url: str,
        token_env: str | None,
        reward_types: Mapping[str, Sequence[str]],
        enqueue_timeout_s: float = 60.0,
        pull_timeout_s: float = 10.0,
        poll_interval_s: float = 0.1,
        max_poll_interval_s: float = 2.0,
        spool_dir: str | None = None,
        active_ranks: int = 1,
    ) -> None:
        self.enqueue_base, self.enqueue_path = _split(enqueue_url)
        self.pull_base, self.pull_path = _split(pull_url)
        self.enqueue_url = enqueue_url
        self.pull_url = pull_url
        self.token_env = token_env
        self.reward_types = {name: tuple(keys) for name, keys in reward_types.items()}
        if not self.reward_types or not all(self.reward_types.values()):
            raise RewardkitError("request at least one reward type, each with at least one score key")
        self.enqueue_timeout_s = enqueue_timeout_s
        self.pull_timeout_s = pull_timeout_s
        self.poll_interval_s = poll_interval_s
        self.max_poll_interval_s = max_poll_interval_s
        self.spool_dir = spool_dir
        self.active_ranks = active_ranks
        self.pull_retry = RetryPolicy(
            attempts=_PULL_RETRY_ATTEMPTS,
            backoff_s=poll_interval_s,
            max_backoff_s=max_poll_interval_s,
        )

    def __repr__(self) -> str:
        return f"MediaServiceClient({self.enqueue_url!r}, {self.pull_url!r}, token_env={self.token_env!r})"

    def header(self, metadata: Mapping[str, Any]) -> bytes:
        """The body's first line: compact one-line JSON with ``reward_fn`` and ``metadata``, then ``\\n``."""
        document = {"reward_fn": dict.fromkeys(self.reward_types, 1.0), **metadata}
        line = json.dumps(document, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
        return line.encode("ascii") + b"\n"

    async def score(
        self,
        sample: np.ndarray,
        metadata: Mapping[str, Any],
        deadline: float,
        trace: ScoringTrace | None = None,
    ) -> ServiceScores:
        """Enqueue ``sample`` once and poll for its scores until ``deadline``.

        The whole sequence is bounded by the deadline; the spool file is removed on every path,
        cancellation included. Raises ``MediaServiceError`` (a subclass says which failure).
        """
        trace = trace if trace is not None else ScoringTrace()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise self._deadline_error(trace, deadline)
        try:
            return await asyncio.wait_for(self._score(sample, metadata, deadline, trace), remaining)
        except asyncio.TimeoutError:
            raise self._deadline_error(trace, deadline) from None

    async def _score(
        self, sample: np.ndarray, metadata: Mapping[str, Any], deadline: float, trace: ScoringTrace
    ) -> ServiceScores:
        prefix = self.header(metadata)
        trace.stage = "spool"
        spool = Spool.create(
            spool_bytes(sample, prefix), directory=self.spool_dir, active_ranks=self.active_ranks
        )
        try:
            # a write abandoned (deadline, cancellation) finishes into the removed file, unseen, or
            # finds it gone: Spool.write never creates it again
            await in_daemon_thread(lambda: spool.write(sample, prefix), deadline - time.monotonic())
            trace.stage = "enqueue"
            uuid = await self._enqueue(spool, deadline, trace)
        finally:
            spool.remove()
        trace.stage = "pull"
        scores: dict[str, float] = {}
        async with HttpClient(self.pull_base, token_env=self.token_env, retry=self.pull_retry) as client:
            for reward_type, keys in self.reward_types.items():
                scores.update(await self._pull(client, uuid, reward_type, keys, deadline, trace))
        if time.monotonic() > deadline:
            raise self._deadline_error(trace, deadline)
        trace.stage = "done"
        started = trace.enqueued_at if trace.enqueued_at is not None else time.monotonic()
        return ServiceScores(scores, uuid, time.monotonic() - started, trace)

    # -- enqueue ---------------------------------------------------------------------------------

    async def _enqueue(self, spool: Spool, deadline: float, trace: ScoringTrace) -> str:
        url = self.enqueue_url
        timeout = min(self.enqueue_timeout_s, max(deadline - time.monotonic(), 0.001))
        async with HttpClient(self.enqueue_base, token_env=self.token_env) as client:
            with open(spool.path, "rb") as body:
                trace.enqueue_calls += 1
                trace.enqueued_at = time.monotonic()
                try:
                    response = await client.request(
                        "POST",
                        self.enqueue_path,
                        data=body,  # streamed from the file, never read into memory whole
                        headers={"Content-Type": "application/octet-stream"},
                        deadline=deadline,
                        timeout_s=timeout,
                        retry=False,
                        expect=None,
                    )
                except HttpError as error:
                    if isinstance(error, HttpTimeout) and time.monotonic() >= deadline - 0.01:
                        raise self._deadline_error(trace, deadline) from None
                    raise EnqueueError(
                        f"enqueue to {url} failed ({error}); it is not retried: the service has no "
                        "idempotency key, so if the body was sent the task may be queued and orphaned",
                        url=url,
                    ) from None
        trace.uploaded_bytes = spool.size
        if response.status != 200:
            raise EnqueueError(
                f"enqueue to {url} answered {response.status}: {_excerpt(response.text)}; not retried",
                url=url,
            )
        try:
            answer = json.loads(response.body)
        except ValueError:
            answer = None
        uuid = answer.get("uuid") if isinstance(answer, dict) else None
        if not isinstance(uuid, str) or not uuid.strip():
            raise EnqueueError(
                f"enqueue to {url} answered 200 without a task id (a non-empty 'uuid'): "
                f"{_excerpt(response.text)}",
                url=url,
            )
        trace.uuid = uuid
        log.info("enqueued media task %s (%d bytes) at %s", uuid, spool.size, url)
        return uuid

    # -- pull ------------------------------------------------------------------------------------

    async def _pull(
        self,
        client: HttpClient,
        uuid: str,
        reward_type: str,
        keys: Sequence[str],
        deadline: float,
        trace: ScoringTrace,
    ) -> dict[str, float]:
        form = urllib.parse.urlencode({"uuid": uuid, "type": reward_type}).encode("ascii")
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        wait = self.poll_interval_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._deadline_error(trace, deadline)
            try:
                response = await client.request(
                    "POST",
                    self.pull_path,
                    data=form,
                    headers=headers,
                    deadline=deadline,
                    timeout_s=min(self.pull_timeout_s, remaining),
                    retry=True,
                    expect=(200, 202, 400),
                )
            except HttpTimeout as error:
                trace.transient_failures += 1
                trace.last_answer = str(error)
            except HttpError as error:
                if error.status is not None and error.status not in client.retry.statuses:
                    raise ServiceProtocolError(
                        f"pull of task {uuid} (type {reward_type!r}) at {self.pull_url} answered "
                        f"{error.status}: {error.body}; terminal, not polled again",
                        uuid=uuid,
                        url=self.pull_url,
                    ) from None
                trace.transient_failures += 1
                trace.last_answer = str(error)
            else:
                trace.polls += 1
                scores = self._answer(uuid, reward_type, keys, response.status, response.body, trace)
                if scores is not None:
                    return scores
            pause = min(wait, deadline - time.monotonic())
            if pause > 0:
                await asyncio.sleep(pause)
            wait = min(wait * 2, self.max_poll_interval_s)

    def _answer(
        self, uuid: str, reward_type: str, keys: Sequence[str], status: int, body: bytes, trace: ScoringTrace
    ) -> dict[str, float] | None:
        """The scores of a 200, ``None`` for a correlated pending answer; raise for anything else."""
        text = body.decode("utf-8", "replace")
        trace.last_answer = f"{status} {_excerpt(text)}"
        where = f"pull of task {uuid} (type {reward_type!r}) at {self.pull_url}"
        try:
            answer = json.loads(body)
        except ValueError:
            answer = None
        if status == 202:
            if isinstance(answer, dict) and answer.get("uuid") == uuid and answer.get("status") == "pending":
                trace.pending_answers += 1
                return None
            raise ServiceProtocolError(
                f"{where} answered 202 without this task's uuid and status 'pending': {_excerpt(text)}",
                uuid=uuid,
                url=self.pull_url,
            )
        if status == 400:
            if answer == {"message": PENDING_MESSAGE.format(uuid=uuid)}:
                trace.pending_answers += 1
                return None
            raise ServiceProtocolError(
                f"{where} answered 400: {_excerpt(text)}; only 'Not found scores for {uuid}' means "
                "pending, so this is terminal and is not polled again",
                uuid=uuid,
                url=self.pull_url,
            )
        return self._scores(where, uuid, reward_type, keys, answer, text)

    def _scores(
        self, where: str, uuid: str, reward_type: str, keys: Sequence[str], answer: Any, text: str
    ) -> dict[str, float]:
        def bad(reason: str) -> ServiceProtocolError:
            return ServiceProtocolError(
                f"{where} answered 200 but {reason}: {_excerpt(text)}", uuid=uuid, url=self.pull_url
            )

        if not isinstance(answer, dict):
            raise bad("the body is not a JSON object")
        answered_type = answer.get("type")
        if answered_type is not None and answered_type != reward_type:
            raise bad(f"it is for reward type {answered_type!r}")
        # The service does not echo the sample's identity; one that does must echo this task's.
        answered_uuid = answer.get("uuid", uuid)
        if answered_uuid != uuid:
            raise bad(f"it is for another task ({answered_uuid!r}), not the one sample sent")
        extra = sorted(set(answer) - ANSWER_METADATA - {"scores", "uuid"})
        if extra:
            raise bad(
                f"it holds {', '.join(map(repr, extra))} beside the score: a scored answer carries only "
                f"the singleton score of the one sample sent and the service's metadata "
                f"({', '.join(sorted(ANSWER_METADATA))}), so this one is not read as a score"
            )
        scores = answer.get("scores")
        if not isinstance(scores, dict):
            raise bad("it holds no 'scores' object (the scorer may have failed)")
        # A key not read still says how many samples the answer covers: one, or it is not ours.
        for key, values in sorted(scores.items()):
            if key not in keys and not _one_number(values):
                raise bad(
                    f"score {key!r} (not read) is {reprlib.repr(values)}, not a list of one number: "
                    "the answer does not hold the singleton score of the one sample sent"
                )
        out: dict[str, float] = {}
        for key in keys:
            if key not in scores:
                raise bad(f"score key {key!r} is missing (it has {sorted(scores)})")
            values = scores[key]
            if not isinstance(values, list) or len(values) != 1:
                raise bad(f"score {key!r} is not a list of exactly one value (one sample was sent)")
            value = values[0]
            if type(value) not in (int, float) or not math.isfinite(value):
                raise bad(f"score {key!r} is {value!r}, not a finite number")
            out[key] = float(value)
        return out

    def _deadline_error(self, trace: ScoringTrace, deadline: float) -> ServiceDeadlineError:
        if trace.uuid is None:
            if trace.stage == "enqueue":
                reason = (
                    "the enqueue did not finish; the task may still have been queued (orphaned), "
                    "and it is not retried"
                )
            else:
                reason = f"nothing was enqueued (stopped during {trace.stage})"
            return ServiceDeadlineError(f"no score by the deadline: {reason}", url=self.enqueue_url)
        last = f"; last answer: {trace.last_answer}" if trace.last_answer else ""
        return ServiceDeadlineError(
            f"no score for task {trace.uuid} by the deadline after {trace.polls} poll(s): it is still "
            "pending or it failed remotely, and the service cannot tell which (a failed task answers "
            f"exactly like a pending one); give the uuid to the service's operator{last}",
            uuid=trace.uuid,
            url=self.pull_url,
        )


def _one_number(values: object) -> bool:
    return isinstance(values, list) and len(values) == 1 and type(values[0]) in (int, float)


async def in_daemon_thread(work: Callable[[], Any], timeout: float) -> Any:
    """Run ``work`` in a daemon thread; wait at most ``timeout`` seconds for it (then abandon it).

    Unlike ``asyncio.to_thread``, a caller that stops waiting is not held up when its event loop
    closes: ``asyncio.run`` joins the default executor's threads, a daemon thread it never sees.
    """
    if timeout <= 0:
        raise asyncio.TimeoutError
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(value: Any, failure: BaseException | None) -> None:
        if future.done():
            return
        if failure is not None:
            future.set_exception(failure)
        else:
            future.set_result(value)

    def run() -> None:
        try:
            value, failure = work(), None
        except BaseException as error:
            value, failure = None, error
        with contextlib.suppress(RuntimeError):  # the loop is gone: the caller stopped waiting
            loop.call_soon_threadsafe(settle, value, failure)

    threading.Thread(target=run, name="rewardkit-media-decode", daemon=True).start()
    return await asyncio.wait_for(future, timeout)
