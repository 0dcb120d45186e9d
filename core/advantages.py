"""Group-relative advantages (GRPO) from composed totals.

Within a group, a candidate's advantage is its total minus the mean of the group's non-null
totals, divided by a scale: the group's standard deviation (``group``), the batch's (``batch``),
or nothing (``none``). A null total (``onError: none``) is left out of the baseline and gets 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

Scaling = Literal["group", "batch", "none"]
SCALINGS: tuple[str, ...] = ("group", "batch", "none")
EPSILON = 1e-6


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and population standard deviation; ``(0.0, 0.0)`` for no values."""
    if not values:
        return 0.0, 0.0
    mean = math.fsum(values) / len(values)
    variance = math.fsum((value - mean) ** 2 for value in values) / len(values)
    return mean, math.sqrt(variance)


def group_advantages(
    totals_by_group: Sequence[Sequence[float | None]], scaling: Scaling = "group"
) -> list[list[float]]:
    """Advantages for every candidate of every group, in the same nesting and order."""
    if scaling not in SCALINGS:
        raise ValueError(f"advantage scaling must be one of {SCALINGS}, got {scaling!r}")
    batch_std = 1.0
    if scaling == "batch":
        _, batch_std = mean_std([total for group in totals_by_group for total in group if total is not None])
    out = []
    for group in totals_by_group:
        present = [total for total in group if total is not None]
        mean, group_std = mean_std(present)
        scale = group_std if scaling == "group" else batch_std if scaling == "batch" else 1.0
        divisor = scale + EPSILON if scaling != "none" else 1.0
        out.append([0.0 if total is None else (total - mean) / divisor for total in group])
    return out
