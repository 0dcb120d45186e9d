"""A catalog for the binding tests (``rl.reward.catalog: bindings_fixtures:catalog``).

``verdict`` reads the completion as an instruction: ``ERR`` -> an errored result, ``SKIP`` ->
skipped, otherwise the number of words (and a ``chars`` diagnostic). ``echo-ref`` needs the
reference and scores 1 when the completion equals it. ``position`` is group-native: it scores each
candidate by its place in the whole group (``position + 10 * group size``), so scoring a piece of a
group gives different numbers. ``sparse`` skips a completion that starts with ``-`` and reports a
``length`` diagnostic weighted by the completion's words, so a batch whose skips and diagnostic
weights are spread unevenly over its parts checks that merged means are weighted by what they averaged.
"""

from __future__ import annotations

from functools import partial

from rewardkit import MetricContribution, RewardProviderResult, RewardProviderSpec, map_candidates
from rewardkit.contracts import (
    RewardCandidate,
    RewardCandidateResult,
    RewardContext,
    RewardGroupRequest,
    RewardGroupResult,
)


def verdict(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    text = candidate.completion
    if "ERR" in text:
        return RewardProviderResult.fail("asked to fail")
    if "SKIP" in text:
        return RewardProviderResult.skip("asked to skip")
    return RewardProviderResult(
        {"words": float(len(text.split()))}, (MetricContribution("chars", len(text)),)
    )


def echo_ref(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    return RewardProviderResult({"match": float(candidate.completion.strip() == str(context.reference))})


def echo_prompt(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    return RewardProviderResult({"seen": float(str(context.prompt) in candidate.completion)})


def sparse(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    text = candidate.completion
    if text.startswith("-"):
        return RewardProviderResult.skip("starts with a dash")
    words = len(text.split())
    diagnostic = MetricContribution("length", float(len(text)), weight=float(1 + words))
    return RewardProviderResult({"size": float(words)}, (diagnostic,))


class Position:
    """Group-native: candidate ``i`` of a group of ``n`` scores ``i + 10 * n``; ``ERR`` fails the group."""

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        if any("ERR" in candidate.completion for candidate in request.candidates):
            raise RuntimeError(f"group {request.group_id} asked to fail")
        size = len(request.candidates)
        return RewardGroupResult(
            request.group_id,
            tuple(
                RewardCandidateResult(c.trajectory_id, RewardProviderResult({"place": float(i + 10 * size)}))
                for i, c in enumerate(request.candidates)
            ),
        )


def catalog() -> list[RewardProviderSpec]:
    return [
        RewardProviderSpec("verdict", partial(map_candidates, verdict), (), "1", ("words",), ("chars",)),
        RewardProviderSpec("echo-ref", partial(map_candidates, echo_ref), ("reference",), "1", ("match",)),
        RewardProviderSpec("echo-prompt", partial(map_candidates, echo_prompt), ("prompt",), "1", ("seen",)),
        RewardProviderSpec("position", Position, (), "1", ("place",)),
        RewardProviderSpec("sparse", partial(map_candidates, sparse), (), "1", ("size",), ("length",)),
    ]
