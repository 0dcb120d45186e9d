"""The bindings' import paths inside the core (``rewardkit.bindings.trl``...) keep working until 0.3:
each is this distribution's module, with a ``DeprecationWarning`` naming the new path (``verl_manager``,
which imports verl, the same way: tests/test_old_import_paths.py checks its mapping)."""

from __future__ import annotations

import importlib
import sys

import pytest

import rewardkit.bindings


@pytest.mark.parametrize(
    "module", ["trl", "verl", "openrlhf", "loading", "truncation", "sample_groups", "plugin"]
)
def test_an_old_path_is_the_moved_module_with_a_warning(monkeypatch: pytest.MonkeyPatch, module: str):
    new = importlib.import_module(f"rewardkit_bindings.{module}")
    monkeypatch.delitem(sys.modules, f"rewardkit.bindings.{module}", raising=False)
    said = rf"rewardkit\.bindings\.{module} moved to rewardkit_bindings\.{module}; the old path is removed"
    with pytest.warns(DeprecationWarning, match=said):
        old = importlib.import_module(f"rewardkit.bindings.{module}")
    assert old is new


def test_the_old_name_of_sample_groups_is_the_moved_module(monkeypatch: pytest.MonkeyPatch):
    import rewardkit_bindings.sample_groups

    monkeypatch.delitem(sys.modules, "rewardkit.bindings.groups", raising=False)
    with pytest.warns(DeprecationWarning, match=r"rewardkit\.bindings\.groups moved to rewardkit_bindings"):
        old = importlib.import_module("rewardkit.bindings.groups")
    assert old is rewardkit_bindings.sample_groups


def test_get_returns_the_function_an_old_path_gives(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delitem(sys.modules, "rewardkit.bindings.verl", raising=False)
    with pytest.warns(DeprecationWarning):
        from rewardkit.bindings.verl import compute_score  # type: ignore[import-not-found]
    assert rewardkit.bindings.get("verl") is compute_score
