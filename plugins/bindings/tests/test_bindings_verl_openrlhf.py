"""verl's ``compute_score`` and OpenRLHF's ``reward_func``: documented signatures, return shapes, errors.

Both trainers load the function from a file path, so the tests load the binding modules the same
way (a fresh module object from the file) as well as by import.
"""

from __future__ import annotations

import importlib.util
import math

import pytest

import rewardkit_bindings.openrlhf as openrlhf_binding
import rewardkit_bindings.verl as verl_binding
from rewardkit.config import load_config
from rewardkit.contracts.errors import ConfigError, RewardkitError
from rewardkit.plugin import BindingError, response_of
from rewardkit_bindings.loading import forget_rewards
from rewardkit_bindings.openrlhf import reward_func
from rewardkit_bindings.verl import compute_score, compute_score_batch

CATALOG = "bindings_fixtures:catalog"


def config(on_error: str = "raise", **extra: object) -> dict:
    return {
        "rl.reward.catalog": CATALOG,
        "rl.reward.spec": {
            "onError": on_error,
            "components": [{"provider": "verdict", "weight": 0.5}, {"provider": "echo-ref", "weight": 2.0}],
        },
        **extra,
    }


@pytest.fixture(autouse=True)
def _fresh() -> None:
    forget_rewards()


def load_from_file(module, name: str):
    spec = importlib.util.spec_from_file_location(name, module.__file__)
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


# -- verl ----------------------------------------------------------------------------------------


def test_compute_score_returns_score_and_components():
    result = compute_score("gsm8k", "a b", "a b", {"index": 3}, config=config())
    assert result == {"score": 0.5 * 2 + 2.0, "verdict": 2.0, "echo-ref": 1.0}


def test_compute_score_loaded_from_file_with_verl_kwargs(tmp_path, monkeypatch):
    path = tmp_path / "reward.yaml"
    path.write_text(f"rl.reward.catalog: {CATALOG}\nrl.reward.provider: echo-ref\n")
    monkeypatch.setenv("REWARDKIT_CONFIG", str(path))
    loaded = load_from_file(verl_binding, "custom_module_1")
    # verl's naive reward manager passes these keyword arguments (reward_router_address etc. may follow).
    result = loaded.compute_score(
        data_source="x", solution_str=" 42 ", ground_truth="42", extra_info={}, reward_router_address=None
    )
    assert result == {"score": 1.0, "echo-ref": 1.0}


def nan_equal(got: dict, want: dict) -> bool:
    return list(got) == list(want) and all(
        (math.isnan(got[key]) and math.isnan(value)) or got[key] == value for key, value in want.items()
    )


def test_by_data_source_picks_the_selection_and_every_response_has_every_key():
    routed = config(**{"rl.reward.by_data_source": {"lenient": {"provider": "verdict"}}})
    # verl gathers each key over the batch: every response carries the union, NaN where it does not apply.
    lenient = compute_score("lenient", "a b c", "zzz", config=routed)
    assert nan_equal(lenient, {"score": 3.0, "verdict": 3.0, "echo-ref": math.nan})
    assert compute_score("other", "a b c", "zzz", config=routed)["score"] == 1.5
    mixed = compute_score_batch(["lenient", "other"], ["a b", "a b"], ["a b", "a b"], config=routed)
    assert nan_equal(mixed[0], {"score": 2.0, "verdict": 2.0, "echo-ref": math.nan})
    assert nan_equal(mixed[1], {"score": 3.0, "verdict": 2.0, "echo-ref": 1.0})
    two = config(
        **{"rl.reward.by_data_source": {"a": {"provider": "constant"}, "b": {"provider": "nonempty"}}}
    )
    keys = [list(row) for row in compute_score_batch(["a", "b", "c"], ["x", "y", "z"], ["x"] * 3, config=two)]
    assert keys == [["score", "verdict", "echo-ref", "constant", "nonempty"]] * 3


def test_skipped_component_is_nan_and_null_total_is_refused():
    result = compute_score("x", "SKIP", "SKIP", config=config())
    assert result["score"] == 2.0 and math.isnan(result["verdict"])
    with pytest.raises(BindingError, match=r"reward is null .*verdict.*asked to fail"):
        compute_score("x", "ERR", "a", config=config("none"))
    with pytest.raises(RewardkitError, match="asked to fail"):
        compute_score("x", "ERR", "a", config=config())
    assert compute_score("x", "ERR", "ERR", config=config("zero"))["score"] == 2.0


def test_batch_form_rebuilds_groups_and_checks_them():
    grouped = config(**{"rl.group_size": 2})
    out = compute_score_batch(["d"] * 4, ["a", "b", "c", "c d"], ["a", "a", "c", "c"], config=grouped)
    assert [row["score"] for row in out] == [2.5, 0.5, 2.5, 1.0]
    with pytest.raises(BindingError, match="sample 1 has a different reference"):
        compute_score_batch(["d"] * 2, ["a", "b"], ["a", "b"], config=grouped)
    with pytest.raises(BindingError, match="3 responses do not divide into groups of 2"):
        compute_score_batch(["d"] * 3, ["a", "b", "c"], ["a"] * 3, config=grouped)
    with pytest.raises(BindingError, match="ground_truths has 1 entries for 2 responses"):
        compute_score_batch(["d", "d"], ["a", "b"], ["a"], config=config())


def test_prompt_comes_from_extra_info():
    needs_prompt = {"rl.reward.catalog": CATALOG, "rl.reward.provider": "echo-prompt"}
    assert compute_score("d", "say hi", "-", {"prompt": "hi"}, config=needs_prompt)["score"] == 1.0
    with pytest.raises(BindingError, match=r"extra_info\['prompt'\]"):
        compute_score("d", "say hi", "-", {}, config=needs_prompt)


def test_missing_configuration_says_how_to_give_one(monkeypatch):
    monkeypatch.delenv("REWARDKIT_CONFIG", raising=False)
    with pytest.raises(BindingError, match="REWARDKIT_CONFIG"):
        compute_score("d", "a", "a")


def test_by_data_source_config_keys_are_checked():
    chosen = load_config(
        {"rl.reward.provider": "nonempty", "rl.reward.by_data_source.gsm8k.provider": "gsm8k"}
    )
    assert chosen.rl.reward.by_data_source["gsm8k"].provider == "gsm8k"
    with pytest.raises(ConfigError, match=r"rl\.reward\.by_data_source\.x\.provder"):
        load_config({"rl.reward.provider": "nonempty", "rl.reward.by_data_source": {"x": {"provder": "a"}}})
    with pytest.raises(ConfigError, match="nest one level only"):
        load_config(
            {
                "rl.reward.provider": "nonempty",
                "rl.reward.by_data_source": {
                    "x": {"provider": "a", "by_data_source": {"y": {"provider": "b"}}}
                },
            }
        )


# -- OpenRLHF ------------------------------------------------------------------------------------


def test_response_is_the_query_after_the_prompt_without_eos_markers():
    assert response_of("<s>Q: 1+1? A: 2<|im_end|></s>", "Q: 1+1? A:", 0) == " 2"
    assert response_of("abc", "", 0) == "abc"
    with pytest.raises(BindingError, match="sample 4: the query does not start with its prompt"):
        response_of("something else", "Q:", 4)


def test_the_prompt_is_cut_only_from_the_front_of_the_query():
    prompt = "Question: What is 2+2?\nAnswer:"
    answer = " #### 4\n\nQuestion: What is 2+2?\nAnswer:"  # a base model goes on to repeat the prompt
    assert response_of(prompt + answer, prompt, 0) == answer
    # The query is the prompt's tokens decoded: whitespace may come back different, nothing else may.
    assert response_of("what is two plus three five </s>", "what is  two plus three", 0) == " five "
    assert response_of("Hello , world ! x", "Hello, world!", 0) == " x"
    # A prompt found later in the query, or only partly at its start (cut from the left), is refused.
    with pytest.raises(BindingError, match="does not start with its prompt"):
        response_of("noise " + prompt + " 4", prompt, 0)
    with pytest.raises(BindingError, match="does not start with its prompt"):
        response_of("What is 2+2?\nAnswer: 4", prompt, 0)


def test_repeated_prompt_case_scores_one_in_process():
    gsm8k = {"rl.reward.provider": "gsm8k"}
    prompt = "Question: What is 2+2?\nAnswer:"
    query = prompt + " #### 4\n\nQuestion: What is 2+2?\nAnswer:"
    assert list(reward_func([query], [prompt], ["4"], config=gsm8k)["rewards"]) == [1.0]


def test_reward_func_shape_from_a_file_loaded_module(monkeypatch):
    loaded = load_from_file(openrlhf_binding, "reward_func")
    out = loaded.reward_func(
        ["Q: x A: a b</s>", "Q: y A: zzz"], ["Q: x A:", "Q: y A:"], ["a b", "c"], config=config()
    )
    assert set(out) == {"rewards", "scores", "extra_logs"}
    assert list(out["rewards"]) == [0.5 * 2 + 2.0, 0.5]
    assert out["scores"] is out["rewards"]
    assert {name: list(values) for name, values in out["extra_logs"].items()} == {
        "verdict": [2.0, 1.0],
        "echo-ref": [1.0, 0.0],
    }


def test_reward_func_refuses_null_and_mismatched_inputs():
    with pytest.raises(BindingError, match="sample 0: the reward is null"):
        reward_func(["p ERR"], ["p"], ["x"], config=config("none"))
    with pytest.raises(BindingError, match="got 2 queries, 1 prompts"):
        reward_func(["a", "b"], ["a"], ["x", "y"], config=config())
    with pytest.raises(BindingError, match="--label_key"):
        reward_func(["pa"], ["p"], None, config=config())
