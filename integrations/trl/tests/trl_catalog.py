"""A run-bound catalog for the TRL trainer test (``rl.reward.catalog: trl_catalog:catalog``).

``word-overlap`` reads the prompt and the reference and reports a diagnostic, so the test covers
the group checks (common inputs) and ``log_metric``; ``long-answer`` skips empty completions, so it
covers a component that gives no number for some samples.
"""

from __future__ import annotations

from functools import partial

from rewardkit import MetricContribution, RewardProviderResult, RewardProviderSpec, map_candidates
from rewardkit.contracts import RewardCandidate, RewardContext


def word_overlap(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    words = candidate.completion.split()
    wanted = set(str(context.reference).split()) | set(str(context.prompt).split())
    share = sum(word in wanted for word in words) / len(words) if words else 0.0
    return RewardProviderResult({"overlap": share}, (MetricContribution("words", float(len(words))),))


def long_answer(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    words = candidate.completion.split()
    if not words:
        return RewardProviderResult.skip("empty completion")
    return RewardProviderResult({"long": min(len(words), 6) / 6})


def catalog() -> list[RewardProviderSpec]:
    return [
        RewardProviderSpec(
            "word-overlap",
            partial(map_candidates, word_overlap),
            ("prompt", "reference"),
            "1",
            ("overlap",),
            ("words",),
        ),
        RewardProviderSpec("long-answer", partial(map_candidates, long_answer), (), "1", ("long",)),
    ]
