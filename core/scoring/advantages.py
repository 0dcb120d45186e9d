"""Group-relative advantages (GRPO) from composed totals (``docs/bindings.md``, "Advantages").

A candidate's advantage is its total minus the mean of its group's non-null totals, divided by a
scale plus ``eps``: the group's standard deviation (``group``), the batch's (``batch``), or nothing
(``none``, no ``eps`` either); the sample one (``n - 1``, as TRL and verl) or the population one. A
null total (``onError: none``) is left out of the baseline and gets 0, as does a group with one
scored candidate (it has nothing to be relative to)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Literal

Scaling = Literal["group", "batch", "none"]
SCALINGS: tuple[str, ...] = ("group", "batch", "none")
StdKind = Literal["sample", "population"]
STD_KINDS: tuple[str, ...] = ("sample", "population")
EPSILON = 1e-6


def mean_std(values: Sequence[float], kind: StdKind = "population") -> tuple[float, float]:
    """Mean and standard deviation (population, or ``sample`` with ``n - 1``); ``(0.0, 0.0)`` for none."""
    if not values:
        return 0.0, 0.0
    mean = math.fsum(values) / len(values)
    divisor = len(values) - 1 if kind == "sample" else len(values)
    if divisor < 1:  # one value: no spread of either kind
        return mean, 0.0
    return mean, math.sqrt(math.fsum([(value - mean) ** 2 for value in values]) / divisor)


def group_advantages(
    totals_by_group: Sequence[Sequence[float | None]],
    scaling: Scaling = "group",
    *,
    std: StdKind = "sample",
    eps: float = EPSILON,
    batch_std: float | None = None,
) -> list[list[float]]:
    """Advantages for every candidate of every group, in the same nesting and order; ``batch_std``
    gives the ``batch`` scale computed elsewhere (by a job that streams its groups)."""
    if scaling not in SCALINGS:
        raise ValueError(f"advantage scaling must be one of {SCALINGS}, got {scaling!r}")
    if std not in STD_KINDS:
        raise ValueError(f"advantage standard deviation must be one of {STD_KINDS}, got {std!r}")
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps >= 0):
        raise ValueError(f"advantage eps must be a finite number >= 0, got {eps!r}")
    scale_of_batch = 1.0 if batch_std is None else batch_std
    if scaling == "batch" and batch_std is None:
        present = [total for group in totals_by_group for total in group if total is not None]
        _, scale_of_batch = mean_std(present, std)
    out = []
    for group in totals_by_group:
        present = [total for total in group if total is not None]
        mean, group_std = mean_std(present, std)
        scale = group_std if scaling == "group" else scale_of_batch
        divisor = 1.0 if scaling == "none" else scale + eps
        # Under two scored totals nothing is relative; a 0 divisor (eps 0, all equal) has 0 differences.
        if len(present) < 2 or divisor == 0:
            out.append([0.0] * len(group))
        else:
            out.append([0.0 if total is None else (total - mean) / divisor for total in group])
    return out


def batch_advantages(
    totals: Sequence[float | None],
    sizes: Sequence[int],
    scaling: Scaling = "group",
    *,
    std: StdKind = "sample",
    eps: float = EPSILON,
) -> list[float]:
    """``group_advantages`` of a batch held flat: totals in batch order and each group's size."""
    if all(size == 1 for size in sizes):  # groups of one (OpenRLHF's shape): nothing to be relative to
        group_advantages((), scaling, std=std, eps=eps)  # the settings are still checked
        return [0.0] * len(totals)
    starts = [0, *itertools.accumulate(sizes)]
    groups = [totals[start:stop] for start, stop in itertools.pairwise(starts)]
    return [advantage for group in group_advantages(groups, scaling, std=std, eps=eps) for advantage in group]
