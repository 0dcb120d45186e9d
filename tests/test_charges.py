"""A candidate can only hurt itself: charges, the circuit breaker over non-deterministic ones, the
infrastructure error rate on every batch, and candidate fields a provider declares it needs."""

from __future__ import annotations

from pathlib import Path

import pytest

import rewardkit
from rewardkit.charges import BREAKER_MIN, BREAKER_SHARE, breaker_limit
from rewardkit.composition import CompositionError
from rewardkit.errors import RegistrationError, RewardContractError
from rewardkit.metrics import merge_metrics

HERE = Path(__file__).parent


@pytest.fixture(autouse=True)
def importable_fixtures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HERE))


def config(provider: str, on_error: str = "raise", group_size: int = 4) -> dict:
    return {
        "rl": {
            "reward": {
                "catalog": "charges_fixtures:catalog",
                "spec": {"onError": on_error, "components": [{"provider": provider}]},
            },
            "group_size": group_size,
        }
    }


def groups(texts: list[str], size: int = 4, **fields) -> list[dict]:
    out = []
    for start in range(0, len(texts), size):
        rollouts = [
            {"trajectory_id": f"t{start + i}", "completion": text, **fields}
            for i, text in enumerate(texts[start : start + size])
        ]
        out.append({"group_id": f"g{start // size}", "rollouts": rollouts})
    return out


def test_a_charged_candidate_scores_its_worst_with_a_reason_and_its_diagnostic_beside_honest_ones():
    texts = ["honest answer", "bomb" * 5, "slow one", "ok"]
    with rewardkit.load(config("timing-judge")) as reward:  # onError: raise
        batch = reward.score(groups(texts))
    honest, bomb, slow, short = (candidate for _, candidate in batch.candidates())
    assert honest.final == 1.0 and short.final == 0.2
    assert bomb.final == 0.0 and bomb.breakdown["timing-judge"]["status"] == "scored"
    assert bomb.breakdown["timing-judge"]["reason"] == "refused: it would cost too much"
    assert bomb.diagnostics["timing-judge"]["refused"] == 1.0
    assert slow.final == 0.0 and slow.diagnostics["timing-judge"]["timed_out"] == 1.0
    assert batch.metrics["train/reward/infra_error_rate"] == 0.0
    assert batch.metrics["train/reward_component/timing-judge/infra_error_rate"] == 0.0


def test_the_breaker_limit_is_the_larger_of_two_and_a_fifth():
    assert (BREAKER_MIN, BREAKER_SHARE) == (2, 0.2)
    assert breaker_limit(4) == 2 and breaker_limit(10) == 2 and breaker_limit(20) == 4.0


def test_too_many_non_deterministic_charges_in_a_batch_are_one_infrastructure_failure():
    # 3 of 8 candidates charged on a timeout: more than max(2, 1.6); a shared cause is likelier.
    texts = ["slow a", "fine", "slow b", "fine", "slow c", "fine", "fine", "fine"]
    with (
        rewardkit.load(config("timing-judge")) as reward,
        pytest.raises(CompositionError, match="charged on non-deterministic evidence"),
    ):
        reward.score(groups(texts))
    with rewardkit.load(config("timing-judge", on_error="none")) as reward:
        batch = reward.score(groups(texts))
    finals = [candidate.final for _, candidate in batch.candidates()]
    assert finals == [None, 0.4, None, 0.4, None, 0.4, 0.4, 0.4]
    assert batch.metrics["train/reward/infra_error_rate"] == pytest.approx(3 / 8)
    assert batch.metrics["train/reward_component/timing-judge/error_count"] == 3


def test_deterministic_charges_are_never_voided():
    texts = ["bomb a", "bomb b", "bomb c", "bomb d", "bomb e", "fine", "fine", "fine"]
    with rewardkit.load(config("timing-judge")) as reward:
        batch = reward.score(groups(texts))
    assert [candidate.final for _, candidate in batch.candidates()] == [0.0] * 5 + [0.4] * 3
    assert batch.metrics["train/reward/infra_error_rate"] == 0.0


def test_two_non_deterministic_charges_stand():
    texts = ["slow a", "slow b", "fine", "fine"]
    with rewardkit.load(config("timing-judge")) as reward:
        batch = reward.score(groups(texts))
    assert [candidate.final for _, candidate in batch.candidates()] == [0.0, 0.0, 0.4, 0.4]


def test_the_infra_error_rate_merges_across_split_batches_as_one_batch():
    texts = ["slow a", "slow b", "slow c", "fine"] + ["fine"] * 12
    with rewardkit.load(config("timing-judge", on_error="none")) as reward:
        whole = reward.score(groups(texts))
        first, second = reward.score(groups(texts[:4])), reward.score(groups(texts[4:]))
    merged, _ = merge_metrics([(part.metrics, part.metric_weights) for part in (first, second)])
    # Within the first part alone 3 of 4 trip the breaker; in the whole batch 3 of 16 do not.
    assert whole.metrics["train/reward/infra_error_rate"] == 0.0
    assert first.metrics["train/reward/infra_error_rate"] == 0.75
    assert merged["train/reward/infra_error_rate"] == pytest.approx(3 / 16)


def test_a_candidate_field_a_provider_needs_is_checked_like_a_prompt():
    with rewardkit.load(config("counted", group_size=2)) as reward:
        batch = reward.score(groups(["a", "b"], size=2, completion_token_count=7))
        assert [candidate.final for _, candidate in batch.candidates()] == [7.0, 7.0]
        with pytest.raises(RewardContractError, match="needs 'completion_token_count' on every candidate"):
            reward.score(groups(["a", "b"], size=2))


def test_skip_when_absent_skips_the_candidate_instead():
    with rewardkit.load(config("counted-or-skip", group_size=2)) as reward:
        batch = reward.score(groups(["a", "b"], size=2))
    assert [c.breakdown["counted-or-skip"]["status"] for _, c in batch.candidates()] == ["skipped"] * 2


def test_skip_when_absent_names_only_candidate_fields_the_provider_needs():
    from charges_fixtures import count_tokens

    from rewardkit import RewardProviderSpec, map_candidates

    with pytest.raises(RegistrationError, match="skip_when_absent"):
        RewardProviderSpec(
            "bad",
            lambda: map_candidates(count_tokens),
            (),
            "1",
            ("tokens",),
            skip_when_absent=("finish_reason",),
        )


def test_the_breaker_thresholds_are_the_specs_and_recorded_only_when_not_the_default():
    from rewardkit.composition import RewardSpec

    plain = RewardSpec.parse({"components": [{"provider": "timing-judge"}]})
    assert "breaker" not in plain.to_json()
    lenient = RewardSpec.parse({"components": [{"provider": "timing-judge"}], "breaker": {"min": 3}})
    assert lenient.to_json()["breaker"] == {"min": 3, "share": 0.2}
    texts = ["slow a", "fine", "slow b", "fine", "slow c", "fine", "fine", "fine"]
    loose = config("timing-judge")
    loose["rl"]["reward"]["spec"]["breaker"] = {"min": 3}
    with rewardkit.load(loose) as reward:  # 3 charges no longer pass the limit: they stand
        batch = reward.score(groups(texts))
    assert [candidate.final for _, candidate in batch.candidates()][:3] == [0.0, 0.4, 0.0]
