"""Framework overhead per candidate: rewardkit's paths against calling the scorer directly.

Direct: ``score_exact_match(candidate, context)`` in a loop over prebuilt candidates.
Bound adapter: ``BoundProvider.score_group`` from trainer-style rollout dicts (validation, freeze,
candidate construction, the provider call and result checks).
``Reward.score``: the whole in-process path (worker threads, bound provider, compose,
advantages, report; no file I/O).
Best of ``--repeats`` runs for each path, measured in the same process, interleaved.

    python benchmarks/overhead.py [--candidates 10000] [--group-size 16] [--repeats 7]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable

from _report import report

import rewardkit
from rewardkit import RewardCandidate, RewardContext, resolve_catalog
from rewardkit.builtin.rules import score_exact_match


def build_rollouts(candidates: int, group_size: int) -> list[tuple[str, list[dict]]]:
    groups = []
    for group in range(candidates // group_size):
        reference = f"answer {group}"
        rows = [
            {
                "group_id": f"g{group}",
                "trajectory_id": f"g{group}/{k}",
                "completion": f"answer {group if k % 2 else k}",
                "prompt": f"question {group}",
                "reference": reference,
                "completion_token_count": 10 + k,
                "finish_reason": "stop",
            }
            for k in range(group_size)
        ]
        groups.append((f"g{group}", rows))
    return groups


def best_of(repeats: int, run: Callable[[], object]) -> float:
    timings = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        run()
        timings.append(time.perf_counter() - start)
    return min(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--candidates", type=int, default=10_000)
    parser.add_argument("--group-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    groups = build_rollouts(args.candidates, args.group_size)
    n = sum(len(rows) for _, rows in groups)
    prebuilt = [
        (
            RewardContext(reference=rows[0]["reference"]),
            [RewardCandidate(r["trajectory_id"], r["completion"]) for r in rows],
        )
        for _, rows in groups
    ]
    bound = resolve_catalog().bind("exact-match")

    def direct() -> None:
        for context, candidates in prebuilt:
            for candidate in candidates:
                score_exact_match(candidate, context)

    def adapter() -> None:
        for group_id, rows in groups:
            bound.score_group(group_id, rows, args.group_size)

    paths: dict[str, Callable[[], None]] = {"direct scorer": direct, "bound adapter": adapter}
    extra_paths = _extra_paths(groups, args.group_size)
    paths.update(extra_paths)
    timings = {name: best_of(args.repeats, run) for name, run in paths.items()}
    base = timings["direct scorer"]
    rows = [
        {
            "path": name,
            "candidates": n,
            "seconds": seconds,
            "us_per_candidate": seconds / n * 1e6,
            "framework_us_per_candidate": (seconds - base) / n * 1e6,
            "ratio_vs_direct": seconds / base,
        }
        for name, seconds in timings.items()
    ]
    report("overhead", rows, {"group_size": args.group_size, "repeats": args.repeats})


def _extra_paths(groups: list[tuple[str, list[dict]]], group_size: int) -> dict[str, Callable[[], None]]:
    """The in-process ``Reward.score`` path: worker, bound provider, compose, advantages, report."""
    reward = rewardkit.load(
        {
            "rl": {"group_size": group_size, "reward": {"provider": "exact-match"}},
            "rewards": {"max_inflight": 1 << 20},
        }
    )

    def reward_score() -> None:
        reward.score(groups)

    return {"Reward.score (in-process)": reward_score}


if __name__ == "__main__":
    main()
