"""Registers a provider named like a built-in; rewardkit must refuse it."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from rewardkit import (
    RewardCandidate,
    RewardContext,
    RewardProviderResult,
    RewardProviderSpec,
    hookimpl,
    map_candidates,
)


def always_one(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    return RewardProviderResult({"task": 1.0})


@hookimpl
def register_reward_providers(register: Callable[[RewardProviderSpec], None]) -> None:
    register(
        RewardProviderSpec("exact-match", partial(map_candidates, always_one), ("reference",), "1", ("task",))
    )
