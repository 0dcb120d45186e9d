"""Metric names and the mergeable report of a scored batch.

Provider diagnostics live under ``<ns>/reward_provider/<provider>/<diagnostic>`` and the
framework-owned count under ``<ns>/reward_provider/<provider>/sample_count``; composed rewards
under ``<ns>/reward/...`` and each component under ``<ns>/reward_component/<component>/...``.
Every segment is checked, so a name can never escape its place in the hierarchy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
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


def merge_metrics(
    parts: Iterable[tuple[Mapping[str, float], Mapping[str, float]]],
    default_weight: Iterable[float | None] = (),
) -> tuple[dict[str, float], dict[str, float]]:
    """The report of a whole batch from the reports of its parts: ``(metrics, weights)`` of each.

    The parts are the pieces of one batch scored apart: split service calls, journaled chunks, or
    the ranks of a distributed trainer that each scored their own trajectories. Counts (names
    ending ``_count``) add up. A mean is weighted by what it averaged in each part (its entry in
    that part's weights: scored values, candidates for an ``infra_error_rate``, or summed diagnostic
    weights), so the merge equals the report of the whole batch scored in one process; a mean only
    one part reports keeps that part's value exactly. ``default_weight`` gives, per part, the weight
    of a mean the part has no weight for (e.g. its rollouts, for an older service). Returns the
    merged metrics and weights; a mean over group-relative values (the advantage) is not mergeable:
    ``rewardkit.split_batch`` recomputes it over the whole batch.
    """
    defaults = list(default_weight)
    counts: dict[str, float] = {}
    sums: dict[str, float] = {}
    weights: dict[str, float] = {}
    only: dict[str, float | None] = {}  # a mean's value while one part reports it, else None
    for index, (metrics, part_weights) in enumerate(parts):
        fallback = defaults[index] if index < len(defaults) else None
        for name, value in metrics.items():
            if name.endswith("_count"):
                counts[name] = counts.get(name, 0.0) + value
                continue
            weight = part_weights.get(name, fallback)
            if weight is None:
                raise RewardkitError(f"metric {name!r} of part {index} has no weight to merge it by")
            only[name] = value if name not in sums else None
            sums[name] = sums.get(name, 0.0) + value * float(weight)
            weights[name] = weights.get(name, 0.0) + float(weight)
    means = {}
    for name, total in sums.items():
        if weights[name]:
            kept = only[name]
            means[name] = kept if kept is not None else total / weights[name]
    merged = {**counts, **means}
    return dict(sorted(merged.items())), dict(sorted((name, w) for name, w in weights.items() if w))


ADVANTAGE_MEAN_SUFFIX = "/advantage/abs_mean"


def advantage_abs_mean(advantages: Sequence[float]) -> float:
    """The batch's mean absolute advantage (``<ns>/advantage/abs_mean``), from all its advantages.

    An advantage is relative to its group (and, under ``batch`` scaling, to the whole batch), so
    the means of a batch's parts cannot be merged into it: it is computed here from the advantages
    of the whole batch, by every path that reports one.
    """
    return sum(map(abs, advantages)) / len(advantages)


def zero_variance_groups(groups: Iterable[Sequence[float | None]]) -> int:
    """How many groups have final rewards that are all equal: no learning signal for GRPO.

    Each group is its candidates' final rewards; ``None`` (a candidate with no reward, under
    ``onError: none``) is left out, and a group with fewer than two rewards left counts too (its
    advantages are all zero). The ``rewardkit score`` summary shows this count and its share of the
    groups; a reward monitor reports the same number by calling this function.
    """
    count = 0
    for group in groups:
        values = [value for value in group if value is not None]
        if len(values) < 2 or min(values) == max(values):
            count += 1
    return count
