"""Reward Service throughput and latency against in-process scoring, measured in the same run.

The ``gsm8k`` provider scores groups of 16 real GSM8K model solutions (shared data), 64 groups per
request. Baseline: ``Reward.score`` in this process. Service: ``RemoteReward.score`` against
``rewardkit serve`` on 127.0.0.1, from one caller and from several concurrent callers (a trainer
with overlapping rollout batches). The target is at least 0.7x of in-process throughput.

    python benchmarks/service.py [--calls 24] [--callers 4]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import report
from _verifier_data import shared_data

import rewardkit
from rewardkit.service.process import ServerProcess, write_config

GROUP_SIZE = 16
GROUPS_PER_CALL = 64
MODELS = ("6b_finetuning", "6b_verification", "175b_finetuning", "175b_verification")


def _data_path() -> Path:
    return (
        shared_data() / "grade-school-math" / "grade_school_math" / "data" / "example_model_solutions.jsonl"
    )


def build_calls(calls: int) -> list[list[dict[str, Any]]]:
    """``calls`` batches of 64 groups of 16: each group is a problem's gold answer and the 16 solutions
    of it and the next three problems (so most groups mix right and wrong answers)."""
    rows = [json.loads(line) for line in _data_path().read_text(encoding="utf-8").splitlines()]
    batches = []
    for call in range(calls):
        groups = []
        for slot in range(GROUPS_PER_CALL):
            index = (call * GROUPS_PER_CALL + slot) % (len(rows) - 4)
            gold = rows[index]["ground_truth"].rsplit("A:", 1)[1].strip()
            rollouts = [
                {
                    "trajectory_id": f"c{call}-g{slot}-{k}-{model}",
                    "completion": rows[index + k][model]["solution"],
                    "reference": gold,
                }
                for k in range(4)
                for model in MODELS
            ]
            groups.append({"group_id": f"c{call}-g{slot}", "rollouts": rollouts})
        batches.append(groups)
    return batches


def run(
    score: Any, batches: list[list[dict[str, Any]]], callers: int
) -> tuple[float, list[float], list[Any]]:
    """Score every batch with ``callers`` threads; returns wall seconds, per-call latencies, results."""
    latencies: list[float] = []
    results: list[Any] = [None] * len(batches)
    cursor = iter(range(len(batches)))
    lock = threading.Lock()

    def caller() -> None:
        while True:
            with lock:
                index = next(cursor, None)
            if index is None:
                return
            started = time.perf_counter()
            results[index] = score(batches[index])
            elapsed = time.perf_counter() - started
            with lock:
                latencies.append(elapsed)

    threads = [threading.Thread(target=caller) for _ in range(callers)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started, latencies, results


def _summary(name: str, callers: int, samples: list[tuple[float, list[float]]], calls: int) -> dict[str, Any]:
    # Median over rounds of throughput; latency percentiles over every call of every round.
    rates = [calls * GROUPS_PER_CALL / wall for wall, _ in samples]
    ordered = sorted(latency for _, latencies in samples for latency in latencies)
    return {
        "path": name,
        "callers": callers,
        "groups_per_s": statistics.median(rates),
        "min_groups_per_s": min(rates),
        "max_groups_per_s": max(rates),
        "p50_ms": statistics.median(ordered) * 1000,
        "p99_ms": ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))] * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=24, help="calls of 64 groups per measurement")
    parser.add_argument("--callers", type=int, default=4, help="concurrent callers in the second setting")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (the median is reported)")
    args = parser.parse_args()
    batches = build_calls(args.calls)
    base_config = {
        "rl": {"reward": {"provider": "gsm8k"}, "group_size": GROUP_SIZE},
        "rewards": {"max_inflight": 4 * GROUP_SIZE * GROUPS_PER_CALL},
    }
    local = rewardkit.load(base_config)
    expected = run(local.score, batches, 1)[2]
    samples: dict[tuple[str, int], list[tuple[float, list[float]]]] = {}
    service_config = "rl.reward.provider: gsm8k\nrl.group_size: 16\nrewards.max_inflight: 4096\n"
    with (
        tempfile.TemporaryDirectory() as folder,
        ServerProcess(write_config(Path(folder), service_config)) as server,
    ):
        remote_config = {
            **base_config,
            "rl": {**base_config["rl"], "reward": {"provider": "gsm8k", "service": server.url}},
        }
        with rewardkit.load(remote_config) as remote:
            run(remote.score, batches[:2], 1)  # warm-up: connections, server caches
            # Interleaved rounds, so load from elsewhere on the machine hits both paths alike.
            for _ in range(args.rounds):
                for name, score in (("in-process", local.score), ("service", remote.score)):
                    for callers in (1, args.callers):
                        wall, latencies, got = run(score, batches, callers)
                        if [g.groups for g in got] != [e.groups for e in expected]:
                            raise SystemExit(f"{name} results differ from the first in-process run")
                        samples.setdefault((name, callers), []).append((wall, latencies))
    rows = [_summary(name, callers, runs, args.calls) for (name, callers), runs in samples.items()]
    base = {row["callers"]: row["groups_per_s"] for row in rows if row["path"] == "in-process"}
    single = base[1]
    for row in rows:
        row["vs_in_process_1_caller"] = row["groups_per_s"] / single
        row["vs_in_process_same_callers"] = row["groups_per_s"] / base[row["callers"]]
    report(
        "service",
        rows,
        {
            "group_size": GROUP_SIZE,
            "groups_per_request": GROUPS_PER_CALL,
            "calls": args.calls,
            "rounds": args.rounds,
            "target_vs_in_process": 0.7,
        },
    )


if __name__ == "__main__":
    main()
