"""ACME's keyword-coverage reward: the share of required keywords a completion mentions."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from rewardkit import (
    RewardCandidate,
    RewardContext,
    RewardContractError,
    RewardProviderResult,
    RewardProviderSpec,
    hookimpl,
    map_candidates,
)


def score_keywords(
    candidate: RewardCandidate, context: RewardContext, *, case_sensitive: bool = False
) -> RewardProviderResult:
    keywords = context.reference
    if not isinstance(keywords, tuple) or not all(isinstance(word, str) for word in keywords):
        raise RewardContractError("acme-keywords needs a list of strings as reference")
    if not keywords:
        return RewardProviderResult.skip("no keywords required")
    text = candidate.completion if case_sensitive else candidate.completion.casefold()
    found = sum(1 for word in keywords if (word if case_sensitive else word.casefold()) in text)
    return RewardProviderResult({"coverage": found / len(keywords)})


@hookimpl
def register_reward_providers(register: Callable[[RewardProviderSpec], None]) -> None:
    register(
        RewardProviderSpec(
            name="acme-keywords",
            factory=partial(map_candidates, score_keywords),
            needs=("reference",),
            revision="2026-11-01",
            terms=("coverage",),
            description="Share of the reference keywords that the completion mentions.",
        )
    )
