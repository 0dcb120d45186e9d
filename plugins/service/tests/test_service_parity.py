"""The Reward Service and its client score what in-process scoring does, for settings that are the
client's or travel with the selection: the advantage kind and eps (``rl.advantage_std``,
``rl.advantage_eps``, kept by the client) and the optimised term of a multi-term provider
(``rl.reward.term``). The in-process halves are the core's ``tests/test_advantages.py`` and
``tests/test_reward_term.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from service_fixtures import start_server

import rewardkit

# -- the advantages (as tests/test_advantages.py computes them in process) -----------------------

GROUP = [("g", [{"trajectory_id": t, "completion": c} for t, c in (("a", "x y"), ("b", ""), ("c", "z"))])]


def advantages(reward) -> list[float]:
    return [candidate.advantage for _, candidate in reward.score(GROUP).candidates()]


def test_a_reward_service_client_uses_its_own_advantage_settings(tmp_path):
    server = start_server(tmp_path, "rl.reward.provider: nonempty\n")
    try:
        client = {"rl.reward.provider": "nonempty", "rl.reward.service": server.url, "rl.group_size": 3}
        for extra in ({}, {"rl.advantage_std": "population", "rl.advantage_eps": 0.5}):
            with rewardkit.load({**client, **extra}) as remote:
                got = advantages(remote)
            local = {key: value for key, value in {**client, **extra}.items() if key != "rl.reward.service"}
            assert got == advantages(rewardkit.load(local)), extra
    finally:
        assert server.stop() == 0, server.output


# -- the optimised term (as tests/test_reward_term.py selects it in process) ---------------------

TERM_GROUPS = [
    {
        "group_id": "g",
        "rollouts": [{"trajectory_id": "a", "completion": "yes"}, {"trajectory_id": "b", "completion": "no"}],
    }
]
SERVED = (
    "rl: {group_size: 2, reward: {provider: two-terms, catalog: 'reasons_fixtures:catalog', term: format}}"
)


def selection(**extra: Any) -> dict[str, Any]:
    return {
        "rl": {
            "group_size": 2,
            "reward": {"provider": "two-terms", "catalog": "reasons_fixtures:catalog", **extra},
        }
    }


def finals(config: dict[str, Any]) -> list[float | None]:
    with rewardkit.load(config) as reward:
        return [candidate.final for _, candidate in reward.score(TERM_GROUPS).candidates()]


def test_the_service_and_its_client_optimise_the_chosen_term(tmp_path: Path):
    with start_server(tmp_path, SERVED + "\n") as server:
        assert finals(selection(term="format", service=server.url)) == [0.5, 0.5]
