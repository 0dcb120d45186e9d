"""Tiny CPU reward handlers registered into the real Cosmos-RL reward service for tests.

``rk_brightness_video`` answers the four DanceGRPO score keys for a uint8 video batch
``[B, C, T, H, W]``: ``overall_reward`` = mean / 255, ``vq_reward`` = min / 255,
``mq_reward`` = max / 255, ``ta_reward`` = the number of frames. ``rk_brightness_image`` answers
``pickscore`` = mean / 255 for a uint8 image batch ``[B, H, W, C]``.
"""

from __future__ import annotations

import time
from typing import Any

from cosmos_rl_reward.handler.registry import RewardRegistry
from cosmos_rl_reward.handler.reward_base import BaseRewardHandler


class _Brightness(BaseRewardHandler):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__()

    def set_up(self) -> None:
        pass

    def _answer(
        self, scores: dict[str, list[float]], metadata: dict[str, Any], started: float
    ) -> dict[str, Any]:
        return {
            "scores": scores,
            "input_info": metadata.get("input_info", {}),
            "duration": f"{time.time() - started:.3f}",
            "decoded_duration": metadata.get("decode_duration", "N/A"),
            "type": self.reward_name,
        }


@RewardRegistry.register()
class BrightnessVideo(_Brightness):
    reward_name = "rk_brightness_video"

    def calculate_reward(self, images: Any, metadata: dict[str, Any]) -> dict[str, Any]:
        started = time.time()
        batch = images.double()
        scores = {
            "overall_reward": [float(sample.mean() / 255) for sample in batch],
            "vq_reward": [float(sample.min() / 255) for sample in batch],
            "mq_reward": [float(sample.max() / 255) for sample in batch],
            "ta_reward": [float(sample.shape[1]) for sample in batch],
        }
        return self._answer(scores, metadata, started)


@RewardRegistry.register()
class BrightnessImage(_Brightness):
    reward_name = "rk_brightness_image"

    def calculate_reward(self, images: Any, metadata: dict[str, Any]) -> dict[str, Any]:
        started = time.time()
        return self._answer(
            {"pickscore": [float(sample.double().mean() / 255) for sample in images]}, metadata, started
        )
