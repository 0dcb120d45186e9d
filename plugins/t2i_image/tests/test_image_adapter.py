"""``t2i-image`` end to end against the reference service: [1,3,1,H,W] in, uint8 [1,H,W,3] out."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from image_helpers import ConditioningDecoder

import rewardkit
from rewardkit import PreflightError, RewardContractError
from rewardkit_media.testing import Faults, ReferenceMediaService, brightness
from rewardkit_t2i import PROVIDER_NAME, ImageRewardConfig, image_spec


def config(params, group_size=1):
    return {"rl": {"group_size": group_size, "reward": {"provider": PROVIDER_NAME, "params": params}}}


def image(seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.rand((1, 3, 1, 6, 9), generator=generator) * 2 - 1


def group(group_id, *latents):
    return {
        "group_id": group_id,
        "rollouts": [
            {
                "trajectory_id": f"{group_id}-{index}",
                "completion": "",
                "prompt": "a lighthouse",
                "media": latent,
            }
            for index, latent in enumerate(latents)
        ],
    }


def expected_pixels(latent: torch.Tensor) -> np.ndarray:
    x = np.clip(latent[0, :, 0].numpy().astype(np.float32), -1, 1)
    return np.rint((x + np.float32(1)) * np.float32(127.5)).astype(np.uint8).transpose(1, 2, 0)[None]


def test_an_image_is_sent_hwc_without_video_infos(service, params):
    latent = image(0)
    with rewardkit.load(config(params), runtime={"decoder": ConditioningDecoder()}) as reward:
        ((_, scored),) = reward.score([group("g", latent)]).candidates()
    (received,) = service.samples
    assert received.shape == (1, 6, 9, 3) and received.dtype == np.uint8
    assert np.array_equal(received, expected_pixels(latent))
    assert service.headers == [
        {"reward_fn": {"pickscore": 1.0}, "media_type": "image", "prompts": ["a lighthouse"]}
    ]
    assert scored.final == pytest.approx(brightness(received))
    assert service.enqueue_count == 1


def test_each_image_is_its_own_request(service, params):
    latents = [image(seed) for seed in (1, 2)]
    with rewardkit.load(config(params, group_size=2), runtime={"decoder": ConditioningDecoder()}) as reward:
        finals = [scored.final for _, scored in reward.score([group("g", *latents)]).candidates()]
    assert service.enqueue_count == 2
    assert finals == pytest.approx([brightness(expected_pixels(latent)) for latent in latents])


@pytest.mark.parametrize(
    ("transform", "match"),
    [
        (lambda latent: latent.expand(1, 3, 2, 6, 9), "expected \\[1, 3, 1, H, W\\]"),
        (lambda latent: latent[:, :1], "3 channels"),
        (lambda latent: latent.to(torch.uint8), "dtype"),
        (lambda latent: latent * float("nan"), "not finite"),
        (lambda latent: (latent + 1) * 127.5, "outside"),
    ],
)
def test_bad_decoded_images_fail_before_any_network_call(service, params, transform, match):
    decoder = ConditioningDecoder(transform)
    with (
        rewardkit.load(config(params), runtime={"decoder": decoder}) as reward,
        pytest.raises(RewardContractError, match=match),
    ):
        reward.score([group("g", image(3))])
    assert service.enqueue_count == 0


def test_images_have_no_fps(params):
    with pytest.raises(PreflightError, match="fps"):
        rewardkit.load(config({**params, "fps": 16.0}), runtime={"decoder": ConditioningDecoder()})
    assert "fps" not in ImageRewardConfig.model_fields


def test_a_spec_for_another_scorer_reads_its_keys(spool_dir, monkeypatch, params):
    keys = {"hpsv2": ["hpsv2"], "image_reward": ["image_reward"]}
    with ReferenceMediaService(keys) as server:
        spec = image_spec("t2i-hps", keys)
        assert spec.terms == ("hpsv2", "image_reward")
        monkeypatch.setattr("rewardkit_t2i._custom_catalog", lambda: [spec], raising=False)
        settings = {
            **params,
            "enqueue_url": server.enqueue_url,
            "pull_url": server.pull_url,
            "reward_types": keys,
        }
        selection = {"provider": "t2i-hps", "params": settings, "catalog": "rewardkit_t2i:_custom_catalog"}
        with rewardkit.load(
            {"rl": {"group_size": 1, "reward": selection}}, runtime={"decoder": ConditioningDecoder()}
        ) as reward:
            ((_, scored),) = reward.score([group("g", image(4))]).candidates()
        value = brightness(expected_pixels(image(4)))
        assert scored.breakdown["t2i-hps"]["value"] == pytest.approx(value)
        assert server.enqueue_count == 1
        assert {reward_type for _, reward_type in server.pulls} == {"hpsv2", "image_reward"}


def test_a_terminal_400_is_the_candidates_error(service, params):
    service.faults = Faults(pull_script=["bad400"])
    with (
        rewardkit.load(config(params), runtime={"decoder": ConditioningDecoder()}) as reward,
        pytest.raises(rewardkit.RewardkitError, match="terminal"),
    ):
        reward.score([group("g", image(5))])
    assert service.enqueue_count == 1 and len(service.pulls) == 1


# -- the trainer's rank loop ----------------------------------------------------------------------


def test_the_rank_helper_scores_images_and_names_the_deployed_scorer(service, params):
    """Alone (no process group) ``score_on_ranks`` is the whole batch; its run record names the scorer."""
    from rewardkit_media.ranks import score_on_ranks

    latents = [image(seed) for seed in (20, 21, 22)]
    with rewardkit.load(config(params, group_size=3), runtime={"decoder": ConditioningDecoder()}) as reward:
        whole = reward.score([group("g", *latents)])
        scores = score_on_ranks(reward, [group("g", *latents)], group_size=3)
    assert (scores.rank, scores.world) == (0, 1)
    assert [c.final for c in scores.groups[0].candidates] == [c.final for _, c in whole.candidates()]
    assert [c.advantage for c in scores.groups[0].candidates] == [c.advantage for _, c in whole.candidates()]
    timing = f"train/reward_provider/{PROVIDER_NAME}/service_seconds"  # wall time
    assert {k: v for k, v in scores.metrics.items() if k != timing} == {
        k: v for k, v in whole.metrics.items() if k != timing
    }
    assert scores.scorer_revisions == {PROVIDER_NAME: "pickscore-test-2026-12"}
    (record,) = scores.run_record
    assert (record["revision"], record["scorer_revision"]) == ("1", "pickscore-test-2026-12")
