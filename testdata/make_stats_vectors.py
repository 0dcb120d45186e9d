"""Writes testdata/stats_vectors.json: inputs and the expected outputs of rewardkit_stats.

The t-based numbers are computed here from first principles with scipy (mean, standard error,
CR1 cluster-robust error, t quantiles), independently of rewardkit's own code; the bootstrap and
gate numbers are rewardkit's seeded results, pinned so a change shows up. Run from the repo root,
with rewardkit-stats and scipy installed (tox env ``stats``):

    python testdata/make_stats_vectors.py
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import scipy.stats

from rewardkit_stats import RegressionGate, interval, paired_interval


def reference_t(values: np.ndarray, clusters: np.ndarray | None, level: float) -> dict:
    n = values.size
    mean = float(values.mean())
    if clusters is None:
        se = float(values.std(ddof=1) / math.sqrt(n))
        df = n - 1
    else:
        labels = np.unique(clusters)
        g = labels.size
        sums = np.array([np.sum(values[clusters == label] - mean) for label in labels])
        se = math.sqrt(g / (g - 1) * float(np.sum(sums**2)) / n**2)
        df = g - 1
    half = float(scipy.stats.t.ppf(0.5 + level / 2, df)) * se
    return {"mean": mean, "se": se, "low": mean - half, "high": mean + half}


def main() -> None:
    rng = np.random.default_rng(20261201)
    cases = []
    for name, n, groups in (("small", 12, None), ("clustered", 60, 6), ("binary", 200, 20), ("two", 2, None)):
        base = rng.binomial(4, 0.6, size=n) / 4.0
        step = np.clip(base + rng.normal(-0.03, 0.2, size=n), 0, 1).round(4)
        clusters = None if groups is None else np.repeat(np.arange(groups), n // groups)
        case = {"name": name, "base": base.tolist(), "step": step.tolist()}
        if clusters is not None:
            case["clusters"] = [f"c{c}" for c in clusters]
        diff = step - base
        case["t"] = reference_t(diff, clusters, 0.95)
        case["t_naive"] = reference_t(diff, None, 0.95)
        boot = paired_interval(base, step, clusters=case.get("clusters"), method="bootstrap", seed=7)
        pinned = None if boot is None else {"mean": boot.mean, "low": boot.low, "high": boot.high}
        case["bootstrap_seed7"] = pinned
        gate = RegressionGate(tolerance=0.01, alpha=0.05, horizon=20)
        decision = gate.decide("100", 1, base, step, clusters=case.get("clusters"))
        case["gate_look1"] = (
            None
            if decision is None
            else {
                "fired": decision.fired,
                "upper_bound": decision.upper_bound,
                "alpha_spent": decision.alpha_spent,
            }
        )
        cases.append(case)
    undefined = {
        "one_value": interval([0.5]) is None,
        "one_cluster": interval([0.1, 0.2, 0.3], clusters=["a", "a", "a"]) is None,
    }
    out = {"level": 0.95, "cases": cases, "undefined": undefined}
    path = Path(__file__).with_name("stats_vectors.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path} ({len(cases)} cases)")


if __name__ == "__main__":
    main()
