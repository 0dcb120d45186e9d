"""The ``overlong`` verifier: DAPO's soft punishment for completions near or past the length budget.

With budget ``max_tokens`` and a ``buffer_tokens`` ramp before it, a completion of ``n`` tokens
gets 0 while ``n <= max_tokens - buffer_tokens``, then a linear penalty down to -1 at
``max_tokens``, and -1 beyond it or whenever the engine reports it cut the completion at its
budget (``finish_reason == "length"``). Skipped when the rollout recorded no token count.
"""

from __future__ import annotations

from rewardkit.plugin import (
    MappedProvider,
    RewardCandidate,
    RewardContext,
    RewardProviderResult,
    map_candidates,
)


def overlong_penalty(count: int, max_tokens: int, buffer_tokens: int, truncated: bool) -> float:
    """The penalty in [-1, 0] for a completion of ``count`` tokens."""
    if truncated or count > max_tokens:
        return -1.0
    free = max_tokens - buffer_tokens
    if count <= free:
        return 0.0
    return (free - count) / buffer_tokens


def score_overlong(
    candidate: RewardCandidate, context: RewardContext, *, max_tokens: int, buffer_tokens: int
) -> RewardProviderResult:
    """The DAPO penalty from ``completion_token_count`` (see module); skipped without a count."""
    count = candidate.completion_token_count
    if count is None:
        return RewardProviderResult.skip("the rollout recorded no completion_token_count")
    penalty = overlong_penalty(count, max_tokens, buffer_tokens, candidate.is_length_truncated)
    return RewardProviderResult(terms={"overlong": penalty})


def overlong_provider(*, max_tokens: int, buffer_tokens: int) -> MappedProvider:
    """Factory: ``0 < buffer_tokens <= max_tokens``, both integers (checked in preflight)."""
    for name, value in (("max_tokens", max_tokens), ("buffer_tokens", buffer_tokens)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"overlong: {name} must be a positive integer, got {value!r}")
    if buffer_tokens > max_tokens:
        raise ValueError(f"overlong: buffer_tokens ({buffer_tokens}) exceeds max_tokens ({max_tokens})")
    return map_candidates(score_overlong, max_tokens=max_tokens, buffer_tokens=buffer_tokens)
