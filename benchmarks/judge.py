"""Judge throughput: nih-rubric against a scripted judge that takes 200 ms per request.

The scripted OpenAI-compatible server runs in its own process (``python -m
rewardkit_nih_judge.testing``), so its CPU is not counted. For each ``max_concurrency`` (1, 8,
32, 64) the whole framework path is timed: ``rewardkit.load(config).score(groups)`` with groups
of 8 and enough scoring threads to keep the cap busy. Reported per level:

- candidates/s, and the fraction of the ideal concurrency-bound rate ``max_concurrency / latency``
  (target: at least 0.8 at 32 and 64);
- the same requests sent by a bare ``HttpClient`` with a semaphore (no provider, no worker): the
  baseline of what the server and the machine allow, and the framework's rate as a fraction of it;
- the framework's CPU time per judged candidate (this process only, every thread).

Run: ``python benchmarks/judge.py`` (``--seconds`` sets the length of each level).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import subprocess
import sys
import time

from _report import report

import rewardkit
from rewardkit.transport import HttpClient, run_sync

GROUP = 8
LEVELS = (1, 8, 32, 64)


def start_judge(latency_s: float) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "rewardkit_nih_judge.testing", "--latency-s", str(latency_s)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline()  # type: ignore[union-attr]
    if not line.startswith("READY "):
        process.kill()
        raise SystemExit(f"the scripted judge did not start: {line!r}")
    return process, line.split()[1]


def groups_of(count: int, tag: str) -> list[tuple[str, list[dict]]]:
    return [
        (
            f"{tag}-{g}",
            [
                {"trajectory_id": f"{tag}-{g}-{k}", "completion": f"answer {k}", "prompt": f"task {g}?"}
                for k in range(GROUP)
            ],
        )
        for g in range(count // GROUP)
    ]


def framework(url: str, concurrency: int, count: int) -> tuple[float, float]:
    """Seconds and CPU seconds to score ``count`` candidates through ``rewardkit.load``."""
    params = {"base_url": url, "model": "judge", "rubric": "Grade it.", "max_concurrency": concurrency}
    threads = max(2, 2 * math.ceil(concurrency / GROUP))
    config = {
        "rl": {"group_size": GROUP, "reward": {"provider": "nih-rubric", "params": params}},
        "rewards": {"concurrency": threads, "max_inflight": 4096},
    }
    with rewardkit.load(config) as reward:
        reward.score(groups_of(GROUP * max(1, concurrency // GROUP), f"warm{concurrency}"))
        groups = groups_of(count, f"c{concurrency}")
        cpu, wall = time.process_time(), time.perf_counter()
        batch = reward.score(groups)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        scored = sum(1 for _, candidate in batch.candidates() if math.isclose(candidate.final, 6 / 9))
        if scored != count:
            raise SystemExit(f"only {scored} of {count} candidates were scored")
    return wall, cpu


def bare_client(url: str, concurrency: int, count: int) -> float:
    """Seconds for the same number of requests from one HttpClient, ``concurrency`` at once."""
    body = {
        "model": "judge",
        "messages": [{"role": "system", "content": "grade"}, {"role": "user", "content": "answer"}],
        "temperature": 0.0,
        "max_tokens": 512,
    }

    async def main() -> float:
        gate = asyncio.Semaphore(concurrency)
        async with HttpClient(url, max_connections=concurrency) as client:

            async def one() -> None:
                async with gate:
                    await client.post_json("/chat/completions", body)

            await asyncio.gather(*(one() for _ in range(concurrency)))  # warm the pool
            start = time.perf_counter()
            await asyncio.gather(*(one() for _ in range(count)))
            return time.perf_counter() - start

    return run_sync(main)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-s", type=float, default=0.2)
    parser.add_argument("--seconds", type=float, default=3.0, help="ideal length of each level")
    args = parser.parse_args()
    process, url = start_judge(args.latency_s)
    rows = []
    try:
        for concurrency in LEVELS:
            ideal = concurrency / args.latency_s
            count = max(GROUP * 2, math.ceil(ideal * args.seconds / GROUP) * GROUP)
            wall, cpu = framework(url, concurrency, count)
            bare = bare_client(url, concurrency, count)
            rate, bare_rate = count / wall, count / bare
            rows.append(
                {
                    "max_concurrency": concurrency,
                    "candidates": count,
                    "ideal_per_s": ideal,
                    "candidates_per_s": rate,
                    "fraction_of_ideal": rate / ideal,
                    "bare_client_per_s": bare_rate,
                    "fraction_of_bare": rate / bare_rate,
                    "cpu_ms_per_candidate": 1000 * cpu / count,
                }
            )
    finally:
        process.stdin.close()  # type: ignore[union-attr]
        process.terminate()
        process.wait(timeout=10)
    report(
        "judge",
        rows,
        {
            "latency_s": args.latency_s,
            "group_size": GROUP,
            "target": "fraction_of_ideal >= 0.8 at max_concurrency 32 and 64",
            "command": "python benchmarks/judge.py",
        },
    )


if __name__ == "__main__":
    main()
