"""What the page's summary says about a results file: per component (and for the final reward) the
mean and standard deviation of the scored values, how many were scored, skipped and errored, the
reasons candidates were charged, a histogram; and the groups with no learning signal.

Computed here, once, rather than in the page: a 100,000-candidate file then opens at once, and the
numbers are the same ones a test (or the score job's summary) can check."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

__all__ = ["FINAL", "STATUSES", "component_summary", "histogram", "zero_variance_group_ids"]

FINAL = "final"  # the summary row of the composed reward, beside the components
STATUSES = ("scored", "skipped", "error")  # a component's status in a breakdown (the core's statuses)
HISTOGRAM_BINS = 20
TOP_REASONS = 12  # the reasons a summary lists by name; the rest are counted together


def histogram(values: Sequence[float], bins: int = HISTOGRAM_BINS) -> dict[str, Any]:
    """Equal-width bins over the values' range (one bin when all are equal): low, high and counts."""
    if not values:
        return {"lo": None, "hi": None, "counts": []}
    low, high = min(values), max(values)
    if low == high:
        return {"lo": low, "hi": high, "counts": [len(values)]}
    counts = [0] * bins
    width = (high - low) / bins
    for value in values:
        counts[min(int((value - low) / width), bins - 1)] += 1
    return {"lo": low, "hi": high, "counts": counts}


def _mean_std(values: Sequence[float]) -> tuple[float | None, float | None]:
    # the population standard deviation, as the score job's summary prints it
    if not values:
        return None, None
    mean = math.fsum(values) / len(values)
    return mean, math.sqrt(math.fsum((value - mean) ** 2 for value in values) / len(values))


def component_summary(rows: Sequence[dict[str, Any]], component: str) -> dict[str, Any]:
    """The summary of one component over every candidate (``FINAL``: of the final reward)."""
    values: list[float] = []
    statuses: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for row in rows:
        if component == FINAL:
            final = row.get("final")
            status = "scored" if final is not None else "error"
            value, reason = final, None
        else:
            part = row["breakdown"].get(component)
            if not isinstance(part, dict):
                continue
            status = str(part.get("status", "scored"))
            value, reason = part.get("value"), part.get("reason")
        statuses[status] += 1
        if status == "scored" and isinstance(value, (int, float)):
            values.append(float(value))
        if reason:
            reasons[str(reason)] += 1
    mean, std = _mean_std(values)
    named = reasons.most_common(TOP_REASONS)
    others = sum(reasons.values()) - sum(count for _, count in named)
    return {
        "name": component,
        "mean": mean,
        "std": std,
        "counts": {status: statuses.get(status, 0) for status in STATUSES},
        "reasons": [[reason, count] for reason, count in named]
        + ([["(other reasons)", others]] * bool(others)),
        "histogram": histogram(values),
    }


def zero_variance_group_ids(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The groups whose final rewards are all equal, the rule of ``rewardkit score``'s summary (finals
    that are None left out; fewer than two left counts too): GRPO learns nothing from them."""
    finals: dict[str, list[float]] = {}
    for row in rows:
        group = finals.setdefault(str(row["group_id"]), [])
        if row.get("final") is not None:
            group.append(float(row["final"]))
    return [group for group, values in finals.items() if len(values) < 2 or min(values) == max(values)]
