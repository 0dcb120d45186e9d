"""rewardkit's extension points: the pluggy markers and the hook specifications, nothing else.
Every hook has the shape ``register_<things>(register)``: rewardkit calls it once per plugin while
it builds its registries, and the plugin calls ``register`` once per thing it contributes.
``register`` checks types and refuses a name that another plugin already registered, naming both;
its type for each hook is a protocol of ``rewardkit.protocols`` (``ProviderRegistrar``, ...).
Implementations are called through pluggy by argument name, so one may leave out parameters and a
spec can grow without breaking plugins (``rewardkit.plugins.PluginManager.call_each``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from rewardkit.protocols import (
        CatalogRegistrar,
        ProviderRegistrar,
        RewardAttackRegistrar,
        ServingStrategyRegistrar,
        TrainerBindingRegistrar,
    )

PROJECT_NAME = "rewardkit"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

__all__ = [
    "PROJECT_NAME",
    "hookimpl",
    "hookspec",
    "register_catalogs",
    "register_reward_attacks",
    "register_reward_providers",
    "register_serving_strategies",
    "register_trainer_bindings",
]


@hookspec
def register_reward_providers(register: ProviderRegistrar) -> None:
    """Contribute reward providers. Called once per plugin when rewardkit first builds its provider
    catalog (``rewardkit providers``, ``rewardkit.load``, the Reward Service and each reward actor at
    start-up). ``register(spec)`` takes a ``rewardkit.RewardProviderSpec``. Return value: ignored.
    Since 0.1."""


@hookspec
def register_catalogs(register: CatalogRegistrar) -> None:
    """Contribute named run-bound catalogs. Called once per plugin when a configuration or command selects
    a catalog by name (``rl.reward.catalog``). ``register(name, factory)`` takes a zero-argument factory
    that returns an iterable of ``RewardProviderSpec``; it must be deterministic, light, CPU-only and free
    of side effects. A catalog adds provider names; it can never override a built-in. Return value:
    ignored. Since 0.1."""


@hookspec
def register_serving_strategies(register: ServingStrategyRegistrar) -> None:
    """Contribute ways to serve a checkpoint for evaluation (vllm-serve, vllm-lora, endpoint). Called once
    per plugin when checkpoint evaluation resolves ``checkpoints.serving`` (and by ``rewardkit serving``).
    ``register(spec)`` takes a ``rewardkit.ServingStrategySpec`` whose strategy's ``serve(checkpoint)``
    yields a ``rewardkit.checkpoint_serving.ServedModel`` (base URL, model name, checkpoint identity,
    settings). Return value: ignored. Since 0.1; ``ServedModel`` replaced the bare URL in 0.2."""


@hookspec
def register_trainer_bindings(register: TrainerBindingRegistrar) -> None:
    """Contribute adapters that hand a resolved reward to a trainer (trl, verl, openrlhf). Called once per
    plugin when a binding is first looked up (``rewardkit.bindings.get(name)``, ``rewardkit bindings``,
    ``rewardkit plugins``). ``register(spec)`` takes a ``rewardkit.TrainerBindingSpec``; its ``target`` is
    imported only by ``get``. Return value: ignored. Since 0.1."""


@hookspec
def register_reward_attacks(register: RewardAttackRegistrar) -> None:
    """Contribute attack families for ``rewardkit audit`` (red-teaming a reward before training). Called
    once per plugin when an audit first looks up the families (``rewardkit audit``,
    ``rewardkit_audit.audit``, ``rewardkit attacks``). ``register(item)`` takes a
    ``rewardkit.attacks.AttackFamily`` (the baselines) or a ``rewardkit.attacks.AttackSpec`` (one attack
    of a family, which any plugin may register). Return value: ignored. Since 0.2."""
