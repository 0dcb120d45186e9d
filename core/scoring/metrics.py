"""Metric names, the report of a scored batch and the merge of reports scored in parts.
Provider diagnostics live under ``<ns>/reward_provider/<provider>/<diagnostic>`` and the
framework-owned count under ``<ns>/reward_provider/<provider>/sample_count``; composed rewards
under ``<ns>/reward/...`` and each component under ``<ns>/reward_component/<component>/...``.
Every segment is checked, so a name can never escape its place in the hierarchy."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce
from operator import add
from typing import NamedTuple

from rewardkit.contracts import NAME_PATTERN, MetricContribution
from rewardkit.contracts.errors import RewardkitError

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

    def weights(self) -> dict[str, float]:
        """The weight behind each mean (values counted, or weights summed), what merging reports needs."""
        return dict(sorted((name, mean.weight) for name, mean in self.means.items() if mean.weight))

    def as_dict(self) -> dict[str, float]:
        means = {name: mean.value for name, mean in self.means.items() if mean.weight}
        return dict(sorted({**self.values, **means}.items()))


class MetricsMerge:
    """``merge_metrics`` a part at a time, for a caller that gets the parts as they are scored (a
    stream, the score job): ``add`` each part, ``result()`` whenever the merge is wanted, at the cost
    of the metrics' names, not of the parts added (the same sums in the same order as ``merge_metrics``)."""

    def __init__(self) -> None:
        self.parts = 0
        self._counts: dict[str, float] = {}
        # A mean's weighted sum, its weight, and its value while one part reports it (else None).
        self._means: dict[str, tuple[float, float, float | None]] = {}

    def add(
        self, metrics: Mapping[str, float], weights: Mapping[str, float], default_weight: float | None = None
    ) -> None:
        """One part's report; ``default_weight`` weighs a mean it gives no weight for. A part that cannot
        be merged changes nothing (checked before anything is added)."""
        counts: list[tuple[str, float]] = []
        means: list[tuple[str, float, float]] = []
        for name, value in metrics.items():
            if name.endswith("_count"):
                counts.append((name, value))
            elif (weight := weights.get(name, default_weight)) is None:
                raise RewardkitError(f"metric {name!r} of part {self.parts} has no weight to merge it by")
            else:
                means.append((name, value, float(weight)))
        for name, value in counts:
            self._counts[name] = self._counts.get(name, 0.0) + value
        for name, value, weight in means:
            known = self._means.get(name)
            self._means[name] = (
                (value * weight, weight, value)
                if known is None
                else (known[0] + value * weight, known[1] + weight, None)
            )
        self.parts += 1

    def result(self) -> tuple[dict[str, float], dict[str, float]]:
        """The merged ``(metrics, weights)`` of the parts added so far."""
        merged = dict(self._counts)  # counts and means never share a name: "_count" decides which one it is
        weights = {}
        for name, (total, weight, only) in self._means.items():
            if weight:
                merged[name] = only if only is not None else total / weight
                weights[name] = weight
        return dict(sorted(merged.items())), dict(sorted(weights.items()))


def merge_metrics(
    parts: Iterable[tuple[Mapping[str, float], Mapping[str, float]]],
    default_weight: Iterable[float | None] = (),
) -> tuple[dict[str, float], dict[str, float]]:
    """The report of a whole batch from the ``(metrics, weights)`` of its parts (split service
    calls, journaled chunks, a trainer's ranks): the merged ``(metrics, weights)``.
    Counts (names ending ``_count``) add up. A mean is weighted by what it averaged in each part
    (that part's weights), so the merge equals the report of the whole batch scored at once; a mean
    only one part reports keeps its value exactly. ``default_weight`` gives, per part, the weight of
    a mean it has no weight for (e.g. its rollouts, for an older service). The advantage's mean is
    not mergeable: ``rewardkit.scoring.split_batch`` recomputes it. ``MetricsMerge`` does it a part at a
    time."""
    defaults = list(default_weight)
    merging = MetricsMerge()
    for index, (metrics, part_weights) in enumerate(parts):
        merging.add(metrics, part_weights, defaults[index] if index < len(defaults) else None)
    return merging.result()


ADVANTAGE_MEAN_SUFFIX = "/advantage/abs_mean"


def advantage_abs_mean(advantages: Sequence[float]) -> float:
    """The batch's mean absolute advantage (``<ns>/advantage/abs_mean``), from all its advantages:
    an advantage is relative to its group (or batch), so the means of parts cannot be merged."""
    return sum(map(abs, advantages)) / len(advantages)


def zero_variance_groups(groups: Iterable[Sequence[float | None]]) -> int:
    """How many groups have final rewards that are all equal (no learning signal for GRPO); ``None``
    rewards are left out, and a group with fewer than two left counts too."""
    present = ([value for value in group if value is not None] for group in groups)
    return sum(len(values) < 2 or min(values) == max(values) for values in present)


# The report of a scored batch, from its columns: the general path (any provider, threads, Ray actors)
# and the one-pass path for cheap pointwise providers hand over the same columns, so both report the
# same metrics for the same batch.

STATUSES = ("scored", "skipped", "error")


class ComponentColumn(NamedTuple):
    """What one component said about every candidate of a batch, in batch order."""

    name: str
    statuses: Sequence[str]
    values: Sequence[float]  # the scored values only, in order


def batch_report(
    namespace: str,
    provider_names: Mapping[str, str],
    rollouts: int,
    diagnostics: Iterable[tuple[str, Iterable[MetricContribution]]],
    components: Sequence[ComponentColumn],
    totals: Sequence[float | None],
    gated: Sequence[bool],
    advantages: Sequence[float],
) -> Report:
    """The batch report. ``provider_names`` maps each provider key to its name (each was asked about
    all ``rollouts``); ``diagnostics`` yields ``(provider key, contributions)`` per candidate;
    ``totals`` and ``gated`` give each candidate's total and gate flag, in batch order. Names are
    built (and validated) once per batch, never per candidate. The ``infra_error_rate``s are reported
    on every batch, 0.0 when nothing failed: a charged candidate is ``scored``, so an ``error`` is a fault."""
    ns = namespace
    report = Report(ns)
    if rollouts:
        for name in provider_names.values():
            report.count(metric_name(ns, "reward_provider", name, "sample_count"), rollouts)
    means: dict[tuple[str, str], WeightedMean] = {}
    for key, contributions in diagnostics:
        for contribution in contributions:
            mean = means.get((key, contribution.name))
            if mean is None:
                name = metric_name(ns, "reward_provider", provider_names[key], contribution.name)
                mean = means[key, contribution.name] = report.means.setdefault(name, WeightedMean())
            mean.add(contribution.value, contribution.weight)
    candidates = len(totals)
    for column in components:
        for status in STATUSES:
            count = column.statuses.count(status)
            if count:
                report.count(metric_name(ns, "reward_component", column.name, f"{status}_count"), count)
        if candidates:  # on every batch, 0.0 when none: an error is infrastructure by definition
            rate = metric_name(ns, "reward_component", column.name, "infra_error_rate")
            report.mean(rate, column.statuses.count("error") / candidates, candidates)
        if column.values:
            mean_name = metric_name(ns, "reward_component", column.name, "mean")
            report.mean(mean_name, _sum(column.values) / len(column.values), len(column.values))
    if candidates:
        failed = sum("error" in statuses for statuses in zip(*(column.statuses for column in components)))
        report.mean(metric_name(ns, "reward", "infra_error_rate"), failed / candidates, candidates)
    present = [total for total in totals if total is not None]
    if present:
        report.mean(metric_name(ns, "reward", "mean"), _sum(present) / len(present), len(present))
    nulls = len(totals) - len(present)
    if nulls:
        report.count(metric_name(ns, "reward", "null_count"), nulls)
    report.count(metric_name(ns, "reward", "gated_count"), sum(gated))  # bools: True counts 1
    if advantages:
        report.mean(metric_name(ns, "advantage", "abs_mean"), advantage_abs_mean(advantages), len(advantages))
    return report


def _sum(values: Sequence[float]) -> float:
    """Left to right, as every other path that reports a batch adds (``sum`` compensates from 3.12)."""
    return reduce(add, values, 0.0)
