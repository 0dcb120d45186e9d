"""A scored batch as columns, what both scoring strategies hand over, and how it becomes a ``ScoredBatch``.

Both strategies of ``rewardkit.scoring.worker`` (group by group, or one pass over columns for cheap pointwise
scorers) end with a ``ScoredColumns``; one ``BatchOutputs`` turns it into advantages (from ``final``
only), the report and the ``ScoredBatch``, so both return the same result for the same columns."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from rewardkit.contracts import MetricContribution, RewardProviderResult
from rewardkit.job.provenance import ProviderRecord
from rewardkit.scoring.advantages import Scaling, StdKind, batch_advantages
from rewardkit.scoring.composition import ComposedParts
from rewardkit.scoring.metrics import ComponentColumn, Report, batch_report
from rewardkit.scoring.scored import ScoredBatch, ScoredCandidate, ScoredGroup

_new_tuple = tuple.__new__


@dataclass(slots=True)
class ScoredColumns:
    """A batch scored and composed, candidates in batch order."""

    group_ids: list[str]
    sizes: list[int]  # each group's candidate count, in order
    trajectory_ids: list[str]
    composed: ComposedParts
    # Per component, in the spec's order: each candidate's status, and the scored values alone.
    statuses: Sequence[Sequence[str]]
    values: Sequence[Sequence[float]]
    # Per provider key: each candidate's checked result, None where the provider failed its group;
    # the general strategy fills it only when ``BatchOutputs.reads_results`` (all read from it).
    said: Mapping[str, Sequence[RewardProviderResult | None]]


@dataclass(frozen=True, slots=True)
class BatchOutputs:
    """How one worker turns its ``ScoredColumns`` into a ``ScoredBatch``."""

    namespace: str
    components: tuple[str, ...]  # component names in the spec's order
    provider_names: Mapping[str, str]  # provider key -> provider name
    scaling: Scaling
    advantage_std: StdKind
    advantage_eps: float
    records: tuple[ProviderRecord, ...]
    diagnosing: bool  # some provider declares diagnostics
    # The components whose breakdown entries show more than the optimised term: ``(component, provider
    # key, optimised term, every term)`` where the provider declares several terms (all are shown, with
    # the one that enters the reward named) or declares notes (shown as text beside the entry).
    detailed: tuple[tuple[str, str, str, bool], ...] = ()

    @property
    def reads_results(self) -> bool:
        """Whether finishing reads the providers' results (``ScoredColumns.said``) besides the columns."""
        return self.diagnosing or bool(self.detailed)

    def advantages(self, columns: ScoredColumns) -> list[float]:
        """Every candidate's group-relative advantage, from its ``final`` only."""
        return batch_advantages(
            columns.composed.totals,
            columns.sizes,
            self.scaling,
            std=self.advantage_std,
            eps=self.advantage_eps,
        )

    def report(self, columns: ScoredColumns, advantages: Sequence[float]) -> Report:
        return batch_report(
            self.namespace,
            self.provider_names,
            len(columns.trajectory_ids),
            self._diagnostics(columns) if self.diagnosing else (),
            [
                ComponentColumn(name, statuses, values)
                for name, statuses, values in zip(self.components, columns.statuses, columns.values)
            ],
            columns.composed.totals,
            columns.composed.gated,
            advantages,
        )

    def result(self, columns: ScoredColumns, advantages: Sequence[float], report: Report) -> ScoredBatch:
        per_candidate = self._candidate_diagnostics(columns)
        if self.detailed:
            self._detail(columns)
        scored = [
            _new_tuple(ScoredCandidate, (trajectory_id, total, gated, breakdown, advantage, diagnostics))
            for trajectory_id, total, gated, breakdown, advantage, diagnostics in zip(
                columns.trajectory_ids, *columns.composed, advantages, per_candidate
            )
        ]
        groups = []
        position = 0
        for group_id, size in zip(columns.group_ids, columns.sizes):
            groups.append(_new_tuple(ScoredGroup, (group_id, tuple(scored[position : position + size]))))
            position += size
        return ScoredBatch(tuple(groups), report.as_dict(), self.records, report.weights())

    def _detail(self, columns: ScoredColumns) -> None:
        """Add to each detailed component's breakdown entries (each candidate's own dicts) every term
        of a multi-term provider, under ``terms``, with ``term`` naming the one in ``value``, and the
        provider's notes. Reporting only: the totals and advantages were worked out before."""
        breakdowns = columns.composed.breakdowns
        for component, key, term, several in self.detailed:
            results = columns.said[key]
            for breakdown, result in zip(breakdowns, results):
                entry = breakdown[component]
                if several:
                    entry["term"] = term
                    if result is not None and result.status == "scored":
                        entry["terms"] = dict(result.terms)
                if result is not None and result.notes:
                    entry.update(result.notes)

    @staticmethod
    def _diagnostics(columns: ScoredColumns) -> Iterator[tuple[str, Sequence[MetricContribution]]]:
        """``(provider key, contributions)`` per scored candidate, per provider in batch order."""
        for key, results in columns.said.items():
            for result in results:
                if result is not None:
                    yield key, result.diagnostics

    def _candidate_diagnostics(self, columns: ScoredColumns) -> list[dict[str, dict[str, float]]]:
        """Each candidate's ``{provider name: {diagnostic: value}}``, providers with none left out."""
        count = len(columns.trajectory_ids)
        if not self.diagnosing:
            return [{} for _ in range(count)]
        names = self.provider_names
        providers = [(names[key], results) for key, results in columns.said.items()]
        return [
            {
                name: {item.name: item.value for item in result.diagnostics}
                for name, results in providers
                if (result := results[index]) is not None and result.diagnostics
            }
            for index in range(count)
        ]
