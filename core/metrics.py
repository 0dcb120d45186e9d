"""Metric names and the mergeable report of a scored batch.

Provider diagnostics live under ``<ns>/reward_provider/<provider>/<diagnostic>`` and the
framework-owned count under ``<ns>/reward_provider/<provider>/sample_count``; composed rewards
under ``<ns>/reward/...`` and each component under ``<ns>/reward_component/<component>/...``.
Every segment is checked, so a name can never escape its place in the hierarchy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from rewardkit.contracts import NAME_PATTERN, MetricContribution
from rewardkit.errors import RewardkitError

NAMESPACES = ("train", "val")


def metric_name(namespace: str, *segments: str) -> str:
    if namespace not in NAMESPACES:
        raise RewardkitError(f"metric namespace must be one of {NAMESPACES}, got {namespace!r}")
    for segment in segments:
        if not NAME_PATTERN.match(segment):
            raise RewardkitError(f"metric path segment {segment!r} is not a valid name")
    return "/".join((namespace, *segments))


@dataclass
class WeightedMean:
    total: float = 0.0
    weight: float = 0.0

    def add(self, value: float, weight: float = 1.0) -> None:
        self.total += value * weight
        self.weight += weight

    @property
    def value(self) -> float:
        return self.total / self.weight if self.weight else math.nan


@dataclass
class Report:
    """Accumulates a batch's metrics; ``as_dict`` gives flat ``name -> value`` pairs."""

    namespace: str
    values: dict[str, float] = field(default_factory=dict)
    means: dict[str, WeightedMean] = field(default_factory=dict)

    def count(self, name: str, amount: float = 1.0) -> None:
        self.values[name] = self.values.get(name, 0.0) + amount

    def mean(self, name: str, value: float, weight: float = 1.0) -> None:
        self.means.setdefault(name, WeightedMean()).add(value, weight)

    def provider_diagnostics(self, provider: str, contributions: Iterable[MetricContribution]) -> None:
        for contribution in contributions:
            self.mean(
                metric_name(self.namespace, "reward_provider", provider, contribution.name),
                contribution.value,
                contribution.weight,
            )

    def weights(self) -> dict[str, float]:
        """The weight behind each mean (how many values, or their summed weights): what merging
        two reports' means needs, so that a split batch reports what the whole batch would."""
        return dict(sorted((name, mean.weight) for name, mean in self.means.items() if mean.weight))

    def as_dict(self) -> dict[str, float]:
        out = dict(self.values)
        out.update({name: mean.value for name, mean in self.means.items() if mean.weight})
        return dict(sorted(out.items()))
