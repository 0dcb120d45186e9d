"""Small builders shared by the core tests."""

from __future__ import annotations

from typing import Any

from rewardkit import RewardProviderSpec
from rewardkit.binding import BoundProvider
from rewardkit.catalog import resolve_catalog


def rollouts(n: int = 3, group_id: str = "g", **common: Any) -> list[dict[str, Any]]:
    rows = []
    for index in range(n):
        row: dict[str, Any] = {
            "group_id": group_id,
            "trajectory_id": f"t{index}",
            "completion": f"answer {index}",
        }
        row.update(common)
        rows.append(row)
    return rows


def bound(name: str = "exact-match", **params: Any) -> BoundProvider:
    return resolve_catalog().bind(name, params)


def bind_spec(spec: RewardProviderSpec, **params: Any) -> BoundProvider:
    provider = spec.factory(**params)
    return BoundProvider(spec, provider, params, "0" * 64)
