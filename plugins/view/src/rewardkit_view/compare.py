"""``rewardkit compare A B ROLLOUTS``: two rewards on the same rollouts, without re-running the policy.

A side is a configuration (scored here on ROLLOUTS by ``rewardkit score``, in a child process, so the
results and the run manifest are exactly the ones that command writes) or a results file already
scored. The comparison pairs the candidates by trajectory id and reports, after both sides'
provenance: the agreement per component and on the final reward, the candidates whose reward changed
(and by how much), the groups where an advantage changed sign, and the candidates one reward pays
and the other does not ("pays": a final above zero)."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardkit.plugin import format_table
from rewardkit_view.inputs import Results, ViewInputError, read_results
from rewardkit_view.summary import FINAL

__all__ = ["CONFIG_SUFFIXES", "Side", "compare", "format_comparison", "load_side", "sign"]

CONFIG_SUFFIXES = (".yaml", ".yml", ".toml")
SAME = 1e-9  # two rewards closer than this are the same reward (they are written as floats)


@dataclass(frozen=True)
class Side:
    """One side of a comparison: what the user named, and its scored results."""

    label: str
    results: Results
    scored_here: bool  # a configuration this command scored, rather than a results file given


def _rewardkit_command() -> list[str]:
    # the console script of the interpreter running us, so the child scores with the same
    # installation (and plugins) as this process; else the one on PATH
    beside = Path(sys.executable).with_name("rewardkit")
    found = str(beside) if beside.is_file() else shutil.which("rewardkit")
    if found is None:
        raise ViewInputError("cannot find the `rewardkit` command to score a configuration with")
    return [found]


def load_side(source: str, rollouts: str | None, overrides: Sequence[str], label: str, workdir: Path) -> Side:
    """A results file as it is, or a configuration scored on ``rollouts`` with its ``overrides``."""
    path = Path(source)
    if path.suffix.lower() not in CONFIG_SUFFIXES:
        if overrides:
            raise ViewInputError(
                f"{label}: {source} is a results file; key=value overrides apply to configurations"
            )
        return Side(source, read_results(path), scored_here=False)
    if rollouts is None:
        raise ViewInputError(f"{label}: {source} is a configuration: name the ROLLOUTS to score it on")
    out = workdir / f"{label}.jsonl"
    command = [
        *_rewardkit_command(),
        "score",
        str(path),
        f"rl.data.rollouts_path={Path(rollouts).resolve()}",
        *overrides,
        "--out",
        str(out),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise ViewInputError(
            f"{label}: `rewardkit score {source}` failed (exit {done.returncode}): " + " | ".join(tail)
        )
    shown = " ".join([source, *overrides])
    return Side(shown, read_results(out), scored_here=True)


def sign(value: float | None) -> int:
    """-1, 0 or 1; an advantage within ``SAME`` of zero (or missing) is no learning signal: 0."""
    if value is None or abs(value) <= SAME:
        return 0
    return 1 if value > 0 else -1


def _pays(final: float | None) -> bool:
    return final is not None and final > SAME


def _same(left: float | None, right: float | None) -> bool:
    if left is None or right is None:
        return left is right
    return math.isclose(left, right, rel_tol=0.0, abs_tol=SAME)


def _aligned(a: Side, b: Side) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The candidates of both sides, paired by trajectory id in B's order; the same rollouts or an error."""
    by_id = {str(row["trajectory_id"]): row for row in a.results.rows}
    pairs = []
    missing = []
    for row in b.results.rows:
        other = by_id.pop(str(row["trajectory_id"]), None)
        if other is None:
            missing.append(str(row["trajectory_id"]))
        elif other["group_id"] != row["group_id"]:
            raise ViewInputError(
                f"candidate {row['trajectory_id']} is in group {other['group_id']} under A and "
                f"{row['group_id']} under B: these are not the same rollouts"
            )
        else:
            pairs.append((other, row))
    if missing or by_id:
        raise ViewInputError(
            f"A and B did not score the same rollouts: {len(missing)} candidates only in B "
            f"(first {missing[:3]}), {len(by_id)} only in A (first {list(by_id)[:3]})"
        )
    return pairs


def _part(row: dict[str, Any], component: str) -> tuple[Any, Any]:
    if component == FINAL:
        return "scored", row.get("final")
    part = row["breakdown"].get(component)
    return (None, None) if not isinstance(part, dict) else (part.get("status"), part.get("value"))


def compare(a: Side, b: Side) -> dict[str, Any]:
    """The comparison, as JSON: what ``format_comparison`` prints and the page shows."""
    pairs = _aligned(a, b)
    shared = [name for name in a.results.component_names() if name in set(b.results.component_names())]
    agreement = []
    for component in [*shared, FINAL]:
        same = 0
        for left, right in pairs:
            (status_a, value_a), (status_b, value_b) = _part(left, component), _part(right, component)
            same += status_a == status_b and _same(value_a, value_b)
        agreement.append(
            {"component": component, "same": same, "total": len(pairs), "share": same / len(pairs)}
        )
    changed: list[dict[str, Any]] = []
    flips: dict[str, list[dict[str, Any]]] = {}
    only_a, only_b = [], []
    for left, right in pairs:
        trajectory = str(right["trajectory_id"])
        final_a, final_b = left.get("final"), right.get("final")
        if not _same(final_a, final_b):
            delta = None if final_a is None or final_b is None else final_b - final_a
            changed.append(
                {
                    "t": trajectory,
                    "group": str(right["group_id"]),
                    "fa": final_a,
                    "fb": final_b,
                    "delta": delta,
                }
            )
        if sign(left.get("advantage")) != sign(right.get("advantage")):
            flips.setdefault(str(right["group_id"]), []).append(
                {"t": trajectory, "aa": left.get("advantage"), "ab": right.get("advantage")}
            )
        if _pays(final_a) and not _pays(final_b):
            only_a.append(trajectory)
        elif _pays(final_b) and not _pays(final_a):
            only_b.append(trajectory)
    # largest change first; a candidate that has a reward on one side only leads
    changed.sort(key=lambda item: -math.inf if item["delta"] is None else -abs(item["delta"]))
    return {
        "a": {"label": a.label, "provenance": a.results.manifest, "scored_here": a.scored_here},
        "b": {"label": b.label, "provenance": b.results.manifest, "scored_here": b.scored_here},
        "candidates": len(pairs),
        "agreement": agreement,
        "changed": changed,
        "flipped_groups": [{"group": group, "candidates": members} for group, members in flips.items()],
        "only_a_pays": only_a,
        "only_b_pays": only_b,
        "a_by_trajectory": {
            str(row["trajectory_id"]): (row.get("final"), row.get("advantage")) for row in a.results.rows
        },
    }


def provenance_lines(name: str, label: str, manifest: dict[str, Any] | None) -> list[str]:
    """Where one side's rewards come from: catalog, provider, revision, identity, code fingerprint."""
    lines = [f"{name}: {label}"]
    if manifest is None:
        return [*lines, "   no run manifest beside the results: provenance unknown"]
    lines.append(
        f"   catalog {manifest.get('catalog') or '(built-in)'}, backend {manifest.get('backend', '?')}"
    )
    components = {
        component.get("provider"): component
        for component in (manifest.get("spec") or {}).get("components", [])
    }
    for provider in manifest.get("providers", []):
        params = (components.get(provider.get("provider")) or {}).get("params")
        lines.append(
            f"   provider {provider.get('provider')} revision {provider.get('revision')} "
            f"identity {str(provider.get('identity'))[:16]} code {str(provider.get('code_fingerprint'))[:16]}"
            + (f" params {params}" if params else "")
        )
    return lines


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _snippet(rows: dict[str, dict[str, Any]], trajectory: str, width: int = 70) -> str:
    text = " ".join(str(rows[trajectory].get("completion") or "").split())
    return text if len(text) <= width else "..." + text[-(width - 3) :]


def format_comparison(comparison: dict[str, Any], b: Side, limit: int) -> str:
    """The report ``rewardkit compare`` prints: provenance first, then agreement, then the lists."""
    lines = provenance_lines("A", comparison["a"]["label"], comparison["a"]["provenance"])
    lines += provenance_lines("B", comparison["b"]["label"], comparison["b"]["provenance"])
    lines.append("")
    lines.append(
        format_table(
            [
                (item["component"], f"{item['same']} of {item['total']}", f"{item['share']:.3f}")
                for item in comparison["agreement"]
            ],
            ("component", "same value", "share"),
        )
    )
    rows = {str(row["trajectory_id"]): row for row in b.results.rows}
    changed, flips = comparison["changed"], comparison["flipped_groups"]
    lines.append("")
    lines.append(
        f"{len(changed)} of {comparison['candidates']} candidates changed reward; {len(flips)} groups "
        "where an "
        f"advantage changed sign; paid by A only: {len(comparison['only_a_pays'])}; paid by B only: "
        f"{len(comparison['only_b_pays'])}"
    )
    if changed:
        lines += ["", f"reward changed (largest first, {min(limit, len(changed))} of {len(changed)}):"]
        table = [
            (
                item["t"],
                _number(item["fa"]),
                _number(item["fb"]),
                _number(item["delta"]),
                _snippet(rows, item["t"]),
            )
            for item in changed[:limit]
        ]
        lines.append(format_table(table, ("candidate", "A", "B", "B - A", "completion (end)")))
    for key, title in (("only_a_pays", "paid by A only"), ("only_b_pays", "paid by B only")):
        paid = comparison[key]
        if paid:
            lines += ["", f"{title} ({min(limit, len(paid))} of {len(paid)}):"]
            lines.append(
                format_table(
                    [(t, _snippet(rows, t)) for t in paid[:limit]], ("candidate", "completion (end)")
                )
            )
    if flips:
        lines += ["", f"groups where an advantage changed sign ({min(limit, len(flips))} of {len(flips)}):"]
        flip_table = [
            (
                flip["group"],
                ", ".join(
                    f"{item['t']} {_number(item['aa'])} -> {_number(item['ab'])}"
                    for item in flip["candidates"]
                ),
            )
            for flip in flips[:limit]
        ]
        lines.append(format_table(flip_table, ("group", "candidates: advantage A -> B")))
    return "\n".join(lines)


def scratch_folder() -> tempfile.TemporaryDirectory[str]:
    """Where configurations are scored: removed when the comparison is done."""
    return tempfile.TemporaryDirectory(prefix="rewardkit-compare-")
