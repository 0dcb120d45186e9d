"""``register_reward_expansions``: a distribution's key of a reward selection stands for a composed spec.

A fake distribution registers ``rl.reward.doubled: NAME`` (the provider NAME at weight 2); the core
knows nothing of it. The key is accepted wherever a reward selection is (``rl.reward``, a validation
reward), written nested, dotted or as an override, and comes alone.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import fake_distribution

import rewardkit
from rewardkit import RewardExpansionSpec
from rewardkit.contracts.errors import ConfigError, RegistrationError

SOURCE = """
from rewardkit import RewardExpansionSpec, hookimpl

SEEN = []


def expand(value, base_dir):
    SEEN.append(base_dir)
    if not isinstance(value, str):
        raise ValueError("doubled: expected a provider name")
    return {"components": [{"provider": value, "weight": 2.0}]}


@hookimpl
def register_reward_expansions(register):
    register(RewardExpansionSpec("doubled", expand, "a provider at weight 2"))
"""


@pytest.fixture
def doubled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_plugins: None) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(tmp_path))
    fake_distribution(tmp_path, "acme-doubled", {"doubled": "fake_doubled"}, {"fake_doubled": SOURCE})
    yield tmp_path
    sys.modules.pop("fake_doubled", None)


def rollout(completion: str) -> dict[str, str]:
    return {"trajectory_id": "t", "completion": completion}


def test_the_key_becomes_the_spec_it_stands_for_and_scores(doubled: Path) -> None:
    with rewardkit.load({"rl": {"group_size": 1, "reward": {"doubled": "nonempty"}}}) as reward:
        (component,) = reward.spec.components
        assert (component.provider, component.weight) == ("nonempty", 2.0)
        ((_, candidate),) = reward.score([("g", [rollout("some text")])]).candidates()
    assert candidate.final == 2.0


def test_dotted_keys_overrides_and_validation_rewards_take_it(doubled: Path) -> None:
    config = rewardkit.load_config({"rl.group_size": 1, "rl.reward.doubled": "nonempty"})
    assert config.rl.reward.spec == {"components": [{"provider": "nonempty", "weight": 2.0}]}
    config = rewardkit.load_config(
        {"rl": {"group_size": 1, "reward": {"provider": "nonempty"}}},
        ["rl.validation.reward.doubled=constant"],
    )
    validation = config.rl.validation
    assert validation is not None and not isinstance(validation.reward, str)
    assert validation.reward.spec == {"components": [{"provider": "constant", "weight": 2.0}]}


def test_a_file_passes_its_folder_to_the_expansion(doubled: Path) -> None:
    path = doubled / "conf" / "run.yaml"
    path.parent.mkdir()
    path.write_text("rl:\n  group_size: 1\n  reward:\n    doubled: nonempty\n")
    rewardkit.load_config(path)
    import fake_doubled

    assert fake_doubled.SEEN[-1] == path.parent


def test_the_key_comes_alone_and_its_errors_are_the_configs(doubled: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"'doubled' stands for a whole composed spec; give it without \['provider'\]"
    ):
        rewardkit.load_config(
            {"rl": {"group_size": 1, "reward": {"doubled": "nonempty", "provider": "constant"}}}
        )
    with pytest.raises(ConfigError, match=r"rl\.reward.*doubled: expected a provider name"):
        rewardkit.load_config({"rl": {"group_size": 1, "reward": {"doubled": 3}}})


def test_without_the_plugin_the_key_is_unknown(fresh_plugins: None) -> None:
    with pytest.raises(ConfigError, match=r"rl\.reward\.doubled: unknown key"):
        rewardkit.load_config({"rl": {"group_size": 1, "reward": {"doubled": "nonempty"}}})


def test_a_key_must_be_an_identifier() -> None:
    with pytest.raises(RegistrationError, match="the key must be an identifier"):
        RewardExpansionSpec("not a key", lambda value, base: {})
