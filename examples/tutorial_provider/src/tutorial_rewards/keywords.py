"""``keyword-coverage``: the share of required keywords a completion mentions, written in full.

A pointwise scorer lifted by ``map_candidates`` and a ``RewardProviderSpec`` with its fields
spelt out: what the decorator fills in for you, and what it leaves you to choose.
"""

from __future__ import annotations

from functools import partial

from rewardkit import (
    MetricContribution,
    RewardCandidate,
    RewardContext,
    RewardProviderResult,
    RewardProviderSpec,
    map_candidates,
)


def score_keywords(
    candidate: RewardCandidate, context: RewardContext, *, case_sensitive: bool = False
) -> RewardProviderResult:
    keywords = context.reference  # a JSON list in the data arrives as a tuple (read-only)
    if not isinstance(keywords, tuple) or not all(isinstance(word, str) for word in keywords):
        # the reward applies but cannot be computed: an error, which the composition's onError handles
        return RewardProviderResult.fail(f"the reference must be a list of keywords, got {keywords!r}")
    if not keywords:
        return RewardProviderResult.skip("the reference lists no keywords")  # does not apply
    if candidate.is_length_truncated:
        return RewardProviderResult.skip("the completion was cut at the token budget")

    def fold(text: str) -> str:
        return text if case_sensitive else text.casefold()

    text = fold(candidate.completion)
    found = sum(1 for word in keywords if fold(word) in text)
    return RewardProviderResult(
        terms={"coverage": found / len(keywords), "all_found": float(found == len(keywords))},
        diagnostics=(MetricContribution("keywords", float(len(keywords))),),
    )


KEYWORD_COVERAGE = RewardProviderSpec(
    name="keyword-coverage",
    factory=partial(map_candidates, score_keywords),
    needs=("reference",),
    revision="1",
    terms=("coverage", "all_found"),
    diagnostics=("keywords",),
    semantic_identity={"matching": "substring"},
    description="Share of the reference's keywords that the completion mentions.",
)
