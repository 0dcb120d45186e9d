"""Change detection on the signals that stay stationary under honest training (``divergence``,
``reward_gain``, ``reward_gain/unsolved``, ``length_coupling``): a one-sided CUSUM per signal, its
thresholds from ``calibration``; and the level check, which reports at the end of the warm-up a
reward that was broken from the start (a change detector never sees a change there)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

# The smallest baseline spread per signal, so a warm-up that happened to be flat does not make
# every later wobble a many-sigma excursion.
# The gains are in units of the reference (0.02: the reward paying as if 2% more answers were right).
FLOORS: dict[str, float] = {
    "divergence": 0.05,
    "reward_gain": 0.02,
    "reward_gain/unsolved": 0.02,
    "length_coupling": 0.1,
}
# The lowest in-control level per signal. An honest run's reward-length coupling starts negative
# (right answers are the short ones) and fades toward 0 as accuracy saturates; that fade is no
# hack, so only a coupling above max(baseline, 0) accumulates: reward rising with length.
LEAST_BASELINE: dict[str, float] = {"length_coupling": 0.0}
# The CUSUM's allowance k, in baseline standard deviations: drifts smaller than this never add up.
SLACK = 0.5
# Recent values quoted in an alarm's evidence.
EVIDENCE_VALUES = 5
# The level check: a reward ordering more than this share of the reference's pairs against it over
# the warm-up is reported (0.5 is a reward blind to the reference; the noisiest honest proxy of the
# calibration, a judge flipping 10% of its verdicts, orders about 0.2 of them against it).
LEVEL_DIVERGENCE = 0.3
# ... and only from this many pairs over the warm-up, so that a handful of pairs reports nothing.
LEVEL_PAIRS = 100


@dataclass(frozen=True)
class Alarm:
    """A detected change: the signal, the step it was raised at, the estimated step the change
    began, and one sentence of evidence (baseline, recent values, the statistic and its threshold)."""

    signal: str
    step: int
    began: int
    evidence: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class Cusum:
    """One-sided (upward) CUSUM on one signal.

    The first ``warmup`` defined values set the baseline: ``mu0`` their mean (at least
    ``LEAST_BASELINE[signal]`` where listed), ``sigma0`` the larger of their standard deviation
    (ddof 1) and ``floor``. Each later value ``x`` updates
    ``S = max(0, S + (x - mu0) / sigma0 - SLACK)``; the alarm is raised when ``S > threshold``, once:
    the detector then stays alarmed. ``began`` is the first step after the last one where ``S`` was
    0. NaN values are skipped (they neither count towards the warm-up nor move ``S``).
    """

    def __init__(self, signal: str, threshold: float, warmup: int, floor: float) -> None:
        if warmup < 2:
            raise ValueError(f"warmup must be at least 2 values, got {warmup}")
        if not threshold > 0 or not floor > 0:
            raise ValueError(f"threshold and floor must be positive, got {threshold} and {floor}")
        self.signal = signal
        self.threshold = threshold
        self.warmup = warmup
        self.floor = floor
        self.statistic = 0.0
        self.alarm: Alarm | None = None
        self.baseline: tuple[float, float] | None = None  # (mu0, sigma0) once warmed up
        self._warmup_values: list[float] = []
        self._climb_began: int | None = None
        self._recent: list[tuple[int, float]] = []

    def update(self, step: int, value: float) -> Alarm | None:
        """Feed the signal's value at ``step``; the alarm when this value raises it, else None."""
        if self.alarm is not None or value is None or math.isnan(value):
            return None
        if self.baseline is None:
            self._warmup_values.append(float(value))
            if len(self._warmup_values) == self.warmup:
                values = np.asarray(self._warmup_values)
                mean = max(float(values.mean()), LEAST_BASELINE.get(self.signal, -math.inf))
                self.baseline = (mean, max(float(values.std(ddof=1)), self.floor))
            return None
        mu0, sigma0 = self.baseline
        self._recent = [*self._recent[-(EVIDENCE_VALUES - 1) :], (step, float(value))]
        self.statistic = max(0.0, self.statistic + (value - mu0) / sigma0 - SLACK)
        if self.statistic == 0.0:
            self._climb_began = None
            return None
        if self._climb_began is None:
            self._climb_began = step
        if self.statistic <= self.threshold:
            return None
        self.alarm = Alarm(self.signal, step, self._climb_began, self._evidence(mu0, sigma0))
        return self.alarm

    def _evidence(self, mu0: float, sigma0: float) -> str:
        recent = ", ".join(f"{value:.3g} (step {step})" for step, value in self._recent)
        return (
            f"{self.signal} rose from its baseline {mu0:.3g} ± {sigma0:.3g} (first {self.warmup} values) "
            f"to {recent}; CUSUM {self.statistic:.3g} > threshold {self.threshold:.3g}"
        )


class LevelCheck:
    """Findings about the reward as it is from step 0, reported once at the end of the warm-up (a
    reward broken from the start shows no change for a CUSUM to find):

    - ``level/divergence``: over the first ``warmup`` steps that had reference pairs, the reward
      ordered more than ``LEVEL_DIVERGENCE`` of the pairs against the reference (at least
      ``LEVEL_PAIRS`` pairs): a reward that disagrees with the reference from the start;
    - ``level/zero_variance``: every group of the first ``warmup`` grouped steps had all its
      rewards equal: GRPO had no learning signal at all.

    Each finding is an ``Alarm`` raised at the step that ends its warm-up, ``began`` the first step
    counted.
    """

    def __init__(self, warmup: int) -> None:
        if warmup < 1:
            raise ValueError(f"warmup must be at least 1 step, got {warmup}")
        self.warmup = warmup
        self._discordant = 0.0
        self._pairs = 0
        self._pair_steps: list[int] = []
        self._zero_variance = 0
        self._groups = 0
        self._group_steps: list[int] = []

    def update(
        self, step: int, discordant: float, pairs: int, zero_variance: int, groups: int
    ) -> list[Alarm]:
        """Feed one finished step's discordance counts and its zero-variance groups of ``groups``
        examined (0 and 0 for what the step did not have); the findings this step raises."""
        found: list[Alarm] = []
        if pairs > 0 and len(self._pair_steps) < self.warmup:
            self._discordant += discordant
            self._pairs += pairs
            self._pair_steps.append(step)
            share = self._discordant / self._pairs
            if (
                len(self._pair_steps) == self.warmup
                and self._pairs >= LEVEL_PAIRS
                and share > LEVEL_DIVERGENCE
            ):
                found.append(
                    Alarm(
                        "level/divergence",
                        step,
                        self._pair_steps[0],
                        f"over the warm-up's {self.warmup} steps the reward ordered {share:.3g} of the "
                        f"reference's {self._pairs} pairs against it (> {LEVEL_DIVERGENCE}; 0.5 is blind "
                        "to the reference): it disagrees with the reference from the start",
                    )
                )
        if groups > 0 and len(self._group_steps) < self.warmup:
            self._zero_variance += zero_variance
            self._groups += groups
            self._group_steps.append(step)
            if len(self._group_steps) == self.warmup and self._zero_variance == self._groups:
                found.append(
                    Alarm(
                        "level/zero_variance",
                        step,
                        self._group_steps[0],
                        f"all {self._groups} groups of the warm-up's {self.warmup} steps had equal "
                        "rewards: the reward gives GRPO no learning signal",
                    )
                )
        return found
