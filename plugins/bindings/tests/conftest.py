"""rewardkit-bindings' tests run on the core and this distribution alone (tox env ``bindings``); the
trainers themselves run the bindings in envs trl, verl and openrlhf (integrations/).

They share the core suite's helpers (tests/: ``bindings_fixtures``, the catalog the binding tests
score with, which core tests use too; ``doc_snippets``; ``helpers``), so that folder is importable here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardkit.seam.plugins import reset_plugins

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests"))

# The suite treats a plugin that fails to load as a failure, never as a warning.
os.environ.setdefault("REWARDKIT_STRICT_PLUGINS", "1")


@pytest.fixture
def fresh_plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Reload plugins for one test (after changing the plugin environment), and again after it."""
    reset_plugins()
    yield
    monkeypatch.undo()
    reset_plugins()
