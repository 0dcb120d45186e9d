"""rewardkit-rl plugin: verifiers rewards (registered through the `rewardkit` entry-point group)."""

from __future__ import annotations

from collections.abc import Callable

from rewardkit import RewardProviderSpec, hookimpl


@hookimpl
def register_reward_providers(register: Callable[[RewardProviderSpec], None]) -> None:
    """Registers this plugin's providers (filled in by the issue that builds them)."""
