"""``rewardkit.checkpoints`` moved to ``rewardkit_checkpoints``: the old path is the same module, warned."""

from __future__ import annotations

import importlib
import sys

import pytest

import rewardkit_checkpoints.watcher


def test_the_old_path_is_the_new_module_with_a_warning(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delitem(sys.modules, "rewardkit.checkpoints", raising=False)
    monkeypatch.delitem(sys.modules, "rewardkit.checkpoints.watcher", raising=False)
    with pytest.warns(
        DeprecationWarning, match=r"rewardkit_checkpoints\.watcher; .* removed in rewardkit 0\.3"
    ):
        old = importlib.import_module("rewardkit.checkpoints.watcher")
    assert old is rewardkit_checkpoints.watcher
    assert old.Watcher is rewardkit_checkpoints.watcher.Watcher
