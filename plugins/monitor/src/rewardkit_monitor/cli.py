"""``rewardkit monitor LOGDIR [--plot FILE] [--gate]``: this distribution's plugin declares the options
(``rewardkit_monitor.plugin``), this runs them. The report goes to stdout; ``--gate`` turns an alarm
into exit code 3, the checkpoint gate's (``rewardkit checkpoints watch``), so one shell test serves both."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rewardkit_monitor.report import find_logs, format_report, read_log

__all__ = ["EXIT_ALARM", "run_monitor"]

# As rewardkit_checkpoints.watcher.EXIT_GATE: 0 nothing found, 2 cannot tell (an error, raised as a
# RewardkitError that the core's CLI prints and exits 2 for), 3 the gate fired.
EXIT_ALARM = 3


def run_monitor(args: argparse.Namespace) -> int:
    logs = [read_log(path, label) for label, path in find_logs(args.logdir)]
    for index, log in enumerate(logs):
        if index:
            print()
        print(format_report(log), flush=True)
    if args.plot:
        from rewardkit_monitor.plot import plot_log

        for log in logs:
            target = _plot_path(Path(args.plot), log.label if len(logs) > 1 else None)
            written = plot_log(log, target)
            print(f"wrote the monitor plot to {written.resolve()}", file=sys.stderr, flush=True)
    alarmed = sum(bool(log.alarms) for log in logs)
    if getattr(args, "gate", False) and alarmed:
        runs = f" in {alarmed} of {len(logs)} runs" if len(logs) > 1 else ""
        print(f"gate: the monitor raised an alarm{runs}: exit {EXIT_ALARM}", file=sys.stderr, flush=True)
        return EXIT_ALARM
    return 0


def _plot_path(path: Path, run: str | None) -> Path:
    """``--plot FILE``, or ``FILE-<run>.png`` per run below a Reward Service's logdir."""
    return path if run is None else path.with_name(f"{path.stem}-{run}{path.suffix or '.png'}")
