"""``rewardkit.supervise`` moved to ``rewardkit_supervise``: the old paths are the same modules, warned."""

from __future__ import annotations

import importlib
import re
import sys

import pytest

import rewardkit_supervise
import rewardkit_supervise.process_tree
import rewardkit_supervise.sessions


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("rewardkit.supervise", rewardkit_supervise),
        ("rewardkit.supervise.process_tree", rewardkit_supervise.process_tree),
        ("rewardkit.supervise.sessions", rewardkit_supervise.sessions),
    ],
)
def test_the_old_path_is_the_new_module_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, old: str, new: object
):
    for name in (old, "rewardkit.supervise"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.warns(DeprecationWarning) as caught:
        module = importlib.import_module(old)
    assert any(
        re.search(rf"{old.replace('.', '[.]')} moved to {new.__name__}", str(w.message)) for w in caught
    ), [str(w.message) for w in caught]
    assert module is new
    assert module.__spec__.name == new.__name__


def test_the_old_names_are_the_new_objects(monkeypatch: pytest.MonkeyPatch):
    # code written against the old path finds the very same class
    monkeypatch.delitem(sys.modules, "rewardkit.supervise", raising=False)
    with pytest.warns(DeprecationWarning, match=r"rewardkit\.supervise moved to rewardkit_supervise;"):
        from rewardkit.supervise import ProcessTree

    assert ProcessTree is rewardkit_supervise.ProcessTree


def test_the_watchdog_runs_from_the_new_package():
    # the owner-death watchdog is started by file path: it must be the module beside process_tree
    watchdog = rewardkit_supervise.process_tree._WATCHDOG
    assert watchdog == rewardkit_supervise.sessions.__file__


@pytest.mark.parametrize(
    ("name", "new"),
    [
        ("ProcessTree", rewardkit_supervise.ProcessTree),
    ],
)
def test_the_plugin_api_names_of_0_1_are_the_new_objects_with_a_warning(name: str, new: object):
    import rewardkit.plugin

    with pytest.warns(
        DeprecationWarning, match=rf"rewardkit\.plugin\.{name} moved to rewardkit_supervise[.]"
    ):
        assert getattr(rewardkit.plugin, name) is new
