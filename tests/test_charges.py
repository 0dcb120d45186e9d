"""A candidate can only hurt itself: charges, faults decided by reproduction beside a canary
(``rewardkit.scoring.reproduction``) and their per-batch rerun budget, the infrastructure error rate on
every batch, and candidate fields a provider declares it needs."""

from __future__ import annotations

from pathlib import Path

import pytest

import rewardkit
from rewardkit.contracts.errors import RegistrationError, RewardContractError
from rewardkit.scoring.composition import CompositionError
from rewardkit.scoring.metrics import merge_metrics
from rewardkit.scoring.reproduction import DEFAULT_RERUNS_PER_BATCH

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


def test_a_fault_that_reproduces_is_charged_with_its_evidence_however_many_there_are():
    # 3 of 8 timed out every time: each reproduced beside a passing canary, so each stands. No share
    # of a batch turns charges into errors any more (the candidates control that share).
    texts = ["slow a", "fine", "slow b", "fine", "slow c", "fine", "fine", "fine"]
    with rewardkit.load(config("timing-judge")) as reward:  # onError: raise
        batch = reward.score(groups(texts))
    candidates = [candidate for _, candidate in batch.candidates()]
    assert [candidate.final for candidate in candidates] == [0.0, 0.4, 0.0, 0.4, 0.0, 0.4, 0.4, 0.4]
    slow = candidates[0]
    entry = slow.breakdown["timing-judge"]
    assert entry["status"] == "scored" and entry["reason"].startswith("the judge timed out on it (reproduced")
    assert "canary (another answer of the group) had just passed" in entry["reproduction"]
    assert slow.diagnostics["timing-judge"]["timed_out"] == 1.0
    assert batch.metrics["train/reward/infra_error_rate"] == 0.0


def test_a_fault_that_does_not_reproduce_scores_the_second_result():
    texts = ["flaky one", "fine", "fine", "fine"]
    with rewardkit.load(config("timing-judge")) as reward:
        batch = reward.score(groups(texts))
    flaky = next(candidate for _, candidate in batch.candidates())
    assert flaky.final == 0.9 and flaky.breakdown["timing-judge"]["status"] == "scored"
    assert "reason" not in flaky.breakdown["timing-judge"] or not flaky.breakdown["timing-judge"]["reason"]


def test_a_failing_canary_is_infrastructure_and_fails_the_batch_naming_it():
    texts = ["sick one", "fine", "fine", "fine"]
    with (
        rewardkit.load(config("timing-judge")) as reward,
        pytest.raises(CompositionError, match=r"the canary \(another answer of the group\) failed too"),
    ):
        reward.score(groups(texts))
    with rewardkit.load(config("timing-judge", on_error="none")) as reward:
        batch = reward.score(groups(texts))
    assert [candidate.final for _, candidate in batch.candidates()] == [None, 0.4, 0.4, 0.4]
    assert batch.metrics["train/reward/infra_error_rate"] == pytest.approx(1 / 4)


def test_past_the_batch_rerun_budget_the_canary_alone_decides_and_each_batch_has_its_own():
    texts = ["flaky a", "flaky b", "flaky c", "fine"]
    tight = config("timing-judge")
    tight["rl"]["reward"]["spec"]["reruns"] = {"per_batch": 1}
    with rewardkit.load(tight) as reward:
        first = reward.score(groups(texts))
        second = reward.score(groups(["flaky d", "flaky e", "fine", "fine"]))
    # One rerun: the first flaky candidate's second answer counts; the others were charged on
    # the canary's word alone, without a rerun.
    assert [candidate.final for _, candidate in first.candidates()] == [0.7, 0.0, 0.0, 0.4]
    spent = list(first.candidates())[1][1].breakdown["timing-judge"]["reproduction"]
    assert spent.startswith("not scored again: this batch's 1 reruns were spent")
    assert [candidate.final for _, candidate in second.candidates()] == [0.7, 0.0, 0.4, 0.4]


def test_the_rerun_budget_is_the_specs_and_recorded_only_when_not_the_default():
    from rewardkit.scoring.composition import RewardSpec

    plain = RewardSpec.parse({"components": [{"provider": "timing-judge"}]})
    assert "reruns" not in plain.to_json() and plain.reruns.per_batch == DEFAULT_RERUNS_PER_BATCH
    tight = RewardSpec.parse({"components": [{"provider": "timing-judge"}], "reruns": {"per_batch": 0}})
    assert tight.to_json()["reruns"] == {"per_batch": 0}
    with pytest.raises(CompositionError, match=r"reruns\.per_batch"):
        RewardSpec.parse({"components": [{"provider": "timing-judge"}], "reruns": {"per_batch": -1}})


def test_the_old_breaker_field_is_accepted_with_a_warning_naming_it_and_ignored():
    from rewardkit.scoring.composition import RewardSpec

    with pytest.warns(FutureWarning, match="'breaker' field is deprecated and ignored"):
        spec = RewardSpec.parse({"components": [{"provider": "timing-judge"}], "breaker": {"min": 3}})
    assert "breaker" not in spec.to_json()
    texts = ["slow a", "slow b", "slow c", "fine"]
    old = config("timing-judge")
    old["rl"]["reward"]["spec"]["breaker"] = {"min": 0, "share": 0}
    with pytest.warns(FutureWarning, match="breaker"), rewardkit.load(old) as reward:
        batch = reward.score(groups(texts))
    assert [candidate.final for _, candidate in batch.candidates()] == [0.0, 0.0, 0.0, 0.4]


def test_deterministic_charges_stand_at_once():
    texts = ["bomb a", "bomb b", "bomb c", "bomb d", "bomb e", "fine", "fine", "fine"]
    with rewardkit.load(config("timing-judge")) as reward:
        batch = reward.score(groups(texts))
    assert [candidate.final for _, candidate in batch.candidates()] == [0.0] * 5 + [0.4] * 3
    assert batch.metrics["train/reward/infra_error_rate"] == 0.0


def test_the_infra_error_rate_merges_across_split_batches_as_one_batch():
    texts = ["sick a", "sick b", "sick c", "fine"] + ["fine"] * 12
    with rewardkit.load(config("timing-judge", on_error="none")) as reward:
        whole = reward.score(groups(texts))
        first, second = reward.score(groups(texts[:4])), reward.score(groups(texts[4:]))
    merged, _ = merge_metrics([(part.metrics, part.metric_weights) for part in (first, second)])
    assert whole.metrics["train/reward/infra_error_rate"] == pytest.approx(3 / 16)
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


def test_the_async_twin_decides_alike_and_takes_the_canary_first():
    import asyncio

    from rewardkit.scoring.reproduction import CanaryFailed, Charged, Fault, RerunBudget, areproduce

    order: list[str] = []
    fault = Fault("unreadable", "the verdict was unreadable")

    async def canary(why: str | None) -> str | None:
        order.append("canary")
        return why

    async def rerun(answer: object) -> object:
        order.append("rerun")
        return answer

    async def decide(why: str | None, answer: object, budget: RerunBudget) -> object:
        return await areproduce(
            fault,
            canary_name="a sibling",
            canary=lambda: canary(why),
            rerun=lambda: rerun(answer),
            budget=budget,
        )

    budget = RerunBudget(2)
    charged = asyncio.run(decide(None, Fault("unreadable", "again"), budget))
    assert isinstance(charged, Charged) and charged.rerun and order == ["canary", "rerun"]
    assert asyncio.run(decide(None, "second verdict", budget)) == "second verdict"
    spent = asyncio.run(decide(None, "never asked", budget))
    assert isinstance(spent, Charged) and not spent.rerun and order[-1] == "canary"
    with pytest.raises(CanaryFailed, match=r"the canary \(a sibling\) failed too on that worker: down"):
        asyncio.run(decide("down", "never asked", RerunBudget(1)))
    with pytest.raises(ValueError, match="whole number >= 0"):
        RerunBudget(-1)
