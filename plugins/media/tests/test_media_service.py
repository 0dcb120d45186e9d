"""The media reward service client against the reference server, with injected faults.

Every case checks what the seed asks of the protocol: enqueue sent exactly once (counted by the
server), the deadline honoured, wrong UUIDs and shapes refused, no spool file left behind, the
bearer token sent and never shown.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import threading
import time

import numpy as np
import pytest

from rewardkit_media.service import (
    EnqueueError,
    MediaServiceClient,
    ScoringTrace,
    ServiceDeadlineError,
    ServiceProtocolError,
)
from rewardkit_media.spool import SpoolError
from rewardkit_media.testing import Faults, ReferenceMediaService, brightness

KEYS = {"dance_grpo": ["overall_reward", "vq_reward"]}
TOKEN_ENV = "RK_TEST_MEDIA_TOKEN"
TOKEN = "s3cr3t-media-token-value"
SLACK_S = 0.5  # the bound: the deadline is honoured within 0.5 s


@pytest.fixture(autouse=True)
def _token(monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, TOKEN)


@pytest.fixture
def service():
    with ReferenceMediaService(KEYS) as server:
        yield server


@pytest.fixture
def spool_dir(tmp_path):
    folder = tmp_path / "spool"
    folder.mkdir()
    yield folder
    assert os.listdir(folder) == [], "a spool file was left behind"


def sample(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(1, 3, 4, 8, 8), dtype=np.uint8)


def client(service, spool_dir, keys=KEYS, **options) -> MediaServiceClient:
    settings = {"poll_interval_s": 0.01, "max_poll_interval_s": 0.05, "pull_timeout_s": 2.0}
    settings.update(options)
    return MediaServiceClient(
        enqueue_url=service.enqueue_url,
        pull_url=service.pull_url,
        token_env=TOKEN_ENV,
        reward_types=keys,
        spool_dir=str(spool_dir),
        **settings,
    )


def score(media_client, pixels, deadline_s=10.0, trace=None):
    metadata = {"media_type": "video", "video_infos": [{"video_fps": 16.0}], "prompts": ["a cat"]}
    return asyncio.run(media_client.score(pixels, metadata, time.monotonic() + deadline_s, trace))


# -- the happy paths ---------------------------------------------------------------------------


@pytest.mark.parametrize("style", ["legacy400", "202"])
def test_pending_then_scored_with_one_enqueue(service, spool_dir, style):
    service.faults = Faults(pending_polls=3, pending_style=style)
    pixels = sample()
    result = score(client(service, spool_dir), pixels)
    assert service.enqueue_count == 1
    assert result.scores == {"overall_reward": brightness(pixels), "vq_reward": brightness(pixels) + 1}
    assert result.trace.pending_answers == 3
    assert [pull for pull in service.pulls] == [(result.uuid, "dance_grpo")] * 4


def test_body_is_one_json_line_then_the_npy_bytes(service, spool_dir):
    pixels = sample(3)
    score(client(service, spool_dir), pixels)
    (header,) = service.headers
    assert header == {
        "reward_fn": {"dance_grpo": 1.0},
        "media_type": "video",
        "video_infos": [{"video_fps": 16.0}],
        "prompts": ["a cat"],
    }
    (received,) = service.samples
    assert received.dtype == np.uint8 and np.array_equal(received, pixels)


def test_each_reward_type_is_pulled_with_the_same_uuid(spool_dir):
    keys = {"dance_grpo": ["overall_reward"], "pickscore": ["pickscore"]}
    with ReferenceMediaService(keys) as server:
        pixels = sample(1)
        result = score(client(server, spool_dir, keys=keys), pixels)
        assert server.enqueue_count == 1
        assert {reward_type for _, reward_type in server.pulls} == {"dance_grpo", "pickscore"}
        assert {uuid for uuid, _ in server.pulls} == {result.uuid}
        assert result.scores == {"overall_reward": brightness(pixels), "pickscore": brightness(pixels)}


def test_transient_pull_failures_are_retried_until_scored(service, spool_dir):
    service.faults = Faults(pull_script=[500, 503, "drop", 429, 502, "pending"])
    result = score(client(service, spool_dir), sample())
    assert service.enqueue_count == 1
    assert result.trace.transient_failures >= 1
    assert len(service.pulls) >= 6  # every scripted answer was seen, then the score


# -- enqueue: never twice ------------------------------------------------------------------------


def test_dropped_connection_after_enqueue_is_not_retried(service, spool_dir):
    service.faults = Faults(drop_after_enqueue=True)
    with pytest.raises(EnqueueError, match=r"not retried.*orphaned"):
        score(client(service, spool_dir), sample())
    assert service.enqueue_count == 1
    assert len(service.tasks) == 1  # the service did queue it: an orphan the client cannot know
    assert service.pulls == []


@pytest.mark.parametrize("status", [500, 503, 429, 401])
def test_enqueue_error_status_is_not_retried(service, spool_dir, status):
    service.faults = Faults(enqueue_status=status)
    with pytest.raises(EnqueueError, match=f"answered {status}"):
        score(client(service, spool_dir), sample())
    assert service.enqueue_count == 1
    assert service.pulls == []


@pytest.mark.parametrize("answer", [{}, {"uuid": ""}, {"uuid": "  "}, {"uuid": 7}, ["uuid"]])
def test_enqueue_answer_must_carry_a_uuid(service, spool_dir, answer):
    service.faults = Faults(enqueue_answer=answer)
    with pytest.raises(EnqueueError, match="without a task id"):
        score(client(service, spool_dir), sample())
    assert service.enqueue_count == 1
    assert service.pulls == []


# -- pull: what is pending, what is terminal -----------------------------------------------------


def test_a_202_for_another_uuid_is_refused_and_not_polled_again(service, spool_dir):
    service.faults = Faults(pull_script=["wrong202"])
    with pytest.raises(ServiceProtocolError, match="202 without this task's uuid") as caught:
        score(client(service, spool_dir), sample())
    assert caught.value.uuid is not None
    assert len(service.pulls) == 1 and service.enqueue_count == 1


def test_a_202_without_status_pending_is_refused(service, spool_dir):
    service.faults = Faults(pull_script=["running202"])
    with pytest.raises(ServiceProtocolError, match="status 'pending'"):
        score(client(service, spool_dir), sample())
    assert len(service.pulls) == 1 and service.enqueue_count == 1


def test_another_400_is_terminal_and_not_polled_again(service, spool_dir):
    service.faults = Faults(pull_script=["pending", "bad400"])
    with pytest.raises(ServiceProtocolError, match=r"terminal.*not polled again"):
        score(client(service, spool_dir), sample())
    assert len(service.pulls) == 2 and service.enqueue_count == 1


def test_a_4xx_other_than_400_is_terminal(service, spool_dir):
    service.faults = Faults(pull_script=[404])
    with pytest.raises(ServiceProtocolError, match=r"404.*terminal"):
        score(client(service, spool_dir), sample())
    assert len(service.pulls) == 1


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (
            lambda normal: {**normal, "scores": {**normal["scores"], "overall_reward": [0.1, 0.2]}},
            "exactly one",
        ),
        (lambda normal: {**normal, "scores": {**normal["scores"], "overall_reward": []}}, "exactly one"),
        (lambda normal: {**normal, "scores": {**normal["scores"], "overall_reward": 0.5}}, "exactly one"),
        (lambda normal: {**normal, "scores": {**normal["scores"], "overall_reward": [math.nan]}}, "finite"),
        (lambda normal: {**normal, "scores": {**normal["scores"], "overall_reward": [math.inf]}}, "finite"),
        (lambda normal: {**normal, "scores": {**normal["scores"], "overall_reward": ["0.5"]}}, "finite"),
        (lambda normal: {**normal, "scores": {**normal["scores"], "overall_reward": [True]}}, "finite"),
        (lambda normal: {**normal, "scores": {"vq_reward": [0.5]}}, "missing"),
        (lambda normal: {**normal, "scores": None}, "no 'scores'"),
        (lambda normal: {**normal, "type": "cosmos_reason1"}, "for reward type"),
        (lambda normal: ["not", "an", "object"], "not a JSON object"),
    ],
)
def test_malformed_scores_are_refused(service, spool_dir, mutate, match):
    service.faults = Faults(score_answer=lambda uuid, reward_type, normal: mutate(normal))
    with pytest.raises(ServiceProtocolError, match=match):
        score(client(service, spool_dir), sample())
    assert service.enqueue_count == 1 and len(service.pulls) == 1


@pytest.mark.parametrize(
    ("mutate", "extra"),
    [
        # A 200 that also says something else may not be the score of the sample sent.
        (lambda uuid, normal: {**normal, "error": "handler raised"}, "'error'"),
        (lambda uuid, normal: {**normal, "status": "failed", "message": "queue full"}, "'message', 'status'"),
        (lambda uuid, normal: {**normal, "uuid": "another-task"}, "another task"),
        # Two values under a key not read: the answer covers more than the one sample sent.
        (
            lambda uuid, normal: {**normal, "scores": {**normal["scores"], "ta_reward": [0.1, 0.2]}},
            "'ta_reward'",
        ),
        (lambda uuid, normal: {**normal, "scores": {**normal["scores"], "ta_reward": 0.3}}, "'ta_reward'"),
        (lambda uuid, normal: {**normal, "scores": {**normal["scores"], "ta_reward": [None]}}, "'ta_reward'"),
    ],
)
def test_a_200_holding_anything_but_the_singleton_score_is_refused(service, spool_dir, mutate, extra):
    service.faults = Faults(score_answer=lambda uuid, reward_type, normal: mutate(uuid, normal))
    with pytest.raises(ServiceProtocolError, match="answered 200 but") as caught:
        score(client(service, spool_dir), sample())
    assert extra in str(caught.value) and "one sample" in str(caught.value)
    assert caught.value.uuid == service.pulls[0][0]
    assert service.enqueue_count == 1 and len(service.pulls) == 1, "terminal: not polled again"


def test_the_real_services_answer_is_read_with_its_metadata_and_unread_singleton_keys(service, spool_dir):
    """The Cosmos-RL service's 200 (0.4.7) carries ``input_info``, ``duration``,
    ``decoded_duration`` and ``type`` beside ``scores``, and every key its handler computes, one
    value each, whichever keys the client reads."""

    def real_shape(uuid: str, reward_type: str, normal: dict) -> dict:
        scores = {**normal["scores"], "mq_reward": [0.25], "ta_reward": [4.0]}
        return {**normal, "scores": scores, "decoded_duration": "N/A", "uuid": uuid}

    service.faults = Faults(score_answer=real_shape)
    answer = score(client(service, spool_dir, keys={"dance_grpo": ["overall_reward"]}), sample())
    assert answer.scores == {"overall_reward": pytest.approx(brightness(sample()))}


# -- the deadline ----------------------------------------------------------------------------


def _timed(media_client, deadline_s, trace=None):
    started = time.monotonic()
    with pytest.raises(ServiceDeadlineError) as caught:
        score(media_client, sample(), deadline_s=deadline_s, trace=trace)
    return caught.value, time.monotonic() - started


def test_never_ready_ends_at_the_deadline_with_the_uuid(service, spool_dir):
    service.faults = Faults(never_ready=True)
    error, elapsed = _timed(client(service, spool_dir, max_poll_interval_s=0.3), deadline_s=1.0)
    assert 1.0 - 0.05 <= elapsed <= 1.0 + SLACK_S, elapsed
    assert error.uuid == service.pulls[0][0]
    assert "still pending or it failed remotely" in str(error) and error.uuid in str(error)
    assert service.enqueue_count == 1


def test_a_slow_pull_answer_does_not_outlive_the_deadline(service, spool_dir):
    service.faults = Faults(pull_script=["slow"], slow_s=30.0)
    error, elapsed = _timed(client(service, spool_dir, pull_timeout_s=60.0), deadline_s=1.0)
    assert elapsed <= 1.0 + SLACK_S, elapsed
    assert error.uuid is not None and service.enqueue_count == 1


def test_a_slow_enqueue_answer_ends_at_the_deadline_without_a_retry(service, spool_dir):
    service.faults = Faults(enqueue_delay_s=30.0)
    error, elapsed = _timed(client(service, spool_dir), deadline_s=1.0)
    assert elapsed <= 1.0 + SLACK_S, elapsed
    assert error.uuid is None and "may" in str(error)
    assert service.enqueue_count == 1 and service.pulls == []


def test_pull_500s_until_the_deadline(service, spool_dir):
    service.faults = Faults(pull_script=[500] * 10_000)
    error, elapsed = _timed(client(service, spool_dir), deadline_s=1.0)
    assert elapsed <= 1.0 + SLACK_S, elapsed
    assert "500" in str(error) and service.enqueue_count == 1


def test_a_deadline_already_passed_sends_nothing(service, spool_dir):
    error, _ = _timed(client(service, spool_dir), deadline_s=-1.0)
    assert "nothing was enqueued" in str(error)
    assert service.enqueue_count == 0


# -- spool files and cancellation ----------------------------------------------------------------


def test_cancelled_during_enqueue_leaves_no_spool_file(service, spool_dir):
    service.faults = Faults(enqueue_delay_s=30.0)
    media_client = client(service, spool_dir)

    async def main():
        task = asyncio.create_task(
            media_client.score(sample(), {"media_type": "video"}, time.monotonic() + 60, ScoringTrace())
        )
        while service.enqueue_count == 0:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert service.enqueue_count == 1
    # the spool_dir fixture asserts the folder is empty


def test_cancelled_before_its_write_thread_starts_writing_leaves_no_spool_file(
    service, spool_dir, monkeypatch
):
    # The write runs in a daemon thread that a cancelled caller abandons; when the thread writes
    # only after the caller removed the spool file, the file must not come back.
    from rewardkit_media.spool import Spool

    release, finished = threading.Event(), threading.Event()
    write = Spool.write

    def held_write(self, array, prefix=b""):
        try:
            release.wait(60)
            return write(self, array, prefix)
        finally:
            finished.set()

    monkeypatch.setattr(Spool, "write", held_write)
    media_client = client(service, spool_dir)

    async def main():
        task = asyncio.create_task(
            media_client.score(sample(), {"media_type": "video"}, time.monotonic() + 60, ScoringTrace())
        )
        while not os.listdir(spool_dir):  # the file is created before the write thread starts
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert os.listdir(spool_dir) == []
    release.set()
    assert finished.wait(60)
    assert os.listdir(spool_dir) == []  # the late write did not create it again
    assert service.enqueue_count == 0


def test_capacity_is_checked_before_anything_is_written_or_sent(service, spool_dir):
    media_client = client(service, spool_dir, active_ranks=1)
    media_client.active_ranks = 10**9  # a billion ranks of this sample do not fit any disk
    with pytest.raises(SpoolError, match="needs"):
        score(media_client, sample())
    assert service.enqueue_count == 0


# -- the token -------------------------------------------------------------------------------


def test_the_bearer_token_is_sent_and_never_shown(service, spool_dir, caplog):
    caplog.set_level(logging.DEBUG)
    service.faults = Faults(pending_polls=1)
    media_client = client(service, spool_dir)
    score(media_client, sample())
    assert service.authorizations and set(service.authorizations) == {f"Bearer {TOKEN}"}
    service.faults = Faults(never_ready=True)
    error, _ = _timed(media_client, deadline_s=0.3)
    shown = caplog.text + str(error) + repr(media_client) + repr(error)
    assert TOKEN not in shown
    assert TOKEN_ENV in repr(media_client)


def test_the_header_line_is_compact_json():
    media_client = MediaServiceClient(
        enqueue_url="http://127.0.0.1:1/api/reward/enqueue",
        pull_url="http://127.0.0.1:1/api/reward/pull",
        token_env=None,
        reward_types={"pickscore": ["pickscore"]},
    )
    line = media_client.header({"media_type": "image", "prompts": ["a\nb"]})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {"reward_fn": {"pickscore": 1.0}, "media_type": "image", "prompts": ["a\nb"]}
