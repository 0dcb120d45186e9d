"""Shared test helpers: judge params, binding a provider against a scripted judge, rollouts.

Not a conftest.py: tox env vllm runs this folder's vLLM test in one session with
plugins/vllm_lora/tests, whose modules import from their own `conftest`; a second conftest.py
would replace it. The `judge` fixture is in nih_judge_fixtures.py (``pytest_plugins``).
"""

from __future__ import annotations

import os
from typing import Any

from rewardkit.scoring.bound_provider import BoundProvider
from rewardkit.seam.catalog import resolve_catalog
from rewardkit_nih_judge.testing import ScriptedJudge

os.environ.setdefault("REWARDKIT_STRICT_PLUGINS", "1")

RUBRIC = "Correctness counts twice as much as clarity."
# Fast failure handling for tests: small backoff, short group deadline.
QUICK = {"backoff_s": 0.01, "deadline_s": 30.0, "timeout_s": 10.0}


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
