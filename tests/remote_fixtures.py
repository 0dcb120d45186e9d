"""A provider that skips, fails and reports unevenly weighted diagnostics (``remote_fixtures:catalog``),
so that merged metrics of split remote calls can be checked against in-process ones."""

from __future__ import annotations

from functools import partial

from rewardkit import MetricContribution, RewardProviderResult, RewardProviderSpec, map_candidates


def score_mixed(candidate, context) -> RewardProviderResult:
    text = candidate.completion
    if text.startswith("skip"):
        return RewardProviderResult.skip("not applicable")
    if text.startswith("error"):
        return RewardProviderResult.fail("could not score")
    diagnostic = MetricContribution("length", float(len(text)), weight=float(1 + len(text) % 5))
    return RewardProviderResult({"task": float(len(text) % 3) / 2}, diagnostics=(diagnostic,))


def catalog() -> list[RewardProviderSpec]:
    return [
        RewardProviderSpec("mixed", partial(map_candidates, score_mixed), (), "1", ("task",), ("length",))
    ]


def mixed_groups(count: int, size: int = 4) -> list[dict]:
    """Skips and errors crowd the first groups, so requests of 16 rollouts score unequal shares."""
    groups = []
    for g in range(count):
        rollouts = []
        for k in range(size):
            if g < 4 and k > 0:
                text = "skip" if (g + k) % 2 else "error"
            else:
                text = "answer " + "x" * (g * size + k)
            rollouts.append({"trajectory_id": f"g{g}/{k}", "completion": text, "prompt": f"q{g}"})
        groups.append({"group_id": f"g{g}", "rollouts": rollouts})
    return groups
