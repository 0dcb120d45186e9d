"""rewardkit_stats against scipy, the pinned vectors, and a seeded calibration simulation."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from rewardkit_stats import RegressionGate, interval, paired_interval
from rewardkit_stats.distributions import t_cdf, t_quantile
from rewardkit_stats.simulation import coverage, gate_runs

ROOT = Path(__file__).resolve().parents[3]
VECTORS = json.loads((ROOT / "testdata" / "stats_vectors.json").read_text())


@pytest.mark.parametrize("df", [1, 2, 3, 9, 49, 499, 4999])
@pytest.mark.parametrize("p", [0.55, 0.8, 0.975, 0.995, 0.99875, 0.99999])
def test_t_quantiles_equal_scipy(df, p):
    assert t_quantile(p, df) == pytest.approx(scipy.stats.t.ppf(p, df), rel=1e-9, abs=1e-9)
    assert t_quantile(1 - p, df) == pytest.approx(scipy.stats.t.ppf(1 - p, df), rel=1e-9, abs=1e-9)
    assert t_cdf(1.7, df) == pytest.approx(scipy.stats.t.cdf(1.7, df), abs=1e-12)


@pytest.mark.parametrize("case", VECTORS["cases"], ids=lambda case: case["name"])
def test_vectors(case):
    clusters = case.get("clusters")
    found = paired_interval(case["base"], case["step"], clusters=clusters)
    for key in ("mean", "se", "low", "high"):
        assert getattr(found, key) == pytest.approx(case["t"][key], rel=1e-9, abs=1e-12), key
    naive = paired_interval(case["base"], case["step"])
    assert naive.low == pytest.approx(case["t_naive"]["low"], rel=1e-9)
    boot = paired_interval(case["base"], case["step"], clusters=clusters, method="bootstrap", seed=7)
    for key in ("mean", "low", "high"):
        assert getattr(boot, key) == pytest.approx(case["bootstrap_seed7"][key], rel=1e-12), key
    decision = RegressionGate(tolerance=0.01, alpha=0.05, horizon=20).decide(
        "100", 1, case["base"], case["step"], clusters
    )
    assert decision.fired == case["gate_look1"]["fired"]
    assert decision.upper_bound == pytest.approx(case["gate_look1"]["upper_bound"], rel=1e-9)


def test_cluster_robust_t_is_cr1_with_g_minus_1_degrees_of_freedom():
    rng = np.random.default_rng(3)
    labels = np.repeat(np.arange(8), 5)
    values = rng.normal(size=8)[labels] + rng.normal(size=40)
    found = interval(values, clusters=labels)
    residuals = np.array([np.sum(values[labels == g] - values.mean()) for g in range(8)])
    se = math.sqrt(8 / 7 * np.sum(residuals**2) / 40**2)
    assert found.se == pytest.approx(se) and found.clusters == 8
    assert found.high - found.mean == pytest.approx(scipy.stats.t.ppf(0.975, 7) * se)


def test_undefined_intervals_are_none():
    assert interval([1.0]) is None
    assert interval([0.1, 0.2, 0.3], clusters=["a", "a", "a"]) is None
    assert VECTORS["undefined"] == {"one_value": True, "one_cluster": True}


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="equal lengths"):
        paired_interval([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="finite"):
        interval([1.0, float("nan")])
    with pytest.raises(ValueError, match="clusters has 1 labels for 2 values"):
        interval([1.0, 2.0], clusters=["a"])


def test_gate_decision_names_step_interval_and_detectable_drop():
    base = np.full(400, 0.5)
    step = base - 0.2 + np.random.default_rng(0).normal(0, 0.05, 400)
    decision = RegressionGate(tolerance=0.01).decide("300", 3, base, step)
    assert decision.fired
    text = decision.message()
    assert "step 300" in text and "FIRED" in text and "detects drops of" in text
    assert 0.01 < decision.min_detectable_drop < 0.05


def test_many_to_one_critical_value_controls_the_family_wise_rate():
    """Monte Carlo of equicorrelated normals (a shared base): the max exceeds c in 0.95 * alpha."""
    gate = RegressionGate(alpha=0.05, horizon=20, base_samples=4, step_samples=4)
    rng = np.random.default_rng(0)
    shared = rng.normal(size=(200_000, 1))
    own = rng.normal(size=(200_000, 20))
    z = np.sqrt(0.5) * shared + np.sqrt(0.5) * own
    exceed = float(np.mean(z.max(axis=1) > gate.planned_critical))
    assert exceed == pytest.approx(0.95 * 0.05, abs=0.003)
    # looks past the horizon: a series that spends the last 5% of alpha
    assert sum(gate.alpha_at(k) for k in range(21, 100_000)) <= 0.05 * 0.05 + 1e-12


def test_calibration_small():
    """A short version of benchmarks/stats_calibration.py (the full run is in docs/checkpoints.md)."""
    assert 0.91 <= coverage(300, "t", clustered=True, seed=11) <= 0.99
    assert 0.90 <= coverage(150, "bootstrap", clustered=True, seed=12) <= 0.99
    false_alarms, _ = gate_runs(150, seed=5)
    assert false_alarms <= 0.06
    caught, looks = gate_runs(150, drop_from=10, seed=6)
    assert caught >= 0.88 and min(looks) >= 10
