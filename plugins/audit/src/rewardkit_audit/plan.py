"""What an audit will run: for each component of the configured reward, which families apply, with
which attacks.

A family applies to a component whose provider it names, and a generic family
(``AttackFamily.every_provider``) to every component. A family that applies by needs
(``AttackFamily.needs``) or by the shape of a row (``AttackFamily.row_shape``: a reference holding
tests) is the fallback for providers no family names (a customer's own): a named provider gets the
families written for its extraction rules, not fallbacks that may put the right answer where that
provider reads it. ``--family`` forces one family on every component. Destructive attacks go only to
providers whose spec declares ``sandboxed`` (or to any under ``--allow-unsandboxed``); an attack that
declares ``params`` runs only against a component configured with them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardkit.plugin import AttackFamily, AttackSpec, AuditRow, Catalog, RewardAttacks, RewardkitError


@dataclass(frozen=True)
class ProviderFacts:
    """What the plan needs to know of one component of the reward: ``name`` is the component's (its
    provider's for a one-provider reward), ``provider`` the provider it selects (default: ``name``)."""

    name: str
    needs: tuple[str, ...]
    sandboxed: bool
    # Reads the prompt: a judge or a reward model, whose every candidate costs a model call.
    calls_a_model: bool
    provider: str = ""
    params: Mapping[str, Any] = field(default_factory=dict, hash=False)
    weight: float = 1.0

    def __post_init__(self) -> None:
        if not self.provider:
            object.__setattr__(self, "provider", self.name)


@dataclass(frozen=True)
class Unit:
    """One family run against the reward, on behalf of the providers it applies to."""

    family: AttackFamily
    providers: tuple[str, ...]
    attacks: tuple[AttackSpec, ...]
    # attack name -> why it is not run (a destructive payload against an unsandboxed provider)
    withheld: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Component:
    """One component of the configured spec, as the audit attacks it."""

    name: str
    provider: str
    params: Mapping[str, Any] = field(default_factory=dict)
    weight: float = 1.0


def provider_facts(
    components: Sequence[Component], needs: tuple[str, ...], catalog: Catalog | None
) -> list[ProviderFacts]:
    """Facts for each component; ``catalog`` is ``None`` when the reward is scored elsewhere (a Reward
    Service): then the reward's needs stand for every provider and none counts as sandboxed."""
    facts = []
    for component in components:
        name = component.provider
        spec = catalog.entry(name).spec if catalog is not None and name in catalog else None
        own = spec.needs if spec is not None else needs
        facts.append(
            ProviderFacts(
                name=component.name,
                needs=tuple(own),
                sandboxed=bool(spec is not None and spec.sandboxed),
                calls_a_model="prompt" in own,
                provider=name,
                params=dict(component.params),
                weight=component.weight,
            )
        )
    return facts


def _fits_rows(family: AttackFamily, rows: Sequence[AuditRow]) -> bool:
    """Whether a row of the audited data has the family's ``row_shape`` (a family's bug: no)."""
    shape = family.row_shape
    if shape is None:
        return False
    for row in rows:
        try:
            if shape(row):
                return True
        except Exception:  # a row_shape that raises fits no row; its family is simply not brought in
            continue
    return False


def plan_units(
    providers: list[ProviderFacts],
    attacks: RewardAttacks,
    *,
    family: str | None = None,
    allow_unsandboxed: bool = False,
    rows: Sequence[AuditRow] = (),
) -> list[Unit]:
    if family is not None and family not in attacks.families:
        known = ", ".join(entry.name for entry in attacks.families) or "(none)"
        raise RewardkitError(
            f"unknown attack family {family!r} (installed: {known}); a family comes with the plugin "
            "that ships it (`rewardkit audit --list` shows them)"
        )
    named = {name for entry in attacks.families for name in entry.value.providers}
    units = []
    for entry in attacks.families:
        chosen = entry.value
        if family is not None and chosen.name != family:
            continue
        shaped = chosen.row_shape is not None and _fits_rows(chosen, rows)
        by_shape = (chosen.every_provider and chosen.row_shape is None) or shaped
        targets = [
            p
            for p in providers
            if family is not None
            or p.provider in chosen.providers
            or (chosen.every_provider and by_shape)
            or (
                p.provider not in named
                and (chosen.applies_to(p.provider, p.needs) or (shaped and not chosen.every_provider))
            )
        ]
        if not targets:
            continue
        run: list[AttackSpec] = []
        withheld: dict[str, str] = {}
        for attack in attacks.of_family(chosen.name):
            if attack.providers and not any(p.provider in attack.providers for p in targets):
                continue
            if attack.params and not any(attack.enabled_by(p.params) for p in targets):
                continue  # no component is configured with the params that make it possible
            unsafe = [p.name for p in targets if not p.sandboxed]
            if attack.destructive and unsafe and not allow_unsandboxed:
                withheld[attack.name] = (
                    f"destructive payload; {', '.join(unsafe)} does not declare a sandbox "
                    "(--allow-unsandboxed sends it anyway)"
                )
                continue
            run.append(attack)
        units.append(Unit(chosen, tuple(p.name for p in targets), tuple(run), withheld))
    return units
