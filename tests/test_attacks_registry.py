"""``register_reward_attacks``: plugins contribute attack families and attacks for ``rewardkit audit``;
names are unique, an attack needs a registered family, and the specs check their fields."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import fake_distribution

from rewardkit.contracts.errors import NameConflictError, RegistrationError
from rewardkit.seam.attacks import AttackFamily, AttackSpec, AuditRow, reward_attacks

FAMILY_PLUGIN = """
from rewardkit import hookimpl
from rewardkit.seam.attacks import AttackFamily, AttackSpec

def right(row):
    return None if row.reference is None else f"Answer: {row.reference}"

@hookimpl
def register_reward_attacks(register):
    register(AttackFamily("acme-answers", right, lambda row: "Answer: nothing", providers=("acme",)))
    register(AttackSpec("acme-shout", "acme-answers", lambda row: "ANSWER!", destructive=False))
"""
EXTRA_ATTACK = """
from rewardkit import hookimpl
from rewardkit.seam.attacks import AttackSpec

@hookimpl
def register_reward_attacks(register):
    register(AttackSpec("acme-whisper", "acme-answers", lambda row: "answer..."))
"""
ORPHAN = """
from rewardkit import hookimpl
from rewardkit.seam.attacks import AttackSpec

@hookimpl
def register_reward_attacks(register):
    register(AttackSpec("lonely", "no-such-family", lambda row: "x"))
"""
DUPLICATE = """
from rewardkit import hookimpl
from rewardkit.seam.attacks import AttackSpec

@hookimpl
def register_reward_attacks(register):
    register(AttackSpec("acme-shout", "acme-answers", lambda row: "again"))
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_plugins: None) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for module in [name for name in sys.modules if name.startswith("fake_")]:
        del sys.modules[module]


def test_a_plugin_registers_a_family_and_another_adds_an_attack_to_it(site: Path):
    fake_distribution(
        site, "acme-attacks", {"acme-attacks": "fake_acme_attacks"}, {"fake_acme_attacks": FAMILY_PLUGIN}
    )
    fake_distribution(site, "acme-more", {"acme-more": "fake_acme_more"}, {"fake_acme_more": EXTRA_ATTACK})
    found = reward_attacks()
    family = found.families.get("acme-answers")
    assert family.owner.distribution == "acme-attacks"
    assert sorted(attack.name for attack in found.of_family("acme-answers")) == ["acme-shout", "acme-whisper"]
    row = AuditRow("r1", prompt="q", reference="42")
    assert family.value.honest_right(row) == "Answer: 42"
    assert family.value.honest_right(AuditRow("r2")) is None
    assert family.value.applies_to("acme", ()) and not family.value.applies_to("other", ("reference",))


def test_an_attack_of_a_family_nobody_registered_is_refused(site: Path):
    fake_distribution(site, "acme-orphan", {"acme-orphan": "fake_acme_orphan"}, {"fake_acme_orphan": ORPHAN})
    with pytest.raises(RegistrationError, match=r"lonely \(no-such-family\)"):
        reward_attacks()


def test_an_attack_name_is_registered_once(site: Path):
    fake_distribution(
        site, "acme-attacks", {"acme-attacks": "fake_acme_attacks"}, {"fake_acme_attacks": FAMILY_PLUGIN}
    )
    fake_distribution(site, "acme-dup", {"acme-dup": "fake_acme_dup"}, {"fake_acme_dup": DUPLICATE})
    with pytest.raises(
        NameConflictError, match=r"'attack acme-shout' is registered twice.*acme-attacks.*acme-dup"
    ):
        reward_attacks()


def test_specs_check_their_fields():
    with pytest.raises(RegistrationError, match="invalid attack name"):
        AttackSpec("Bad Name", "f", lambda row: "x")
    with pytest.raises(RegistrationError, match="build is not callable"):
        AttackSpec("ok", "f", "not callable")  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match="destructive must be True or False"):
        AttackSpec("ok", "f", lambda row: "x", destructive="yes")  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match="providers must be a tuple"):
        AttackFamily("fam", lambda row: "a", lambda row: "b", providers="math")  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match="honest_wrong is not callable"):
        AttackFamily("fam", lambda row: "a", None)  # type: ignore[arg-type]
