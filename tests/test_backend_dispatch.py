"""One dispatcher picks the backend (``rewardkit.scoring.reward.build_reward``), for ``rewardkit.load`` and
the
trainer bindings alike (plugins/bindings/tests/test_bindings_backend_dispatch.py compares the two)."""

from __future__ import annotations

import re
import sys

import pytest

import rewardkit
from rewardkit import Reward
from rewardkit.config import RewardSelection, load_config
from rewardkit.contracts.errors import PreflightError
from rewardkit.scoring.reward import build_reward
from rewardkit.seam.extras import MissingExtraError

SPEC = {"components": [{"provider": "exact-match"}]}
SERVICE = {"rl.reward.spec": SPEC, "rl.reward.service": "http://127.0.0.1:9", "rl.group_size": 2}
RAY = {"rl.reward.spec": SPEC, "rewards.backend": "ray", "rl.group_size": 2}


@pytest.mark.parametrize(
    ("config", "module", "needed_for"),
    [
        (SERVICE, "rewardkit_service.client", "rl.reward.service"),
        (RAY, "rewardkit_ray.backend", "rewards.backend: ray"),
    ],
)
def test_a_missing_backend_is_its_install_line(
    monkeypatch: pytest.MonkeyPatch, config: dict, module: str, needed_for: str
):
    # as where the distribution is not installed (even when another test imported it already)
    monkeypatch.setitem(sys.modules, module.partition(".")[0], None)
    monkeypatch.setitem(sys.modules, module, None)
    said = f"{needed_for} needs {module.partition('.')[0]}, which is not installed"
    with pytest.raises(MissingExtraError, match="^" + re.escape(said)):
        rewardkit.load(config)


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
