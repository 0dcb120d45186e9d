"""A run-bound catalog holding the rl pack's ``overlong`` exactly as the pack registers it.

The trainer envs install the core alone, so the tests put ``rl_pack/src`` on ``sys.path`` and this
catalog takes ``overlong`` from the pack's own ``register_reward_providers`` (its needs and
``skip_when_absent`` included), rather than declaring a copy.
"""

from __future__ import annotations

from rewardkit import RewardProviderSpec


def catalog() -> list[RewardProviderSpec]:
    from rewardkit_rl.verifiers import register_reward_providers

    specs: list[RewardProviderSpec] = []
    register_reward_providers(specs.append)
    return [spec for spec in specs if spec.name == "overlong"]
