"""``rewardkit.remote`` and ``rewardkit.service`` moved to ``rewardkit_service``: same modules, warned."""

from __future__ import annotations

import importlib
import re
import sys

import pytest

import rewardkit_service.app
import rewardkit_service.client
import rewardkit_service.testing


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("rewardkit.remote", rewardkit_service.client),
        ("rewardkit.service.app", rewardkit_service.app),
        ("rewardkit.service.process", rewardkit_service.testing),
    ],
)
def test_the_old_path_is_the_new_module_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, old: str, new: object
):
    for name in (old, "rewardkit.service"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.warns(DeprecationWarning) as caught:
        module = importlib.import_module(old)
    assert any(
        re.search(rf"{old.replace('.', '[.]')} moved to {new.__name__}", str(w.message)) for w in caught
    ), [str(w.message) for w in caught]
    assert module is new


def test_the_server_default_body_limit_is_the_one_the_cores_help_shows():
    from rewardkit_service.plugin import SERVE_MAX_BODY_HELP

    assert rewardkit_service.app.DEFAULT_MAX_BODY_BYTES == 67108864
    assert f"{rewardkit_service.app.DEFAULT_MAX_BODY_BYTES}" in SERVE_MAX_BODY_HELP
