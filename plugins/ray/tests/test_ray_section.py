"""``rewards.ray`` is this distribution's section (``register_config_sections``): defaults, did-you-mean
and bounds as when the core declared it."""

from __future__ import annotations

import pytest

from rewardkit.config import load_config
from rewardkit.contracts.errors import ConfigError
from rewardkit_ray.section import RayConfig

MINIMAL = {"rl.reward.provider": "exact-match"}


def test_the_section_has_its_defaults_when_not_given() -> None:
    section = load_config(MINIMAL).section("rewards.ray", RayConfig)
    assert section is not None and section.num_actors == 2 and section.address is None


def test_an_unknown_key_names_the_nearest_known_key() -> None:
    with pytest.raises(ConfigError, match=r"did you mean rewards\.ray\.address\?"):
        load_config({**MINIMAL, "rewards.ray.adress": 1})


def test_num_actors_is_at_least_one() -> None:
    with pytest.raises(ConfigError, match="greater than or equal to 1") as caught:
        load_config({**MINIMAL, "rewards.ray.num_actors": 0})
    assert caught.value.key == "rewards.ray.num_actors"
