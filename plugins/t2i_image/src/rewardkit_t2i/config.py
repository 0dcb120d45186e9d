"""``ImageRewardConfig``: the dependency-light value contract of the decoded-image adapter.

The same fields as every decoded-media adapter (``MediaServiceConfig``); images carry no FPS and
no ``video_infos``. The default reward type is the T2I recipe's ``pickscore``.
"""

from __future__ import annotations

from pydantic import Field

from rewardkit_media.config import MediaServiceConfig

# The PickScore handler answers key "pickscore" for reward type "pickscore".
PICKSCORE_REWARD_TYPES: dict[str, list[str]] = {"pickscore": ["pickscore"]}


class ImageRewardConfig(MediaServiceConfig):
    """Params of ``t2i-image`` (see docs/t2i.md)."""

    reward_types: dict[str, list[str]] = Field(
        default_factory=lambda: {name: list(keys) for name, keys in PICKSCORE_REWARD_TYPES.items()},
        description="reward type to request -> score keys read from its answer (each key is a term)",
    )
