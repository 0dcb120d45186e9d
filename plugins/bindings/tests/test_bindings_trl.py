"""The TRL binding called the way GRPOTrainer calls it (no torch needed): values, groups, errors."""

from __future__ import annotations

import asyncio

import pytest

from rewardkit.contracts.errors import RewardkitError
from rewardkit.plugin import BindingError
from rewardkit.scoring.reward import load
from rewardkit.seam.catalog import trainer_bindings
from rewardkit.seam.plugins import import_module_attribute
from rewardkit_bindings.loading import forget_rewards
from rewardkit_bindings.trl import async_reward_funcs, binding, reward_funcs


def spec(on_error: str = "raise") -> dict:
    return {
        "rl.group_size": 2,
        "rl.data.response_column": "answer",
        "rl.reward.catalog": "bindings_fixtures:catalog",
        "rl.reward.spec": {
            "onError": on_error,
            "components": [
                {"provider": "verdict", "weight": 0.5},
                {"provider": "echo-ref", "weight": 2.0},
            ],
        },
    }


@pytest.fixture(autouse=True)
def _fresh() -> None:
    forget_rewards()


def call(funcs, prompts, completions, **kwargs):
    return {f.__name__: f(prompts=prompts, completions=completions, **kwargs) for f in funcs}


PROMPTS = ["p1", "p1", "p2", "p2"]
ANSWERS = ["a b", "a b", "c", "c"]


def test_total_at_weight_one_components_at_zero_and_values_match_rewardkit():
    funcs, weights = reward_funcs(spec())
    assert [f.__name__ for f in funcs] == ["rewardkit", "verdict", "echo-ref"]
    assert weights == [1.0, 0.0, 0.0]
    completions = ["a b", "x y z", "c", "c d"]
    got = call(funcs, PROMPTS, completions, answer=ANSWERS, completion_ids=[[1, 2], [3], [4], [5]])
    groups = [
        (
            f"g{start}",
            [
                {"trajectory_id": str(i), "completion": completions[i], "reference": ANSWERS[i]}
                for i in (start, start + 1)
            ],
        )
        for start in (0, 2)
    ]
    expected = [c.final for _, c in load(spec()).score(groups).candidates()]
    assert got["rewardkit"] == expected == [0.5 * 2 + 2.0, 0.5 * 3, 0.5 + 2.0, 0.5 * 2]
    assert got["verdict"] == [2.0, 3.0, 1.0, 2.0]
    assert got["echo-ref"] == [1.0, 0.0, 1.0, 0.0]


def test_one_scoring_pass_per_batch_and_diagnostics_to_log_metric():
    bound = binding(spec())
    passes = []
    score = bound.reward.score
    bound.reward.score = lambda groups, **kw: passes.append(len(groups)) or score(groups, **kw)
    metrics: list[tuple[str, float]] = []
    funcs = bound.functions()
    prompts, completions = list(PROMPTS), ["a b", "x", "c", "c d e"]
    call(funcs, prompts, completions, answer=ANSWERS, log_metric=lambda n, v: metrics.append((n, v)))
    assert passes == [2]
    names = dict(metrics)
    assert names["rewardkit/reward_provider/verdict/chars"] == pytest.approx((3 + 1 + 1 + 5) / 4)
    assert names["rewardkit/reward_provider/verdict/sample_count"] == 4
    # Logged once per batch, not once per function.
    assert len(metrics) == len(names)
    # A new batch (new lists, as TRL builds each step) is scored again.
    call(funcs, list(PROMPTS), ["a b", "x", "c", "c"], answer=ANSWERS)
    assert passes == [2, 2]


def test_skipped_component_is_none_for_itself_only():
    funcs, _ = reward_funcs(spec())
    got = call(funcs, PROMPTS, ["SKIP", "a b", "c", "x"], answer=ANSWERS)
    assert got["verdict"] == [None, 2.0, 1.0, 1.0]
    assert got["rewardkit"][0] == 0.0  # a skipped component adds nothing (composition rule)
    assert got["echo-ref"][0] == 0.0


def test_null_total_makes_every_function_none_for_that_sample():
    funcs, _ = reward_funcs(spec("none"))
    got = call(funcs, PROMPTS, ["ERR", "a b", "c", "x"], answer=ANSWERS)
    # Otherwise TRL would add 0 * component and train this sample on a reward of 0.
    assert [values[0] for values in got.values()] == [None, None, None]
    assert got["rewardkit"][1:] == [0.5 * 2 + 2.0, 0.5 + 2.0, 0.5]


def test_error_under_on_error_raise_fails_the_step():
    funcs, _ = reward_funcs(spec())
    with pytest.raises(RewardkitError, match="asked to fail"):
        call(funcs, PROMPTS, ["ERR", "a b", "c", "x"], answer=ANSWERS)


def test_on_error_zero_scores_through():
    funcs, _ = reward_funcs(spec("zero"))
    got = call(funcs, PROMPTS, ["ERR", "a b", "c", "x"], answer=ANSWERS)
    assert got["rewardkit"][0] == 0.0
    assert got["verdict"][0] is None


def test_group_with_two_prompts_is_refused_with_the_sample_index():
    funcs, _ = reward_funcs(spec())
    with pytest.raises(BindingError, match=r"sample 3 has a different prompt from sample 2"):
        call(funcs, ["p1", "p1", "p2", "p3"], ["a", "b", "c", "d"], answer=ANSWERS)


def test_group_with_two_references_is_refused():
    funcs, _ = reward_funcs(spec())
    with pytest.raises(BindingError, match=r"sample 1 has a different reference"):
        call(funcs, PROMPTS, ["a", "b", "c", "d"], answer=["a", "b", "c", "c"])


def test_batch_that_is_not_whole_groups_is_refused():
    funcs, _ = reward_funcs(spec())
    with pytest.raises(BindingError, match="3 completions do not divide into groups of 2"):
        call(funcs, ["p1", "p1", "p2"], ["a", "b", "c"], answer=["a", "a", "c"])


def test_missing_reference_column_names_the_columns_passed():
    funcs, _ = reward_funcs(spec())
    with pytest.raises(BindingError, match=r"'answer'.*\['solution'\]"):
        call(funcs, PROMPTS, ["a", "b", "c", "d"], solution=ANSWERS, trainer_state=None)


def test_group_size_must_be_known_and_agree():
    config = spec()
    del config["rl.group_size"]
    with pytest.raises(BindingError, match=r"set rl\.group_size"):
        reward_funcs(config)
    assert reward_funcs(config, num_generations=2)[1] == [1.0, 0.0, 0.0]
    with pytest.raises(BindingError, match=r"num_generations=4 but rl\.group_size is 2"):
        reward_funcs(spec(), num_generations=4)


def test_reference_needed_without_a_column_fails_at_construction():
    config = spec()
    del config["rl.data.response_column"]
    with pytest.raises(BindingError, match=r"rl\.data\.response_column"):
        reward_funcs(config)
    funcs, _ = reward_funcs(config, reference_column="answer")
    assert call(funcs, PROMPTS, ["a b", "x", "c", "c"], answer=ANSWERS)["echo-ref"] == [1.0, 0.0, 1.0, 1.0]


def test_total_name_must_not_clash_with_a_component():
    with pytest.raises(BindingError, match="also a component name"):
        reward_funcs(spec(), total_name="verdict")


def test_conversational_completions_use_the_assistant_text():
    funcs, _ = reward_funcs(spec())
    prompts = [[{"role": "user", "content": "q"}]] * 2
    completions = [
        [{"role": "assistant", "content": "a b"}],
        [{"role": "tool", "content": "ignored words here"}, {"role": "assistant", "content": "z"}],
    ]
    got = call(funcs, prompts, completions, answer=["a b", "a b"])
    assert got["verdict"] == [2.0, 1.0]
    assert got["echo-ref"] == [1.0, 0.0]
    with pytest.raises(BindingError, match="completion 0 is int"):
        call(funcs, prompts, [3, "x"], answer=["a b", "a b"])


def test_async_functions_share_one_pass_under_gather():
    funcs, weights = async_reward_funcs(spec())
    assert weights == [1.0, 0.0, 0.0]
    prompts, completions = list(PROMPTS), ["a b", "x y z", "c", "c d"]

    async def run():
        return await asyncio.gather(
            *(f(prompts=prompts, completions=completions, answer=ANSWERS) for f in funcs)
        )

    total, verdict, echo = asyncio.run(run())
    assert total == [3.0, 1.5, 2.5, 1.0]
    assert verdict == [2.0, 3.0, 1.0, 2.0]
    assert echo == [1.0, 0.0, 1.0, 0.0]


def test_async_error_reaches_every_function():
    funcs, _ = async_reward_funcs(spec())
    prompts, completions = list(PROMPTS), ["ERR", "x", "c", "c"]

    async def run():
        return await asyncio.gather(
            *(f(prompts=prompts, completions=completions, answer=ANSWERS) for f in funcs),
            return_exceptions=True,
        )

    results = asyncio.run(run())
    assert all(isinstance(result, RewardkitError) for result in results)


def test_config_from_environment(tmp_path, monkeypatch):
    path = tmp_path / "reward.yaml"
    path.write_text("rl.group_size: 2\nrl.reward.provider: nonempty\n")
    monkeypatch.setenv("REWARDKIT_CONFIG", str(path))
    funcs, weights = reward_funcs()
    assert weights == [1.0, 0.0]
    assert call(funcs, ["p", "p"], ["", "x"])["rewardkit"] == [0.0, 1.0]
    monkeypatch.delenv("REWARDKIT_CONFIG")
    with pytest.raises(BindingError, match="REWARDKIT_CONFIG"):
        reward_funcs()


def test_registered_through_this_distributions_entry_point():
    registered = trainer_bindings().get("trl")
    assert registered.owner.distribution == "rewardkit-bindings" and not registered.owner.builtin
    assert import_module_attribute(registered.value.target) is reward_funcs


def test_means_trl_logs_itself_are_not_logged_again_under_rewardkit():
    # TRL logs rewards/<function name>/mean for every reward function: the total (``rewardkit``) and
    # each component. Logging them again as rewardkit/reward/mean put every figure on two curves.
    metrics: list[tuple[str, float]] = []
    funcs, _ = reward_funcs(spec())
    completions = ["a b", "x", "c", "c d e"]
    call(funcs, PROMPTS, completions, answer=ANSWERS, log_metric=lambda n, v: metrics.append((n, v)))
    names = dict(metrics)
    assert not {"rewardkit/reward/mean", "rewardkit/reward_component/verdict/mean",
                "rewardkit/reward_component/echo-ref/mean"} & names.keys()  # fmt: skip
    # What TRL cannot know is still logged: counts, error rates, the advantage, provider diagnostics.
    assert names["rewardkit/reward/gated_count"] == 0
    assert names["rewardkit/reward_component/verdict/scored_count"] == 4
    assert names["rewardkit/reward/infra_error_rate"] == 0.0
    assert "rewardkit/advantage/abs_mean" in names
