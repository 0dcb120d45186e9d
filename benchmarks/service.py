"""Reward Service throughput and latency against in-process scoring, measured in the same run.

The ``gsm8k`` provider scores groups of 16 real GSM8K model solutions (shared data), 64 groups per
request. Baseline: ``Reward.score`` in this process. Service: ``RemoteReward.score`` against
``rewardkit serve`` on 127.0.0.1, from one caller and from several concurrent callers (a trainer
with overlapping rollout batches). The target is at least 0.7x of in-process throughput.

The same rollouts are then posted as raw HTTP bodies (prepared in advance, one keep-alive
connection per caller) in OpenRLHF's shape to ``/get_reward`` (one query per rollout) and to
``/v1/score`` as groups of 1 (the same shape) and as groups of 16; every answer must give the same
rewards. The target is ``/get_reward`` at least 0.9x of ``/v1/score``.

    python benchmarks/service.py [--calls 24] [--callers 4]
"""

from __future__ import annotations

import argparse
import http.client
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
from rewardkit_service.testing import ServerProcess, write_config

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


def http_bodies(batches: list[list[dict[str, Any]]], questions: dict[str, str]) -> dict[str, list[bytes]]:
    """Each call's rollouts as the three request bodies: ``/v1/score`` with groups of 16 and of 1, and
    ``/get_reward`` (query = prompt + response, as OpenRLHF sends it)."""
    bodies: dict[str, list[bytes]] = {
        "/v1/score (groups of 16)": [],
        "/v1/score (groups of 1)": [],
        "/get_reward": [],
    }
    for groups in batches:
        rows = []
        for group in groups:
            prompt = questions[group["group_id"]]
            rows.append([{**rollout, "prompt": prompt} for rollout in group["rollouts"]])
        bodies["/v1/score (groups of 16)"].append(json.dumps({
            "groups": [{"group_id": g["group_id"], "rollouts": r} for g, r in zip(groups, rows)],
            "advantages": False,
        }).encode())  # fmt: skip
        flat = [rollout for group_rows in rows for rollout in group_rows]
        bodies["/v1/score (groups of 1)"].append(json.dumps({
            "groups": [{"group_id": r["trajectory_id"], "rollouts": [r]} for r in flat],
            "group_size": 1,
            "advantages": False,
        }).encode())  # fmt: skip
        bodies["/get_reward"].append(json.dumps({
            "query": [r["prompt"] + r["completion"] for r in flat],
            "prompts": [r["prompt"] for r in flat],
            "labels": [r["reference"] for r in flat],
        }).encode())  # fmt: skip
    return bodies


def rewards_of(path: str, answer: dict[str, Any]) -> list[float]:
    if path == "/get_reward":
        return answer["rewards"]
    return [c["final"] for group in answer["groups"] for c in group["candidates"]]


def post_all(url: str, path: str, bodies: list[bytes], callers: int) -> tuple[float, list[float], list[Any]]:
    """Post every body to ``path`` from ``callers`` threads, each on its own keep-alive connection."""
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    endpoint = path.split(" ")[0]

    def score(body: bytes) -> list[float]:
        connection = local.__dict__.setdefault("connection", http.client.HTTPConnection(host, int(port)))
        connection.request("POST", endpoint, body, {"Content-Type": "application/json"})
        reply = connection.getresponse()
        data = reply.read()
        if reply.status != 200:
            raise SystemExit(f"{endpoint} answered {reply.status}: {data[:300]!r}")
        return rewards_of(endpoint, json.loads(data))

    local = threading.local()
    return run(score, bodies, callers)  # type: ignore[arg-type]


def build_questions(calls: int) -> list[list[str]]:
    """The question of each group of ``build_calls`` (the problem its gold answer comes from)."""
    rows = [json.loads(line) for line in _data_path().read_text(encoding="utf-8").splitlines()]
    return [
        [
            rows[(call * GROUPS_PER_CALL + slot) % (len(rows) - 4)]["question"] + "\n"
            for slot in range(GROUPS_PER_CALL)
        ]
        for call in range(calls)
    ]


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
    http_samples: dict[tuple[str, int], list[tuple[float, list[float]]]] = {}
    questions = {
        group["group_id"]: question
        for batch, qs in zip(batches, build_questions(args.calls))
        for group, question in zip(batch, qs)
    }
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
            # OpenRLHF's shape next to /v1/score, on the same rollouts and the same server.
            bodies = http_bodies(batches, questions)
            first: list[Any] | None = None
            for path, posted in bodies.items():
                got = post_all(server.url, path, posted[:2], 1)[2]  # warm-up, and a check
                first = first or got
                if got != first:
                    raise SystemExit(f"{path} gives other rewards than {next(iter(bodies))}")
            for _ in range(args.rounds):
                for path, posted in bodies.items():
                    for callers in (1, args.callers):
                        wall, latencies, _ = post_all(server.url, path, posted, callers)
                        http_samples.setdefault((path, callers), []).append((wall, latencies))
    rows = [_summary(name, callers, runs, args.calls) for (name, callers), runs in samples.items()]
    http_rows = [_summary(name, callers, runs, args.calls) for (name, callers), runs in http_samples.items()]
    for row in http_rows:
        score_rate = next(
            r["groups_per_s"] for r in http_rows
            if r["path"] == "/v1/score (groups of 16)" and r["callers"] == row["callers"]
        )  # fmt: skip
        row["vs_v1_score_16"] = row["groups_per_s"] / score_rate
        score_rate_1 = next(
            r["groups_per_s"] for r in http_rows
            if r["path"] == "/v1/score (groups of 1)" and r["callers"] == row["callers"]
        )  # fmt: skip
        row["vs_v1_score_1"] = row["groups_per_s"] / score_rate_1
    report("service_http_shapes", http_rows, {"rollouts_per_call": GROUP_SIZE * GROUPS_PER_CALL,
                                              "calls": args.calls, "rounds": args.rounds,
                                              "note": "groups_per_s counts groups of 16 (rollouts / 16)",
                                              "target_get_reward_vs_v1_score": 0.9})  # fmt: skip
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
