"""A catalog for the selection-policy tests (``policy_fixtures:guarded_catalog``).

``guarded`` declares a parameter schema with one operator-only param of every kind; its factory
and its scoring append a line to the file named by ``GUARDED_LOG``, so a test can see that a
refused request built and ran nothing. ``plain`` marks nothing: its schema is derived from the
factory's annotations, and its operator-only params are recognised by name.
"""

from __future__ import annotations

import json
import os
from typing import Any, Literal

from pydantic import Field

from rewardkit import RewardProviderResult, RewardProviderSpec, map_candidates
from rewardkit.contracts import RewardCandidate, RewardContext
from rewardkit.contracts.params import ParamsModel, operator_only


class GuardedParams(ParamsModel):
    scale: float = Field(1.0, ge=0, le=10)
    label: str = "plain"
    timeout_s: float = Field(5.0, gt=0, le=60, json_schema_extra=operator_only("resource"))
    workers: int = Field(1, ge=1, le=8, json_schema_extra=operator_only("resource"))
    memory_mb: int = Field(256, ge=16, le=4096, json_schema_extra=operator_only("resource"))
    isolation: Literal["sandbox", "none"] = Field(
        "sandbox", json_schema_extra=operator_only("isolation", unsandboxed=("none",))
    )
    judge_url: str = Field("http://127.0.0.1:9", json_schema_extra=operator_only("url"))
    api_key_env: str = Field("GUARDED_KEY", json_schema_extra=operator_only("credential"))
    cache_dir: str = Field("/nonexistent", json_schema_extra=operator_only("path"))


def _log(event: str, **details: Any) -> None:
    path = os.environ.get("GUARDED_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"event": event, **details}, sort_keys=True) + "\n")


def _score(candidate: RewardCandidate, context: RewardContext, **params: Any) -> RewardProviderResult:
    _log("scored", params=params)
    return RewardProviderResult({"size": params.get("scale", 1.0) * len(candidate.completion)})


def guarded_factory(**params: Any) -> Any:
    _log("built", params=params)
    return map_candidates(_score, **params)


def plain_factory(
    *, scale: float = 1.0, base_url: str = "", api_key_env: str = "", workers: int = 1, cache_path: str = ""
) -> Any:
    return map_candidates(_score, scale=scale)


def guarded_catalog() -> list[RewardProviderSpec]:
    return [
        RewardProviderSpec("guarded", guarded_factory, (), "1", ("size",), params_schema=GuardedParams),
        RewardProviderSpec("plain", plain_factory, (), "1", ("size",)),
    ]
