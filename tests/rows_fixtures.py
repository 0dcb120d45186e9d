"""Providers for the tests of what each result row shows (``rows_fixtures:catalog``).

``two-terms-cheap`` declares two terms and is scored in one pass over columns (``cheap``);
``noted`` shows the completion's first word as a note, and ``unnoted`` returns a note it never
declared (a provider bug the bound adapter refuses by name).
"""

from __future__ import annotations

from functools import partial

from rewardkit import RewardProviderResult, RewardProviderSpec, map_candidates
from rewardkit.contracts import RewardCandidate, RewardContext


def score_two_terms(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    return RewardProviderResult({"correct": float("yes" in candidate.completion), "format": 0.5})


def score_noted(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    first = candidate.completion.split(" ", 1)[0]
    return RewardProviderResult({"task": 1.0}, notes={"first_word": first})


def catalog() -> list[RewardProviderSpec]:
    return [
        RewardProviderSpec(
            "two-terms-cheap",
            partial(map_candidates, score_two_terms),
            (),
            "1",
            ("correct", "format"),
            cheap=True,
        ),
        RewardProviderSpec(
            "noted", partial(map_candidates, score_noted), (), "1", ("task",), notes=("first_word",)
        ),
        RewardProviderSpec("unnoted", partial(map_candidates, score_noted), (), "1", ("task",)),
    ]
