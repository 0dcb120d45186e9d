"""rewardkit's extension points: the pluggy markers and the hook specifications, nothing else.
Every hook has the shape ``register_<things>(register)``: rewardkit calls it once per plugin while
it builds its registries, and the plugin calls ``register`` once per thing it contributes (the one
exception, ``register_commands(cli)``, is handed a registrar object: a verb is a parser to fill).
``register`` checks types and refuses a name that another plugin already registered, naming both;
its type for each hook is a protocol of ``rewardkit.seam.protocols`` (``ProviderRegistrar``, ...).
Implementations are called through pluggy by argument name, so one may leave out parameters and a
spec can grow without breaking plugins (``rewardkit.seam.plugins.PluginManager.call_each``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from rewardkit.seam.protocols import (
        CatalogRegistrar,
        CommandRegistrar,
        ConfigSectionRegistrar,
        ProviderRegistrar,
        RewardAttackRegistrar,
        RewardBackendRegistrar,
        RewardExpansionRegistrar,
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
    "register_commands",
    "register_config_sections",
    "register_reward_attacks",
    "register_reward_backends",
    "register_reward_expansions",
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
    a catalog by name (``rl.reward.catalog``). ``register(spec)`` takes a ``rewardkit.CatalogSpec`` whose
    zero-argument factory returns an iterable of ``RewardProviderSpec``; it must be deterministic, light,
    CPU-only and free of side effects. A catalog adds provider names; it can never override a built-in.
    Return value: ignored. Since 0.1; the spec object in 0.2 (``register(name, factory)`` still works)."""


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
    once per plugin when an audit first looks up the families (``rewardkit audit``, the audit
    distribution's ``audit()``, ``rewardkit attacks``). ``register(item)`` takes a
    ``rewardkit.seam.attacks.AttackFamily`` (the baselines) or a ``rewardkit.seam.attacks.AttackSpec`` (one
    attack
    of a family, which any plugin may register). Return value: ignored. Since 0.2."""


@hookspec
def register_commands(cli: CommandRegistrar) -> None:
    """Contribute verbs of the ``rewardkit`` command (``rewardkit serve``, ``rewardkit audit``). Called
    once per plugin each time the command line is parsed, before any verb runs (``rewardkit --help``
    included). ``cli.add(name, run, about=...)`` returns the verb's ``argparse`` parser for the plugin to
    add its arguments to; ``run(args) -> int`` (or its ``module:function`` path, imported only when the
    verb runs) is its exit status. Return value: ignored. Since 0.2."""


@hookspec
def register_config_sections(register: ConfigSectionRegistrar) -> None:
    """Contribute configuration sections (``checkpoints``, ``rl.monitor``, ``rewards.ray``). Called once
    per plugin when a configuration is first validated. ``register(spec)`` takes a
    ``rewardkit.ConfigSectionSpec``: the section's dotted key (top level, ``rl.*`` or ``rewards.*``) and
    the pydantic model that validates it, with the core's messages (an unknown key names the nearest
    known one), and optionally the batch observer the section configures (``observer``: the bindings and
    the Reward Service hand it every scored batch while the section is set). A plugin reads its section
    with ``config.section(path, Model)``. Return value: ignored. Since 0.2."""


@hookspec
def register_reward_backends(register: RewardBackendRegistrar) -> None:
    """Contribute places to score a reward other than this process (``rewards.backend: ray``, a Reward
    Service URL). Called once per plugin when a configuration is validated or a reward is built
    (``rewardkit.load``, the trainer bindings, ``rewardkit score``). ``register(spec)`` takes a
    ``rewardkit.RewardBackendSpec``; its ``target`` is imported only when a reward is built there.
    Return value: ignored. Since 0.2."""


@hookspec
def register_reward_expansions(register: RewardExpansionRegistrar) -> None:
    """Contribute keys of a reward selection that stand for a composed spec (``rl.reward.grader``: an
    OpenAI grader spec). Called once per plugin when a reward selection first holds a key the core does
    not know (``rl.reward``, a validation reward, a ``by_data_source`` entry). ``register(spec)`` takes a
    ``rewardkit.RewardExpansionSpec``: the key, and ``expand(value, base_dir)`` returning the mapping
    ``rl.reward.spec`` would hold, which replaces the key before validation. Return value: ignored.
    Since 0.2."""
