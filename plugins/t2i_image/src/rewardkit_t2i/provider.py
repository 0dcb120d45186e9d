"""The ``t2i-image`` provider: each candidate's image conditioning, decoded and scored alone.

Like the video adapter (same bound-provider, correlation, deadline, diagnostic and provenance
contracts), but the decoded sample is one image: ``[1, 3, 1, H, W]`` in [-1, 1], sent as CPU uint8
``[1, H, W, 3]`` with ``media_type="image"`` and no ``video_infos``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from rewardkit import RewardProviderSpec, map_candidates
from rewardkit.plugin import MappedProvider, RewardContext
from rewardkit_media import DIAGNOSTICS, UINT8_TRANSFORM, MediaScorer
from rewardkit_media.decoded import decoder_identity
from rewardkit_media.scorer import prompt_text
from rewardkit_t2i.config import PICKSCORE_REWARD_TYPES, ImageRewardConfig

PROVIDER_NAME = "t2i-image"
# The adapter's own revision: bump it whenever this code changes what is sent or read.
ADAPTER_REVISION = "1"


def image_metadata(sample: np.ndarray, context: RewardContext) -> dict[str, Any]:
    """The enqueue JSON of one image: media type and prompt, no ``video_infos``."""
    metadata: dict[str, Any] = {"media_type": "image"}
    text = prompt_text(context.prompt)
    if text is not None:
        metadata["prompts"] = [text]
    return metadata


def make_image_provider(*, decoder: Any, terms: Sequence[str], **params: Any) -> MappedProvider:
    """Build the provider from the decoder (a runtime object) and ``ImageRewardConfig`` params."""
    config = ImageRewardConfig.model_validate(params)
    if config.score_keys() != tuple(terms):
        raise ValueError(
            f"reward_types read score keys {list(config.score_keys())} but this provider declares "
            f"terms {list(terms)}; read exactly those, or register a spec for other keys with "
            "rewardkit_t2i.image_spec(name, reward_types) in a run-bound catalog"
        )
    return map_candidates(MediaScorer(config, decoder, "image", image_metadata))


def image_spec(
    name: str = PROVIDER_NAME,
    reward_types: Mapping[str, Sequence[str]] = PICKSCORE_REWARD_TYPES,
) -> RewardProviderSpec:
    """The catalog entry; another name and reward types make a spec for another deployed scorer."""
    terms = tuple(key for keys in reward_types.values() for key in keys)
    return RewardProviderSpec(
        name=name,
        factory=partial(make_image_provider, terms=terms),
        needs=("prompt", "media"),
        revision=ADAPTER_REVISION,
        terms=terms,
        diagnostics=DIAGNOSTICS,
        semantic_identity={
            "protocol": "cosmos-rl-reward enqueue/pull",
            "media_type": "image",
            "payload": "npy uint8 [1,H,W,3]",
            "transform": UINT8_TRANSFORM,
            "reward_types": {key: list(value) for key, value in reward_types.items()},
        },
        description="decoded image (conditioning through the model's decoder) scored by the image "
        "reward service, one request per candidate",
        params_schema=ImageRewardConfig,
        runtime=("decoder",),
        runtime_identity=decoder_identity,
    )
