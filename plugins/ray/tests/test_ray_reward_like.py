"""The Ray backend is a ``RewardLike``: every member, every call the protocol promises."""

from __future__ import annotations

import rewardkit
from rewardkit.config import load_config
from rewardkit.seam.catalog import Catalog
from rewardkit.seam.protocols import RewardLike, protocol_gaps
from rewardkit_ray.backend import RayReward


def test_ray_reward_and_its_validation_reward_are_reward_like(ray_cluster: dict) -> None:
    config = load_config(
        {
            "rl": {
                "group_size": 4,
                "reward": {"catalog": "ray_catalog:catalog", "provider": "revisioned"},
                "validation": {"reward": "revisioned"},
            },
            "rewards": {"backend": "ray", "ray": {"num_actors": 1}},
        }
    )
    with rewardkit.load(config) as reward:
        assert type(reward) is RayReward
        validation = reward.validation()
        for backend in (reward, validation):
            assert isinstance(backend, RewardLike)
            assert protocol_gaps(backend) == []
        assert isinstance(reward.catalog, Catalog)
        assert (reward.namespace, validation.namespace) == ("train", "val")
