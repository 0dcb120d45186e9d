"""``rewardkit.stats`` moved to ``rewardkit_stats``: the old paths are the same modules, warned."""

from __future__ import annotations

import importlib
import re
import sys

import pytest

import rewardkit_stats
import rewardkit_stats.distributions
import rewardkit_stats.gate


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("rewardkit.stats", rewardkit_stats),
        ("rewardkit.stats.gate", rewardkit_stats.gate),
        ("rewardkit.stats.distributions", rewardkit_stats.distributions),
    ],
)
def test_the_old_path_is_the_new_module_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, old: str, new: object
):
    for name in (old, "rewardkit.stats"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.warns(DeprecationWarning) as caught:
        module = importlib.import_module(old)
    assert any(
        re.search(rf"{old.replace('.', '[.]')} moved to {new.__name__}", str(w.message)) for w in caught
    ), [str(w.message) for w in caught]
    assert module is new
    assert module.__spec__.name == new.__name__


def test_the_old_names_are_the_new_objects(monkeypatch: pytest.MonkeyPatch):
    # code written against the old path finds the very same function
    monkeypatch.delitem(sys.modules, "rewardkit.stats", raising=False)
    with pytest.warns(DeprecationWarning, match=r"rewardkit\.stats moved to rewardkit_stats;"):
        from rewardkit.stats import paired_interval

    assert paired_interval is rewardkit_stats.paired_interval


@pytest.mark.parametrize(
    ("name", "new"),
    [
        ("RegressionGate", rewardkit_stats.RegressionGate),
        ("paired_interval", rewardkit_stats.paired_interval),
        ("incomplete_beta", rewardkit_stats.distributions.incomplete_beta),
    ],
)
def test_the_plugin_api_names_of_0_1_are_the_new_objects_with_a_warning(name: str, new: object):
    import rewardkit.plugin

    with pytest.warns(DeprecationWarning, match=rf"rewardkit\.plugin\.{name} moved to rewardkit_stats[.]"):
        assert getattr(rewardkit.plugin, name) is new
