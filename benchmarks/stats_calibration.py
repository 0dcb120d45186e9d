"""Calibration of rewardkit_stats by seeded simulation (the model of rewardkit_stats.simulation).

500 records in 50 clusters of 10; success probability logistic(N(0,1) cluster + N(0,0.5)
record); 4 samples per record per checkpoint; a drop subtracts 0.05 from every probability;
tolerance 0.01, level 0.95. Reports the coverage of 95% paired intervals (cluster-robust t,
cluster bootstrap, naive t) over ``--simulations`` runs, and for the gate over ``--runs`` runs of
20 checkpoints: the false-alarm rate with every checkpoint identical to the base, and the
fraction of runs that catch a drop starting at checkpoint 10, with the mean look it fired at.
Also times ``interval`` on 5,000 records with 10,000 bootstrap resamples.

    python benchmarks/stats_calibration.py [--simulations 2000] [--runs 1000]

Needs rewardkit-stats (``pip install . ./plugins/stats``; tox env ``stats`` has it).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _report import report

from rewardkit_stats import interval
from rewardkit_stats.simulation import coverage, gate_runs


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--simulations", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    rows = []
    for label, method, clustered in (
        ("cluster-robust t (CR1, G-1 df)", "t", True),
        ("cluster bootstrap", "bootstrap", True),
        ("naive t (records independent)", "t", False),
    ):
        started = time.perf_counter()
        found = coverage(args.simulations, method, clustered=clustered, seed=1)
        rows.append(
            {
                "check": f"coverage: {label}",
                "value": found,
                "target": "0.935-0.965",
                "seconds": time.perf_counter() - started,
            }
        )
    started = time.perf_counter()
    alarms, _ = gate_runs(args.runs, seed=2)
    rows.append(
        {
            "check": "gate false alarms, 20 identical checkpoints",
            "value": alarms,
            "target": "<= 0.05",
            "seconds": time.perf_counter() - started,
        }
    )
    started = time.perf_counter()
    caught, looks = gate_runs(args.runs, drop_from=10, seed=3)
    mean_look = float(np.mean(looks)) if looks else float("nan")
    rows.append(
        {
            "check": "gate catches a drop from checkpoint 10",
            "value": caught,
            "target": ">= 0.95",
            "seconds": time.perf_counter() - started,
        }
    )
    rows.append({"check": "  mean look at which it fired", "value": mean_look, "target": "", "seconds": 0.0})
    values = (
        np.random.default_rng(0).binomial(4, 0.6, 5000) / 4
        - np.random.default_rng(1).binomial(4, 0.6, 5000) / 4
    )
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        interval(values, method="bootstrap", resamples=10_000)
        timings.append(time.perf_counter() - started)
    rows.append(
        {
            "check": "bootstrap 5,000 records x 10,000 resamples (best of 3)",
            "value": min(timings),
            "target": "< 1 s",
            "seconds": sum(timings),
        }
    )
    report("stats_calibration", rows, {"simulations": args.simulations, "runs": args.runs})


if __name__ == "__main__":
    main()
