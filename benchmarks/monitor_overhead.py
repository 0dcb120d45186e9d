"""What the reward monitor adds to scoring: the README reward (exact-match), groups of 16.

``benchmarks/overhead.py`` times ``Reward.score`` with and without the monitor among its other
paths, best round of each; on this noisy machine its monitor rows move by +-10% between runs. This
script isolates the monitor's share: many times over, it scores a batch and hands it to two
monitors' ``observe`` (a new training step per call, as a trainer binding hands it over), without
and with a reference grader (exact-match, ``reference_rate`` 1), timing each call on its own, and
reports scoring plus the median observe as a ratio to scoring alone.

    python benchmarks/monitor_overhead.py [--candidates 10000] [--repeats 41]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from typing import Any

from _report import report
from overhead import build_rollouts

import rewardkit
from rewardkit.config import load_config
from rewardkit.scoring.observers import ObservedBatch, observer_for


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--candidates", type=int, default=10_000)
    parser.add_argument("--group-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=41)
    args = parser.parse_args()

    size = args.group_size
    groups = build_rollouts(args.candidates, size)
    inputs = [{"group_id": group_id, "rollouts": rows} for group_id, rows in groups]
    settings: dict[str, Any] = {"rl": {"group_size": size, "reward": {"provider": "exact-match"}}}
    reward = rewardkit.load({**settings, "rewards": {"max_inflight": 1 << 20}})
    monitors = {
        name: observer_for(load_config({"rl": {**settings["rl"], "monitor": {"reference": reference}}}))
        for name, reference in (("monitor", None), ("monitor + reference", "exact-match"))
    }
    steps = itertools.count()
    # Each repeat scores the batch once and hands it to every monitor; each observe is timed on its
    # own: the monitor's share is the median observe over the median score (the score's own
    # variation, mostly the collector, would otherwise swamp a few percent).
    scores: list[float] = []
    observes: dict[str, list[float]] = {name: [] for name in monitors}
    for repeat in range(args.repeats + 1):
        start = time.perf_counter()
        scored = reward.score(groups)
        elapsed = time.perf_counter() - start
        step = next(steps)
        for name, monitor in monitors.items():
            assert monitor is not None
            start = time.perf_counter()
            monitor.observe(ObservedBatch(inputs, scored, "trl", step=step))
            if repeat:  # the first repeat warms every path
                observes[name].append(time.perf_counter() - start)
        if repeat:
            scores.append(elapsed)
    base = statistics.median(scores)
    rows = [{"path": "Reward.score", "median_ms": base * 1e3, "us_per_rollout": base / args.candidates * 1e6,
             "vs_score": 1.0}]  # fmt: skip
    for name, values in observes.items():
        extra = statistics.median(values)
        rows.append(
            {
                "path": f"Reward.score + {name}",
                "median_ms": (base + extra) * 1e3,
                "us_per_rollout": (base + extra) / args.candidates * 1e6,
                "vs_score": (base + extra) / base,
            }
        )
    for monitor in monitors.values():
        if monitor is not None:
            monitor.close()
    reward.close()
    report(
        "monitor_overhead", rows, {"candidates": args.candidates, "group_size": size, "repeats": args.repeats}
    )


if __name__ == "__main__":
    main()
