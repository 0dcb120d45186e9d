"""How a batch travels: cheap providers in the calling thread with the collector paused, others
in chunks on worker threads, chunks within the in-flight limit, composition errors located."""

from __future__ import annotations

import gc
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit import CompositionError, RewardContractError, RewardProviderSpec
from rewardkit.contracts.errors import RegistrationError
from rewardkit.scoring.worker import CHUNKS_PER_BATCH

HERE = Path(__file__).parent


@pytest.fixture(autouse=True)
def fixtures(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(HERE))
    import worker_fixtures

    worker_fixtures.SEEN.clear()
    return worker_fixtures


def load(provider: str, **rewards: Any) -> rewardkit.Reward:
    config = {
        "rl": {"group_size": 2, "reward": {"provider": provider, "catalog": "worker_fixtures:catalog"}},
        "rewards": {"concurrency": 4, **rewards},
    }
    return rewardkit.load(config)


def batch(groups: int) -> list[tuple[str, list[dict[str, Any]]]]:
    return [
        (f"g{g}", [{"trajectory_id": f"g{g}/{k}", "completion": f"value={g + k}"} for k in range(2)])
        for g in range(groups)
    ]


def test_cheap_must_be_a_bool():
    with pytest.raises(RegistrationError, match="cheap must be True or False"):
        RewardProviderSpec("x", dict, (), "1", ("score",), cheap="yes")  # type: ignore[arg-type]


def test_a_cheap_reward_is_scored_in_the_calling_thread_with_the_collector_paused(fixtures: Any):
    with load("where-cheap") as reward:
        scored = reward.score(batch(50))
    assert [c.final for _, c in scored.candidates()] == [float(g + k) for g in range(50) for k in range(2)]
    here = threading.current_thread().name
    assert [(here, False)] * 100 == fixtures.SEEN
    assert gc.isenabled()  # and back on afterwards


def test_an_application_that_turned_the_collector_off_keeps_it_off(fixtures: Any):
    gc.disable()
    try:
        with load("where-cheap") as reward:
            reward.score(batch(3))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_other_rewards_go_to_worker_threads_in_chunks_with_the_collector_on(fixtures: Any):
    with load("where") as reward:
        scored = reward.score(batch(200))
    assert [c.final for _, c in scored.candidates()] == [float(g + k) for g in range(200) for k in range(2)]
    threads = {name for name, _ in fixtures.SEEN}
    assert threading.current_thread().name not in threads
    assert all(name.startswith("rewardkit-score") for name in threads)
    assert all(enabled for _, enabled in fixtures.SEEN)


def test_chunks_hand_each_thread_runs_of_groups(fixtures: Any, monkeypatch: pytest.MonkeyPatch):
    submitted: list[int] = []
    from concurrent.futures import ThreadPoolExecutor

    original = ThreadPoolExecutor.submit

    def counting(self: ThreadPoolExecutor, fn: Any, *args: Any, **kwargs: Any) -> Any:
        submitted.append(len(args[1]))  # copy_context().run(stage_chunk, chunk, weight, admit)
        return original(self, fn, *args, **kwargs)

    monkeypatch.setattr(ThreadPoolExecutor, "submit", counting)
    with load("where") as reward:
        reward.score(batch(640))
    assert len(submitted) == CHUNKS_PER_BATCH and sum(submitted) == 640


@pytest.mark.parametrize("provider", ["where", "where-cheap"])
def test_a_batch_larger_than_the_inflight_limit_is_scored_in_chunks_that_fit(provider: str):
    with load(provider, max_inflight=6) as reward:  # 3 groups of 2 at a time
        scored = reward.score(batch(40))
    assert len(scored.groups) == 40


@pytest.mark.parametrize("provider", ["where", "where-cheap"])
def test_progress_counts_every_rollout(provider: str):
    done: list[int] = []
    with load(provider, max_inflight=8) as reward:
        reward.score(batch(30), progress=done.append)
    assert sum(done) == 60 and len(done) > 1


def test_a_composition_error_names_the_group_and_candidate_inside_a_chunk():
    spec = {"components": [{"provider": "keyed", "term": "score"}]}  # onError: raise
    config = {"rl": {"group_size": 2, "reward": {"spec": spec, "catalog": "worker_fixtures:catalog"}}}
    groups = [
        (f"g{g}", [{"trajectory_id": f"g{g}/{k}", "completion": "error" if (g, k) == (7, 1) else "value=1"}
                   for k in range(2)])
        for g in range(12)
    ]  # fmt: skip
    with rewardkit.load(config) as reward, pytest.raises(CompositionError) as raised:
        reward.score(groups)
    assert "[group 'g7', candidate 'g7/1']" in str(raised.value)
    assert "timeout" in str(raised.value)


def test_once_a_chunk_fails_the_other_chunks_stop_and_nothing_runs_on(fixtures: Any):
    groups = batch(400)
    groups[100] = ("g100", [{"trajectory_id": "g100/0", "completion": "broken"},
                            {"trajectory_id": "g100/1", "completion": "value=1"}])  # fmt: skip
    fixtures.SLOW_SCORED["count"] = 0
    with load("slow-or-broken") as reward, pytest.raises(RewardContractError, match="scripted contract"):
        reward.score(groups)  # 800 candidates x 20 ms on 4 threads would take 4 s
    at_raise = fixtures.SLOW_SCORED["count"]
    time.sleep(0.5)
    assert fixtures.SLOW_SCORED["count"] == at_raise  # nothing of the batch ran on after it failed
    assert at_raise < 400
