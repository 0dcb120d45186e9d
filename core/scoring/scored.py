"""What scoring a batch returns: every candidate's reward and advantage, and the batch report."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from rewardkit.job.provenance import ProviderRecord


class ScoredCandidate(NamedTuple):
    """One candidate's reward (``gated``: a gate floored it). A named tuple: one is built per rollout."""

    trajectory_id: str
    final: float | None
    gated: bool
    breakdown: dict[str, dict[str, Any]]
    advantage: float
    # provider name -> {diagnostic: value}: why a candidate scored what it did (timeout, extracted, ...).
    # Reporting only, like the batch means in the metrics; never part of final or the advantage.
    diagnostics: dict[str, dict[str, float]]

    def to_json(self, group_id: str) -> dict[str, Any]:
        return {
            "group_id": group_id,
            "trajectory_id": self.trajectory_id,
            "final": self.final,
            "gated": self.gated,
            "advantage": self.advantage,
            "breakdown": self.breakdown,
            "diagnostics": self.diagnostics,
        }


class ScoredGroup(NamedTuple):
    """A scored group: its id and its candidates in order."""

    group_id: str
    candidates: tuple[ScoredCandidate, ...]


@dataclass(frozen=True)
class ScoredBatch:
    """A scored batch: per-candidate results, the batch report and the providers' provenance."""

    groups: tuple[ScoredGroup, ...]
    metrics: dict[str, float]
    providers: tuple[ProviderRecord, ...]
    # The weight of each mean in ``metrics`` (scored values, summed diagnostic weights).
    metric_weights: dict[str, float] = field(default_factory=dict, compare=False)

    def candidates(self) -> Iterable[tuple[str, ScoredCandidate]]:
        for group in self.groups:
            for candidate in group.candidates:
                yield group.group_id, candidate

    def to_jsonl_rows(self) -> list[dict[str, Any]]:
        return [candidate.to_json(group_id) for group_id, candidate in self.candidates()]
