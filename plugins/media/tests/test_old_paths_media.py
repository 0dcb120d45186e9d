"""``rewardkit.media`` moved to ``rewardkit_media``: the old paths are the same modules, warned."""

from __future__ import annotations

import importlib
import re
import sys

import pytest

import rewardkit_media
import rewardkit_media.spool
import rewardkit_media.testing


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("rewardkit.media", rewardkit_media),
        ("rewardkit.media.spool", rewardkit_media.spool),
        ("rewardkit.media.reference", rewardkit_media.testing),
    ],
)
def test_the_old_path_is_the_new_module_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, old: str, new: object
):
    for name in (old, "rewardkit.media"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.warns(DeprecationWarning) as caught:
        module = importlib.import_module(old)
    assert any(
        re.search(rf"{old.replace('.', '[.]')} moved to {new.__name__}", str(w.message)) for w in caught
    ), [str(w.message) for w in caught]
    assert module is new
    assert module.__spec__.name == new.__name__
