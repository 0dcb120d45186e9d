"""The split-batch finisher: parts scored apart finish to what one call on the whole batch gives.

The parts are uneven, one group is split across two parts (as on TRL ranks), the diagnostics carry
different weights per candidate, and the infra errors all sit in one part. The reference is
``rewardkit.Reward.score`` on the whole batch: metrics to 1e-12, advantages exactly.
"""

from __future__ import annotations

import pytest

import rewardkit
from rewardkit.config import RLConfig
from rewardkit.contracts.errors import RewardkitError
from rewardkit.scoring.scored import ScoredBatch
from rewardkit.scoring.split_batch import SplitBatchFinisher, finish_split_batch

SIZE = 4
# Group g1 is split 1 | 3 across parts 0 and 1. `sparse` skips "-..." and weighs its `length`
# diagnostic by the words; "ERR" makes `verdict` error (an infra error) and sits only in part 2.
COMPLETIONS = {
    "g0": ["a b", "-x", "a b c d e", "q"],
    "g1": ["one", "-two", "three four", "five six seven"],
    "g2": ["ERR now", "c", "ERR again", "-d e f"],
}
PARTS = [
    [("g0", slice(0, 4)), ("g1", slice(0, 1))],
    [("g1", slice(1, 4))],
    [("g2", slice(0, 4))],
]


def config(scaling: str, on_error: str, group_size: int | None = SIZE) -> dict:
    return {
        "rl.group_size": group_size,
        "rl.advantage_scaling": scaling,
        "rl.reward.catalog": "bindings_fixtures:catalog",
        "rl.reward.spec": {
            "onError": on_error,
            "components": [{"provider": "sparse", "weight": 1.0}, {"provider": "verdict", "weight": 0.5}],
        },
    }


def rollouts(group_id: str, where: slice = slice(None)) -> list[dict]:
    texts = COMPLETIONS[group_id]
    return [{"trajectory_id": f"{group_id}-{i}", "completion": texts[i]} for i in range(len(texts))][where]


def whole_and_parts(scaling: str, on_error: str) -> tuple[ScoredBatch, list[ScoredBatch], RLConfig]:
    with rewardkit.load(config(scaling, on_error)) as reward:
        whole = reward.score([(group_id, rollouts(group_id)) for group_id in COMPLETIONS])
    # A part holding a piece of a group checks no group size, as a trainer rank's slice scorer.
    with rewardkit.load(config(scaling, on_error, group_size=None)) as reward:
        parts = [reward.score([(group_id, rollouts(group_id, where)) for group_id, where in part])
                 for part in PARTS]  # fmt: skip
        return whole, parts, reward.config.rl


def assert_same_report(got: ScoredBatch, want: ScoredBatch) -> None:
    assert got.metrics.keys() == want.metrics.keys()
    for name, value in want.metrics.items():
        assert got.metrics[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name
    assert got.metric_weights == pytest.approx(want.metric_weights, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("on_error", ["zero", "none"])
@pytest.mark.parametrize("scaling", ["group", "batch", "none"])
def test_parts_finish_to_the_whole_batch_scored_in_one_call(scaling, on_error):
    whole, parts, rl = whole_and_parts(scaling, on_error)
    finished = finish_split_batch(parts, rl)

    assert [group.group_id for group in finished.groups] == ["g0", "g1", "g2"]
    assert [c for _, c in finished.candidates()] == [c for _, c in whole.candidates()]  # advantages exactly
    assert_same_report(finished, whole)
    # The case is what it claims: errors in one part only, uneven skips, weighted diagnostics.
    errors = [part.metrics.get("train/reward_component/verdict/error_count", 0) for part in parts]
    assert errors == [0, 0, 2]
    assert whole.metrics["train/reward/infra_error_rate"] == pytest.approx(2 / 12)
    assert whole.metrics["train/reward_component/verdict/infra_error_rate"] == pytest.approx(2 / 12)
    assert whole.metric_weights["train/reward_provider/sparse/length"] != 9  # not one per candidate
    # A split group's piece has advantages of its own that the finisher does not keep.
    piece = parts[0].groups[1].candidates[0]
    assert piece.advantage == 0.0 != finished.groups[1].candidates[0].advantage


def test_merging_the_parts_own_advantage_means_would_be_wrong():
    # Why abs_mean is recomputed: a weighted merge of the parts' means differs from the whole's.
    whole, parts, _ = whole_and_parts("group", "zero")
    name = "train/advantage/abs_mean"
    weighted = sum(part.metrics[name] * part.metric_weights[name] for part in parts)
    assert weighted / sum(part.metric_weights[name] for part in parts) != pytest.approx(whole.metrics[name])


def test_the_streaming_form_gives_what_finish_gives():
    # The score job cannot hold its run: it feeds reports, the batch scale and groups one by one.
    whole, parts, rl = whole_and_parts("batch", "none")
    streaming = SplitBatchFinisher.for_config(rl)
    for part in parts:
        streaming.add_report(part.metrics, part.metric_weights)
    totals = [[c.final for c in group.candidates] for group in whole.groups]
    streaming.scale_by_batch(total for group in totals for total in group)
    advantages = [streaming.advantages([group])[0] for group in totals]
    metrics, weights = streaming.report()

    assert advantages == [[c.advantage for c in group.candidates] for group in whole.groups]
    finished = finish_split_batch(parts, rl)
    assert (metrics, weights) == (finished.metrics, finished.metric_weights)


def test_one_part_is_its_own_report_exactly():
    with rewardkit.load(config("group", "zero")) as reward:
        whole = reward.score([(group_id, rollouts(group_id)) for group_id in COMPLETIONS])
        finished = finish_split_batch([whole], reward.config.rl)
    assert finished == whole  # groups and metrics, compared exactly
    assert finished.metric_weights == whole.metric_weights


def test_group_order_puts_round_robin_parts_back_in_batch_order():
    with rewardkit.load(config("batch", "zero")) as reward:
        whole = reward.score([(group_id, rollouts(group_id)) for group_id in COMPLETIONS])
        dealt = [reward.score([("g0", rollouts("g0")), ("g2", rollouts("g2"))]),
                 reward.score([("g1", rollouts("g1"))])]  # fmt: skip
        finished = finish_split_batch(dealt, reward.config.rl, group_order=["g0", "g1", "g2"])
    assert [c for _, c in finished.candidates()] == [c for _, c in whole.candidates()]
    assert_same_report(finished, whole)


def test_parts_that_do_not_make_up_the_batch_are_refused():
    _, parts, rl = whole_and_parts("group", "zero")
    with pytest.raises(RewardkitError, match=r"groups \['g9'\] are in no part"):
        finish_split_batch(parts, rl, group_order=["g0", "g1", "g2", "g9"])
    with pytest.raises(RewardkitError, match=r"groups \['g2'\] of the parts are not in the batch"):
        finish_split_batch(parts, rl, group_order=["g0", "g1"])


def test_a_mean_without_a_weight_is_refused_unless_a_default_is_given():
    _, parts, rl = whole_and_parts("group", "zero")
    unweighted = [ScoredBatch(part.groups, part.metrics, part.providers, {}) for part in parts]
    with pytest.raises(RewardkitError, match="has no weight to merge it by"):
        finish_split_batch(unweighted, rl)
    rollouts_each = [float(sum(len(g.candidates) for g in part.groups)) for part in parts]
    merged = finish_split_batch(unweighted, rl, default_weights=rollouts_each)
    assert merged.metrics["train/reward/infra_error_rate"] == pytest.approx(2 / 12)


def test_a_finisher_finishes_one_batch():
    _, parts, rl = whole_and_parts("group", "zero")
    finisher = SplitBatchFinisher.for_config(rl)
    finisher.finish(parts)
    with pytest.raises(RewardkitError, match="finished a batch already"):
        finisher.finish(parts)
