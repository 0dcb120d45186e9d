"""Reading a monitor log (``LOGDIR/monitor.jsonl``, one JSON object per finished step) and the text
report of ``rewardkit monitor LOGDIR``."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardkit.plugin import RewardkitError, format_table
from rewardkit_monitor.monitor import LOG_NAME

# The signals the report and the plot put first: the alarmed ones, then what they are read against.
LEADING = ("divergence", "length_coupling", "reward_mean", "reference_mean", "length_mean")
RECENT = 50  # the report's "recent mean" is over the last this many defined values


class MonitorLogError(RewardkitError):
    """A monitor log is missing or cannot be read; the message names the file (and line)."""


@dataclass(frozen=True)
class MonitorLog:
    """One run's log: its steps in file order, and every alarm raised."""

    path: Path
    label: str  # the run id below a Reward Service's logdir, else the folder name
    steps: list[dict[str, Any]]
    alarms: list[dict[str, Any]] = field(default_factory=list)
    partial_last_line: bool = False  # the trainer was writing it: left out

    def signal_names(self) -> list[str]:
        seen: dict[str, None] = {}
        for record in self.steps:
            seen.update(dict.fromkeys(record.get("signals", {})))
        leading = [name for name in LEADING if name in seen]
        return leading + sorted(name for name in seen if name not in LEADING)

    def series(self, signal: str) -> tuple[list[int], list[float]]:
        """The steps where ``signal`` is defined, and its values there."""
        steps, values = [], []
        for record in self.steps:
            value = record.get("signals", {}).get(signal)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                steps.append(int(record["step"]))
                values.append(float(value))
        return steps, values


def find_logs(target: str | Path) -> list[tuple[str, Path]]:
    """The logs ``target`` names: a ``monitor.jsonl`` file, a folder holding one, or a Reward
    Service's logdir with one folder per client run (``<run id>/monitor.jsonl``)."""
    path = Path(target)
    if path.is_file():
        return [(path.parent.name or str(path.parent), path)]
    if (path / LOG_NAME).is_file():
        return [(path.name or str(path), path / LOG_NAME)]
    if path.is_dir():
        runs = sorted(child for child in path.iterdir() if (child / LOG_NAME).is_file())
        if runs:
            return [(child.name, child / LOG_NAME) for child in runs]
        raise MonitorLogError(
            f"{path}: no {LOG_NAME} here nor in a run folder below it; is this the rl.monitor.logdir "
            "of a run that has finished a step?"
        )
    raise MonitorLogError(f"{path}: no such file or folder (expected the rl.monitor.logdir of a run)")


def read_log(path: str | Path, label: str | None = None) -> MonitorLog:
    """Every step of a log. A last line without its newline is the trainer still writing it and is
    left out; any other line that is not a step object is an error naming the line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise MonitorLogError(f"{path}: cannot read the monitor log ({error})") from None
    lines = text.split("\n")
    partial = bool(lines[-1].strip())
    steps: list[dict[str, Any]] = []
    for number, line in enumerate(lines[:-1] if partial else lines, start=1):
        if not line.strip():
            continue
        steps.append(_record(path, number, line))
    if partial:
        try:
            steps.append(_record(path, len(lines), lines[-1]))
            partial = False  # complete after all: only its newline was missing
        except MonitorLogError:
            pass
    if not steps:
        raise MonitorLogError(f"{path}: the monitor log has no finished step yet")
    alarms = [alarm for record in steps for alarm in record.get("alarms", [])]
    return MonitorLog(path, label or path.parent.name, steps, alarms, partial)


def _record(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise MonitorLogError(f"{path}:{number}: not a JSON line ({error.msg})") from None
    if not isinstance(record, dict) or not isinstance(record.get("step"), int):
        raise MonitorLogError(f"{path}:{number}: not a monitor step (an object with an integer 'step')")
    if not isinstance(record.get("signals", {}), dict) or not isinstance(record.get("alarms", []), list):
        raise MonitorLogError(f"{path}:{number}: 'signals' must be an object and 'alarms' a list")
    for alarm in record.get("alarms", []):
        if not isinstance(alarm, dict) or not {"signal", "step", "began", "evidence"} <= set(alarm):
            raise MonitorLogError(f"{path}:{number}: an alarm needs signal, step, began and evidence")
    return record


def format_report(log: MonitorLog) -> str:
    """Steps, each alarm (signal, step, estimated start, evidence), and a summary of every signal."""
    first, last = log.steps[0]["step"], log.steps[-1]["step"]
    sources = sorted({str(record.get("source", "?")) for record in log.steps})
    rollouts = [record["rollouts"] for record in log.steps if isinstance(record.get("rollouts"), int)]
    lines = [
        f"{log.path}: {len(log.steps)} steps ({first} to {last}), source {', '.join(sources)}"
        + (f", {_median(rollouts):g} rollouts per step" if rollouts else "")
    ]
    if log.partial_last_line:
        lines.append("  (the last line is still being written: left out)")
    if log.alarms:
        lines.append(f"ALARM: {len(log.alarms)} raised")
        for alarm in log.alarms:
            lines.append(f"- {alarm['signal']} at step {alarm['step']} (began about step {alarm['began']})")
            lines.append(f"  {alarm['evidence']}")
    else:
        lines.append("no alarm")
    rows = []
    for name in log.signal_names():
        _, values = log.series(name)
        if not values:
            rows.append((name, "0", "-", "-", "-", "-", "-"))
            continue
        recent = values[-RECENT:]
        rows.append(
            (name, str(len(values)), _number(values[0]), _number(values[-1]), _number(min(values)),
             _number(max(values)), _number(sum(recent) / len(recent)))
        )  # fmt: skip
    if rows:
        headers = ("signal", "steps", "first", "last", "min", "max", f"mean of last {RECENT}")
        lines.extend(["", format_table(rows, headers)])
    return "\n".join(lines)


def _median(values: Sequence[int]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _number(value: float) -> str:
    return f"{value:.4g}"
