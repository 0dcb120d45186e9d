"""``VideoRewardConfig``: the dependency-light value contract of the decoded-video adapter.

Everything ``MediaServiceConfig`` holds (deployed scorer revision, URLs, token reference, reward
types and score keys, transport bounds, deadline, spool folder, the fixed uint8 transform) plus
the explicit frames per second sent with every video. Importing it needs pydantic only.
"""

from __future__ import annotations

from pydantic import Field

from rewardkit_media.config import MediaServiceConfig

# The DanceGRPO (VideoAlign) handler answers these four keys for reward type "dance_grpo".
DANCEGRPO_REWARD_TYPES: dict[str, list[str]] = {
    "dance_grpo": ["overall_reward", "vq_reward", "mq_reward", "ta_reward"]
}


class VideoRewardConfig(MediaServiceConfig):
    """Params of ``dancegrpo-video`` (see docs/dancegrpo.md)."""

    reward_types: dict[str, list[str]] = Field(
        default_factory=lambda: {name: list(keys) for name, keys in DANCEGRPO_REWARD_TYPES.items()},
        description="reward type to request -> score keys read from its answer (each key is a term)",
    )
    fps: float = Field(gt=0, le=240, description="frames per second, sent as video_infos[0].video_fps")
