from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from rewardkit.seam.plugins import reset_plugins

# The suite treats a plugin that fails to load as a failure, never as a warning.
os.environ.setdefault("REWARDKIT_STRICT_PLUGINS", "1")


@pytest.fixture
def fresh_plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Reload plugins for one test (after changing the plugin environment), and again after it."""
    reset_plugins()
    yield
    monkeypatch.undo()
    reset_plugins()
