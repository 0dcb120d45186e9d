"""A catalog for the binding tests (``rl.reward.catalog: bindings_fixtures:catalog``).

``verdict`` reads the completion as an instruction: ``ERR`` -> an errored result, ``SKIP`` ->
skipped, otherwise the number of words (and a ``chars`` diagnostic). ``echo-ref`` needs the
reference and scores 1 when the completion equals it.
"""

from __future__ import annotations

from functools import partial

from rewardkit import MetricContribution, RewardProviderResult, RewardProviderSpec, map_candidates
from rewardkit.contracts import RewardCandidate, RewardContext


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


def catalog() -> list[RewardProviderSpec]:
    return [
        RewardProviderSpec("verdict", partial(map_candidates, verdict), (), "1", ("words",), ("chars",)),
        RewardProviderSpec("echo-ref", partial(map_candidates, echo_ref), ("reference",), "1", ("match",)),
        RewardProviderSpec("echo-prompt", partial(map_candidates, echo_prompt), ("prompt",), "1", ("seen",)),
    ]
