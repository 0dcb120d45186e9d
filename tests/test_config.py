from __future__ import annotations

from pathlib import Path

import pytest

from rewardkit import load_config
from rewardkit.config import RewardSelection, known_keys, parse_override
from rewardkit.contracts.errors import ConfigError, RewardkitError

CONFIGS = Path(__file__).resolve().parents[1] / "testdata" / "config"
MINIMAL = {"rl.reward.provider": "gsm8k"}


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error_of(source: object, overrides: tuple[str, ...] = ()) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_config(source, overrides)  # type: ignore[arg-type]
    return caught.value


# ---------------------------------------------------------------- reading files


@pytest.mark.parametrize("name", ["gsm8k.yaml", "gsm8k.toml"])
def test_example_files_read_the_same(name: str) -> None:
    config = load_config(CONFIGS / name)
    assert config.rl.reward.provider == "gsm8k"
    assert config.rl.group_size == 4
    assert config.rl.data.prompt_column == "question"
    assert config.rl.data.response_column == "answer"
    assert config.rewards.max_inflight == 256
    # Relative paths in a file resolve against the file's folder, not the working directory.
    assert config.rl.data.path == str(CONFIGS / "rollouts.jsonl")
    assert config.source_path == CONFIGS / name


def test_yaml_and_toml_give_equal_models() -> None:
    yaml_config, toml_config = load_config(CONFIGS / "gsm8k.yaml"), load_config(CONFIGS / "gsm8k.toml")
    assert yaml_config.model_dump() == toml_config.model_dump()


def test_defaults_fill_everything_not_given() -> None:
    config = load_config(MINIMAL)
    assert config.source_path is None
    assert config.rl.data.source == "jsonl"
    assert config.rl.data.prompt_column == "prompt"
    assert config.rl.data.response_column is None
    assert config.rl.group_size is None
    assert config.rl.reward.params == {}
    assert config.rewards.max_inflight == 1024
    assert config.rewards.deadline_s == 600.0
    assert config.rewards.backend == "local"


def test_absolute_and_home_paths_in_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = write(
        tmp_path,
        "run.yaml",
        "rl.reward.provider: x\nrl.data.path: /abs/rows.jsonl\nrl.data.rollouts_path: ~/r.jsonl\n",
    )
    config = load_config(path)
    assert config.rl.data.path == "/abs/rows.jsonl"
    assert config.rl.data.rollouts_path == str(tmp_path / "home" / "r.jsonl")


def test_relative_path_from_an_override_stays_relative(tmp_path: Path) -> None:
    path = write(tmp_path, "run.yaml", "rl.reward.provider: x\n")
    config = load_config(path, ["rl.data.path=data/rows.jsonl"])
    assert config.rl.data.path == "data/rows.jsonl"


def test_empty_yaml_file_reports_the_missing_reward(tmp_path: Path) -> None:
    error = error_of(write(tmp_path, "empty.yaml", ""))
    assert error.key == "rl"
    assert "required" in str(error) and "rl.reward.provider" in str(error)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("run.json", "{}", "unsupported config format '.json'"),
        ("bad.yaml", "rl: [unclosed\n", "invalid YAML"),
        ("bad.toml", "rl = = 1\n", "invalid TOML"),
        ("list.yaml", "- 1\n- 2\n", "top level must be a mapping"),
        ("dup.yaml", "rl:\n  group_size: 2\n  group_size: 3\n", "duplicate key 'group_size'"),
    ],
)
def test_unreadable_files_name_the_file(tmp_path: Path, name: str, text: str, expected: str) -> None:
    path = write(tmp_path, name, text)
    error = error_of(path)
    assert expected in str(error)
    assert str(path) in str(error)
    assert isinstance(error, RewardkitError)


def test_missing_file(tmp_path: Path) -> None:
    error = error_of(tmp_path / "nope.yaml")
    assert "config file not found" in str(error) and "nope.yaml" in str(error)


# ---------------------------------------------------------------- dotted keys


def test_dotted_nested_and_mixed_keys_agree() -> None:
    nested = {"rl": {"data": {"path": "x", "prompt_column": "q"}, "reward": {"provider": "p"}}}
    dotted = {"rl.data.path": "x", "rl.data.prompt_column": "q", "rl.reward.provider": "p"}
    mixed = {"rl": {"data.path": "x", "reward": {"provider": "p"}}, "rl.data.prompt_column": "q"}
    assert load_config(nested) == load_config(dotted) == load_config(mixed)


def test_the_same_key_given_twice_is_an_error() -> None:
    error = error_of({"rl.reward.provider": "a", "rl": {"reward": {"provider": "b"}}})
    assert error.key == "rl.reward.provider"
    assert "given twice" in str(error)


def test_a_single_value_has_no_sub_keys() -> None:
    error = error_of({**MINIMAL, "rl.group_size.max": 3})
    assert error.key == "rl.group_size.max"
    assert "rl.group_size is a single value" in str(error)


def test_dotted_keys_reach_into_params_but_keys_inside_params_are_kept() -> None:
    config = load_config({**MINIMAL, "rl.reward.params.tolerance": 0.5, "rl.reward.params": {"a.b": 1}})
    assert config.rl.reward.params == {"tolerance": 0.5, "a.b": 1}


@pytest.mark.parametrize(
    ("key", "suggestion"),
    [
        ("rl.grup_size", "rl.group_size"),
        ("rl.data.promt_column", "rl.data.prompt_column"),
        ("rewards.max_in_flight", "rewards.max_inflight"),
        ("group_size", "rl.group_size"),  # right name, wrong section
        ("rl.reward.providr", "rl.reward.provider"),
    ],
)
def test_unknown_key_names_the_nearest_known_key(key: str, suggestion: str) -> None:
    error = error_of({**MINIMAL, key: 1})
    assert error.key == key
    assert f"did you mean {suggestion}?" in str(error)


def test_unknown_key_without_a_near_one_lists_the_section() -> None:
    error = error_of({**MINIMAL, "rl.zzzzqqq": 1})
    assert "did you mean" not in str(error)
    keys = "data, group_size, advantage_scaling, advantage_std, advantage_eps, reward, validation"
    assert f"keys under rl: {keys}" in str(error)


def test_unknown_key_in_a_file_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "run.toml", '[rl]\nreward.provider = "x"\ngroupsize = 8\n')
    error = error_of(path)
    assert str(path) in str(error)
    assert "rl.groupsize" in str(error) and "did you mean rl.group_size?" in str(error)


def test_known_keys_cover_the_design() -> None:
    keys = known_keys()
    for key in (
        "rl.data.path",
        "rl.data.prompt_column",
        "rl.data.response_column",
        "rl.data.items_fn",
        "rl.group_size",
        "rl.reward.provider",
        "rl.reward.params",
        "rl.reward.spec",
        "rl.reward.service",
        "rl.validation.reward",
        "rl.validation.n_generation",
        "rewards.max_inflight",
    ):
        assert key in keys


# ---------------------------------------------------------------- overrides


def test_overrides_are_typed_as_yaml_and_replace_file_values(tmp_path: Path) -> None:
    text = "rl:\n  group_size: 4\n  reward: {provider: a, params: {x: 1, y: 2}}\n"
    path = write(tmp_path, "run.yaml", text)
    config = load_config(
        path,
        [
            "rl.group_size=8",
            "rl.reward.provider=gsm8k",
            "rl.reward.params={value: 2}",
            "rewards.deadline_s=1.5",
            "rl.validation.reward=exact-match",
        ],
    )
    assert config.rl.group_size == 8
    assert config.rl.reward.provider == "gsm8k"
    assert config.rl.reward.params == {"value": 2}  # a whole mapping replaces, it does not merge
    assert config.rewards.deadline_s == 1.5
    assert config.rl.validation is not None and config.rl.validation.reward == "exact-match"


def test_dotted_override_into_params_adds_one_parameter() -> None:
    config = load_config({**MINIMAL, "rl.reward.params": {"x": 1}}, ["rl.reward.params.y=[1, 2]"])
    assert config.rl.reward.params == {"x": 1, "y": [1, 2]}


def test_later_override_wins() -> None:
    config = load_config(MINIMAL, ["rl.group_size=2", "rl.group_size=16"])
    assert config.rl.group_size == 16


def test_override_can_switch_validation_reward_from_name_to_mapping() -> None:
    config = load_config(
        {**MINIMAL, "rl.validation.reward": "a"}, ["rl.validation.reward={provider: b, params: {k: 1}}"]
    )
    assert config.rl.validation is not None
    assert config.rl.validation.reward == RewardSelection(provider="b", params={"k": 1})


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("rl.group_size", "expected key=value"),
        ("=8", "expected key=value"),
        ("rl.group size=8", "contains whitespace"),
        ("rl.reward.params={a: [1,", "not a YAML scalar or flow collection"),
    ],
)
def test_malformed_overrides_name_the_override(override: str, expected: str) -> None:
    error = error_of(MINIMAL, (override,))
    assert expected in str(error)
    assert repr(override) in str(error)


def test_unknown_override_key_suggests_the_nearest() -> None:
    error = error_of(MINIMAL, ("rl.group_siz=8",))
    assert error.key == "rl.group_siz"
    assert "override 'rl.group_siz=8'" in str(error)
    assert "did you mean rl.group_size?" in str(error)


def test_parse_override_values() -> None:
    assert parse_override("a.b=8") == ("a.b", 8)
    assert parse_override("a=x=y") == ("a", "x=y")
    assert parse_override("a='8'") == ("a", "8")
    assert parse_override("a=") == ("a", None)
    assert parse_override("a={k: [1, true]}") == ("a", {"k": [1, True]})


def test_overrides_given_as_one_string_are_refused() -> None:
    error = error_of(MINIMAL, "rl.group_size=8")  # type: ignore[arg-type]
    assert "sequence of 'key=value' strings" in str(error)


# ---------------------------------------------------------------- values


@pytest.mark.parametrize(
    ("extra", "key", "expected"),
    [
        ({"rl.group_size": "8"}, "rl.group_size", "valid integer"),
        ({"rl.group_size": 0}, "rl.group_size", "greater than or equal to 1"),
        ({"rl.group_size": True}, "rl.group_size", "valid integer"),
        ({"rewards.max_inflight": -1}, "rewards.max_inflight", "greater than or equal to 1"),
        ({"rewards.deadline_s": float("inf")}, "rewards.deadline_s", "finite"),
        # 'local', then the backends installed or known ('ray'; the test distribution's 'seam-echo')
        ({"rewards.backend": "spark"}, "rewards.backend", "Input should be 'local', 'ray'"),
        ({"rl.data.source": "csv"}, "rl.data.source", "'jsonl' or 'hf'"),
        ({"rl.data.prompt_column": ""}, "rl.data.prompt_column", "must not be empty"),
        ({"rl.reward.params": [1, 2]}, "rl.reward.params", "valid dictionary"),
        ({"rl.reward.service": "localhost:8000"}, "rl.reward.service", "not a Reward Service URL"),
        ({"rl.validation.reward": 5}, "rl.validation.reward", "valid string"),
        ({"rl.validation.n_generation": 0}, "rl.validation.n_generation", "greater than or equal to 1"),
    ],
)
def test_wrong_values_name_the_key_and_what_was_expected(extra: dict, key: str, expected: str) -> None:
    error = error_of({**MINIMAL, **extra})
    assert error.key == key
    assert str(error).startswith(f"{key}: ")
    assert expected in str(error)


def test_several_errors_are_all_reported() -> None:
    error = error_of({**MINIMAL, "rl.group_size": "x", "rewards.max_inflight": 0})
    assert "rl.group_size: " in str(error) and "rewards.max_inflight: " in str(error)


@pytest.mark.parametrize(
    ("reward", "expected"),
    [
        ({}, "neither given"),
        ({"provider": "a", "spec": {"components": []}}, "both given"),
        ({"spec": {"components": []}, "params": {"x": 1}}, "'params' goes with 'provider'"),
    ],
)
def test_reward_selection_needs_exactly_one_of_provider_or_spec(reward: dict, expected: str) -> None:
    error = error_of({"rl": {"reward": reward}})
    assert error.key == "rl.reward"
    assert expected in str(error)


def test_spec_is_kept_as_a_raw_mapping() -> None:
    spec = {"components": [{"provider": "gsm8k", "weight": 1.0}], "floor": 0.0}
    config = load_config({"rl.reward.spec": spec, "rl.reward.catalog": "pkg.mod:catalog"})
    assert config.rl.reward.spec == spec
    assert config.rl.reward.provider is None
    assert config.rl.reward.catalog == "pkg.mod:catalog"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"items_fn": "pkg.mod:fn"}, "rl.data.items_fn applies only to rl.data.source: hf"),
        ({"source": "hf", "items_fn": "pkg.mod"}, "not a 'package.module:function' path"),
        ({"prompt_column": "q", "response_column": "q"}, "two different columns"),
    ],
)
def test_data_section_consistency(data: dict, expected: str) -> None:
    error = error_of({**MINIMAL, "rl.data": data})
    assert error.key is not None and error.key.startswith("rl.data")
    assert expected in str(error)


def test_hf_data_section_accepts_items_fn_and_split() -> None:
    config = load_config({**MINIMAL, "rl.data": {"source": "hf", "items_fn": "pkg.mod:fn", "split": "test"}})
    assert config.rl.data.items_fn == "pkg.mod:fn"
    assert config.rl.data.split == "test"


def test_non_string_key_is_an_error() -> None:
    error = error_of({**MINIMAL, "rl": {1: "x"}})
    assert "key 1 is not a string" in str(error)


# ---------------------------------------------------------------- the reference column's two names


@pytest.mark.parametrize(
    "data",
    [
        {"reference_column": "answer"},
        {"response_column": "answer"},
        {"reference_column": "answer", "response_column": "answer"},
    ],
)
def test_reference_column_and_response_column_are_one_key(data: dict) -> None:
    config = load_config({**MINIMAL, "rl.data": data})
    assert config.rl.data.reference_column == config.rl.data.response_column == "answer"
    assert {"rl.data.reference_column", "rl.data.response_column"} <= set(known_keys())


def test_two_different_reference_columns_are_refused() -> None:
    error = error_of({**MINIMAL, "rl.data": {"reference_column": "answer", "response_column": "solution"}})
    assert error.key == "rl.data"
    assert "'solution'" in str(error) and "'answer'" in str(error) and "two names for one key" in str(error)


def test_an_override_of_either_name_replaces_the_file_value(tmp_path: Path) -> None:
    path = write(tmp_path, "run.yaml", "rl.reward.provider: gsm8k\nrl.data.response_column: answer\n")
    for key in ("reference_column", "response_column"):
        config = load_config(path, [f"rl.data.{key}=solution"])
        assert config.rl.data.reference_column == config.rl.data.response_column == "solution"


def test_prompt_and_reference_columns_must_differ_under_either_name() -> None:
    error = error_of({**MINIMAL, "rl.data": {"prompt_column": "q", "reference_column": "q"}})
    assert "two different columns" in str(error)


# ---------------------------------------------------------------- the optimised term


def test_term_goes_with_a_provider_not_a_spec() -> None:
    assert load_config({**MINIMAL, "rl.reward.term": "format"}).rl.reward.term == "format"
    error = error_of({"rl.reward.spec": {"components": [{"provider": "gsm8k"}]}, "rl.reward.term": "x"})
    assert error.key == "rl.reward" and "'term' goes with 'provider'" in str(error)
