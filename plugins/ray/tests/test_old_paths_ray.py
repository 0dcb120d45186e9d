"""``rewardkit.distributed.ray`` moved to ``rewardkit_ray.backend``: the same module, warned."""

from __future__ import annotations

import importlib
import sys

import pytest

import rewardkit_ray.backend


def test_the_old_path_is_the_new_module_with_a_warning(monkeypatch: pytest.MonkeyPatch):
    for name in ("rewardkit.distributed", "rewardkit.distributed.ray"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.warns(
        DeprecationWarning, match=r"rewardkit\.distributed\.ray moved to rewardkit_ray\.backend"
    ):
        old = importlib.import_module("rewardkit.distributed.ray")
    assert old is rewardkit_ray.backend and old.RayReward is rewardkit_ray.backend.RayReward
