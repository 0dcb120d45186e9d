"""Built-in rule rewards lifted through ``map_candidates``: constant, nonempty, exact-match.

``nonempty`` and ``exact-match`` read text through ``rewardkit.contracts.text.visible`` (since revision 2):
invisible characters (zero-width, format, variation selectors, ...) are removed and blank-rendering
ones are spaces, so they neither make a blank completion non-empty nor a right answer wrong or a
wrong one right. Nothing else is folded: exact-match compares what was written, so ``x²`` is not
``x2`` and a Cyrillic ``а`` is not a Latin ``a`` (a look-alike can only make the candidate's own
answer differ from the reference, never match one it does not match)."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache, partial

from rewardkit.contracts import RewardCandidate, RewardContext, RewardProviderResult, RewardProviderSpec
from rewardkit.contracts.errors import RewardContractError
from rewardkit.contracts.text import visible
from rewardkit.scoring.pointwise import Scorer, map_candidates
from rewardkit.seam.hookspecs import hookimpl

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
    """1 when the completion has any visible non-whitespace character, else 0."""
    return _YES if visible(candidate.completion).strip() else _NO


def score_exact_match(
    candidate: RewardCandidate,
    context: RewardContext,
    *,
    case_sensitive: bool = False,
    collapse_whitespace: bool = True,
) -> RewardProviderResult:
    """1 when the stripped completion equals the string reference, else 0; both compared without
    invisible characters."""
    reference = context.reference
    if not isinstance(reference, str):
        raise RewardContractError(
            f"exact-match needs a string reference, got {type(reference).__name__}",
            rule="reference-type",
        )
    answer = _normalise(candidate.completion, case_sensitive, collapse_whitespace)
    gold = _normalised_reference(reference, case_sensitive, collapse_whitespace)
    return _YES if answer == gold else _NO


def _normalise(text: str, case_sensitive: bool, collapse_whitespace: bool) -> str:
    # Printable ASCII holds no invisible character: two C checks of a few ns, inline, where
    # ``visible`` costs ~150 ns a call, a tenth of exact-match's whole verdict.
    if not (text.isascii() and text.isprintable()):
        text = visible(text)
    text = text.strip()
    if collapse_whitespace:
        text = _WHITESPACE.sub(" ", text)
    return text if case_sensitive else text.casefold()


# A group's candidates share one reference: normalised once, not once per candidate, which pays
# for reading both texts through ``visible``.
_normalised_reference = lru_cache(maxsize=1024)(_normalise)


@hookimpl
def register_reward_providers(register: Callable[[RewardProviderSpec], None]) -> None:
    # Revision 2 of nonempty and exact-match: invisible characters removed before deciding (issue 41).
    rules: tuple[tuple[str, Scorer, tuple[str, ...], str, str], ...] = (
        ("constant", score_constant, (), "1", "A constant reward (param: value, default 1.0)."),
        (
            "nonempty",
            score_nonempty,
            (),
            "2",
            "1 for a completion with any visible text, else 0.",
        ),
        (
            "exact-match",
            score_exact_match,
            ("reference",),
            "2",
            "1 when the completion equals the reference, invisible characters removed "
            "(params: case_sensitive=false, collapse_whitespace=true).",
        ),
    )
    for name, scorer, needs, revision, description in rules:
        register(
            RewardProviderSpec(
                name=name,
                factory=partial(map_candidates, scorer),
                needs=needs,
                revision=revision,
                terms=("task",),
                cheap=True,
                description=description,
            )
        )
