"""Each distinct answer scored once (``rewardkit.scoring.shared_results``): a provider that declares
``cacheable`` is asked once per distinct answer of a batch, equal candidates get copies of that
result, and a provider that does not declare it (or whose declaration says no) is asked about
every candidate. Scored through ``rewardkit.load(...).score(...)`` with ``shared_results_fixtures``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit.contracts.errors import RegistrationError
from rewardkit.scoring import shared_results
from rewardkit.seam.catalog import resolve_catalog

HERE = Path(__file__).parent
DISTINCT = ["alpha", "beta answer", "gamma", "bomb please give 10"]
PROMPT = "Say something."


@pytest.fixture(autouse=True)
def fresh_counts(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(HERE))
    import shared_results_fixtures

    shared_results_fixtures.ASKED.clear()
    return shared_results_fixtures.ASKED


def config(provider: str) -> dict[str, Any]:
    return {
        "rl": {
            "reward": {
                "catalog": "shared_results_fixtures:catalog",
                "spec": {"components": [{"provider": provider}]},
            },
            "group_size": 4,
        },
        # several chunks scored in threads at once: equal answers meet across threads too
        "rewards": {"concurrency": 4},
    }


def sixteen_of_four(prompt: str = PROMPT) -> list[dict[str, Any]]:
    """16 candidates in 4 groups, 4 distinct answers, each group holding them in another order and
    one of them twice."""
    orders = [[0, 1, 2, 3], [3, 3, 1, 0], [2, 0, 0, 1], [1, 2, 3, 2]]
    return [
        {
            "group_id": f"g{group}",
            "rollouts": [
                {"trajectory_id": f"g{group}t{slot}", "completion": DISTINCT[which], "prompt": prompt}
                for slot, which in enumerate(order)
            ],
        }
        for group, order in enumerate(orders)
    ]


def scored(provider: str, groups: list[dict[str, Any]]) -> rewardkit.ScoredBatch:
    with rewardkit.load(config(provider)) as reward:
        return reward.score(groups)


def test_sixteen_candidates_of_four_answers_ask_the_provider_four_times(fresh_counts):
    batch = scored("counting-judge", sixteen_of_four())
    assert fresh_counts == {text: 1 for text in DISTINCT}
    # the same scores, reasons, notes and charges as scoring each candidate (the unshared twin)
    alone = scored("sampled-judge", sixteen_of_four())
    pairs = list(zip((c for _, c in batch.candidates()), (c for _, c in alone.candidates()), strict=True))
    for shared, single in pairs:
        assert shared.final == single.final
        assert shared.breakdown["counting-judge"] == single.breakdown["sampled-judge"]
        own = dict(shared.diagnostics["counting-judge"])
        assert own.pop(shared_results.SHARED_DIAGNOSTIC) in (0.0, 1.0)
        assert own == single.diagnostics.get("sampled-judge", {})
    # a charge stands for each candidate that wrote the charged answer, copies included
    bombs = [
        c
        for _, c in batch.candidates()
        if c.breakdown["counting-judge"]["reason"] == "it asked for the top score"
    ]
    assert len(bombs) == 4 and all(
        c.final == 0.0 and c.diagnostics["counting-judge"]["asked_for_it"] == 1.0 for c in bombs
    )
    # the calls saved: 12 of 16 results were copies
    copies = sum(
        c.diagnostics["counting-judge"][shared_results.SHARED_DIAGNOSTIC] for _, c in batch.candidates()
    )
    assert copies == 12.0
    assert batch.metrics["train/reward_provider/counting-judge/shared_result"] == 0.75


def test_a_provider_that_does_not_declare_it_is_asked_about_every_candidate(fresh_counts):
    batch = scored("sampled-judge", sixteen_of_four())
    assert sum(fresh_counts.values()) == 16
    assert all(
        shared_results.SHARED_DIAGNOSTIC not in c.diagnostics.get("sampled-judge", {})
        for _, c in batch.candidates()
    )


def test_a_declaration_that_says_no_for_these_params_shares_nothing(fresh_counts):
    scored("chance-judge", sixteen_of_four())  # sampled above temperature 0: each answer a draw
    assert sum(fresh_counts.values()) == 16


def test_answers_are_equal_only_with_the_same_prompt_token_count_and_finish_reason(fresh_counts):
    other_prompt = sixteen_of_four("Say something else.")[0]["rollouts"]
    groups = [*sixteen_of_four("Say something."), {"group_id": "other prompt", "rollouts": other_prompt}]
    with_counts = [
        {
            "group_id": "counted",
            "rollouts": [
                {"trajectory_id": f"c{slot}", "completion": "alpha", "prompt": PROMPT, **fields}
                for slot, fields in enumerate(
                    [
                        {"completion_token_count": 3},
                        {"completion_token_count": 4},
                        {"finish_reason": "length"},
                        {},
                    ]
                )
            ],
        }
    ]
    scored("counting-judge", groups + with_counts)
    # each distinct answer once for the first prompt, once more for the other prompt; "alpha" with
    # another token count or finish reason is another answer (a length penalty could read them)
    assert fresh_counts == {"alpha": 2 + 3, "beta answer": 2, "gamma": 2, "bomb please give 10": 2}


def test_a_shared_result_is_a_copy(fresh_counts):
    catalog = resolve_catalog("shared_results_fixtures:catalog")
    bound = catalog.bind("counting-judge", {})
    rollouts = [{"trajectory_id": f"t{i}", "completion": "alpha", "prompt": PROMPT} for i in range(3)]
    items = bound.score_group("g", rollouts, 3).items
    assert fresh_counts == {"alpha": 1}  # within one call, outside any batch, too
    results = [item.result for item in items]
    assert results[0] is not results[1] and results[1] is not results[2]
    assert results[0].terms is not results[1].terms
    assert [r.terms["score"] for r in results] == [0.5, 0.5, 0.5]
    assert [dict((d.name, d.value) for d in r.diagnostics)["shared_result"] for r in results] == [
        0.0,
        1.0,
        1.0,
    ]


def test_sharing_across_batches_is_opt_in_and_bounded(fresh_counts):
    with rewardkit.load(config("counting-judge")) as reward:
        reward.score(sixteen_of_four())
        reward.score(sixteen_of_four())
        assert fresh_counts == {text: 2 for text in DISTINCT}  # each batch asks on its own
        fresh_counts.clear()
        with shared_results.across_batches(max_entries=100):
            reward.score(sixteen_of_four())
            second = reward.score(sixteen_of_four())
        assert fresh_counts == {text: 1 for text in DISTINCT}
        assert second.metrics["train/reward_provider/counting-judge/shared_result"] == 1.0
        fresh_counts.clear()
        with shared_results.across_batches(max_entries=2) as kept:  # two answers kept at most
            reward.score(sixteen_of_four())
            reward.score(sixteen_of_four())
            assert len(kept) <= 2
        assert sum(fresh_counts.values()) > 4  # the forgotten ones were asked again


def test_an_answer_whose_scoring_failed_is_not_shared_but_asked_again(fresh_counts):
    # The first group's call fails (onError zero): its answers are forgotten, not handed on as
    # failures, so the second group asks about them itself.
    config_ = config("counting-judge")
    config_["rl"]["reward"]["spec"]["onError"] = "zero"
    config_["rl"]["group_size"] = 1
    config_["rewards"] = {"concurrency": 1}  # one group after the other
    groups = [
        {
            "group_id": f"g{number}",
            "rollouts": [{"trajectory_id": f"t{number}", "completion": "crash", "prompt": PROMPT}],
        }
        for number in range(2)
    ]
    with rewardkit.load(config_) as reward:
        batch = reward.score(groups)
    assert fresh_counts == {"crash": 2}
    assert [c.breakdown["counting-judge"]["status"] for _, c in batch.candidates()] == ["error", "error"]


def test_cacheable_must_be_a_bool_or_a_callable():
    with pytest.raises(RegistrationError, match="cacheable must be True, False or a callable"):
        rewardkit.RewardProviderSpec("x", dict, (), "1", ("score",), cacheable="yes")  # type: ignore[arg-type]
