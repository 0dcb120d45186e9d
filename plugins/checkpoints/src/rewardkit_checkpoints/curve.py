"""``rewardkit checkpoints curve``: the learning curve from a log directory, as a table or a plot."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

from rewardkit.plugin import RewardkitError, install_line
from rewardkit_stats import paired_interval

_STEP = re.compile(r"^step-(\d+)\.summary\.json$")


def curve_rows(log_dir: str | Path) -> list[dict[str, Any]]:
    """One row per evaluated step: metric, difference from the base with its interval, the gate.

    A step is compared with the base only when both were made under the same generation settings,
    prompts and reward (catalog, providers, revisions, identity hashes, spec); otherwise refused.
    """
    from rewardkit.plugin import ProviderRecord, RevisionNotBumpedWarning
    from rewardkit_checkpoints.evaluate import check_same_reward, differing_keys, read_values

    root = Path(log_dir)
    base_summary = root / "base.summary.json"
    if not base_summary.is_file():
        raise RewardkitError(f"{root} has no base.summary.json: the base model was not evaluated there")
    base = json.loads(base_summary.read_text(encoding="utf-8"))
    _, base_values, clusters = read_values(root, "base")
    use_clusters = clusters if all(cluster is not None for cluster in clusters) else None
    rows = [
        {
            "step": "base",
            "value": base["value"],
            "diff": None,
            "low": None,
            "high": None,
            "gate": "-",
            "reward": reward_name(base),
            "metric": base.get("metric"),
        }
    ]
    steps = sorted(int(match.group(1)) for path in root.iterdir() if (match := _STEP.match(path.name)))
    for step in steps:
        name = f"step-{step}"
        path = root / f"{name}.summary.json"
        summary = json.loads(path.read_text(encoding="utf-8"))
        changed = differing_keys(base.get("generation"), summary.get("generation"), "generation.")
        if changed:
            raise RewardkitError(
                f"{path} was made under other generation settings or prompts than the base "
                f"({'; '.join(changed)}); the two cannot be compared"
            )
        try:
            step_providers = [ProviderRecord.from_json(item) for item in summary["providers"]]
        except (KeyError, TypeError, ValueError) as error:
            raise RewardkitError(f"{path} holds no readable provider record ({error})") from None
        # the base is the record, the step what is compared with it ("recorded ..., now ...")
        for note in check_same_reward(base_summary, base, step_providers, summary.get("spec")):
            warnings.warn(f"{path}: {note}", RevisionNotBumpedWarning, stacklevel=2)
        _, values, _ = read_values(root, name)
        found = paired_interval(base_values, values, clusters=use_clusters)
        gate_path = root / f"{name}.gate.json"
        gate = json.loads(gate_path.read_text(encoding="utf-8")) if gate_path.is_file() else None
        rows.append(
            {
                "step": step,
                "value": summary["value"],
                "diff": found.mean if found else None,
                "low": found.low if found else None,
                "high": found.high if found else None,
                "gate": "-" if gate is None else ("FIRED" if gate["fired"] else "held"),
                "tolerance": None if gate is None else gate.get("tolerance"),
            }
        )
    return rows


def reward_name(summary: dict[str, Any]) -> str:
    """The reward a summary was scored with, by its providers' names (``exact-match``, ``a + b``)."""
    names = [str(item.get("provider")) for item in summary.get("providers") or () if isinstance(item, dict)]
    return " + ".join(dict.fromkeys(names)) or "reward"


def curve_series(rows: list[dict[str, Any]], metric: str | None = None) -> dict[str, Any]:
    """What ``plot_curve`` draws, from ``curve_rows``: the points (the base at step 0), one interval
    per checkpoint (base + the paired difference's 95% interval), the gate's tolerance line
    (base - tolerance, when a gate decided) and the steps where it fired."""
    base = rows[0]
    steps = rows[1:]
    name = base.get("reward") or "reward"
    metric = metric or base.get("metric") or "reward"
    tolerances = [row["tolerance"] for row in steps if row.get("tolerance") is not None]
    return {
        "title": f"{name}: {metric} per checkpoint against the base model",
        "ylabel": f"{metric} ({name})",
        "base": base["value"],
        "x": [0, *(row["step"] for row in steps)],
        "y": [base["value"], *(row["value"] for row in steps)],
        # (step, low, high): each checkpoint's own interval, nothing drawn between checkpoints
        "intervals": [
            (row["step"], base["value"] + row["low"], base["value"] + row["high"])
            for row in steps
            if row["low"] is not None and row["high"] is not None
        ],
        "tolerance": tolerances[-1] if tolerances else None,
        "tolerance_line": base["value"] - tolerances[-1] if tolerances else None,
        "fired": [(row["step"], row["value"]) for row in steps if row["gate"] == "FIRED"],
    }


def plot_curve(rows: list[dict[str, Any]], path: str | Path, metric: str | None = None) -> Path:
    """The metric per step, the base at step 0, each checkpoint's paired 95% interval as an error
    bar, the gate's tolerance as a line and where it fired as a marker (needs matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise RewardkitError(
            f"--plot needs matplotlib: {install_line('rewardkit-checkpoints', 'plot')}"
        ) from error
    series = curve_series(rows, metric)
    base = series["base"]
    figure, axes = plt.subplots(figsize=(8, 4.5), dpi=100)
    axes.axhline(base, color="grey", linestyle="--", linewidth=1, label=f"base model ({base:.3f})")
    axes.plot(series["x"], series["y"], color="tab:blue", linewidth=1, alpha=0.6)
    axes.plot([0], [base], marker="s", color="black", linestyle="none", label="base at step 0")
    if series["intervals"]:
        xs = [step for step, _, _ in series["intervals"]]
        lows = [low for _, low, _ in series["intervals"]]
        highs = [high for _, _, high in series["intervals"]]
        axes.vlines(xs, lows, highs, color="tab:blue", linewidth=2, label="95% paired interval vs base")
        axes.plot(xs, lows, marker="_", markersize=10, color="tab:blue", linestyle="none")
        axes.plot(xs, highs, marker="_", markersize=10, color="tab:blue", linestyle="none")
    if len(series["x"]) > 1:
        xs, ys = series["x"][1:], series["y"][1:]
        axes.plot(xs, ys, marker="o", color="tab:blue", linestyle="none", label="checkpoint")
    if series["tolerance_line"] is not None:
        axes.axhline(
            series["tolerance_line"],
            color="tab:red",
            linestyle=":",
            label=f"gate tolerance (base - {series['tolerance']:g})",
        )
    for index, (step, value) in enumerate(series["fired"]):
        axes.plot(
            [step], [value], marker="X", markersize=12, color="tab:red", linestyle="none",
            label="gate fired" if index == 0 else None,
        )  # fmt: skip
        axes.annotate(
            f"gate fired at step {step}", (step, value), xytext=(-8, -4), textcoords="offset points",
            ha="right", va="top", color="tab:red",
        )  # fmt: skip
    axes.set_xlabel("training step")
    axes.set_ylabel(series["ylabel"])
    axes.set_title(series["title"])
    axes.legend(loc="best", fontsize="small")
    axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, format="png")
    plt.close(figure)
    return Path(path)
