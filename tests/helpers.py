"""Small builders shared by the core tests."""

from __future__ import annotations

from typing import Any

from rewardkit import RewardProviderSpec
from rewardkit.scoring.bound_provider import BoundProvider
from rewardkit.seam.catalog import resolve_catalog


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


def fake_distribution(root: Any, name: str, entry_points: dict[str, str], modules: dict[str, str]) -> None:
    """Write an installed-looking distribution (dist-info + modules) under ``root``."""
    import textwrap
    from pathlib import Path

    root = Path(root)
    info = root / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = ["[rewardkit]"] + [f"{ep} = {target}" for ep, target in entry_points.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    for module, source in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(source))
