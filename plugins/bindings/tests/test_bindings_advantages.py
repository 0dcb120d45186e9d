"""Each binding's GRPO advantages use the eps of the trainer it serves unless the configuration sets one
(tests/test_advantages.py checks the advantages themselves)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import rewardkit
import rewardkit_bindings.openrlhf as openrlhf_binding
import rewardkit_bindings.trl as trl_binding
import rewardkit_bindings.verl as verl_binding
from rewardkit_bindings.loading import forget_rewards, reward_for


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    forget_rewards()
    yield
    forget_rewards()


def test_each_binding_defaults_to_its_trainers_eps_unless_the_config_sets_one():
    base = {"rl.reward.provider": "nonempty", "rl.group_size": 3}
    assert trl_binding.binding(base).reward.config.rl.advantage_eps == 1e-4
    assert (
        reward_for(base, group_size=1, advantage_eps=verl_binding.ADVANTAGE_EPS).config.rl.advantage_eps
        == 1e-6
    )
    assert (
        reward_for(base, group_size=1, advantage_eps=openrlhf_binding.ADVANTAGE_EPS).config.rl.advantage_eps
        == 1e-9
    )
    set_here = {**base, "rl.advantage_eps": 0.25}
    assert trl_binding.binding(set_here).reward.config.rl.advantage_eps == 0.25
    assert rewardkit.load(base).worker.advantage_eps == 1e-6
