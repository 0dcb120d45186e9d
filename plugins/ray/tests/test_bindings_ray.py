"""Every trainer binding honours ``rewards.backend: ray``: its reward is a RayReward whose actors
score the groups (routed ``by_data_source`` selections included), with the in-process values."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import rewardkit_bindings.openrlhf as openrlhf_binding
import rewardkit_bindings.trl as trl_binding
import rewardkit_bindings.verl as verl_binding
from rewardkit_bindings.loading import forget_rewards, reward_for
from rewardkit_ray.backend import RayReward

SPEC = {"components": [{"provider": "exact-match", "weight": 2.0}, {"provider": "nonempty", "weight": 0.5}]}
# One actor per reward: the session cluster has 2 CPUs, and a routed verl config builds two rewards.
RAY = {"rewards.backend": "ray", "rewards.ray.num_actors": 1}


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    forget_rewards()  # closes (and stops the actors of) every reward a binding built
    yield
    forget_rewards()


def local(config: dict) -> dict:
    return {key: value for key, value in config.items() if not key.startswith("rewards.")}


def test_trl_scores_on_reward_actors(ray_cluster: dict) -> None:
    config = {"rl.reward.spec": SPEC, "rl.group_size": 2, "rl.data.response_column": "answer", **RAY}
    bound = trl_binding.binding(config)
    assert isinstance(bound.reward, RayReward) and not bound.slices_per_rank
    args = {"prompts": ["p", "p"], "completions": ["four", ""], "answer": ["four", "four"]}
    got = bound.functions()[0](**args)
    assert bound.reward.stats["groups_scored"] == 1
    forget_rewards()
    assert got == trl_binding.binding(local(config)).functions()[0](**args) == [2.5, 0.0]


def test_verl_scores_every_selection_on_reward_actors(ray_cluster: dict) -> None:
    config = {"rl.reward.spec": SPEC, "rl.reward.by_data_source": {"gsm": {"provider": "gsm8k"}}, **RAY}
    out = verl_binding.compute_score_batch(["gsm", "other"], ["#### 4", "four"], ["4", "four"], config=config)
    assert [row["score"] for row in out] == [1.0, 2.5]
    for data_source in ("gsm", "other"):
        reward = reward_for(
            config, data_source=data_source, group_size=1, advantage_eps=verl_binding.ADVANTAGE_EPS
        )
        assert isinstance(reward, RayReward) and reward.stats["groups_scored"] == 1


def test_openrlhf_scores_on_reward_actors(ray_cluster: dict) -> None:
    config = {"rl.reward.spec": SPEC, **RAY}
    out = openrlhf_binding.reward_func(["Q: four", "Q: "], ["Q:", "Q:"], ["four", "four"], config=config)
    assert list(out["rewards"]) == [2.5, 0.0]
    reward = reward_for(config, group_size=1, advantage_eps=openrlhf_binding.ADVANTAGE_EPS)
    assert isinstance(reward, RayReward) and reward.stats["groups_scored"] == 2
