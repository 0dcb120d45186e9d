"""The regression gate: stop training when a checkpoint's drop against the base is real and large.

It fires when the one-sided upper bound of ``step - base`` lies below ``-tolerance``, and holds the
false-alarm rate over a whole run at ``alpha``, asymptotically (``docs/checkpoints.md``, "The gate,
and false alarms over a whole run"): the looks share one base, so they correlate with ``rho =
(1/m_base) / (1/m_base + 1/m_step)``; the first ``horizon`` looks share one many-to-one (Dunnett)
critical value for ``0.95 * alpha``, and look ``k`` past them spends ``0.05 * alpha * 6 / (pi**2 *
(k - horizon)**2)``. Measured by ``benchmarks/stats_calibration.py``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist

import numpy as np

from rewardkit_stats.distributions import t_quantile
from rewardkit_stats.intervals import Interval, Method, paired_interval

_POWER = 0.8
_PLANNED_SHARE = 0.95
_NORMAL_DF = 30  # from here on the critical value stays on the normal scale
_GRID = np.linspace(-9.0, 9.0, 3601)
_DENSITY = np.exp(-0.5 * _GRID**2) / math.sqrt(2 * math.pi)


def many_to_one_critical_value(looks: int, rho: float, alpha: float) -> float:
    """``c`` with ``P(max of looks equicorrelated N(0,1) > c) = alpha`` (correlation ``rho``)."""
    if not 0.0 <= rho < 1.0:
        raise ValueError(f"the correlation between looks must be in [0, 1), got {rho}")
    shared = math.sqrt(rho) * _GRID
    scale = math.sqrt(1.0 - rho)

    def exceed(c: float) -> float:
        inside = (0.5 * (1.0 + np.vectorize(math.erf)((c + shared) / scale / math.sqrt(2.0)))) ** looks
        return 1.0 - float(np.trapezoid(_DENSITY * inside, _GRID))

    low, high = 0.0, 10.0
    for _ in range(80):
        middle = (low + high) / 2.0
        low, high = (middle, high) if exceed(middle) > alpha else (low, middle)
    return high


@dataclass(frozen=True)
class GateDecision:
    step: str
    look: int
    fired: bool
    difference: float
    interval: Interval
    upper_bound: float
    alpha_spent: float
    tolerance: float
    min_detectable_drop: float
    rule: str

    def message(self) -> str:
        verdict = "FIRED" if self.fired else "held"
        return (
            f"gate {verdict} at step {self.step} (look {self.look}): step - base = {self.difference:+.4f}, "
            f"{self.interval.level:.0%} interval [{self.interval.low:+.4f}, {self.interval.high:+.4f}], "
            f"one-sided upper bound {self.upper_bound:+.4f} at alpha {self.alpha_spent:.2e}; "
            f"fires when it is below -{self.tolerance:g}; this look detects drops of "
            f"{self.min_detectable_drop:.4f} or more with 80% probability ({self.rule})"
        )

    def as_dict(self) -> dict[str, object]:
        return asdict(self)  # the interval as its own as_dict()


class RegressionGate:
    def __init__(
        self,
        *,
        tolerance: float = 0.01,
        alpha: float = 0.05,
        horizon: int = 20,
        method: Method = "t",
        level: float = 0.95,
        seed: int = 0,
        base_samples: int = 1,
        step_samples: int = 1,
    ) -> None:
        if tolerance < 0:
            raise ValueError(f"gate tolerance must be >= 0, got {tolerance}")
        if not 0 < alpha < 1:
            raise ValueError(f"gate alpha must be between 0 and 1, got {alpha}")
        if horizon < 1:
            raise ValueError(f"gate horizon must be at least 1, got {horizon}")
        self.tolerance = tolerance
        self.alpha = alpha
        self.horizon = horizon
        self.method: Method = method
        self.level = level
        self.seed = seed
        if base_samples < 1 or step_samples < 1:
            raise ValueError("base_samples and step_samples must be at least 1")
        self.rho = (1 / base_samples) / (1 / base_samples + 1 / step_samples)
        self.planned_critical = many_to_one_critical_value(horizon, self.rho, _PLANNED_SHARE * alpha)

    @property
    def rule(self) -> str:
        return (
            f"upper bound of (step - base) < -{self.tolerance:g}; "
            f"false alarms over the run <= {self.alpha:g}: "
            f"many-to-one critical value {self.planned_critical:.3f} (normal scale) for {self.horizon} looks "
            f"sharing one base (rho {self.rho:.2f}), then 1/k^2 alpha spending"
        )

    def alpha_at(self, look: int) -> float:
        """The one-sided error this look spends (normal scale)."""
        if look < 1:
            raise ValueError(f"looks count from 1, got {look}")
        if look <= self.horizon:
            return 1.0 - NormalDist().cdf(self.planned_critical)
        return (1 - _PLANNED_SHARE) * self.alpha * 6.0 / (math.pi**2 * (look - self.horizon) ** 2)

    def decide(
        self,
        step: str,
        look: int,
        base: Sequence[float] | np.ndarray,
        values: Sequence[float] | np.ndarray,
        clusters: Sequence[object] | np.ndarray | None = None,
    ) -> GateDecision | None:
        """The decision at one look, or None when no interval is defined (too few records/clusters)."""
        shown = paired_interval(
            base, values, clusters=clusters, level=self.level, method=self.method, seed=self.seed
        )
        if shown is None:
            return None
        alpha = self.alpha_at(look)
        df = (shown.clusters or shown.n) - 1
        if self.method == "t" and df < _NORMAL_DF:
            critical, power = t_quantile(1.0 - alpha, df), t_quantile(_POWER, df)
        else:
            critical, power = NormalDist().inv_cdf(1.0 - alpha), NormalDist().inv_cdf(_POWER)
        upper = shown.mean + critical * shown.se
        return GateDecision(
            step=str(step),
            look=look,
            fired=upper < -self.tolerance,
            difference=shown.mean,
            interval=shown,
            upper_bound=upper,
            alpha_spent=alpha,
            tolerance=self.tolerance,
            min_detectable_drop=self.tolerance + (critical + power) * shown.se,
            rule=self.rule,
        )
