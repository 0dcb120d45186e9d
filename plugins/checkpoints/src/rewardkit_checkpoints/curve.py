"""``rewardkit checkpoints curve``: the learning curve from a log directory, as a table or a plot."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

from rewardkit.errors import RewardkitError
from rewardkit.extras import install_line
from rewardkit.stats import paired_interval

_STEP = re.compile(r"^step-(\d+)\.summary\.json$")


def curve_rows(log_dir: str | Path) -> list[dict[str, Any]]:
    """One row per evaluated step: metric, difference from the base with its interval, the gate.

    A step is compared with the base only when both were made under the same generation settings,
    prompts and reward (catalog, providers, revisions, identity hashes, spec); otherwise refused.
    """
    from rewardkit.provenance import ProviderRecord, RevisionNotBumpedWarning
    from rewardkit_checkpoints.evaluate import check_same_reward, differing_keys, read_values

    root = Path(log_dir)
    base_summary = root / "base.summary.json"
    if not base_summary.is_file():
        raise RewardkitError(f"{root} has no base.summary.json: the base model was not evaluated there")
    base = json.loads(base_summary.read_text(encoding="utf-8"))
    _, base_values, clusters = read_values(root, "base")
    use_clusters = clusters if all(cluster is not None for cluster in clusters) else None
    rows = [{"step": "base", "value": base["value"], "diff": None, "low": None, "high": None, "gate": "-"}]
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
            }
        )
    return rows


def plot_curve(rows: list[dict[str, Any]], path: str | Path, metric: str = "reward") -> Path:
    """The metric per step with the paired 95% band around the base line (needs matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise RewardkitError(
            f"--plot needs matplotlib: {install_line('rewardkit-checkpoints', 'plot')}"
        ) from error
    base = rows[0]["value"]
    steps = rows[1:]
    xs = [row["step"] for row in steps]
    figure, axes = plt.subplots(figsize=(8, 4.5), dpi=100)
    axes.axhline(base, color="grey", linestyle="--", label=f"base model ({base:.3f})")
    if steps:
        axes.plot(
            xs, [row["value"] for row in steps], marker="o", color="tab:blue", label=f"checkpoint {metric}"
        )
        banded = [row for row in steps if row["low"] is not None]
        axes.fill_between(
            [row["step"] for row in banded],
            [base + row["low"] for row in banded],
            [base + row["high"] for row in banded],
            color="tab:blue",
            alpha=0.2,
            label="95% paired interval vs base",
        )
        for row in steps:
            if row["gate"] == "FIRED":
                axes.annotate(
                    "gate fired",
                    (row["step"], row["value"]),
                    xytext=(-6, 8),
                    textcoords="offset points",
                    ha="right",
                    color="tab:red",
                )
    axes.set_xlabel("training step")
    axes.set_ylabel(metric)
    axes.set_title("checkpoint evaluation against the base model")
    axes.legend(loc="best")
    axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, format="png")
    plt.close(figure)
    return Path(path)
