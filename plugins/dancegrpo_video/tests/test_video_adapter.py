"""``dancegrpo-video`` end to end against the reference service: config, preflight, scoring, failures."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch
from video_helpers import IdentityDecoder

import rewardkit
from rewardkit import PreflightError, RewardContractError, RewardkitError
from rewardkit.scoring.metrics import merge_metrics
from rewardkit.seam.catalog import resolve_catalog
from rewardkit_dancegrpo import PROVIDER_NAME, VideoRewardConfig
from rewardkit_media import REVISION_SENTINEL
from rewardkit_media.decoded import to_uint8
from rewardkit_media.testing import Faults, brightness

TERMS = ["overall_reward", "vq_reward", "mq_reward", "ta_reward"]


def config(params, group_size=1, **reward):
    return {
        "rl": {
            "group_size": group_size,
            "reward": {"provider": PROVIDER_NAME, "params": params, **reward},
        }
    }


def video(seed: int, frames: int = 3) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.rand((1, 3, frames, 8, 10), generator=generator) * 2 - 1


def group(group_id, *latents, prompt="a red car turning left"):
    return {
        "group_id": group_id,
        "rollouts": [
            {"trajectory_id": f"{group_id}-{index}", "completion": "", "prompt": prompt, "media": latent}
            for index, latent in enumerate(latents)
        ],
    }


def terms_of(scored):
    return {name: entry["value"] for name, entry in scored.breakdown.items()}


def test_one_candidate_is_decoded_sent_once_and_scored(service, params):
    latent = video(0)
    with rewardkit.load(config(params), runtime={"decoder": IdentityDecoder()}) as reward:
        batch = reward.score([group("g", latent)])
    ((_, scored),) = batch.candidates()
    expected = to_uint8(latent, "video")
    assert service.enqueue_count == 1
    (received,) = service.samples
    assert received.shape == (1, 3, 3, 8, 10) and received.dtype == np.uint8
    assert np.array_equal(received, expected)
    assert service.headers == [
        {
            "reward_fn": {"dance_grpo": 1.0},
            "media_type": "video",
            "video_infos": [{"video_fps": 16.0}],
            "prompts": ["a red car turning left"],
        }
    ]
    assert scored.final == pytest.approx(brightness(expected))  # the first term is the default
    assert batch.metrics[f"train/reward_provider/{PROVIDER_NAME}/sample_count"] == 1
    assert batch.metrics[f"train/reward_provider/{PROVIDER_NAME}/upload_mib"] > 0


def test_every_service_key_is_a_term_a_spec_can_weight(service, params):
    spec = {
        "components": [
            {
                "name": "overall",
                "provider": PROVIDER_NAME,
                "params": params,
                "term": "overall_reward",
                "weight": 1.0,
            },
            {"name": "ta", "provider": PROVIDER_NAME, "params": params, "term": "ta_reward", "weight": 0.5},
        ]
    }
    latent = video(1)
    with rewardkit.load(
        {"rl": {"group_size": 1, "reward": {"spec": spec}}}, runtime={"decoder": IdentityDecoder()}
    ) as reward:
        ((_, scored),) = reward.score([group("g", latent)]).candidates()
    value = brightness(to_uint8(latent, "video"))
    # the reference service answers key i of a type with brightness + i
    assert scored.final == pytest.approx(value + 0.5 * (value + 3))
    assert service.enqueue_count == 1  # one provider configuration, one request per candidate


def test_each_candidate_is_its_own_request_in_order(service, params):
    latents = [video(seed) for seed in (2, 3, 4)]
    with rewardkit.load(config(params, group_size=3), runtime={"decoder": IdentityDecoder()}) as reward:
        batch = reward.score([group("g", *latents)])
    assert service.enqueue_count == 3
    finals = [scored.final for _, scored in batch.candidates()]
    assert finals == pytest.approx([brightness(to_uint8(latent, "video")) for latent in latents])


def test_decoder_attestation_and_revision_enter_the_identity(params):
    def identity(decoder):
        with rewardkit.load(config(params), runtime={"decoder": decoder}) as reward:
            return reward.providers[0].identity

    first = identity(IdentityDecoder())
    assert identity(IdentityDecoder(delay_s=1.0)) == first  # another object, same attestation
    other = IdentityDecoder()
    other.revision = "test-2"
    assert identity(other) != first
    assert (
        identity(IdentityDecoder())
        != rewardkit.load(
            config({**params, "revision": "videoalign-test-2027-01"}), runtime={"decoder": IdentityDecoder()}
        )
        .providers[0]
        .identity
    )


# -- preflight ----------------------------------------------------------------------------------


def test_the_recipe_sentinel_revision_is_refused(params):
    with pytest.raises(PreflightError, match="sentinel"):
        rewardkit.load(
            config({**params, "revision": REVISION_SENTINEL}), runtime={"decoder": IdentityDecoder()}
        )


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"fps": "16"}, "fps"),
        ({"fps": 0}, "fps"),
        ({"token_env": "Bearer abc.def"}, "token_env"),
        ({"enqueue_url": "ftp://x"}, "enqueue_url"),
        ({"deadline_s": 10_000.0}, "deadline_s"),
        ({"reward_types": {"dance_grpo": ["overall_reward"]}}, "declares terms"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_params_are_checked_strictly_at_load(params, change, match):
    with pytest.raises(PreflightError, match=match):
        rewardkit.load(config({**params, **change}), runtime={"decoder": IdentityDecoder()})


def test_fps_is_required(params):
    del params["fps"]
    with pytest.raises(PreflightError, match="fps"):
        rewardkit.load(config(params), runtime={"decoder": IdentityDecoder()})


def test_a_decoder_without_attestation_fails_preflight(params):
    decoder = IdentityDecoder()
    decoder.output_range = "zero_to_one"
    with pytest.raises(PreflightError, match="output_range"):
        rewardkit.load(config(params), runtime={"decoder": decoder})


def test_without_runtime_or_in_the_service_it_is_refused(params):
    with pytest.raises(PreflightError, match="in-process media"):
        rewardkit.load(config(params))
    with pytest.raises(PreflightError, match="in-process media"):
        resolve_catalog().bind(PROVIDER_NAME, params, ("prompt", "reference"))


def test_the_config_is_a_plain_value_contract():
    fields = VideoRewardConfig.model_fields
    assert {"revision", "enqueue_url", "pull_url", "token_env", "reward_types", "fps", "deadline_s"} <= set(
        fields
    )
    assert fields["reward_types"].default_factory() == {"dance_grpo": TERMS}


# -- failures -----------------------------------------------------------------------------------


def test_a_bad_decoded_tensor_fails_before_any_network_call(service, params):
    decoder = IdentityDecoder(transform=lambda latent: latent * 300)
    with (
        rewardkit.load(config(params), runtime={"decoder": decoder}) as reward,
        pytest.raises(RewardContractError, match="outside") as caught,
    ):
        reward.score([group("g", video(5))])
    assert caught.value.trajectory_id == "g-0" and caught.value.group_id == "g"
    assert service.enqueue_count == 0


def test_a_candidate_without_media_is_refused(service, params):
    with (
        rewardkit.load(config(params), runtime={"decoder": IdentityDecoder()}) as reward,
        pytest.raises(RewardContractError, match="in-process media"),
    ):
        reward.score(
            [{"group_id": "g", "rollouts": [{"trajectory_id": "a", "completion": "", "prompt": "p"}]}]
        )
    assert service.enqueue_count == 0


def test_a_remote_failure_names_the_uuid_and_follows_on_error(service, params):
    service.faults = Faults(never_ready=True)
    fast = {**params, "deadline_s": 0.5}
    with (
        rewardkit.load(config(fast), runtime={"decoder": IdentityDecoder()}) as reward,
        pytest.raises(RewardkitError, match="still pending or it failed remotely") as caught,
    ):
        reward.score([group("g", video(6))])
    (uuid, _) = service.pulls[0]
    assert uuid in str(caught.value)
    spec = {"components": [{"provider": PROVIDER_NAME, "params": fast}], "on_error": "zero"}
    with rewardkit.load(
        {"rl": {"group_size": 1, "reward": {"spec": spec}}}, runtime={"decoder": IdentityDecoder()}
    ) as reward:
        ((_, scored),) = reward.score([group("g", video(6))]).candidates()
    assert scored.final == 0.0
    assert service.enqueue_count == 2


def test_a_decoder_that_overruns_the_deadline_sends_nothing(service, params):
    slow = IdentityDecoder(delay_s=3.0)
    with rewardkit.load(config({**params, "deadline_s": 0.5}), runtime={"decoder": slow}) as reward:
        started = time.monotonic()
        with pytest.raises(RewardkitError, match="decoder 'identity-vae' had not finished"):
            reward.score([group("g", video(7))])
        assert time.monotonic() - started < 0.5 + 0.5
    assert service.enqueue_count == 0


# -- distributed: one trajectory per rank ---------------------------------------------------------


def test_rank_reports_merge_to_the_single_process_report(service, params):
    """Each rank scores its own trajectory as a group of one; the merged reports equal one process's."""
    latents = [video(seed, frames=2) for seed in (8, 9, 10)]
    service.faults = Faults(pending_polls=1)
    ranks = []
    for rank, latent in enumerate(latents):  # in training each rank is its own process
        with rewardkit.load(config(params), runtime={"decoder": IdentityDecoder()}) as reward:
            ranks.append(reward.score([group(f"p0-rank{rank}", latent)]))
    metrics, weights = merge_metrics((batch.metrics, batch.metric_weights) for batch in ranks)
    with rewardkit.load(config(params, group_size=3), runtime={"decoder": IdentityDecoder()}) as reward:
        whole = reward.score([group("p0", *latents)])

    # advantages are the trainer's, over the gathered group: a rank's group of one has none
    def without_advantage(values):
        return {name: value for name, value in values.items() if "/advantage/" not in name}

    timing = f"train/reward_provider/{PROVIDER_NAME}/service_seconds"  # wall time: equal in weight only
    assert without_advantage(metrics).keys() == without_advantage(whole.metrics).keys()
    for name, value in without_advantage(whole.metrics).items():
        if name != timing:
            assert metrics[name] == pytest.approx(
                value, rel=0, abs=0 if name.endswith("_count") else 1e-12
            ), name
    assert metrics[timing] == pytest.approx(sum(batch.metrics[timing] for batch in ranks) / 3)
    assert metrics[f"train/reward_provider/{PROVIDER_NAME}/sample_count"] == 3
    assert metrics[f"train/reward_provider/{PROVIDER_NAME}/pending_polls"] == 1.0
    assert without_advantage(weights) == without_advantage(whole.metric_weights)
    assert service.enqueue_count == 6  # one request per trajectory, in both runs
