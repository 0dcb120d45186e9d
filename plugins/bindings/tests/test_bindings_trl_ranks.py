"""The TRL binding on several ranks, each holding a slice that is not whole groups (no torch needed).

Each rank is a thread with its own binding, as each process has its own; ``gather`` is a real
collective between the threads (every rank must call it, or the others wait at the barrier and
the test fails on the barrier's timeout rather than hanging). The real multi-process run, with
torchrun and TRL's GRPOTrainer, is in ``integrations/trl/tests``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

import pytest

from rewardkit.plugin import BindingError
from rewardkit.scoring.reward import load
from rewardkit_bindings.loading import forget_rewards
from rewardkit_bindings.trl import RankFailure, binding

BARRIER_S = 60  # only bounds a broken collective; a passing test never waits on it


class Hub:
    """``world`` threads exchanging one item each per ``gather``, in rank order."""

    def __init__(self, world: int) -> None:
        self.world = world
        self.slots: list[Any] = [None] * world
        self.barrier = threading.Barrier(world, timeout=BARRIER_S)
        self.calls = [0] * world

    def rank(self, rank: int) -> ThreadRank:
        return ThreadRank(self, rank)


class ThreadRank:
    def __init__(self, hub: Hub, rank: int) -> None:
        self.hub, self.rank, self.world = hub, rank, hub.world

    def gather(self, item: Any) -> list[Any]:
        self.hub.calls[self.rank] += 1
        self.hub.slots[self.rank] = item
        self.hub.barrier.wait()
        out = list(self.hub.slots)
        self.hub.barrier.wait()
        return out


def on_ranks(world: int, work: Callable[[Any], Any]) -> tuple[list[Any], Hub]:
    """Run ``work(rank)`` on ``world`` threads; returns each rank's result or exception."""
    hub = Hub(world)
    results: list[Any] = [None] * world

    def run(rank: int) -> None:
        try:
            results[rank] = work(hub.rank(rank))
        except BaseException as error:  # kept for the assertions
            results[rank] = error

    threads = [threading.Thread(target=run, args=(rank,)) for rank in range(world)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results, hub


def config(components: list[dict], group_size: int = 4, on_error: str = "raise") -> dict:
    return {
        "rl.group_size": group_size,
        "rl.data.response_column": "answer",
        "rl.reward.catalog": "bindings_fixtures:catalog",
        "rl.reward.spec": {"onError": on_error, "components": components},
    }


POINTWISE = [{"provider": "verdict", "weight": 0.5}, {"provider": "echo-ref", "weight": 2.0}]
GROUP_NATIVE = [{"provider": "position", "weight": 1.0}, {"provider": "verdict", "weight": 0.5}]
UNEVEN = [{"provider": "sparse", "weight": 1.0}, {"provider": "verdict", "weight": 0.5}]
UNEVEN_GROUP_NATIVE = [{"provider": "sparse", "weight": 1.0}, {"provider": "position", "weight": 0.5}]
# Two prompts of 4 generations over 2 ranks x 4 samples: [p1 p1 p1 p1 | p2 p2 p2 p2] would be whole
# groups, so use 4 ranks x 2 samples: every group spans two ranks.
PROMPTS = ["p1"] * 4 + ["p2"] * 4
ANSWERS = ["a"] * 4 + ["c d"] * 4
COMPLETIONS = ["a", "a b", "x y z", "", "c d", "c", "c d e", "q"]


@pytest.fixture(autouse=True)
def _fresh() -> None:
    forget_rewards()


def call_on(bound, ranks, prompts, completions, answers, metrics=None) -> dict[str, list]:
    bound.ranks = ranks
    rank, size = ranks.rank, len(completions) // ranks.world
    mine = slice(rank * size, (rank + 1) * size)
    log = (lambda name, value: metrics.append((name, value))) if metrics is not None else None
    # TRL passes the same list objects to every function of one call.
    args = {"prompts": prompts[mine], "completions": completions[mine], "answer": answers[mine]}
    out = {}
    for function in bound.functions():
        out[function.__name__] = function(**args, log_metric=log)
    return out


def whole_batch(spec: dict, completions: list[str]) -> list:
    reward = load(spec)
    groups = [
        (
            f"g{start}",
            [
                {"trajectory_id": str(i), "completion": completions[i], "reference": ANSWERS[i]}
                for i in range(start, start + 4)
            ],
        )
        for start in (0, 4)
    ]
    return [candidate for _, candidate in reward.score(groups).candidates()]


@pytest.mark.parametrize("components", [POINTWISE, GROUP_NATIVE], ids=["pointwise", "group-native"])
def test_each_rank_gets_the_whole_group_scores_of_its_own_slice(components):
    spec = config(components)
    bounds = [binding(spec) for _ in range(4)]
    assert bounds[0].slices_per_rank is (components is POINTWISE)
    logged: list[list] = [[] for _ in range(4)]
    results, hub = on_ranks(
        4, lambda r: call_on(bounds[r.rank], r, PROMPTS, COMPLETIONS, ANSWERS, logged[r.rank])
    )
    assert not [result for result in results if isinstance(result, BaseException)], results
    want = whole_batch(spec, COMPLETIONS)
    for rank, result in enumerate(results):
        mine = want[rank * 2 : rank * 2 + 2]
        assert result["rewardkit"] == [candidate.final for candidate in mine]
        for component in components:
            name = component["provider"]
            assert result[name] == [candidate.breakdown[name]["value"] for candidate in mine]
    # Two collectives per batch on every rank, though five functions were called on each.
    assert hub.calls == [2, 2, 2, 2]
    # Every rank logs the same report (TRL averages it over ranks and needs the same names on each).
    assert all(entries == logged[0] for entries in logged)
    report = dict(logged[0])
    assert report["rewardkit/reward/gated_count"] == 0
    # The whole batch's report: the total's mean is TRL's own rewards/rewardkit/mean, never logged twice.
    assert "rewardkit/reward/mean" not in report
    assert report[f"rewardkit/reward_provider/{components[0]['provider']}/sample_count"] == len(want)


@pytest.mark.parametrize("components", [UNEVEN, UNEVEN_GROUP_NATIVE], ids=["pointwise", "group-native"])
def test_uneven_skips_and_diagnostic_weights_log_the_one_process_report(components):
    # Rank 0 scores `sparse` on 1 of its 2 samples, the others on 2 of 2 (or 0 of 2); the diagnostic's
    # weights differ by sample. A merge that weighted each rank's means by its rollouts logs other means.
    completions = ["-", "a b c d e f", "-x", "-y", "a", "b c", "c d e f g", "h i"]
    spec = config(components)
    bounds = [binding(spec) for _ in range(4)]
    logged: list[list] = [[] for _ in range(4)]
    results, _ = on_ranks(
        4, lambda r: call_on(bounds[r.rank], r, PROMPTS, completions, ANSWERS, logged[r.rank])
    )
    assert not [result for result in results if isinstance(result, BaseException)], results
    groups = [
        (f"g{start}", [{"trajectory_id": str(i), "completion": completions[i], "reference": ANSWERS[i]}
                       for i in range(start, start + 4)])
        for start in (0, 4)
    ]  # fmt: skip
    want = binding(spec).reward.score(groups).metrics  # the binding's reward: TRL's advantage eps
    assert want["train/reward_component/sparse/skipped_count"] == 3
    # Less the means TRL logs itself as rewards/<function>/mean (the total's and each component's).
    trl_logs = re.compile(r"train/reward/mean|train/reward_component/[^/]+/mean")
    want = {name: value for name, value in want.items() if not trl_logs.fullmatch(name)}
    prefix = "train/"
    for entries in logged:
        got = dict(entries)
        assert got.keys() == {f"rewardkit/{name.removeprefix(prefix)}" for name in want}
        for name, value in want.items():
            assert got[f"rewardkit/{name.removeprefix(prefix)}"] == pytest.approx(
                value, rel=1e-12, abs=1e-12
            ), name


def test_group_native_scores_differ_from_scoring_each_slice_alone():
    # The check above could pass by accident if slices scored like whole groups: they do not.
    spec = config(GROUP_NATIVE)
    whole = [candidate.final for candidate in whole_batch(spec, COMPLETIONS)]
    sliced = load({**spec, "rl.group_size": 2}).score(
        [
            (f"s{i}", [{"trajectory_id": f"{i}{j}", "completion": COMPLETIONS[i + j]} for j in (0, 1)])
            for i in range(0, 8, 2)
        ]
    )
    assert [candidate.final for _, candidate in sliced.candidates()] != whole


@pytest.mark.parametrize("components", [POINTWISE, GROUP_NATIVE], ids=["pointwise", "group-native"])
def test_an_error_on_one_rank_fails_every_rank_with_the_same_error(components):
    spec = config(components)
    bounds = [binding(spec) for _ in range(4)]
    broken = list(COMPLETIONS)
    broken[5] = "ERR"  # rank 2's first sample
    results, hub = on_ranks(4, lambda r: call_on(bounds[r.rank], r, PROMPTS, broken, ANSWERS))
    assert all(isinstance(result, RankFailure) for result in results), results
    messages = {str(result) for result in results}
    assert len(messages) == 1, messages
    (message,) = messages
    # The pointwise rank that holds the sample fails; a group-native group is scored by one rank.
    failing = 2 if components is POINTWISE else 1
    assert f"rank {failing} of 4 failed while scoring its share" in message
    assert "asked to fail" in message
    assert hub.calls == [2, 2, 2, 2]


def test_prompts_that_do_not_line_up_across_ranks_are_refused_on_every_rank():
    spec = config(POINTWISE)
    bounds = [binding(spec) for _ in range(4)]
    prompts = list(PROMPTS)
    prompts[2] = "p9"  # rank 1's first sample claims another prompt than the rest of group 0
    results, hub = on_ranks(4, lambda r: call_on(bounds[r.rank], r, prompts, COMPLETIONS, ANSWERS))
    assert all(isinstance(result, BindingError) for result in results), results
    assert len({str(result) for result in results}) == 1
    message = str(results[0])
    assert "sample 2 has a different prompt from sample 0" in message
    assert "sample i is sample i % 2 of rank i // 2" in message
    assert hub.calls == [1, 1, 1, 1]  # nothing was scored


def test_a_rank_that_cannot_read_its_batch_fails_every_rank():
    spec = config(POINTWISE)
    bounds = [binding(spec) for _ in range(2)]

    def work(ranks):
        bound = bounds[ranks.rank]
        bound.ranks = ranks
        (total, *_) = bound.functions()
        mine = slice(ranks.rank * 4, ranks.rank * 4 + 4)
        extra = {"answer": ANSWERS[mine]} if ranks.rank == 0 else {}  # rank 1 lacks the column
        return total(prompts=PROMPTS[mine], completions=COMPLETIONS[mine], **extra)

    results, hub = on_ranks(2, work)
    assert all(isinstance(result, RankFailure) for result in results), results
    assert "rank 1 of 2 failed while reading its batch" in str(results[0])
    assert "reference column 'answer'" in str(results[0])
    assert hub.calls == [1, 1]


def test_async_functions_work_across_ranks():
    import asyncio

    from rewardkit_bindings.trl import async_reward_funcs  # noqa: F401 (the public form)

    spec = config(GROUP_NATIVE)
    bounds = [binding(spec) for _ in range(4)]

    def work(ranks):
        bound = bounds[ranks.rank]
        bound.ranks = ranks
        mine = slice(ranks.rank * 2, ranks.rank * 2 + 2)
        args = {"prompts": PROMPTS[mine], "completions": COMPLETIONS[mine], "answer": ANSWERS[mine]}

        async def run():
            return await asyncio.gather(*(f(**args) for f in bound.async_functions()))

        return asyncio.run(run())

    results, hub = on_ranks(4, work)
    want = [candidate.final for candidate in whole_batch(spec, COMPLETIONS)]
    assert [result[0] for result in results] == [want[i : i + 2] for i in range(0, 8, 2)]
    assert hub.calls == [2, 2, 2, 2]
