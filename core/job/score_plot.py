"""``rewardkit score --plot FILE``: histograms of the final rewards and of each component's values.

matplotlib is imported when a plot is asked for (the core does not need it otherwise); without it
the job stops before scoring anything, with one line naming the core's ``plot`` extra."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rewardkit.contracts.errors import RewardkitError
from rewardkit.seam.extras import CORE_DISTRIBUTION, MissingExtraError, install_line

PLOT_EXTRA = "plot"
DISTINCT_AS_BARS = 20  # at most this many distinct values: one bar per value, else a histogram


def require_matplotlib() -> Any:
    """``matplotlib.pyplot`` on the file-only ``Agg`` backend, or the one-line install error."""
    try:
        import matplotlib
    except ImportError as error:
        raise MissingExtraError(
            "`rewardkit score --plot` needs matplotlib, which is not installed: "
            + install_line(CORE_DISTRIBUTION, PLOT_EXTRA)
        ) from error
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    return pyplot


def read_values(out: Path, components: Sequence[str]) -> tuple[list[float], dict[str, list[float]]]:
    """The final rewards and each component's scored values, read from the job's output lines."""
    finals: list[float] = []
    values: dict[str, list[float]] = {name: [] for name in components}
    with out.open("rb") as lines:
        for line in lines:
            row = json.loads(line)
            if row.get("final") is not None:
                finals.append(float(row["final"]))
            for name, entry in (row.get("breakdown") or {}).items():
                if name in values and entry.get("status") == "scored" and entry.get("value") is not None:
                    values[name].append(float(entry["value"]))
    return finals, values


def _draw(axis: Any, data: Sequence[float], color: str) -> None:
    distinct = sorted(set(data))
    if len(distinct) <= DISTINCT_AS_BARS:
        counts = [sum(1 for value in data if value == point) for point in distinct]
        span = (distinct[-1] - distinct[0]) or 1.0
        width = span / max(len(distinct), 2) * 0.6 if len(distinct) > 1 else 0.1
        axis.bar(distinct, counts, width=width, color=color, edgecolor="white")
        for point, count in zip(distinct, counts):
            axis.annotate(str(count), (point, count), ha="center", va="bottom", fontsize="small")
        axis.set_ylim(0, max(counts) * 1.18)
        if len(distinct) <= 10:
            axis.set_xticks(distinct)
    else:
        axis.hist(data, bins=min(40, int(math.sqrt(len(data))) + 1), color=color, edgecolor="white")


def plot_distribution(
    out: Path, plot: Path, components: Sequence[str], *, title: str, zero_variance: tuple[int, int]
) -> None:
    """Write ``plot`` (any format matplotlib knows by the suffix): a histogram of the final rewards
    (titled with the zero-variance groups), then one per component."""
    pyplot = require_matplotlib()
    finals, values = read_values(out, components)
    panels = [("final reward", finals), *((f"component {name!r}", values[name]) for name in components)]
    figure, axes = pyplot.subplots(len(panels), 1, figsize=(7, 2.6 * len(panels)), squeeze=False)
    zero, groups = zero_variance
    share = f"{zero / groups:.0%}" if groups else "-"
    for index, (label, data) in enumerate(panels):
        axis = axes[index][0]
        if data:
            _draw(axis, data, "tab:blue" if index == 0 else "tab:gray")
            mean = sum(data) / len(data)
            axis.axvline(mean, color="tab:red", linestyle="--", label=f"mean {mean:.3f}")
            axis.legend(loc="upper right", fontsize="small")
        else:
            axis.text(0.5, 0.5, "no scored values", ha="center", va="center", transform=axis.transAxes)
        heading = f"{label}: {len(data)} values"
        if index == 0:
            heading += f"; {zero} of {groups} groups ({share}) all equal, no GRPO signal"
        axis.set_title(heading, fontsize="medium")
        axis.set_ylabel("candidates")
    axes[-1][0].set_xlabel("reward")
    figure.suptitle(title)
    figure.tight_layout()
    try:
        plot.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(plot, dpi=100)
    except (OSError, ValueError) as error:
        raise RewardkitError(f"--plot {plot}: cannot write the plot: {error}") from None
    finally:
        pyplot.close(figure)
