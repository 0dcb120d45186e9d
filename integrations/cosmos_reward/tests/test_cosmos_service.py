"""Both decoded-media adapters against the real Cosmos-RL reward service, end to end.

The service runs the test handlers of ``../hooks/rk_cosmos_handlers.py``; each expected score is
computed here from the uint8 sample the adapter must have sent (the exact fp32 transform).
"""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch
from cosmos_harness import IMAGE_TYPE, TOKEN_ENV, VIDEO_KEYS, VIDEO_TYPE

import rewardkit
from rewardkit import RewardkitError


class Decoder:
    """The latent already is the decoded sample: what reaches the service is the transform alone."""

    name = "identity-vae"
    revision = "cosmos-test-1"
    output_range = "neg_one_to_one"

    def decode(self, latent):
        return latent


def pixels(values: torch.Tensor) -> np.ndarray:
    x = np.clip(values.numpy().astype(np.float32), -1, 1)
    return np.rint((x + np.float32(1)) * np.float32(127.5)).astype(np.uint8)


def params(cosmos, spool_dir, reward_types, **extra):
    return {
        "revision": "cosmos-rl-reward-0.4.7-test-handlers",
        "enqueue_url": cosmos.enqueue_url,
        "pull_url": cosmos.pull_url,
        "token_env": TOKEN_ENV,
        "reward_types": reward_types,
        "deadline_s": 60.0,
        "poll_interval_s": 0.02,
        "max_poll_interval_s": 0.2,
        "spool_dir": str(spool_dir),
        **extra,
    }


def rollouts(group_id, latents, prompt="a kite over the sea"):
    return {
        "group_id": group_id,
        "rollouts": [
            {"trajectory_id": f"{group_id}-{index}", "completion": "", "prompt": prompt, "media": latent}
            for index, latent in enumerate(latents)
        ],
    }


@pytest.fixture
def spool_dir(tmp_path):
    folder = tmp_path / "spool"
    folder.mkdir()
    yield folder
    assert list(folder.iterdir()) == [], "a spool file was left behind"


def test_videos_are_scored_by_the_real_service_in_process(cosmos, spool_dir):
    generator = torch.Generator().manual_seed(0)
    latents = [torch.rand((1, 3, frames, 24, 32), generator=generator) * 2 - 1 for frames in (5, 9)]
    settings = params(cosmos, spool_dir, {VIDEO_TYPE: VIDEO_KEYS}, fps=12.0)
    spec = {
        "components": [
            {"name": "overall", "provider": "dancegrpo-video", "params": settings, "term": "overall_reward"},
            {
                "name": "frames",
                "provider": "dancegrpo-video",
                "params": settings,
                "term": "ta_reward",
                "weight": 0.01,
            },
        ]
    }
    config = {"rl": {"group_size": 2, "reward": {"spec": spec}}}
    with rewardkit.load(config, runtime={"decoder": Decoder()}) as reward:
        batch = reward.score([rollouts("v", latents)])
    for (_, scored), latent in zip(batch.candidates(), latents):
        sample = pixels(latent).astype(np.float64)
        assert scored.breakdown["overall"]["value"] == pytest.approx(sample.mean() / 255, abs=1e-12)
        assert scored.breakdown["frames"]["value"] == latent.shape[2]
        assert scored.final == pytest.approx(sample.mean() / 255 + 0.01 * latent.shape[2], abs=1e-12)
    assert batch.metrics["train/reward_provider/dancegrpo-video/sample_count"] == 2


def test_images_are_scored_by_the_real_service_through_a_config_file(cosmos, spool_dir, tmp_path):
    generator = torch.Generator().manual_seed(1)
    latent = torch.rand((1, 3, 1, 20, 28), generator=generator) * 2 - 1
    path = tmp_path / "t2i.yaml"
    path.write_text(
        "rl:\n"
        "  group_size: 1\n"
        "  reward:\n"
        "    provider: t2i-image\n"
        "    params:\n"
        f"      revision: cosmos-rl-reward-0.4.7-test-handlers\n"
        f"      enqueue_url: {cosmos.enqueue_url}\n"
        f"      pull_url: {cosmos.pull_url}\n"
        f"      token_env: {TOKEN_ENV}\n"
        f"      reward_types: {{{IMAGE_TYPE}: [pickscore]}}\n"
        "      deadline_s: 60\n"
        "      poll_interval_s: 0.02\n"
        f"      spool_dir: {spool_dir}\n"
    )
    with rewardkit.load(path, runtime={"decoder": Decoder()}) as reward:
        ((_, scored),) = reward.score([rollouts("i", [latent])]).candidates()
    sample = pixels(latent[0, :, 0]).transpose(1, 2, 0).astype(np.float64)
    assert scored.final == pytest.approx(sample.mean() / 255, abs=1e-12)


def test_the_real_pending_400_ends_at_the_deadline_with_the_uuid(cosmos, spool_dir):
    # No handler of that type: the service accepts the enqueue and answers "Not found" forever.
    settings = params(cosmos, spool_dir, {"rk_not_served": ["pickscore"]}, deadline_s=2.0)
    config = {"rl": {"group_size": 1, "reward": {"provider": "t2i-image", "params": settings}}}
    with rewardkit.load(config, runtime={"decoder": Decoder()}) as reward:
        started = time.monotonic()
        with pytest.raises(
            RewardkitError, match=r"no score for task [0-9a-f-]{36} by the deadline"
        ) as caught:
            reward.score([rollouts("x", [torch.zeros((1, 3, 1, 8, 8))])])
        assert time.monotonic() - started <= 2.0 + 0.5  # the deadline is honoured within 0.5 s
    assert "still pending or it failed remotely" in str(caught.value)
