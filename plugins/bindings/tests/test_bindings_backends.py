"""Every binding builds its reward on the configured backend, never silently in process: the Ray
backend without Ray installed fails every binding with the install line, and the local backend is
in process. The bindings against a live and a dead Reward Service are tested with the service, in
``plugins/service/tests/test_service_bindings.py``; on a real Ray cluster in
``plugins/ray/tests/test_bindings_ray.py``."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

import rewardkit_bindings.openrlhf as openrlhf_binding
import rewardkit_bindings.trl as trl_binding
import rewardkit_bindings.verl as verl_binding
from rewardkit.scoring.reward import Reward
from rewardkit.seam.extras import MissingExtraError
from rewardkit_bindings.loading import forget_rewards

SPEC = {"components": [{"provider": "exact-match", "weight": 2.0}, {"provider": "nonempty", "weight": 0.5}]}


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    forget_rewards()
    yield
    forget_rewards()


def test_the_ray_backend_is_never_replaced_by_local_scoring(monkeypatch: pytest.MonkeyPatch):
    # As where rewardkit-ray is not installed (the core env), even if this environment has it.
    monkeypatch.setitem(sys.modules, "rewardkit_ray", None)
    ray = {
        "rl.reward.spec": SPEC,
        "rewards.backend": "ray",
        "rl.group_size": 2,
        "rl.data.response_column": "a",
    }
    needs = r"rewards\.backend: ray needs rewardkit_ray, which is not installed: pip install "
    with pytest.raises(MissingExtraError, match=needs):
        trl_binding.reward_funcs(ray)
    with pytest.raises(MissingExtraError, match=needs):
        verl_binding.compute_score("x", "four", "four", config=ray)
    with pytest.raises(MissingExtraError, match=needs):
        openrlhf_binding.reward_func(["Q: four"], ["Q:"], ["four"], config=ray)


def test_local_backend_is_in_process():
    bound = trl_binding.binding({"rl.reward.spec": SPEC, "rl.group_size": 2, "rl.data.response_column": "a"})
    assert type(bound.reward) is Reward and bound.slices_per_rank
