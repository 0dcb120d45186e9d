"""Confidence intervals for a mean and for paired differences, with or without clusters.

``method="t"``: a t interval, with ``clusters`` on the cluster-robust (CR1) standard error and G-1
degrees of freedom; ``method="bootstrap"``: a seeded percentile bootstrap over records or whole
clusters, in chunks so memory stays bounded (``docs/checkpoints.md``, "Statistics"). Each returns
``None`` when the interval is undefined: fewer than two values, or fewer than two clusters."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np

from rewardkit_stats.distributions import t_quantile

Method = Literal["t", "bootstrap"]
BOOTSTRAP_RESAMPLES = 10_000
_CHUNK_CELLS = 4_000_000  # resample indices held at once (at most 16 MB)


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float
    se: float
    n: int
    method: str
    level: float
    clusters: int | None = None

    def as_dict(self) -> dict[str, float | int | str | None]:
        return asdict(self)


def _as_values(values: Sequence[float] | np.ndarray, what: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{what} must be finite numbers")
    return array


def _cluster_codes(clusters: Sequence[object] | np.ndarray, n: int) -> np.ndarray:
    if len(clusters) != n:
        raise ValueError(f"clusters has {len(clusters)} labels for {n} values")
    _, codes = np.unique(np.asarray(clusters, dtype=object).astype(str), return_inverse=True)
    return codes.astype(np.int64)


def standard_error(values: np.ndarray, codes: np.ndarray | None) -> tuple[float, int]:
    """(standard error of the mean, degrees of freedom)."""
    n = values.size
    if codes is None:
        return float(values.std(ddof=1) / math.sqrt(n)), n - 1
    groups = int(codes.max()) + 1
    residual_sums = np.bincount(codes, weights=values - values.mean(), minlength=groups)
    variance = groups / (groups - 1) * float(np.sum(residual_sums**2)) / n**2
    return math.sqrt(variance), groups - 1


def interval(
    values: Sequence[float] | np.ndarray,
    *,
    clusters: Sequence[object] | np.ndarray | None = None,
    level: float = 0.95,
    method: Method = "t",
    seed: int = 0,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> Interval | None:
    """A two-sided ``level`` interval for the mean of ``values`` (see the module doc)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    if method not in ("t", "bootstrap"):
        raise ValueError(f"method must be 't' or 'bootstrap', got {method!r}")
    array = _as_values(values, "values")
    codes = _cluster_codes(clusters, array.size) if clusters is not None else None
    groups = int(codes.max()) + 1 if codes is not None and codes.size else None
    if array.size < 2 or (groups is not None and groups < 2):
        return None
    mean = float(array.mean())
    if method == "t":
        se, df = standard_error(array, codes)
        half = t_quantile(0.5 + level / 2.0, df) * se
        return Interval(mean, mean - half, mean + half, se, int(array.size), "t", level, groups)
    means = _bootstrap_means(array, codes, resamples, seed)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return Interval(
        mean, float(low), float(high), float(means.std(ddof=1)), int(array.size), "bootstrap", level, groups
    )


def _bootstrap_means(values: np.ndarray, codes: np.ndarray | None, resamples: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if codes is None:
        units_sum, units_size = values, None
    else:
        groups = int(codes.max()) + 1
        units_sum = np.bincount(codes, weights=values, minlength=groups)
        units_size = np.bincount(codes, minlength=groups).astype(np.float64)
    units = units_sum.size
    # Memory traffic decides the speed: 2-byte indices and 4-byte values, summed in float64
    # (a value's float32 rounding moves a mean by about 1e-8, far inside any interval).
    index_type = np.uint16 if units <= np.iinfo(np.uint16).max else np.int32
    gathered = units_sum.astype(np.float32)
    chunk = max(1, _CHUNK_CELLS // units)
    means = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        picks = rng.integers(0, units, size=(stop - start, units), dtype=index_type)
        totals = gathered[picks].sum(axis=1, dtype=np.float64)
        # records resampled: every draw weighs one; clusters: divide by the records drawn
        means[start:stop] = totals / units if units_size is None else totals / units_size[picks].sum(axis=1)
    return means


def paired_interval(
    base: Sequence[float] | np.ndarray,
    step: Sequence[float] | np.ndarray,
    *,
    clusters: Sequence[object] | np.ndarray | None = None,
    level: float = 0.95,
    method: Method = "t",
    seed: int = 0,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> Interval | None:
    """The interval of the mean of ``step - base``, record by record (same order, same length)."""
    base_values, step_values = _as_values(base, "base"), _as_values(step, "step")
    if base_values.size != step_values.size:
        raise ValueError(
            f"paired values need equal lengths: base {base_values.size}, step {step_values.size}"
        )
    return interval(
        step_values - base_values,
        clusters=clusters,
        level=level,
        method=method,
        seed=seed,
        resamples=resamples,
    )
