"""``rewardkit checkpoints watch|curve``: the core's CLI declares the options, this runs them."""

from __future__ import annotations

import argparse
import json
import shlex
import sys

from rewardkit.plugin import format_table, load, load_config
from rewardkit_checkpoints.curve import curve_rows, plot_curve
from rewardkit_checkpoints.watcher import Watcher

__all__ = ["run_checkpoints"]

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command ended by Ctrl-C


def run_checkpoints(args: argparse.Namespace) -> int:
    if args.action == "curve":
        return _curve(args)
    command = shlex.join(["rewardkit", *sys.argv[1:]])
    config = load_config(args.target, args.overrides)
    reward = load(config)
    try:
        watcher = Watcher(config, reward)
    except KeyboardInterrupt:  # while the prompts were read: nothing was evaluated by this run
        reward.close()
        print(f"interrupted while reading the prompts; nothing evaluated. Rerun: {command}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BaseException:
        reward.close()
        raise
    try:
        return watcher.run(once=args.once, timeout_s=args.timeout)
    except KeyboardInterrupt:
        print(watcher.interrupted(command), file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    finally:
        watcher.close()
        reward.close()


def _curve(args: argparse.Namespace) -> int:
    rows = curve_rows(args.target)
    written = plot_curve(rows, args.plot) if args.plot else None
    if args.json:
        print(json.dumps(rows, indent=2), flush=True)
    else:
        table = [
            (str(row["step"]), _number(row["value"]), _number(row["diff"], signed=True),
             "-" if row["low"] is None else f"[{row['low']:+.4f}, {row['high']:+.4f}]", row["gate"])
            for row in rows
        ]  # fmt: skip
        print(format_table(table, ("step", "metric", "vs base", "95% interval", "gate")), flush=True)
    if written is not None:
        # on stderr, so that --json on stdout stays one JSON document
        print(f"wrote the learning curve to {written.resolve()}", file=sys.stderr, flush=True)
    return 0


def _number(value: object, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.4f}" if signed else f"{value:.4f}"
