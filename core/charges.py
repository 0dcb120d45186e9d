"""Charges on non-deterministic evidence, voided when a batch has too many of them.

A provider charges a candidate (``RewardProviderResult.charged``) for what its own text caused.
Deterministic evidence (a guard refused the text, a verdict it asked for, a crash) always stands;
when one provider charged more than ``max(breaker min, share x candidates)`` of a batch's candidates
on non-deterministic evidence (a timeout, an unreadable verdict), a shared cause is likelier than
that many offenders, so those become infrastructure errors for ``onError`` (``docs/composition.md``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rewardkit.contracts import RewardCandidateResult, RewardGroupResult, RewardProviderResult

BREAKER_MIN = 2
BREAKER_SHARE = 0.2


def breaker_limit(candidates: int, least: int = BREAKER_MIN, share: float = BREAKER_SHARE) -> float:
    """The most candidates one provider may charge on non-deterministic evidence in one batch."""
    return max(least, share * candidates)


def voided_charges(
    results: Sequence[Mapping[str, Any]],
    provider_names: Mapping[str, str],
    least: int = BREAKER_MIN,
    share: float = BREAKER_SHARE,
) -> list[dict[str, Any]]:
    """``results`` (per group, provider key -> group result) with the non-deterministic charges of
    each provider over its limit turned into errors; the same objects where none is."""
    charged: dict[str, int] = {}
    candidates: dict[str, int] = {}
    for group in results:
        for key, result in group.items():
            if isinstance(result, RewardGroupResult):
                candidates[key] = candidates.get(key, 0) + len(result.items)
                charged[key] = charged.get(key, 0) + sum(
                    item.result.charge == "nondeterministic" for item in result.items
                )
    tripped = {key for key, count in charged.items() if count > breaker_limit(candidates[key], least, share)}
    if not tripped:
        return list(results)  # type: ignore[arg-type]
    out = []
    for group in results:
        replaced = dict(group)
        for key in tripped & group.keys():
            result = group[key]
            if isinstance(result, RewardGroupResult):
                why = (
                    f"{charged[key]} of {candidates[key]} candidates of {provider_names[key]!r} in this "
                    f"batch were charged on non-deterministic evidence, more than max({least}, "
                    f"{share:.0%}): an infrastructure fault is likelier"
                )
                replaced[key] = RewardGroupResult(
                    result.group_id, tuple(_voided(item, why) for item in result.items)
                )
        out.append(replaced)
    return out


def _voided(item: RewardCandidateResult, why: str) -> RewardCandidateResult:
    said = item.result
    if said.charge != "nondeterministic":
        return item
    return RewardCandidateResult(
        item.trajectory_id, RewardProviderResult.fail(f"{said.reason} ({why})", said.diagnostics)
    )
