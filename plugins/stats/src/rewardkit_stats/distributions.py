"""Student's t quantiles without scipy (numpy is its one numeric dependency), checked against
``scipy.stats.t``.

The t CDF is the regularized incomplete beta function by its continued fraction (modified Lentz);
the quantile inverts the CDF by bisection to 1e-12."""

from __future__ import annotations

import functools
import math

_EPS = 1e-15
_TINY = 1e-300


def _beta_fraction(a: float, b: float, x: float) -> float:
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        even = m * (b - m) * x / ((qam + m2) * (a + m2))
        odd = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        for aa in (even, odd):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c if abs(1.0 + aa / c) > _TINY else _TINY
            delta = d * c
            h *= delta
        if abs(delta - 1.0) < _EPS:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def t_cdf(value: float, df: float) -> float:
    tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + value * value))
    return 1.0 - tail if value > 0 else tail


@functools.lru_cache(maxsize=4096)
def t_quantile(probability: float, df: float) -> float:
    """The ``probability`` quantile of Student's t with ``df`` degrees of freedom."""
    if not 0.0 < probability < 1.0:
        raise ValueError(f"a quantile needs 0 < probability < 1, got {probability}")
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    if probability == 0.5:
        return 0.0
    upper = probability > 0.5
    target = probability if upper else 1.0 - probability
    low, high = 0.0, 1.0
    while t_cdf(high, df) < target:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        low, high = (middle, high) if t_cdf(middle, df) < target else (low, middle)
        if high - low < 1e-12 * max(1.0, high):
            break
    value = (low + high) / 2.0
    return value if upper else -value
