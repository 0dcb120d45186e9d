"""One dispatcher picks the backend (``rewardkit.reward.build_reward``): ``rewardkit.load`` and the
trainer bindings reach the same backend for the same configuration, and fail the same way."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

import rewardkit
from rewardkit import Reward
from rewardkit.bindings.loading import forget_rewards, reward_for
from rewardkit.config import RewardSelection, load_config
from rewardkit.errors import PreflightError
from rewardkit.extras import MissingExtraError
from rewardkit.reward import build_reward

SPEC = {"components": [{"provider": "exact-match"}]}
SERVICE = {"rl.reward.spec": SPEC, "rl.reward.service": "http://127.0.0.1:9", "rl.group_size": 2}
RAY = {"rl.reward.spec": SPEC, "rewards.backend": "ray", "rl.group_size": 2}


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    forget_rewards()
    yield
    forget_rewards()


def _failure(call: Any) -> tuple[type[BaseException], str]:
    with pytest.raises(Exception) as error:
        call()
    return type(error.value), str(error.value)


@pytest.mark.parametrize(
    ("config", "module", "needed_for"),
    [
        (SERVICE, "rewardkit_service.client", "rl.reward.service"),
        (RAY, "rewardkit_ray.backend", "rewards.backend: ray"),
    ],
)
def test_a_missing_backend_fails_load_and_the_bindings_alike(
    monkeypatch: pytest.MonkeyPatch, config: dict, module: str, needed_for: str
):
    # as where the distribution is not installed (even when another test imported it already)
    monkeypatch.setitem(sys.modules, module.partition(".")[0], None)
    monkeypatch.setitem(sys.modules, module, None)
    by_load = _failure(lambda: rewardkit.load(config))
    by_binding = _failure(lambda: reward_for(config))
    assert by_load == by_binding
    assert by_load[0] is MissingExtraError
    assert by_load[1].startswith(f"{needed_for} needs {module.partition('.')[0]}, which is not installed")


def test_a_selection_with_its_own_service_is_scored_there(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "rewardkit_service", None)
    monkeypatch.setitem(sys.modules, "rewardkit_service.client", None)
    config = load_config({"rl.reward.spec": SPEC, "rl.group_size": 2})
    routed = RewardSelection(provider="nonempty", service="http://127.0.0.1:9")
    with pytest.raises(MissingExtraError, match=r"rl\.reward\.service needs rewardkit_service"):
        build_reward(config, routed)


@pytest.mark.parametrize("config", [SERVICE, RAY])
def test_runtime_objects_cannot_travel_to_another_process(config: dict):
    where = "rl.reward.service" if config is SERVICE else "rewards.backend: ray"
    message = rf"runtime objects \['decoder'\] live in this process and cannot travel to {where}"
    with pytest.raises(PreflightError, match=message):
        rewardkit.load(config, runtime={"decoder": object()})
    with pytest.raises(PreflightError, match=message):
        build_reward(load_config(config), runtime={"decoder": object()})


def test_neither_key_scores_in_process_with_the_selection_and_group_size():
    config = load_config({"rl.reward.spec": SPEC, "rl.group_size": 2})
    with build_reward(config, RewardSelection(provider="nonempty"), group_size=4) as reward:
        assert type(reward) is Reward
        assert [component.provider for component in reward.spec.components] == ["nonempty"]
        assert reward.worker.group_size == 4
