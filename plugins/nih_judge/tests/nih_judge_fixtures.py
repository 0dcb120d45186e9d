"""The `judge` fixture: a scripted OpenAI-compatible judge on loopback, one per test.

Loaded by the test modules through ``pytest_plugins`` (see nih_judge_helpers.py for why this
folder has no conftest.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rewardkit_nih_judge.testing import ScriptedJudge


@pytest.fixture
def judge() -> Iterator[ScriptedJudge]:
    with ScriptedJudge() as server:
        yield server
