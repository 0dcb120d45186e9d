"""The picklable form of one staged group, as a reward actor sends it back to the driver.

Provider results hold read-only mappings (``MappingProxyType``), which do not pickle, so an actor
sends plain tuples and the driver rebuilds the same values the in-process worker would have:
compositions, and per provider either its group result or the error it raised under a tolerant
``onError``. Only what composition, annotation, the report and the result lines read crosses the wire.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rewardkit.plugin import (
    Composition,
    MetricContribution,
    ProviderError,
    RewardCandidateResult,
    RewardGroupResult,
    RewardProviderResult,
)

Composed = list[tuple[str, Composition]]
Results = dict[str, RewardGroupResult | ProviderError]
WireGroup = tuple[list[tuple[str, Any, bool, dict]], dict[str, tuple]]


def _result_to_wire(result: RewardProviderResult) -> tuple:
    return (
        result.status,
        result.reason,
        dict(result.terms),
        tuple((item.name, item.value, item.weight) for item in result.diagnostics),
        result.charge,
        dict(result.notes),
    )


def _result_from_wire(data: Sequence[Any]) -> RewardProviderResult:
    status, reason, terms, diagnostics, charge, notes = data
    return RewardProviderResult(
        terms=terms,
        diagnostics=tuple(MetricContribution(name, value, weight) for name, value, weight in diagnostics),
        status=status,
        reason=reason,
        charge=charge,
        notes=notes,
    )


def staged_to_wire(composed: Composed, results: Results) -> WireGroup:
    """Flatten ``RewardWorker.stage_group``'s output into plain, picklable values."""
    compositions = [
        (trajectory_id, c.total, c.gated, {name: dict(entry) for name, entry in c.breakdown.items()})
        for trajectory_id, c in composed
    ]
    providers: dict[str, tuple] = {}
    for key, result in results.items():
        if isinstance(result, ProviderError):
            providers[key] = ("error", str(result), result.group_id)
        else:
            providers[key] = (
                "group",
                result.group_id,
                tuple((item.trajectory_id, _result_to_wire(item.result)) for item in result.items),
            )
    return compositions, providers


def staged_from_wire(wire: WireGroup) -> tuple[Composed, Results]:
    """Rebuild the compositions and provider results ``staged_to_wire`` flattened."""
    compositions, providers = wire
    composed = [
        (trajectory_id, Composition(total, gated, breakdown))
        for trajectory_id, total, gated, breakdown in compositions
    ]
    results: Results = {}
    for key, entry in providers.items():
        if entry[0] == "error":
            _, message, group_id = entry
            error = ProviderError(message)  # the message already names the group
            error.group_id = group_id
            results[key] = error
        else:
            _, group_id, items = entry
            results[key] = RewardGroupResult(
                group_id,
                tuple(RewardCandidateResult(tid, _result_from_wire(data)) for tid, data in items),
            )
    return composed, results
