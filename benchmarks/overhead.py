"""Framework cost per rollout: rewardkit's in-process paths against a bare loop, and against evalsi.

For each group size (1, 4, 16, 64) the same 10,000 exact-match rollouts are scored by:

- ``bare loop``: plain Python over the rollout dicts (strip, collapse whitespace, casefold,
  compare): what a user would write with no framework at all;
- ``direct scorer``: rewardkit's ``score_exact_match`` called on prebuilt candidates;
- ``bound adapter``: ``BoundProvider.score_group`` per group (validation, freeze, candidates,
  provider, result checks);
- ``Reward.score``: the whole in-process path (checks, compose, advantages, report);
- ``Reward.score + monitor`` and ``... + monitor + reference`` (with rewardkit-monitor installed):
  the same call followed by the reward monitor (``rl.monitor``) observing the batch as a trainer
  binding hands it over, one training step per call, without and with a reference grader
  (exact-match at ``reference_rate`` 1) scoring every rollout again;
- ``evalsi LocalReward.score`` (with ``--evalsi-python``): evalsi 0.3.1's in-process reward with
  its result cache off, in its own virtual environment, driven over a pipe so that its rounds
  interleave with rewardkit's.

Rounds interleave every path; each path's best round counts. A round times three consecutive
calls with no collection forced in between, so the garbage collector's work (also what one call
leaves for the next) is part of every path's time. ``framework_us`` is the time per
rollout over the bare loop; ``per_group_us`` the same per group.

    python -m venv /tmp/evalsi && /tmp/evalsi/bin/pip install evalsi==0.3.1
    python benchmarks/overhead.py [--evalsi-python /tmp/evalsi/bin/python] [--rounds 7]
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import re
import subprocess
import time
from collections.abc import Callable
from typing import Any

from _report import report

import rewardkit
from rewardkit import RewardCandidate, RewardContext, resolve_catalog
from rewardkit.builtin.rules import score_exact_match

GROUP_SIZES = (1, 4, 16, 64)

# Runs under evalsi's interpreter: reads {"rows": [...]} once, then times one score per "run" line.
EVALSI_DRIVER = r"""
import json, sys, time
from evalsi.rewards import LocalReward
from evalsi.rewards.spec import RewardSpec
spec = RewardSpec.from_dict({"spec": {"components": [{"ref": "exact-match"}], "cache": {"enabled": False}}})
reward = LocalReward(spec)
rows = None
for line in sys.stdin:
    message = json.loads(line)
    if "rows" in message:
        rows = message["rows"]
        results = reward.score(rows)
        print(json.dumps({"values": [r.total for r in results]}), flush=True)
        continue
    start = time.perf_counter()
    for _ in range(message["calls"]):
        reward.score(rows)
    print(json.dumps({"seconds": (time.perf_counter() - start) / message["calls"]}), flush=True)
"""


def build_rollouts(candidates: int, group_size: int) -> list[tuple[str, list[dict[str, Any]]]]:
    groups = []
    for group in range(candidates // group_size):
        reference = f"answer {group}"
        rows = [
            {
                "group_id": f"g{group}",
                "trajectory_id": f"g{group}/{k}",
                "completion": f"Answer  {group if k % 2 else k}" if k % 3 else f" answer {group}",
                "prompt": f"question {group}",
                "reference": reference,
                "completion_token_count": 10 + k,
                "finish_reason": "stop",
            }
            for k in range(group_size)
        ]
        groups.append((f"g{group}", rows))
    return groups


_SPACES = re.compile(r"\s+")


def bare_exact_match(rows: list[dict[str, Any]]) -> list[float]:
    """The verdict with no framework: the same normalisation as ``exact-match``."""
    out = []
    for row in rows:
        answer = _SPACES.sub(" ", row["completion"].strip()).casefold()
        gold = _SPACES.sub(" ", row["reference"].strip()).casefold()
        out.append(float(answer == gold))
    return out


class Evalsi:
    """evalsi 0.3.1 in its own interpreter, one timed ``LocalReward.score`` per request."""

    def __init__(self, python: str) -> None:
        self.process = subprocess.Popen(
            [python, "-c", EVALSI_DRIVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def _ask(self, message: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("the evalsi driver exited; is evalsi==0.3.1 installed in --evalsi-python?")
        return json.loads(line)

    def load(self, rows: list[dict[str, Any]]) -> list[float]:
        return self._ask({"rows": rows})["values"]

    def run(self) -> float:
        return self._ask({"calls": CALLS})["seconds"]

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)


# Consecutive calls per timing, with no collection forced in between: the garbage collector's
# work, including what a call leaves for the next one, is part of what every path costs.
CALLS = 3


def timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    for _ in range(CALLS):
        run()
    return (time.perf_counter() - start) / CALLS


class MonitoredPath:
    """``Reward.score`` then the monitor's ``observe``, a new training step per call."""

    def __init__(self, group_size: int, reward: Any, groups: list[Any], reference: str | None) -> None:
        from rewardkit.config import load_config
        from rewardkit.scoring.observers import ObservedBatch, observer_for

        settings: dict[str, Any] = {"reference": reference}
        config = load_config({"rl": {"group_size": group_size, "reward": {"provider": "exact-match"},
                                     "monitor": settings}})  # fmt: skip
        observer = observer_for(config)
        assert observer is not None
        self.observer = observer
        self.reward = reward
        self.groups = groups
        self.inputs = [{"group_id": group_id, "rollouts": rows} for group_id, rows in groups]
        self.batch = ObservedBatch
        self.steps = itertools.count()

    def __call__(self) -> float:
        def once() -> None:
            scored = self.reward.score(self.groups)
            self.observer.observe(self.batch(self.inputs, scored, "trl", step=next(self.steps)))

        return timed(once)

    def close(self) -> None:
        self.observer.close()


def measure(group_size: int, candidates: int, rounds: int, evalsi: Evalsi | None) -> list[dict[str, Any]]:
    groups = build_rollouts(candidates, group_size)
    flat = [row for _, rows in groups for row in rows]
    n = len(flat)
    prebuilt = [
        (
            RewardContext(reference=rows[0]["reference"]),
            [RewardCandidate(r["trajectory_id"], r["completion"]) for r in rows],
        )
        for _, rows in groups
    ]
    bound = resolve_catalog().bind("exact-match")
    reward = rewardkit.load(
        {
            "rl": {"group_size": group_size, "reward": {"provider": "exact-match"}},
            "rewards": {"max_inflight": 1 << 20},
        }
    )
    # Every path must agree on every verdict before any is timed.
    expected = bare_exact_match(flat)
    finals = [candidate.final for _, candidate in reward.score(groups).candidates()]
    assert finals == expected, "Reward.score disagrees with the bare loop"

    def direct() -> None:
        for context, batch in prebuilt:
            for candidate in batch:
                score_exact_match(candidate, context)

    def adapter() -> None:
        for group_id, rows in groups:
            bound.score_group(group_id, rows, group_size)

    paths: dict[str, Callable[[], float]] = {
        "bare loop": lambda: timed(lambda: bare_exact_match(flat)),
        "direct scorer": lambda: timed(direct),
        "bound adapter": lambda: timed(adapter),
        "Reward.score": lambda: timed(lambda: reward.score(groups)),
    }
    monitors = []
    if importlib.util.find_spec("rewardkit_monitor") is not None:
        for name, reference in (
            ("Reward.score + monitor", None),
            ("Reward.score + monitor + reference", "exact-match"),
        ):
            monitor = MonitoredPath(group_size, reward, groups, reference)
            monitors.append(monitor)
            paths[name] = monitor
    if evalsi is not None:
        evalsi_rows = [
            {
                "id": r["trajectory_id"],
                "prompt": r["prompt"],
                "completion": r["completion"],
                "reference": r["reference"],
            }
            for r in flat
        ]
        assert evalsi.load(evalsi_rows) == expected, "evalsi disagrees with the bare loop"
        paths["evalsi LocalReward.score"] = evalsi.run
    best = dict.fromkeys(paths, float("inf"))
    for _ in range(rounds):
        for name, run in paths.items():
            best[name] = min(best[name], run())
    reward.close()
    for monitor in monitors:
        monitor.close()
    bare = best["bare loop"]
    evalsi_rate = n / best["evalsi LocalReward.score"] if evalsi is not None else None
    rows = []
    for name, seconds in best.items():
        rate = n / seconds
        rows.append(
            {
                "group_size": group_size,
                "path": name,
                "us_per_rollout": seconds / n * 1e6,
                "framework_us": (seconds - bare) / n * 1e6,
                "per_group_us": (seconds - bare) / len(groups) * 1e6,
                "rollouts_per_s": rate,
                "vs_evalsi": rate / evalsi_rate if evalsi_rate else None,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--candidates", type=int, default=10_000)
    parser.add_argument("--group-sizes", default=",".join(map(str, GROUP_SIZES)))
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--evalsi-python", help="interpreter of a venv with evalsi==0.3.1 (the baseline)")
    args = parser.parse_args()

    evalsi = Evalsi(args.evalsi_python) if args.evalsi_python else None
    try:
        rows = [
            row
            for size in (int(part) for part in args.group_sizes.split(","))
            for row in measure(size, args.candidates, args.rounds, evalsi)
        ]
    finally:
        if evalsi is not None:
            evalsi.close()
    report("overhead", rows, {"rounds": args.rounds, "candidates": args.candidates})


if __name__ == "__main__":
    main()
