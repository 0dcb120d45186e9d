"""Reward actors on Ray: 1 vs 2 actors scoring the CPU-bound ``math`` provider (rl pack).

Each actor reserves one CPU and runs ``math`` with one math-verify worker process (``workers=1``),
so one actor keeps one core busy. The batch is MATH-500 problems (testdata/shared): each group
pairs a problem's reference answer with 8 reference solutions (its own and 7 other problems'),
so about half the candidates need math-verify's symbolic comparison, the CPU-bound part.

Every configuration is warmed up (actor start, math-verify import in the worker) with one batch,
then timed over ``--rounds`` batches, interleaved between configurations so drift hits all of
them alike; the speed-up is the ratio of medians, 1 actor over 2, measured in the same run. The
in-process ``Reward`` with the same single math worker is reported as a reference. Every batch's
results are compared with the in-process ones (a speed-up with wrong rewards is no speed-up).

Ray must only talk over loopback, so unless the process already has loopback as its only network
interface the script re-runs itself in a private network namespace (``unshare -n``, needs root).

    python benchmarks/ray_scaling.py [--groups 60] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import report
from _verifier_data import read_jsonl

CONFINED = "REWARDKIT_BENCH_CONFINED"
GROUP_SIZE = 8


def confine_to_loopback() -> None:
    """Re-run this script in a fresh network namespace unless loopback is already all there is."""
    if sorted(name for _, name in socket.if_nameindex()) == ["lo"]:
        return
    if os.environ.get(CONFINED) or shutil.which("unshare") is None:
        sys.exit("ray_scaling: cannot confine Ray to loopback: run as root where `unshare -n` works")
    command = " ".join(["exec", sys.executable, *map(_quote, sys.argv)])
    os.environ[CONFINED] = "1"
    os.execvp("unshare", ["unshare", "-n", "sh", "-c", f"ip link set lo up && {command}"])


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def math_groups(count: int) -> list[dict]:
    rows = read_jsonl("math-evaluation-harness/data/math_oai/test.jsonl")
    if count > len(rows):
        sys.exit(f"ray_scaling: --groups {count} exceeds the {len(rows)} MATH-500 problems")
    return [
        {
            "group_id": f"math-{g}",
            "rollouts": [
                {
                    "trajectory_id": f"math-{g}-{i}",
                    # Candidate 0 is the problem's own solution; the others are other problems'.
                    "completion": rows[(g + 37 * i) % len(rows)]["solution"],
                    "reference": rows[g]["answer"],
                }
                for i in range(GROUP_SIZE)
            ],
        }
        for g in range(count)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--groups", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    confine_to_loopback()

    from rewardkit import Reward
    from rewardkit.config import load_config
    from rewardkit_ray.backend import RayReward

    def config(actors: int) -> object:
        return load_config(
            {
                "rl": {"group_size": GROUP_SIZE, "reward": {"provider": "math", "params": {"workers": 1}}},
                "rewards": {"backend": "ray", "ray": {"num_actors": actors}},
            }
        )

    groups = math_groups(args.groups)
    # Other work on the machine takes cores from the 2-actor run first; the JSON keeps the load.
    load_before = os.getloadavg()[0]
    local = Reward(config(1))
    expected = local.score(groups)  # also the warm-up of the in-process reference

    # Both pools stay up so rounds can interleave; half a CPU each lets three actors fit the
    # 2-CPU local cluster. It is Ray's bookkeeping only: one pool scores at a time.
    def half_cpu(index: int) -> dict:
        return {"num_cpus": 0.5}

    rewards = {
        "in-process": local,
        "1 actor": RayReward(config(1), actor_options=half_cpu),
        "2 actors": RayReward(config(2), actor_options=half_cpu),
    }
    times: dict[str, list[float]] = {name: [] for name in rewards}
    try:
        for name, reward in rewards.items():
            if reward.score(groups) != expected:
                sys.exit(f"ray_scaling: {name} disagrees with in-process scoring")
        for _ in range(args.rounds):
            for name, reward in rewards.items():
                start = time.perf_counter()
                got = reward.score(groups)
                times[name].append(time.perf_counter() - start)
                if got != expected:
                    sys.exit(f"ray_scaling: {name} disagrees with in-process scoring")
        spread = rewards["2 actors"].stats["groups_per_actor"]
    finally:
        for reward in rewards.values():
            reward.close()

    candidates = len(groups) * GROUP_SIZE
    fast = expected.metrics["train/reward_provider/math/fast_path"]
    base = statistics.median(times["1 actor"])
    rows = []
    for name, samples in times.items():
        median = statistics.median(samples)
        rows.append(
            {
                "configuration": name,
                "median_s": median,
                "min_s": min(samples),
                "candidates_per_s": candidates / median,
                "speedup_vs_1_actor": base / median,
            }
        )
    speedup = base / statistics.median(times["2 actors"])
    report(
        "ray_scaling",
        rows,
        {
            "groups": len(groups),
            "candidates": candidates,
            "rounds": args.rounds,
            "math_verify_share": 1 - fast,
            "groups_per_actor_with_2": spread,
            "speedup_2_vs_1_actors": speedup,
            "target_speedup": 1.6,
            "load_average_1min": {"before": load_before, "after": os.getloadavg()[0]},
        },
    )
    print(f"2 actors vs 1: {speedup:.2f}x (target >= 1.6x); {1 - fast:.0%} of candidates went to math-verify")


if __name__ == "__main__":
    main()
