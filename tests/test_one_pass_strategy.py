"""The one-pass strategy is a strategy of the one pipeline: chosen in one place for ``score`` and
``process`` alike, and finished by the same steps."""

from __future__ import annotations

import copy
from contextlib import nullcontext
from functools import partial
from typing import Any

import pytest

import rewardkit
from rewardkit import RewardProviderResult, RewardProviderSpec, map_candidates
from rewardkit.contracts import RewardCandidate, RewardContext
from rewardkit.scoring.composition import RewardSpec
from rewardkit.scoring.worker import RewardWorker
from rewardkit.seam.plugins import PluginInfo
from rewardkit.seam.registry import Registry


def timing_out(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    """Charges a "slow" candidate on non-deterministic evidence, as a timeout is."""
    if candidate.completion == "slow":
        return RewardProviderResult.charged("timed out", "timeout", {"task": 0.0}, deterministic=False)
    return RewardProviderResult({"task": 1.0})


def charging_worker() -> RewardWorker:
    spec = RewardProviderSpec(
        "charging", partial(map_candidates, timing_out), (), "1", ("task",), ("timeout",), cheap=True
    )
    registry: Registry[RewardProviderSpec] = Registry("provider", RewardProviderSpec)
    registry.add(spec.name, spec, PluginInfo("test", "tests", "0", False))
    reward_spec = RewardSpec.parse({"components": [{"provider": "charging"}], "onError": "zero"})
    worker = RewardWorker(reward_spec, rewardkit.Catalog(registry, None), group_size=2)
    assert worker._pointwise is not None, "a cheap map_candidates provider takes the one-pass strategy"
    return worker


def batch(*completions: str) -> list[tuple[str, list[dict[str, Any]]]]:
    return [
        (
            f"g{g}",
            [{"trajectory_id": f"g{g}/{k}", "completion": completions[2 * g + k]} for k in range(2)],
        )
        for g in range(len(completions) // 2)
    ]


def general(worker: RewardWorker, groups: list[Any]) -> Any:
    return worker.finish(worker._stage(groups, None, lambda weight: nullcontext()))


@pytest.mark.parametrize(
    ("completions", "statuses"),
    [
        # however many are charged, the charges stand (no share of a batch voids them any more)
        (("slow", "slow", "slow", "fast"), ["scored", "scored", "scored", "scored"]),
        (("slow", "fast", "slow", "fast"), ["scored", "scored", "scored", "scored"]),
    ],
)
def test_charges_stand_the_same_on_both_strategies(completions, statuses):
    worker = charging_worker()
    groups = batch(*completions)
    one_pass = worker.evaluate(groups)
    assert one_pass == general(worker, groups)
    assert one_pass.to_jsonl_rows() == general(worker, groups).to_jsonl_rows()
    assert [c.breakdown["charging"]["status"] for _, c in one_pass.candidates()] == statuses
    written = copy.deepcopy(groups)
    assert worker.process(written) == one_pass
    assert [rollout["reward"]["final"] for _, rollouts in written for rollout in rollouts] == [
        c.final for _, c in one_pass.candidates()
    ]


def test_score_and_process_take_the_same_strategy(monkeypatch: pytest.MonkeyPatch):
    reward = rewardkit.load({"rl": {"group_size": 2, "reward": {"provider": "exact-match"}}})
    one_pass = reward.worker._pointwise
    assert one_pass is not None
    calls: list[str] = []
    original = one_pass.score

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append("one pass")
        return original(*args, **kwargs)

    monkeypatch.setattr(one_pass, "score", counted)
    groups = [
        (
            "g",
            [
                {"trajectory_id": "a", "completion": "x", "reference": "x"},
                {"trajectory_id": "b", "completion": "y", "reference": "x"},
            ],
        )
    ]
    scored = reward.score(groups)
    processed = reward.process(groups)
    reward.close()
    assert calls == ["one pass", "one pass"]
    assert processed == scored
    assert [rollout["reward"]["final"] for rollout in groups[0][1]] == [1.0, 0.0]
    assert [rollout["advantage"] for rollout in groups[0][1]] == [c.advantage for _, c in scored.candidates()]


def test_a_cancelled_batch_reports_the_error_that_stopped_it_not_a_failed_candidate():
    # When one chunk of a batch fails, the chunks still running are cancelled: a cancellation must
    # not become a failed candidate, whose composition error (under onError: raise) would then be
    # raised in place of the error that stopped the batch.
    from rewardkit.contracts.errors import RequestCancelled
    from rewardkit.scoring.pointwise import score_candidates

    candidate = RewardCandidate("t", "x")

    def cancelled(candidate: RewardCandidate, context: RewardContext) -> None:
        raise RequestCancelled("another chunk of the batch failed")

    with pytest.raises(RequestCancelled, match="another chunk"):
        score_candidates(cancelled, {}, "g", [candidate], RewardContext())
