"""``rewardkit checkpoints watch|curve``: the core's CLI declares the options, this runs them."""

from __future__ import annotations

import argparse
import json

from rewardkit.config import load_config
from rewardkit.reward import load
from rewardkit.tables import format_table
from rewardkit_checkpoints.curve import curve_rows, plot_curve
from rewardkit_checkpoints.watcher import Watcher

__all__ = ["run_checkpoints"]


def run_checkpoints(args: argparse.Namespace) -> int:
    if args.action == "curve":
        return _curve(args)
    config = load_config(args.target, args.overrides)
    reward = load(config)
    watcher = Watcher(config, reward)
    try:
        return watcher.run(once=args.once, timeout_s=args.timeout)
    finally:
        watcher.close()
        reward.close()


def _curve(args: argparse.Namespace) -> int:
    rows = curve_rows(args.target)
    if args.plot:
        plot_curve(rows, args.plot)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    table = [
        (str(row["step"]), _number(row["value"]), _number(row["diff"], signed=True),
         "-" if row["low"] is None else f"[{row['low']:+.4f}, {row['high']:+.4f}]", row["gate"])
        for row in rows
    ]  # fmt: skip
    print(format_table(table, ("step", "metric", "vs base", "95% interval", "gate")))
    return 0


def _number(value: object, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.4f}" if signed else f"{value:.4f}"
