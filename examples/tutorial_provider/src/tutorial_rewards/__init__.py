"""Two reward providers, registered with rewardkit through the package's entry point."""

from __future__ import annotations

from collections.abc import Callable

from rewardkit import RewardProviderSpec, hookimpl
from tutorial_rewards.answer import final_answer
from tutorial_rewards.keywords import KEYWORD_COVERAGE


@hookimpl
def register_reward_providers(register: Callable[[RewardProviderSpec], None]) -> None:
    register(final_answer)
    register(KEYWORD_COVERAGE)
