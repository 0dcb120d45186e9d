"""``rewardkit_media.ranks.score_on_ranks`` over in-process ranks (threads sharing one gather).

The rules (one collective, failures converged, the whole batch finished by the split-batch
finisher) do not depend on torch, so they are tested here with a core provider and a ``Ranks``
of threads; ``plugins/dancegrpo_video/tests/test_ranks.py`` runs them on 2 real processes (gloo)
with the video adapter.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

import rewardkit
from rewardkit.contracts.errors import RewardkitError
from rewardkit_media.ranks import RankScores, RankScoringError, score_on_ranks

CONFIG = {"rl": {"reward": {"provider": "exact-match"}}}
WHOLE = {
    "a": ["4", "5", "4", "4"],
    "b": ["1", "4", "4", "2"],
    "c": ["4", "4", "4", "0"],
}
SPLIT = {"a": (2, 2), "b": (1, 3), "c": (0, 4)}  # group -> trajectories held by rank 0, rank 1


class ThreadRanks:
    """``world`` ranks in one process: ``view(rank).gather(item)`` blocks until every rank gave one."""

    def __init__(self, world: int) -> None:
        self.world = world
        self.slots: list[Any] = [None] * world
        # a broken test must not hang the suite: a rank left waiting raises BrokenBarrierError
        self.barrier = threading.Barrier(world, timeout=60)
        self.calls = [0] * world

    def view(self, rank: int) -> Any:
        shared = self

        class View:
            def __init__(self) -> None:
                self.rank, self.world = rank, shared.world

            def gather(self, item: Any) -> list[Any]:
                shared.calls[rank] += 1
                shared.slots[rank] = item
                shared.barrier.wait()
                out = list(shared.slots)
                shared.barrier.wait()
                return out

        return View()


def rollout(group_id: str, index: int, reference: str | None = "4") -> dict:
    row = {"trajectory_id": f"{group_id}-{index}", "completion": WHOLE[group_id][index]}
    if reference is not None:
        row["reference"] = reference
    return row


def pieces(rank: int, broken: bool = False) -> list[dict]:
    out = []
    for group_id, counts in SPLIT.items():
        first = sum(counts[:rank])
        rollouts = [rollout(group_id, index) for index in range(first, first + counts[rank])]
        if rollouts:
            out.append({"group_id": group_id, "rollouts": rollouts})
    if broken:
        out[0]["rollouts"][0]["reference"] = ["not", "a", "string"]
    return out


def on_ranks(
    world: int,
    batch_of: Callable[[int], list[dict]],
    config_of: Callable[[int], dict] = lambda rank: CONFIG,
    **options: Any,
) -> tuple[list[Any], ThreadRanks]:
    ranks = ThreadRanks(world)
    outcomes: list[Any] = [None] * world

    def run(rank: int) -> None:
        with rewardkit.load(config_of(rank)) as reward:
            try:
                outcomes[rank] = score_on_ranks(reward, batch_of(rank), ranks=ranks.view(rank), **options)
            except Exception as error:
                outcomes[rank] = error

    threads = [threading.Thread(target=run, args=(rank,)) for rank in range(world)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes, ranks


def one_process():
    groups = [
        {"group_id": group_id, "rollouts": [rollout(group_id, index) for index in range(4)]}
        for group_id in WHOLE
    ]
    with rewardkit.load({"rl": {"group_size": 4, "reward": {"provider": "exact-match"}}}) as reward:
        return reward.score(groups)


def test_every_rank_gets_the_report_of_the_whole_batch_scored_in_one_process():
    (first, second), ranks = on_ranks(2, pieces, group_size=4)
    whole = one_process()
    assert isinstance(first, RankScores) and isinstance(second, RankScores)
    assert ranks.calls == [1, 1]  # one collective per batch
    assert first.metrics == second.metrics == whole.metrics
    assert first.batch.metric_weights == whole.metric_weights
    assert first.metrics["train/advantage/abs_mean"] > 0  # a piece of one trajectory alone has none
    by_trajectory = {candidate.trajectory_id: candidate for _, candidate in whole.candidates()}
    assert [(g.group_id, [c.trajectory_id for c in g.candidates]) for g in first.groups] == [
        ("a", ["a-0", "a-1"]),
        ("b", ["b-0"]),
    ]
    for scores in (first, second):
        for group in scores.groups:
            for candidate in group.candidates:  # the advantage within the whole group
                assert candidate == by_trajectory[candidate.trajectory_id]
    assert [group.group_id for group in first.batch.groups] == ["a", "b", "c"]


def test_one_failing_rank_fails_every_rank_with_the_same_error():
    (first, second), ranks = on_ranks(2, lambda rank: pieces(rank, broken=rank == 1))
    assert isinstance(first, RankScoringError) and isinstance(second, RankScoringError)
    assert ranks.calls == [1, 1]  # the failing rank still took part in the collective
    assert str(first) == str(second)
    assert str(first).startswith("rank 1 of 2 failed while scoring its groups: ")
    assert (first.rank, first.kind) == (second.rank, second.kind) == (1, second.kind)
    assert first.__cause__ is None and type(second.__cause__).__name__ == second.kind


def test_every_failing_rank_is_counted():
    (first, second), _ = on_ranks(2, lambda rank: pieces(rank, broken=True))
    assert str(first) == str(second)
    assert first.rank == 0 and "1 other rank(s) failed as well" in str(first)


def test_whole_groups_of_another_size_fail_on_every_rank_alike():
    (first, second), _ = on_ranks(2, pieces, group_size=3)
    assert isinstance(first, RewardkitError) and str(first) == str(second)
    assert "('a', 4)" in str(first) and "group_size=3" in str(first)


def test_ranks_scoring_with_different_providers_fail_alike():
    other = {"rl": {"reward": {"provider": "exact-match", "params": {"case_sensitive": True}}}}
    (first, second), _ = on_ranks(2, pieces, lambda rank: other if rank == 1 else CONFIG)
    assert isinstance(first, RewardkitError) and str(first) == str(second)
    assert "the ranks scored with different providers" in str(first) and "rank 1" in str(first)


def test_a_rank_with_nothing_to_score_still_takes_part():
    (first, second), ranks = on_ranks(2, lambda rank: pieces(1) if rank == 1 else [])
    assert ranks.calls == [1, 1]
    assert first.groups == () and first.metrics == second.metrics
    assert [group.group_id for group in first.batch.groups] == ["a", "b", "c"]


def test_without_distributed_ranks_the_batch_is_this_process_alone():
    groups = [
        {"group_id": group_id, "rollouts": [rollout(group_id, index) for index in range(4)]}
        for group_id in WHOLE
    ]
    with rewardkit.load(CONFIG) as reward:
        scores = score_on_ranks(reward, groups, group_size=4)
    assert (scores.rank, scores.world) == (0, 1)
    assert scores.metrics == one_process().metrics
    assert scores.groups == scores.batch.groups
    assert scores.scorer_revisions == {}  # no decoded-media provider: nothing deployed to name
    (record,) = scores.run_record
    assert record["provider"] == "exact-match" and "scorer_revision" not in record


def test_a_process_group_without_torch_distributed_is_refused():
    with rewardkit.load(CONFIG) as reward, pytest.raises(RewardkitError, match="not initialised"):
        score_on_ranks(reward, [], process_group=object())
