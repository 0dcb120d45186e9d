"""rewardkit-t2i: the decoded-image adapter of the T2I recipe (provider ``t2i-image``).

Registered through the ``rewardkit`` entry-point group. See docs/t2i.md.
"""

from __future__ import annotations

from collections.abc import Callable

from rewardkit import RewardProviderSpec, hookimpl
from rewardkit_t2i.config import PICKSCORE_REWARD_TYPES, ImageRewardConfig
from rewardkit_t2i.provider import PROVIDER_NAME, image_metadata, image_spec, make_image_provider

__all__ = [
    "PICKSCORE_REWARD_TYPES",
    "PROVIDER_NAME",
    "ImageRewardConfig",
    "image_metadata",
    "image_spec",
    "make_image_provider",
]


@hookimpl
def register_reward_providers(register: Callable[[RewardProviderSpec], None]) -> None:
    """Registers ``t2i-image``."""
    register(image_spec())
