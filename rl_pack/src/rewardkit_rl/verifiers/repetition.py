"""The ``repetition`` verifier: a penalty for repeating the same word n-grams.

The penalty is ``-max_penalty * repeated / total`` over the completion's word n-grams, where
``repeated`` counts every n-gram occurrence after its first. A completion shorter than one n-gram
has nothing to repeat and gets 0.
"""

from __future__ import annotations

import math

from rewardkit.contracts import RewardCandidate, RewardContext, RewardProviderResult
from rewardkit.pointwise import MappedProvider, map_candidates


def repeated_fraction(text: str, ngram_size: int) -> float:
    """Share of word n-grams in ``text`` that repeat an earlier one (0 when there are none)."""
    words = text.lower().split()
    total = len(words) - ngram_size + 1
    if total <= 0:
        return 0.0
    distinct = len({tuple(words[index : index + ngram_size]) for index in range(total)})
    return (total - distinct) / total


def score_repetition(
    candidate: RewardCandidate, context: RewardContext, *, ngram_size: int = 3, max_penalty: float = 1.0
) -> RewardProviderResult:
    """``-max_penalty`` times the repeated share of word n-grams (see module)."""
    return RewardProviderResult(
        terms={"repetition": -max_penalty * repeated_fraction(candidate.completion, ngram_size)}
    )


def repetition_provider(*, ngram_size: int = 3, max_penalty: float = 1.0) -> MappedProvider:
    """Factory: ``ngram_size`` a positive integer, ``max_penalty`` a finite number >= 0."""
    if isinstance(ngram_size, bool) or not isinstance(ngram_size, int) or ngram_size < 1:
        raise ValueError(f"repetition: ngram_size must be a positive integer, got {ngram_size!r}")
    if (
        isinstance(max_penalty, bool)
        or not isinstance(max_penalty, (int, float))
        or not math.isfinite(max_penalty)
        or max_penalty < 0
    ):
        raise ValueError(f"repetition: max_penalty must be a finite number >= 0, got {max_penalty!r}")
    return map_candidates(score_repetition, ngram_size=ngram_size, max_penalty=float(max_penalty))
