"""What ``rewardkit audit`` sends at a reward: attack families that plugins register (docs/audit.md).

A family writes an honest right and an honest wrong completion for a row, and holds attacks:
completions a policy under RL could learn to write, each built so that a grader that cannot be
fooled scores it no higher than the honest wrong one. The audit itself is the ``rewardkit-audit``
distribution; the core only defines what a plugin registers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rewardkit.contracts import check_name
from rewardkit.contracts.errors import RegistrationError
from rewardkit.seam.plugins import PluginManager, load_plugins
from rewardkit.seam.registry import Registry

__all__ = ["AttackFamily", "AttackSpec", "AuditRow", "AuditRowBuilder", "reward_attacks"]


@dataclass(frozen=True)
class AuditRow:
    """One row an audit works from: ``reference`` its gold reference as the data holds it (JSON),
    ``completion`` its own completion if any (a rollout), ``fields`` its other values (a token count...)."""

    row_id: str
    prompt: Any = None
    reference: Any = None
    completion: str | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)


# Builds a completion from a row; ``None`` when the row lacks what the builder needs (the audit
# then skips the row for that family or attack and counts it).
AuditRowBuilder = Callable[[AuditRow], "str | None"]


@dataclass(frozen=True)
class AttackFamily:
    """A family of attacks and the two baselines they are compared with; it audits its ``providers`` by
    default, and any other provider needing all its ``needs`` (such as ``reference``), so a custom provider is
    audited without being named. ``every_provider`` audits every component of every reward (the generic
    families); ``row_shape`` brings the family to a provider no family names when a row of the audited data
    has that shape (a reference holding tests brings ``code`` to a custom code reward). ``honest_right`` may
    return ``None`` for a row without a reference solution: the audit then uses the row's own completion
    the reward pays most (docs/audit.md#baselines)."""

    name: str
    honest_right: AuditRowBuilder
    honest_wrong: AuditRowBuilder
    providers: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    description: str = ""
    every_provider: bool = False
    row_shape: Callable[[AuditRow], bool] | None = None

    def __post_init__(self) -> None:
        check_name("attack family", self.name)
        for attr in ("providers", "needs"):
            value = getattr(self, attr)
            if isinstance(value, str) or not isinstance(value, (tuple, list)):
                raise RegistrationError(f"attack family {self.name!r}: {attr} must be a tuple of names")
            object.__setattr__(self, attr, tuple(value))
        for attr in ("honest_right", "honest_wrong"):
            if not callable(getattr(self, attr)):
                raise RegistrationError(f"attack family {self.name!r}: {attr} is not callable")
        if type(self.every_provider) is not bool:
            raise RegistrationError(f"attack family {self.name!r}: every_provider must be True or False")
        if self.row_shape is not None and not callable(self.row_shape):
            raise RegistrationError(f"attack family {self.name!r}: row_shape is not callable")

    def applies_to(self, provider: str, needs: tuple[str, ...]) -> bool:
        return provider in self.providers or (bool(self.needs) and set(self.needs) <= set(needs))


@dataclass(frozen=True)
class AttackSpec:
    """One attack: its name (unique across families), its family and how it builds a completion. ``providers``
    narrows it to some of its family's providers (empty: all). ``destructive`` marks a payload acting on the
    grader's machine (a surviving process, an output flood): the audit sends it only to providers declaring
    ``sandboxed`` or under ``--allow-unsandboxed``, and it only proves reach (a marker, a sleep of two seconds
    at most): it never kills, spins longer or writes outside its working directory. ``params`` names the
    provider params that make the attack possible (``{"fallback_last_number": True}``): it runs only against
    a component configured with them, so the audit exercises what a weakening param opens."""

    name: str
    family: str
    build: AuditRowBuilder
    description: str = ""
    providers: tuple[str, ...] = ()
    destructive: bool = False
    params: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        check_name("attack", self.name)
        if not callable(self.build):
            raise RegistrationError(f"attack {self.name!r}: build is not callable")
        if isinstance(self.providers, str) or not isinstance(self.providers, (tuple, list)):
            raise RegistrationError(f"attack {self.name!r}: providers must be a tuple of names")
        object.__setattr__(self, "providers", tuple(self.providers))
        if type(self.destructive) is not bool:
            raise RegistrationError(f"attack {self.name!r}: destructive must be True or False")
        if not isinstance(self.params, Mapping):
            raise RegistrationError(f"attack {self.name!r}: params must be a mapping of param -> value")
        object.__setattr__(self, "params", dict(self.params))

    def enabled_by(self, params: Mapping[str, Any]) -> bool:
        """Whether a component configured with ``params`` makes this attack possible."""
        return all(name in params and params[name] == value for name, value in self.params.items())


@dataclass(frozen=True)
class RewardAttacks:
    families: Registry[AttackFamily]
    attacks: Registry[AttackSpec]

    def of_family(self, family: str) -> list[AttackSpec]:
        return [entry.value for entry in self.attacks if entry.value.family == family]


def reward_attacks(manager: PluginManager | None = None) -> RewardAttacks:
    """The families and attacks every loaded plugin registered through ``register_reward_attacks``."""
    from rewardkit.seam.catalog import _cached, _collect

    manager = manager or load_plugins()

    def build() -> RewardAttacks:
        both: Registry[AttackFamily | AttackSpec] = Registry("reward attack", (AttackFamily, AttackSpec))
        _collect(manager, "register_reward_attacks", both, _entry_name)
        families: Registry[AttackFamily] = Registry("attack family", AttackFamily)
        attacks: Registry[AttackSpec] = Registry("attack", AttackSpec)
        for entry in both:
            into: Registry[Any] = families if isinstance(entry.value, AttackFamily) else attacks
            into.add(entry.value.name, entry.value, entry.owner)
        orphans = sorted(
            f"{a.value.name} ({a.value.family})" for a in attacks if a.value.family not in families
        )
        if orphans:
            raise RegistrationError(f"attacks name a family nobody registered: {', '.join(orphans)}")
        families.failures = attacks.failures = both.failures
        return RewardAttacks(families, attacks)

    return _cached(manager, "attacks", build)


def _entry_name(item: AttackFamily | AttackSpec) -> str:
    return f"{'family' if isinstance(item, AttackFamily) else 'attack'} {item.name}"
