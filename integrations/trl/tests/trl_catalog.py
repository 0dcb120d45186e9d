"""A run-bound catalog for the TRL trainer test (``rl.reward.catalog: trl_catalog:catalog``).

``word-overlap`` reads the prompt and the reference and reports a diagnostic, so the test covers
the group checks (common inputs) and ``log_metric``; ``long-answer`` skips empty completions, so it
covers a component that gives no number for some samples. ``position`` is group-native: each
candidate scores its place in the whole group plus 10 x the group's size, so a rank that scored only
its slice of a group would give other numbers. ``fails-on-rank-1`` is pointwise and raises in the
process whose ``RANK`` is 1 (the multi-process failure test).
"""

from __future__ import annotations

import os
from functools import partial

from rewardkit import MetricContribution, RewardProviderResult, RewardProviderSpec, map_candidates
from rewardkit.contracts import (
    RewardCandidate,
    RewardCandidateResult,
    RewardContext,
    RewardGroupRequest,
    RewardGroupResult,
)


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


class Position:
    """Group-native: candidate ``i`` of a group of ``n`` scores ``i + 10 * n``."""

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        size = len(request.candidates)
        return RewardGroupResult(
            request.group_id,
            tuple(
                RewardCandidateResult(c.trajectory_id, RewardProviderResult({"place": float(i + 10 * size)}))
                for i, c in enumerate(request.candidates)
            ),
        )


def fails_on_rank_1(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    if os.environ.get("RANK") == "1":
        raise ValueError("this provider cannot score on rank 1")
    return RewardProviderResult({"ok": 1.0})


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
        RewardProviderSpec("position", Position, (), "1", ("place",)),
        RewardProviderSpec("fails-on-rank-1", partial(map_candidates, fails_on_rank_1), (), "1", ("ok",)),
    ]
