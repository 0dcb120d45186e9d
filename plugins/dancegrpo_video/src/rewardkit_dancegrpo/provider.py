"""The ``dancegrpo-video`` provider: each candidate's final latent, decoded and scored alone.

The factory takes the model-owned decoder as a runtime object
(``rewardkit.load(config, runtime={"decoder": decoder})``) and the ``VideoRewardConfig`` params;
the provider maps every candidate through ``rewardkit_media.MediaScorer`` (one service request per
candidate, never a batch). In the distributed WFM topology each rank holds one trajectory of each
group and scores it as a piece of one; ``rewardkit_media.score_on_ranks`` puts the whole groups
together across the ranks (advantages, the merged report, failures converged).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from rewardkit import RewardProviderSpec, map_candidates
from rewardkit.plugin import MappedProvider, RewardContext
from rewardkit_dancegrpo.config import DANCEGRPO_REWARD_TYPES, VideoRewardConfig
from rewardkit_media import DIAGNOSTICS, UINT8_TRANSFORM, MediaScorer
from rewardkit_media.decoded import decoder_identity
from rewardkit_media.scorer import prompt_text

PROVIDER_NAME = "dancegrpo-video"
# The adapter's own revision: bump it whenever this code changes what is sent or read.
ADAPTER_REVISION = "1"


def video_metadata(sample: np.ndarray, context: RewardContext, *, fps: float) -> dict[str, Any]:
    """The enqueue JSON of one video: media type, explicit FPS and the prompt."""
    metadata: dict[str, Any] = {"media_type": "video", "video_infos": [{"video_fps": fps}]}
    text = prompt_text(context.prompt)
    if text is not None:
        metadata["prompts"] = [text]
    return metadata


def make_video_provider(*, decoder: Any, terms: Sequence[str], **params: Any) -> MappedProvider:
    """Build the provider from the decoder (a runtime object) and ``VideoRewardConfig`` params."""
    config = VideoRewardConfig.model_validate(params)
    if config.score_keys() != tuple(terms):
        raise ValueError(
            f"reward_types read score keys {list(config.score_keys())} but this provider declares "
            f"terms {list(terms)}; read exactly those, or register a spec for other keys with "
            "rewardkit_dancegrpo.video_spec(name, reward_types) in a run-bound catalog"
        )
    metadata = partial(video_metadata, fps=config.fps)
    return map_candidates(MediaScorer(config, decoder, "video", metadata))


def video_spec(
    name: str = PROVIDER_NAME,
    reward_types: Mapping[str, Sequence[str]] = DANCEGRPO_REWARD_TYPES,
) -> RewardProviderSpec:
    """The catalog entry; another name and reward types make a spec for another deployed scorer."""
    terms = tuple(key for keys in reward_types.values() for key in keys)
    return RewardProviderSpec(
        name=name,
        factory=partial(make_video_provider, terms=terms),
        needs=("prompt", "media"),
        revision=ADAPTER_REVISION,
        terms=terms,
        diagnostics=DIAGNOSTICS,
        semantic_identity={
            "protocol": "cosmos-rl-reward enqueue/pull",
            "media_type": "video",
            "payload": "npy uint8 [1,3,T,H,W]",
            "transform": UINT8_TRANSFORM,
            "reward_types": {key: list(value) for key, value in reward_types.items()},
        },
        description="decoded video (final latent through the model's decoder) scored by the DanceGRPO "
        "reward service, one request per candidate",
        params_schema=VideoRewardConfig,
        runtime=("decoder",),
        runtime_identity=decoder_identity,
    )
