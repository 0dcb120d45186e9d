"""The seeded simulation that calibrates the intervals and the gate (benchmark and test share it).

The model is the one ``docs/checkpoints.md`` ("Calibration") describes: a record's success
probability is ``logistic(cluster N(0, 1) + record N(0, 0.5))``, a value the mean of ``samples``
draws; an identical checkpoint shares every probability, a drop subtracts ``drop`` (clipped)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rewardkit_stats.gate import RegressionGate
from rewardkit_stats.intervals import Method, paired_interval


@dataclass(frozen=True)
class World:
    records: int = 500
    clusters: int = 50
    samples: int = 4

    def probabilities(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        per_cluster = self.records // self.clusters
        labels = np.repeat(np.arange(self.clusters), per_cluster)
        logits = rng.normal(0, 1, self.clusters)[labels] + rng.normal(0, 0.5, self.records)
        return 1.0 / (1.0 + np.exp(-logits)), labels

    def run(self, rng: np.random.Generator, probabilities: np.ndarray) -> np.ndarray:
        return rng.binomial(self.samples, probabilities) / self.samples


def coverage(
    simulations: int,
    method: Method,
    *,
    clustered: bool,
    drop: float = 0.05,
    seed: int = 0,
    world: World = World(),
) -> float:
    """Fraction of simulations whose 95% paired interval covers the true mean difference."""
    rng = np.random.default_rng(seed)
    covered = 0
    for index in range(simulations):
        probabilities, labels = world.probabilities(rng)
        lowered = np.clip(probabilities - drop, 0.0, 1.0)
        truth = float(np.mean(lowered - probabilities))
        base, step = world.run(rng, probabilities), world.run(rng, lowered)
        found = paired_interval(
            base, step, clusters=labels if clustered else None, method=method, seed=index, resamples=2_000
        )
        assert found is not None
        covered += found.low <= truth <= found.high
    return covered / simulations


def gate_runs(
    runs: int,
    *,
    checkpoints: int = 20,
    drop_from: int | None = None,
    drop: float = 0.05,
    tolerance: float = 0.01,
    seed: int = 0,
    world: World = World(),
) -> tuple[float, list[int]]:
    """(fraction of runs where the gate fired somewhere, the look at which it first fired, per run)."""
    rng = np.random.default_rng(seed)
    samples = world.samples
    gate = RegressionGate(
        tolerance=tolerance, alpha=0.05, horizon=checkpoints, base_samples=samples, step_samples=samples
    )
    fired_at: list[int] = []
    for _ in range(runs):
        probabilities, labels = world.probabilities(rng)
        base = world.run(rng, probabilities)
        lowered = np.clip(probabilities - drop, 0.0, 1.0)
        for look in range(1, checkpoints + 1):
            dropped = drop_from is not None and look >= drop_from
            step = world.run(rng, lowered if dropped else probabilities)
            decision = gate.decide(str(look), look, base, step, clusters=labels)
            if decision is not None and decision.fired:
                fired_at.append(look)
                break
    return len(fired_at) / runs, fired_at
