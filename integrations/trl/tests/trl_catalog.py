"""A run-bound catalog for the TRL trainer test (``rl.reward.catalog: trl_catalog:catalog``).

``word-overlap`` reads the prompt and the reference and reports a diagnostic, so the test covers
the group checks (common inputs) and ``log_metric``; ``long-answer`` skips empty completions, so it
covers a component that gives no number for some samples. ``position`` is group-native: each
candidate scores its place in the whole group plus 10 x the group's size, so a rank that scored only
its slice of a group would give other numbers. ``uneven`` reads a candidate's place in its group from
the binding's trajectory id (``<group>/<place>``): it skips place 1 and reports a diagnostic weighted
by the place, so with each group split 2 + 2 over two ranks, rank 0 scores it on 1 of its 2 samples and
rank 1 on both, with different diagnostic weights (the uneven-skips metrics test).
``fails-on-rank-1`` is pointwise and raises in the process whose ``RANK`` is 1 (the multi-process
failure test).
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


def uneven(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    place = int(candidate.trajectory_id.rsplit("/", 1)[1])
    if place == 1:
        return RewardProviderResult.skip("place 1 is not scored")
    words = len(candidate.completion.split())
    diagnostic = MetricContribution("place", float(place) + words / 7, weight=float(place + 1))
    return RewardProviderResult({"place": place / 3 + words / 11}, (diagnostic,))


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
        RewardProviderSpec("uneven", partial(map_candidates, uneven), (), "1", ("place",), ("place",)),
        RewardProviderSpec("fails-on-rank-1", partial(map_candidates, fails_on_rank_1), (), "1", ("ok",)),
    ]
