"""Providers for the tests of per-candidate reasons and term choice (``reasons_fixtures:catalog``).

``flaky`` fails on completions containing "boom" (a reason and a ``runtime_error`` diagnostic,
as a sandboxed checker would report a crash); ``two-terms`` declares two terms, so selecting it
by name raises the question of which one is optimised.
"""

from __future__ import annotations

from functools import partial

from rewardkit import MetricContribution, RewardProviderResult, RewardProviderSpec, map_candidates
from rewardkit.contracts import RewardCandidate, RewardContext


def score_flaky(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    crashed = "boom" in candidate.completion
    diagnostics = (MetricContribution("runtime_error", float(crashed)),)
    if crashed:
        return RewardProviderResult.fail("the checker raised ZeroDivisionError", diagnostics)
    return RewardProviderResult({"task": 1.0}, diagnostics)


def score_two_terms(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    return RewardProviderResult({"correct": float("yes" in candidate.completion), "format": 0.5})


def catalog() -> list[RewardProviderSpec]:
    return [
        RewardProviderSpec(
            "flaky", partial(map_candidates, score_flaky), (), "1", ("task",), ("runtime_error",)
        ),
        RewardProviderSpec(
            "two-terms", partial(map_candidates, score_two_terms), (), "1", ("correct", "format")
        ),
    ]
