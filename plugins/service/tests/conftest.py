"""The Reward Service's tests (rewardkit-service, its server extra and the core installed).

They share the core's test fixture modules (``catalog_fixtures``, ``charges_fixtures``,
``reasons_fixtures``, ``remote_fixtures``, ``worker_fixtures``, ``media_fixtures``...) instead of
copying them: the repository's ``tests/`` folder is importable here, in this process; servers
started by ``service_fixtures.start_server`` get it on their ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardkit.seam.plugins import reset_plugins

CORE_TESTS = Path(__file__).resolve().parents[3] / "tests"
if str(CORE_TESTS) not in sys.path:
    sys.path.insert(0, str(CORE_TESTS))

# The suite treats a plugin that fails to load as a failure, never as a warning.
os.environ.setdefault("REWARDKIT_STRICT_PLUGINS", "1")


@pytest.fixture
def fresh_plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Reload plugins for one test (after changing the plugin environment), and again after it."""
    reset_plugins()
    yield
    monkeypatch.undo()
    reset_plugins()
