"""Built-in rule rewards lifted through ``map_candidates``: constant, nonempty, exact-match."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial

from rewardkit.contracts import RewardCandidate, RewardContext, RewardProviderResult, RewardProviderSpec
from rewardkit.errors import RewardContractError
from rewardkit.hookspecs import hookimpl
from rewardkit.pointwise import Scorer, map_candidates

_WHITESPACE = re.compile(r"\s+")
# A result is immutable (read-only terms, frozen fields), so the two verdicts of a yes/no rule are
# built once and shared by every candidate instead of allocated per rollout.
_YES = RewardProviderResult(terms={"task": 1.0})
_NO = RewardProviderResult(terms={"task": 0.0})


def score_constant(
    candidate: RewardCandidate, context: RewardContext, *, value: float = 1.0
) -> RewardProviderResult:
    """Always ``value``: a baseline, and a way to test a pipeline end to end."""
    return RewardProviderResult(terms={"task": float(value)})


def score_nonempty(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    """1 when the completion has any non-whitespace character, else 0."""
    return _YES if candidate.completion.strip() else _NO


def score_exact_match(
    candidate: RewardCandidate,
    context: RewardContext,
    *,
    case_sensitive: bool = False,
    collapse_whitespace: bool = True,
) -> RewardProviderResult:
    """1 when the stripped completion equals the string reference, else 0."""
    reference = context.reference
    if not isinstance(reference, str):
        raise RewardContractError(
            f"exact-match needs a string reference, got {type(reference).__name__}",
            rule="reference-type",
        )
    answer = _normalise(candidate.completion, case_sensitive, collapse_whitespace)
    gold = _normalise(reference, case_sensitive, collapse_whitespace)
    return _YES if answer == gold else _NO


def _normalise(text: str, case_sensitive: bool, collapse_whitespace: bool) -> str:
    text = text.strip()
    if collapse_whitespace:
        text = _WHITESPACE.sub(" ", text)
    return text if case_sensitive else text.casefold()


@hookimpl
def register_reward_providers(register: Callable[[RewardProviderSpec], None]) -> None:
    rules: tuple[tuple[str, Scorer, tuple[str, ...], str], ...] = (
        ("constant", score_constant, (), "A constant reward (param: value, default 1.0)."),
        ("nonempty", score_nonempty, (), "1 for a completion with any non-whitespace text, else 0."),
        (
            "exact-match",
            score_exact_match,
            ("reference",),
            "1 when the completion equals the reference "
            "(params: case_sensitive=false, collapse_whitespace=true).",
        ),
    )
    for name, scorer, needs, description in rules:
        register(
            RewardProviderSpec(
                name=name,
                factory=partial(map_candidates, scorer),
                needs=needs,
                revision="1",
                terms=("task",),
                cheap=True,
                description=description,
            )
        )
