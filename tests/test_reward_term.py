"""``rl.reward.term``: a multi-term provider selected by name optimises the chosen term in process,
not silently its first one (the same through the Reward Service and its client:
``plugins/service/tests/test_service_parity.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit.scoring.reward import optimised_term_note

HERE = Path(__file__).parent
GROUPS = [
    {
        "group_id": "g",
        "rollouts": [{"trajectory_id": "a", "completion": "yes"}, {"trajectory_id": "b", "completion": "no"}],
    }
]
SERVED = (
    "rl: {group_size: 2, reward: {provider: two-terms, catalog: 'reasons_fixtures:catalog', term: format}}"
)


@pytest.fixture(autouse=True)
def importable_fixtures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HERE))


def selection(**extra: Any) -> dict[str, Any]:
    return {
        "rl": {
            "group_size": 2,
            "reward": {"provider": "two-terms", "catalog": "reasons_fixtures:catalog", **extra},
        }
    }


def finals(config: dict[str, Any]) -> list[float | None]:
    with rewardkit.load(config) as reward:
        return [candidate.final for _, candidate in reward.score(GROUPS).candidates()]


def test_the_first_term_by_default_and_the_chosen_one_with_term():
    assert finals(selection()) == [1.0, 0.0]
    assert finals(selection(term="format")) == [0.5, 0.5]


def test_the_note_names_the_optimised_term_and_the_others():
    config = rewardkit.load_config(selection())
    with rewardkit.load(config) as reward:
        note = optimised_term_note(config.rl.reward, reward.spec, reward.catalog)
    assert note == (
        "provider 'two-terms' declares terms ['correct', 'format']; optimising 'correct' "
        "(its first; choose another with rl.reward.term=format)"
    )
