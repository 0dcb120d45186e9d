"""GRPO advantages as the trainers compute them: sample standard deviation by default, a trainer's eps
(each binding's: plugins/bindings/tests), a group with one scored candidate at 0; ``population`` on request.

The TRL vector is the one TRL 1.13 computed for the same rewards in a 2-process run
(recorded when the TRL binding was written): ``(r - mean) / (sample std + 1e-4)``.
"""

from __future__ import annotations

import math

import pytest

import rewardkit
from rewardkit.contracts.errors import ConfigError
from rewardkit.scoring.advantages import group_advantages, mean_std

TRL_REWARDS = [38.0, 48.0, 38.0, 37.0]
TRL_ADVANTAGES = [-0.4337, 1.4938, -0.4337, -0.6264]


def test_sample_std_and_trl_eps_give_trls_advantages():
    (got,) = group_advantages([TRL_REWARDS], "group", eps=1e-4)
    assert got == pytest.approx(TRL_ADVANTAGES, abs=1e-4)
    (population,) = group_advantages([TRL_REWARDS], "group", std="population", eps=1e-4)
    # The two differ by sqrt(n / (n - 1)), the gap this default closes.
    assert population[1] / got[1] == pytest.approx(math.sqrt(4 / 3), rel=1e-4)


def test_mean_std_kinds():
    assert mean_std([1.0, 3.0]) == (2.0, 1.0)
    assert mean_std([1.0, 3.0], "sample") == pytest.approx((2.0, math.sqrt(2.0)))
    assert mean_std([5.0], "sample") == (5.0, 0.0)


def test_a_group_with_one_scored_candidate_gets_zero():
    assert group_advantages([[7.0]], "group") == [[0.0]]
    assert group_advantages([[7.0, None]], "group") == [[0.0, 0.0]]
    assert group_advantages([[7.0]], "none") == [[0.0]]
    # In batch scaling the lone total still counts towards the batch's deviation, not its own advantage.
    batch_std = mean_std([7.0, 1.0, 3.0])[1]
    lone, pair = group_advantages([[7.0], [1.0, 3.0]], "batch", std="population")
    assert lone == [0.0] and pair == pytest.approx([-1 / batch_std, 1 / batch_std], rel=1e-5)


def test_equal_totals_with_eps_zero_are_zero_not_nan():
    assert group_advantages([[2.0, 2.0]], "group", eps=0.0) == [[0.0, 0.0]]


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="standard deviation"):
        group_advantages([[1.0, 2.0]], "group", std="unbiased")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="eps"):
        group_advantages([[1.0, 2.0]], "group", eps=-1.0)
    with pytest.raises(ConfigError, match=r"rl\.advantage_std"):
        rewardkit.load({"rl.reward.provider": "nonempty", "rl.advantage_std": "pop"})
    with pytest.raises(ConfigError, match=r"rl\.advantage_eps"):
        rewardkit.load({"rl.reward.provider": "nonempty", "rl.advantage_eps": -1})


GROUP = [("g", [{"trajectory_id": t, "completion": c} for t, c in (("a", "x y"), ("b", ""), ("c", "z"))])]


def advantages(reward) -> list[float]:
    return [candidate.advantage for _, candidate in reward.score(GROUP).candidates()]


def test_the_config_chooses_the_kind_and_eps():
    base = {"rl.reward.provider": "nonempty"}
    totals = [[1.0, 0.0, 1.0]]
    assert advantages(rewardkit.load(base)) == pytest.approx(group_advantages(totals, "group")[0])
    population = rewardkit.load({**base, "rl.advantage_std": "population", "rl.advantage_eps": 0.5})
    assert advantages(population) == pytest.approx(group_advantages(totals, std="population", eps=0.5)[0])
