"""The report of a scored batch, from its columns: what every path that scores a batch reports.

The general path (any provider, threads, Ray actors) and the one-pass path for cheap pointwise
providers hand over the same columns, so both report the same metrics for the same batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import reduce
from operator import add
from typing import NamedTuple

from rewardkit.contracts import MetricContribution
from rewardkit.metrics import Report, WeightedMean, advantage_abs_mean, metric_name

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
    """The batch report.

    ``provider_names`` maps each provider key to its name; every provider was asked about all
    ``rollouts``. ``diagnostics`` yields ``(provider key, contributions)`` per candidate, in batch
    order. ``totals`` and ``gated`` give each candidate's composed total and gate flag, in batch
    order. Names are built (and validated) once per batch, never per candidate.

    ``reward/infra_error_rate`` (candidates with any component in error) and each component's
    ``infra_error_rate`` are reported on every batch, 0.0 when nothing failed: a charged candidate
    is ``scored``, so an ``error`` is an infrastructure fault.
    """
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
            mean.total += contribution.value * contribution.weight
            mean.weight += contribution.weight
    candidates = len(totals)
    for column in components:
        for status in STATUSES:
            count = column.statuses.count(status)
            if count:
                report.count(metric_name(ns, "reward_component", column.name, f"{status}_count"), count)
        if candidates:  # on every batch, 0.0 when none: an error is infrastructure by definition
            errors = column.statuses.count("error")
            report.mean(
                metric_name(ns, "reward_component", column.name, "infra_error_rate"),
                errors / candidates,
                candidates,
            )
        if column.values:
            report.mean(
                metric_name(ns, "reward_component", column.name, "mean"),
                _sum(column.values) / len(column.values),
                len(column.values),
            )
    if candidates:
        failed = sum(map(_any_error, *(column.statuses for column in components))) if components else 0
        report.mean(metric_name(ns, "reward", "infra_error_rate"), failed / candidates, candidates)
    present = [total for total in totals if total is not None]
    if present:
        report.mean(metric_name(ns, "reward", "mean"), _sum(present) / len(present), len(present))
    nulls = len(totals) - len(present)
    if nulls:
        report.count(metric_name(ns, "reward", "null_count"), nulls)
    report.count(metric_name(ns, "reward", "gated_count"), sum(gated))  # bools: True counts 1
    if advantages:
        report.mean(
            metric_name(ns, "advantage", "abs_mean"),
            advantage_abs_mean(advantages),
            len(advantages),
        )
    return report


def _any_error(*statuses: str) -> bool:
    return "error" in statuses


def _sum(values: Sequence[float]) -> float:
    """Left to right, as every other path that reports a batch adds (``sum`` compensates from 3.12)."""
    return reduce(add, values, 0.0)
