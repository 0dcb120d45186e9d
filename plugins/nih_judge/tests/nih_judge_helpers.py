"""Shared fixtures: a scripted judge on loopback per test, and binding a provider against it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from rewardkit_nih_judge.testing import ScriptedJudge

from rewardkit.binding import BoundProvider
from rewardkit.catalog import resolve_catalog

os.environ.setdefault("REWARDKIT_STRICT_PLUGINS", "1")

RUBRIC = "Correctness counts twice as much as clarity."
# Fast failure handling for tests: small backoff, short group deadline.
QUICK = {"backoff_s": 0.01, "deadline_s": 30.0, "timeout_s": 10.0}


@pytest.fixture
def judge() -> Iterator[ScriptedJudge]:
    with ScriptedJudge() as server:
        yield server


def judge_params(server: ScriptedJudge, **overrides: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"base_url": server.base_url, "model": "judge", **QUICK}
    params.update(overrides)
    return params


def bind(name: str, server: ScriptedJudge, **overrides: Any) -> BoundProvider:
    params = judge_params(server, **overrides)
    if name == "nih-rubric":
        params.setdefault("rubric", RUBRIC)
    return resolve_catalog().bind(name, params)


def rollouts(*completions: str, prompt: Any = "What is 6 * 7?") -> list[dict[str, Any]]:
    return [
        {"trajectory_id": f"t{index}", "completion": text, "prompt": prompt}
        for index, text in enumerate(completions)
    ]


def close(bound: BoundProvider) -> None:
    bound.provider.close()  # type: ignore[attr-defined]
