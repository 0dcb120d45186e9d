"""Reading what the page shows: the results of ``rewardkit score`` (one JSON line per candidate, with its
run manifest ``<out>.run.json`` beside it), the audit's ``--json`` and a monitor log folder.

This distribution imports no other plugin, so the audit's and the monitor's files are read here by
their documented shapes (docs/audit.md, docs/monitor.md), not through their code. Every malformed
input is an error naming the file, the line where there is one, and what is wrong."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardkit.plugin import RewardkitError

__all__ = [
    "MONITOR_LOG_NAME",
    "MonitorRun",
    "Results",
    "ViewInputError",
    "read_audit",
    "read_monitor",
    "read_results",
]

MONITOR_LOG_NAME = "monitor.jsonl"  # what ``rl.monitor.logdir`` holds, one JSON object per finished step
# the fields every line of ``rewardkit score`` carries; a line without one is not a results line
REQUIRED_FIELDS = ("group_id", "trajectory_id", "final", "breakdown")


class ViewInputError(RewardkitError):
    """A file given to ``rewardkit view`` or ``rewardkit compare`` cannot be read as what it should be."""


@dataclass(frozen=True)
class Results:
    """One results file: its candidates in file order, and its run manifest when one sits beside it."""

    path: Path
    rows: list[dict[str, Any]]
    manifest: dict[str, Any] | None

    def component_names(self) -> list[str]:
        """The components of the breakdowns, in the order they first appear."""
        seen: dict[str, None] = {}
        for row in self.rows:
            seen.update(dict.fromkeys(row["breakdown"]))
        return list(seen)


def manifest_path(results: Path) -> Path:
    """Where ``rewardkit score --out results.jsonl`` writes its run manifest."""
    return results.with_name(results.name + ".run.json")


def read_results(path: str | Path) -> Results:
    """Every candidate of a results file, checked line by line, and its manifest (``None`` when absent)."""
    path = Path(path)
    rows: list[dict[str, Any]] = []
    try:
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if line.strip():
                    rows.append(_results_line(path, number, line))
    except FileNotFoundError:
        raise ViewInputError(f"{path}: no such file (expected the --out of `rewardkit score`)") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ViewInputError(f"{path}: cannot read it ({error})") from None
    if not rows:
        raise ViewInputError(f"{path}: no candidates in it (expected the --out of `rewardkit score`)")
    return Results(path, rows, _read_manifest(manifest_path(path)))


def _results_line(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        row = json.loads(line, parse_constant=_refuse_constant)
    except json.JSONDecodeError as error:
        raise ViewInputError(f"{path}:{number}: not a JSON line ({error.msg})") from None
    except ValueError as error:
        raise ViewInputError(f"{path}:{number}: {error}") from None
    if not isinstance(row, dict):
        raise ViewInputError(f"{path}:{number}: not a JSON object")
    missing = [name for name in REQUIRED_FIELDS if name not in row]
    if missing:
        raise ViewInputError(
            f"{path}:{number}: no {', '.join(missing)}: is this the --out of `rewardkit score`?"
        )
    if not isinstance(row["breakdown"], dict):
        raise ViewInputError(f"{path}:{number}: breakdown is not an object")
    for field in ("final", "advantage"):
        value = row.get(field)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ViewInputError(f"{path}:{number}: {field} is {value!r}, not a number")
    return row


def _refuse_constant(name: str) -> float:
    # `rewardkit score` writes finite numbers only; NaN or Infinity means the file is not its output
    raise ValueError(f"{name} is not a reward (rewardkit score writes finite numbers)")


def _read_manifest(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ViewInputError(f"{path}: cannot read the run manifest ({error})") from None
    if not isinstance(manifest, dict):
        raise ViewInputError(f"{path}: the run manifest is not a JSON object")
    return manifest


def read_audit(path: str | Path) -> dict[str, Any]:
    """The document ``rewardkit audit --json OUT`` writes."""
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ViewInputError(f"{path}: cannot read the audit's --json ({error})") from None
    if not isinstance(document, dict) or not isinstance(document.get("families"), list):
        raise ViewInputError(f"{path}: no families in it: is this the file `rewardkit audit --json` wrote?")
    return document


@dataclass(frozen=True)
class MonitorRun:
    """One run's monitor log: each step's number and signals, and every alarm raised."""

    label: str
    steps: list[int]
    signals: dict[str, list[float | None]]  # signal -> its value at each step (None: undefined there)
    alarms: list[dict[str, Any]]


def read_monitor(target: str | Path) -> list[MonitorRun]:
    """The runs a monitor log folder holds: ``monitor.jsonl`` itself, a folder holding one, or a Reward
    Service's logdir with one folder per client run."""
    path = Path(target)
    if path.is_file():
        logs = [(path.parent.name, path)]
    elif (path / MONITOR_LOG_NAME).is_file():
        logs = [(path.name, path / MONITOR_LOG_NAME)]
    elif path.is_dir():
        logs = [(child.name, child / MONITOR_LOG_NAME) for child in sorted(path.iterdir())]
        logs = [(label, log) for label, log in logs if log.is_file()]
        if not logs:
            raise ViewInputError(f"{path}: no {MONITOR_LOG_NAME} here nor in a run folder below it")
    else:
        raise ViewInputError(f"{path}: no such file or folder (expected an rl.monitor.logdir)")
    return [_monitor_run(label, log) for label, log in logs]


def _monitor_run(label: str, path: Path) -> MonitorRun:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ViewInputError(f"{path}: cannot read the monitor log ({error})") from None
    lines = text.split("\n")
    # a last line without its newline is the trainer still writing it: left out, as the monitor does
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines[:-1], start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise ViewInputError(f"{path}:{number}: not a JSON line") from None
        if not isinstance(record, dict) or not isinstance(record.get("step"), int):
            raise ViewInputError(f"{path}:{number}: not a monitor step (no integer 'step')")
        records.append(record)
    names: dict[str, None] = {}
    for record in records:
        names.update(dict.fromkeys(record.get("signals") or {}))
    signals = {name: [_finite(record.get("signals", {}).get(name)) for record in records] for name in names}
    alarms = [alarm for record in records for alarm in record.get("alarms") or [] if isinstance(alarm, dict)]
    return MonitorRun(label, [record["step"] for record in records], signals, alarms)


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)
