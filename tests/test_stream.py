"""``Reward.stream()`` / ``astream()``: a batch submitted a group at a time, through the public API.

The reference is ``Reward.score`` on the same batch: every group's finals, breakdowns and advantages
exactly, the batch report to 1e-12 (as the split-batch finisher's own tests). ``held`` (in
``stream_fixtures``) keeps a group waiting at a gate the test opens, so what happens while a group
is still being scored is observed without timing anything.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import weakref
from collections.abc import Iterator
from concurrent.futures import CancelledError, Future
from typing import Any

import pytest
import stream_fixtures

import rewardkit
from rewardkit.contracts.errors import ConfigError, RequestCancelled, RewardkitError
from rewardkit.scoring import shared_results
from rewardkit.scoring.backpressure import BackpressureTimeout, RequestTooLarge
from rewardkit.scoring.scored import ScoredBatch, ScoredGroup
from rewardkit.scoring.split_batch import SplitBatchFinisher
from rewardkit.scoring.stream import RewardStream, stream_of

SIZE = 4
COMPLETIONS = {
    "g0": ["a b", "-x", "a b c d e", "q"],
    "g1": ["one", "-two", "three four", "five six seven"],
    "g2": ["ERR now", "c", "ERR again", "-d e f"],
}
# Pointwise providers (one-pass strategy), and `position`, group-native (general strategy), both
# scored on the stream's threads; the same pointwise providers declared cheap, scored in submit's thread.
CHEAP = [{"provider": "sparse", "weight": 1.0}, {"provider": "verdict", "weight": 0.5}]
THREADED = [{"provider": "sparse", "weight": 1.0}, {"provider": "position", "weight": 0.25}]
DECLARED_CHEAP = [{"provider": "cheap-sparse", "weight": 1.0}, {"provider": "cheap-verdict", "weight": 0.5}]


def config(components: list[dict[str, Any]], *, on_error: str = "zero", **settings: Any) -> dict[str, Any]:
    return {
        "rl.group_size": settings.pop("group_size", SIZE),
        "rl.advantage_scaling": settings.pop("scaling", "group"),
        "rl.reward.catalog": "stream_fixtures:catalog",
        "rl.reward.spec": {"onError": on_error, "components": components, **settings.pop("spec", {})},
        **{f"rewards.{key}": value for key, value in settings.items()},
    }


def group(group_id: str, texts: list[str] | None = None) -> tuple[str, list[dict[str, str]]]:
    texts = COMPLETIONS[group_id] if texts is None else texts
    return group_id, [
        {"trajectory_id": f"{group_id}-{i}", "completion": text} for i, text in enumerate(texts)
    ]


def batch() -> list[tuple[str, list[dict[str, str]]]]:
    return [group(group_id) for group_id in COMPLETIONS]


def assert_same_batch(got: ScoredBatch, want: ScoredBatch) -> None:
    assert got.groups == want.groups  # finals, breakdowns, advantages, diagnostics: exactly
    assert got.metrics.keys() == want.metrics.keys()
    for name, value in want.metrics.items():
        assert got.metrics[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name
    assert got.metric_weights == pytest.approx(want.metric_weights, rel=1e-12, abs=1e-12)
    assert got.providers == want.providers


@pytest.fixture(autouse=True)
def open_gates() -> Iterator[None]:
    stream_fixtures.reset()
    yield
    for gate in list(stream_fixtures.GATES.values()):
        gate.set()  # a failed test leaves no provider waiting
    stream_fixtures.reset()


@pytest.mark.parametrize(
    "components", [CHEAP, THREADED, DECLARED_CHEAP], ids=["one-pass", "threaded", "declared-cheap"]
)
@pytest.mark.parametrize("on_error", ["zero", "none"])
@pytest.mark.parametrize("scaling", ["group", "none"])
def test_a_stream_gives_what_score_gives_on_the_same_batch(components, on_error, scaling):
    with rewardkit.load(config(components, on_error=on_error, scaling=scaling)) as reward:
        whole = reward.score(batch())
        with reward.stream() as stream:
            futures = [stream.submit(item) for item in batch()]
            handed_back = [future.result() for future in futures]
        streamed = stream.close()  # after the block: the batch it finished, again

    assert handed_back == list(whole.groups)  # each group's future: its final values and advantages
    assert_same_batch(streamed, whole)
    # The case is what it claims: errors (all in g2), skips and weighted diagnostics in some groups only.
    assert whole.metrics["train/reward/infra_error_rate"] > 0


def test_a_group_is_handed_back_while_a_group_submitted_before_it_is_still_scored():
    with rewardkit.load(config([{"provider": "held"}], group_size=2)) as reward, reward.stream() as stream:
        slow = stream.submit(group("g0", ["hold:g0", "x"]))
        stream_fixtures.STARTED["g0"].wait()
        quick = stream.submit(group("g1", ["one two", "three"]))

        scored = quick.result()  # back while g0 is still held at its gate

        assert not slow.done()
        assert [candidate.final for candidate in scored.candidates] == [2.0, 1.0]
        assert [candidate.advantage for candidate in scored.candidates] == pytest.approx(
            [0.7071, -0.7071], abs=1e-4
        )
        stream_fixtures.GATES["g0"].set()
        assert slow.result().group_id == "g0"
        whole = reward.score([group("g0", ["hold:g0", "x"]), group("g1", ["one two", "three"])])
    # Submission order, and g1, merged into the batch after g0 though scored first, as score reports it.
    assert [scored.group_id for scored in stream.close().groups] == ["g0", "g1"]
    assert_same_batch(stream.close(), whole)


def test_close_scores_a_group_no_stream_thread_has_taken_in_its_own_thread():
    # The caller of close() would only wait: it scores a queued group (after the last hand-over,
    # usually the last group) instead of waking a stream thread for it and being woken in turn.
    settings = {"group_size": 2, "concurrency": 1}  # one thread: g1 queues behind the held g0
    with rewardkit.load(config([{"provider": "held"}], **settings)) as reward:
        scored_in: list[threading.Thread] = []

        def scored(_: Future[ScoredGroup]) -> None:
            scored_in.append(threading.current_thread())  # a future's callbacks run where it is set
            stream_fixtures.GATES["g0"].set()

        with reward.stream() as stream:
            held = stream.submit(group("g0", ["hold:g0", "x"]))
            stream_fixtures.STARTED["g0"].wait()
            stream.submit(group("g1", ["one two", "three"])).add_done_callback(scored)
            closed = stream.close()  # only g1 scored, here, lets the stream's one thread finish g0

        assert scored_in == [threading.current_thread()]
        assert held.result().group_id == "g0"
        assert_same_batch(
            closed, reward.score([group("g0", ["hold:g0", "x"]), group("g1", ["one two", "three"])])
        )


def test_a_stream_starts_at_most_its_threads_and_none_outlives_it():
    # Threads start as groups need them, at most rewards.concurrency; a group handed over while every
    # one is busy waits for the first to end; close() stops the idle ones and the busy ones end.
    settings = {"group_size": 2, "concurrency": 2}
    with rewardkit.load(config([{"provider": "held"}], **settings)) as reward:
        before = set(threading.enumerate())
        with reward.stream() as stream:
            futures = [stream.submit(group(name, [f"hold:{name}", "x"])) for name in ("g0", "g1")]
            stream_fixtures.STARTED["g0"].wait()
            stream_fixtures.STARTED["g1"].wait()
            futures.append(stream.submit(group("g2", ["hold:g2", "x"])))
            started = {
                thread
                for thread in set(threading.enumerate()) - before
                if thread.name.startswith("rewardkit-stream")
            }
            assert len(started) == 2 and not stream_fixtures.STARTED["g2"].is_set()
            for name in ("g0", "g1", "g2"):
                stream_fixtures.GATES[name].set()
            assert [future.result().group_id for future in futures] == ["g0", "g1", "g2"]
            closed = stream.close()  # both threads are idle by now, or about to be
        assert [scored.group_id for scored in closed.groups] == ["g0", "g1", "g2"]
        for thread in started:
            thread.join(timeout=10)
            assert not thread.is_alive(), thread.name


def test_a_cheap_group_is_scored_in_the_submitting_thread_and_done_when_submit_returns():
    # As score() scores cheap providers in the calling thread: a hand-off would cost more than the group.
    with rewardkit.load(config([{"provider": "noted"}], group_size=2)) as reward:
        whole = reward.score([group("g0", ["a", "bb"]), group("g1", ["ccc", "d"])])
        stream_fixtures.SCORED_IN.clear()
        with reward.stream() as stream:
            first = stream.submit(group("g0", ["a", "bb"]))
            assert first.done()
            second = stream.submit(group("g1", ["ccc", "d"]))
            assert second.done()
        assert [threading.current_thread()] * 4 == stream_fixtures.SCORED_IN
        assert [first.result(), second.result()] == list(whole.groups)
        assert_same_batch(stream.close(), whole)


def test_a_keyboard_interrupt_while_a_cheap_group_is_scored_reaches_the_caller_and_fails_the_stream():
    with rewardkit.load(config([{"provider": "noted"}], group_size=2, max_inflight=4)) as reward:
        stream = reward.stream()
        assert stream.submit(group("g0", ["a", "bb"])).result().group_id == "g0"
        with pytest.raises(KeyboardInterrupt):
            stream.submit(group("g1", ["ctrl-c", "x"]))  # not kept in a future the caller never reads
        with pytest.raises(KeyboardInterrupt):
            stream.close()  # no report for a batch that was interrupted
        # Capacity came back: all 4 rollouts of max_inflight are admitted at once (the deadline only
        # turns a regression into a BackpressureTimeout instead of a hang).
        both = [group("h0", ["a", "b"]), group("h1", ["c", "d"])]
        assert len(reward.score(both, deadline_s=30).groups) == 2


def test_under_on_error_raise_a_failed_group_fails_its_future_the_stream_and_close():
    with rewardkit.load(config(THREADED, on_error="raise")) as reward:
        with pytest.raises(rewardkit.ProviderError, match="asked to fail") as score_error:
            reward.score(batch())
        stream = reward.stream()
        good = stream.submit(group("g0"))
        assert good.result().group_id == "g0"  # handed back before the failure: it stays handed back
        bad = stream.submit(group("g2"))
        with pytest.raises(rewardkit.ProviderError, match="asked to fail"):
            bad.result()
        with pytest.raises(rewardkit.ProviderError, match="asked to fail"):
            stream.submit(group("g1"))  # the batch has failed: nothing more is scored for it
        with pytest.raises(rewardkit.ProviderError, match="asked to fail") as close_error:
            stream.close()
    assert type(close_error.value) is type(score_error.value)


def test_a_group_that_breaks_the_contract_fails_as_it_fails_score():
    with rewardkit.load(config(CHEAP)) as reward:
        too_small = group("g0", ["only one"])
        with pytest.raises(rewardkit.RewardContractError) as score_error:
            reward.score([too_small])
        stream = reward.stream()
        with pytest.raises(rewardkit.RewardContractError) as stream_error:
            stream.submit(too_small).result()
        assert str(stream_error.value) == str(score_error.value)
        with pytest.raises(rewardkit.RewardContractError):
            stream.close()  # the batch failed: no report
        with pytest.raises(rewardkit.RewardContractError), reward.stream() as empty:
            empty.submit(("g0", [])).result()  # refused by the group checks, as score() refuses it
        with pytest.raises(RewardkitError, match="already submitted"), reward.stream() as again:
            again.submit(group("g0"))
            again.submit(group("g0"))


def test_an_exception_in_the_block_cancels_the_groups_not_yet_scored():
    settings = {"group_size": 2, "concurrency": 1}  # one thread: g1 queues behind the held g0
    with rewardkit.load(config([{"provider": "held"}], **settings)) as reward:
        with pytest.raises(ValueError, match="the trainer broke"), reward.stream() as stream:
            running = stream.submit(group("g0", ["hold:g0", "x"]))
            queued = stream.submit(group("g1", ["a", "b"]))
            stream_fixtures.STARTED["g0"].wait()
            raise ValueError("the trainer broke")

        assert "g0" in stream_fixtures.CANCELLED  # the running group was stopped, not waited out
        assert not stream_fixtures.GATES["g0"].is_set()
        with pytest.raises(RequestCancelled):
            running.result()
        with pytest.raises(CancelledError):
            queued.result()
        with pytest.raises(RequestCancelled, match="raised ValueError"):
            stream.close()
        with pytest.raises(RequestCancelled):
            stream.submit(group("g2", ["a", "b"]))
        assert reward.score([group("g3", ["a", "b c"])]).groups[0].candidates[1].final == 2.0  # capacity back


def test_close_inside_the_block_returns_the_batch_and_leaving_after_is_a_no_op():
    with rewardkit.load(config(THREADED)) as reward:
        whole = reward.score(batch())
        with reward.stream() as stream:
            for item in batch():
                stream.submit(item)
            closed = stream.close()
            assert_same_batch(closed, whole)
            with pytest.raises(RewardkitError, match="this stream is closed"):
                stream.submit(group("g9", ["a", "b", "c", "d"]))
        assert stream.close() is closed


def test_submit_waits_for_capacity_and_times_out_at_its_deadline():
    settings = {"group_size": 2, "max_inflight": 2}
    with rewardkit.load(config([{"provider": "held"}], **settings)) as reward, reward.stream() as stream:
        held = stream.submit(group("g0", ["hold:g0", "x"]))
        stream_fixtures.STARTED["g0"].wait()
        short = reward.stream(deadline_s=0.05)
        with pytest.raises(BackpressureTimeout, match=r"rewards\.max_inflight"):
            short.submit(group("g1", ["a", "b"]))  # the two rollouts in flight are g0's
        assert short.close().groups == ()
        stream_fixtures.GATES["g0"].set()
        assert held.result().group_id == "g0"
        assert stream.submit(group("g1", ["a", "b"])).result().group_id == "g1"  # capacity came back


def test_a_group_larger_than_max_inflight_is_refused_at_once_and_left_out_of_the_batch():
    settings = {"group_size": 4, "max_inflight": 2}
    with rewardkit.load(config(THREADED, **settings)) as reward, reward.stream() as stream:
        with pytest.raises(RequestTooLarge, match=r"exceeds rewards\.max_inflight=2"):
            stream.submit(group("g0"))  # 4 rollouts never fit: no wait, whatever the deadline
        with pytest.raises(RequestTooLarge):
            stream.submit(group("g0"))  # refused, not kept: the same group may be offered again
        assert stream.close().groups == ()


def test_a_group_its_caller_cancels_before_it_is_scored_gives_its_capacity_back_and_leaves_the_batch():
    # An asyncio.wait_for that timed out cancels the future it waited for; a stream's own cancel()
    # after that (or twice over) gives nothing back twice.
    settings = {"group_size": 2, "concurrency": 1}  # one thread: g1 queues behind the held g0
    with rewardkit.load(config([{"provider": "held"}], **settings)) as reward:
        with reward.stream() as stream:
            held = stream.submit(group("g0", ["hold:g0", "x"]))
            stream_fixtures.STARTED["g0"].wait()
            assert stream.submit(group("g1", ["a", "b"])).cancel()
            stream_fixtures.GATES["g0"].set()
            assert held.result().group_id == "g0"
            closed = stream.close()
        assert [scored.group_id for scored in closed.groups] == ["g0"]
        assert reward.limiter.in_flight == 0
        stream_fixtures.reset()
        with pytest.raises(ValueError), reward.stream() as again:
            again.submit(group("g0", ["hold:g0", "x"]))
            stream_fixtures.STARTED["g0"].wait()
            again.submit(group("g1", ["a", "b"]))
            again.cancel("first")  # then leaving the block with an error cancels it again
            raise ValueError("the trainer broke")
        assert reward.limiter.in_flight == 0


def test_a_stream_dropped_without_close_is_collected_and_its_threads_end():
    settings = {"group_size": 2, "concurrency": 2}
    with rewardkit.load(config(THREADED, **settings)) as reward:
        before = set(threading.enumerate())
        stream = reward.stream()
        for name in ("g0", "g1", "g2"):
            stream.submit(group(name, ["a b", "c"])).result()
        threads = [t for t in set(threading.enumerate()) - before if t.name.startswith("rewardkit-stream")]
        assert threads, "the groups were scored on the stream's threads"
        dropped = weakref.ref(stream)
        del stream
        gc.collect()
        assert dropped() is None, "an idle thread holds no reference to its stream"
        for thread in threads:
            thread.join(timeout=10)
            assert not thread.is_alive(), thread.name


def test_a_malformed_part_fails_its_group_and_the_thread_goes_on_to_the_next():
    # A backend's score([group]) that comes back without the group fails that group (and so the
    # stream), on the thread, which lives on: the group queued behind it ends before close().
    gate = threading.Event()

    def score_one_group(item: Any) -> ScoredBatch:
        if item[0] == "bad":
            gate.wait(10)
            return ScoredBatch((), {}, (), {})
        raise AssertionError("the stream failed before this group could be scored")

    stream = RewardStream(score_one_group, SplitBatchFinisher(), threads=1)
    bad = stream.submit(("bad", [{"trajectory_id": "b0", "completion": "x"}]))
    queued = stream.submit(("next", [{"trajectory_id": "n0", "completion": "y"}]))
    gate.set()
    assert isinstance(bad.exception(timeout=10), ValueError)
    # ended by the failure, on the same thread (not left queued until close())
    assert isinstance(queued.exception(timeout=10), RequestCancelled)
    with pytest.raises(ValueError):
        stream.close()


def test_a_stream_is_one_batch_for_the_rerun_budget():
    # `flaky` times out once; one rerun per batch. In one score call only one of the two flaky
    # candidates is scored again; a stream of the same two groups must spend the same one budget.
    tight = config([{"provider": "timing-judge"}], group_size=2, spec={"reruns": {"per_batch": 1}})
    texts = {"g0": ["flaky a", "fine"], "g1": ["flaky b", "fine"]}
    with rewardkit.load(tight) as reward:
        whole = reward.score([group(group_id, each) for group_id, each in texts.items()])
    with rewardkit.load(tight) as reward, reward.stream() as stream:
        first = stream.submit(group("g0", texts["g0"])).result()  # the rerun is waited for
        second = stream.submit(group("g1", texts["g1"])).result()
    flaky_finals = sorted(scored.candidates[0].final for scored in whole.groups)
    assert flaky_finals == [0.0, 0.7]
    assert [first.candidates[0].final, second.candidates[0].final] == [0.7, 0.0]
    spent = second.candidates[0].breakdown["timing-judge"]["reproduction"]
    assert spent.startswith("not scored again: this batch's 1 reruns were spent")


EQUAL_ANSWER = "the same answer"


def judged_groups() -> list[tuple[str, list[dict[str, str]]]]:
    """Two groups of one prompt, each holding EQUAL_ANSWER once beside an answer of its own."""
    return [
        (
            group_id,
            [
                {"trajectory_id": f"{group_id}-{k}", "completion": text, "prompt": "Say it."}
                for k, text in enumerate([EQUAL_ANSWER, f"only in {group_id}"])
            ],
        )
        for group_id in ("g0", "g1")
    ]


@pytest.mark.parametrize(("judge", "asked"), [("counting-judge", 1), ("sampled-judge", 2)])
def test_a_stream_is_one_batch_for_equal_answers(judge, asked):
    # A cacheable provider is asked once about an answer the batch holds twice, whichever groups
    # hold it; one that does not declare it is asked about each candidate.
    import shared_results_fixtures

    with rewardkit.load(config([{"provider": judge}], group_size=2)) as reward:
        shared_results_fixtures.ASKED.clear()
        whole = reward.score(judged_groups())
        assert shared_results_fixtures.ASKED[EQUAL_ANSWER] == asked
        shared_results_fixtures.ASKED.clear()
        with reward.stream() as stream:
            for item in judged_groups():
                stream.submit(item).result()  # the second group is scored after the first is done
        assert shared_results_fixtures.ASKED[EQUAL_ANSWER] == asked
        assert shared_results_fixtures.ASKED["only in g1"] == 1
        assert_same_batch(stream.close(), whole)  # shared_result diagnostics included
        # Under across_batches a stream shares the run's results: nothing the run met is asked again.
        shared_results_fixtures.ASKED.clear()
        with shared_results.across_batches(16):
            reward.score(judged_groups()[:1])
            with reward.stream() as stream:
                stream.submit(judged_groups()[1]).result()
        assert shared_results_fixtures.ASKED[EQUAL_ANSWER] == asked


def test_batch_scaling_is_refused_because_no_advantage_is_known_before_the_last_group():
    with (
        rewardkit.load(config(CHEAP, scaling="batch")) as reward,
        pytest.raises(ConfigError, match=r"rl\.advantage_scaling: .*score whole batches"),
    ):
        reward.stream()


def test_the_async_twin_gives_what_score_gives_and_cancels_with_its_task():
    async def stream_all(reward: rewardkit.Reward) -> tuple[list[ScoredGroup], ScoredBatch]:
        async with reward.astream() as stream:
            futures = [await stream.submit(item) for item in batch()]
            handed_back = list(await asyncio.gather(*futures))
            return handed_back, await stream.close()

    async def cancelled_while_held(
        reward: rewardkit.Reward,
    ) -> Future[ScoredGroup] | asyncio.Future[ScoredGroup]:
        held: list[asyncio.Future[ScoredGroup]] = []
        submitted = asyncio.Event()

        async def trainer() -> None:
            async with reward.astream() as stream:
                held.append(await stream.submit(group("g0", ["hold:g0", "x"])))
                submitted.set()
                await held[0]

        task = asyncio.create_task(trainer())
        await submitted.wait()
        await asyncio.to_thread(stream_fixtures.STARTED["g0"].wait)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return held[0]

    with rewardkit.load(config(THREADED)) as reward:
        whole = reward.score(batch())
        handed_back, streamed = asyncio.run(stream_all(reward))
    assert handed_back == list(whole.groups)
    assert_same_batch(streamed, whole)

    with rewardkit.load(config([{"provider": "held"}], group_size=2)) as reward:
        future = asyncio.run(cancelled_while_held(reward))
    assert "g0" in stream_fixtures.CANCELLED and future.done()


class ScoreOnly:
    """A backend that offers only ``score`` (as the Reward Service's client and Ray's do), scoring
    with a real in-process reward behind it."""

    def __init__(self, reward: rewardkit.Reward) -> None:
        self.config = reward.config
        self.requests: list[list[str]] = []
        self._reward = reward

    def score(self, groups: list[Any], **options: Any) -> ScoredBatch:
        self.requests.append([group_id for group_id, _ in groups])
        return self._reward.score(groups, **options)


def test_stream_of_streams_any_backend_one_request_per_group():
    with rewardkit.load(config(THREADED)) as reward:
        whole = reward.score(batch())
        backend = ScoreOnly(reward)
        stream = stream_of(backend)  # type: ignore[arg-type]
        assert stream is not None
        with stream:
            handed_back = [future.result() for future in [stream.submit(item) for item in batch()]]
        assert sorted(backend.requests) == [["g0"], ["g1"], ["g2"]]
        assert handed_back == list(whole.groups)
        assert_same_batch(stream.close(), whole)
    with rewardkit.load(config(CHEAP, scaling="batch")) as reward:
        assert stream_of(reward) is None  # whole batches only: the caller scores them with score()
