"""rewardkit-ray's plugin (entry point ``ray``): the ``rewards.backend: ray`` backend and the
``rewards.ray`` section. Light to import: Ray loads when a reward is built on it."""

from __future__ import annotations

from rewardkit.plugin import (
    ConfigSectionRegistrar,
    ConfigSectionSpec,
    RewardBackendRegistrar,
    RewardBackendSpec,
    hookimpl,
)
from rewardkit_ray.section import RayConfig


@hookimpl
def register_reward_backends(register: RewardBackendRegistrar) -> None:
    register(
        RewardBackendSpec("ray", "rewardkit_ray.backend:RayReward", "score on reward actors of a Ray cluster")
    )


@hookimpl
def register_config_sections(register: ConfigSectionRegistrar) -> None:
    register(
        ConfigSectionSpec(
            "rewards.ray", RayConfig, "where the Ray cluster is and how many actors", always=True
        )
    )
