"""What an audit will run: for the configured reward, which families apply, with which attacks.

A family applies to a provider that it names. A family that applies by needs (``AttackFamily.needs``)
is the fallback for providers no family names (a customer's own): a named provider gets the
families written for its extraction rules, not generic ones that may put the right answer where
that provider reads it. ``--family`` forces one family on every provider. Destructive attacks go
only to providers whose spec declares ``sandboxed`` (or to any under ``--allow-unsandboxed``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rewardkit.attacks import AttackFamily, AttackSpec, RewardAttacks
from rewardkit.catalog import Catalog
from rewardkit.errors import RewardkitError


@dataclass(frozen=True)
class ProviderFacts:
    """What the plan needs to know of one provider of the reward."""

    name: str
    needs: tuple[str, ...]
    sandboxed: bool
    # Reads the prompt: a judge or a reward model, whose every candidate costs a model call.
    calls_a_model: bool


@dataclass(frozen=True)
class Unit:
    """One family run against the reward, on behalf of the providers it applies to."""

    family: AttackFamily
    providers: tuple[str, ...]
    attacks: tuple[AttackSpec, ...]
    # attack name -> why it is not run (a destructive payload against an unsandboxed provider)
    withheld: dict[str, str] = field(default_factory=dict)


def provider_facts(
    names: tuple[str, ...], needs: tuple[str, ...], catalog: Catalog | None
) -> list[ProviderFacts]:
    """Facts for each provider; ``catalog`` is ``None`` when the reward is scored elsewhere (a Reward
    Service): then the reward's needs stand for every provider and none counts as sandboxed."""
    facts = []
    for name in names:
        spec = catalog.entry(name).spec if catalog is not None and name in catalog else None
        own = spec.needs if spec is not None else needs
        facts.append(
            ProviderFacts(
                name=name,
                needs=tuple(own),
                sandboxed=bool(spec is not None and spec.sandboxed),
                calls_a_model="prompt" in own,
            )
        )
    return facts


def plan_units(
    providers: list[ProviderFacts],
    attacks: RewardAttacks,
    *,
    family: str | None = None,
    allow_unsandboxed: bool = False,
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
        targets = [
            p
            for p in providers
            if family is not None
            or p.name in chosen.providers
            or (p.name not in named and chosen.applies_to(p.name, p.needs))
        ]
        if not targets:
            continue
        run: list[AttackSpec] = []
        withheld: dict[str, str] = {}
        for attack in attacks.of_family(chosen.name):
            if attack.providers and not any(p.name in attack.providers for p in targets):
                continue
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
