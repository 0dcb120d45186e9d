"""The bindings reach their backend through the core's one dispatcher
(``rewardkit.scoring.reward.build_reward``):
for the same configuration they fail exactly as ``rewardkit.load`` does."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

import rewardkit
from rewardkit.plugin import MissingExtraError
from rewardkit_bindings.loading import forget_rewards, reward_for

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
