"""rewardkit-dancegrpo: the rank-local decoded-video adapter (provider ``dancegrpo-video``).

Registered through the ``rewardkit`` entry-point group. See docs/dancegrpo.md.
"""

from __future__ import annotations

from collections.abc import Callable

from rewardkit import RewardProviderSpec, hookimpl
from rewardkit_dancegrpo.config import DANCEGRPO_REWARD_TYPES, VideoRewardConfig
from rewardkit_dancegrpo.provider import PROVIDER_NAME, make_video_provider, video_metadata, video_spec

__all__ = [
    "DANCEGRPO_REWARD_TYPES",
    "PROVIDER_NAME",
    "VideoRewardConfig",
    "make_video_provider",
    "video_metadata",
    "video_spec",
]


@hookimpl
def register_reward_providers(register: Callable[[RewardProviderSpec], None]) -> None:
    """Registers ``dancegrpo-video``."""
    register(video_spec())
