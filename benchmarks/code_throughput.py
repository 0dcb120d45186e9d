"""Throughput of code-tests on the reflexion GPT-4 MBPP solutions (rollouts per second).

Candidate: the provider as shipped (warm bubblewrap slots; per run the slot's zygote forks a blank
candidate process and a test process under fresh uids; CPU-count slots).
Baseline, measured in the same run at equal isolation: a fresh sandbox (new bwrap, cgroup and
interpreter) for every test case, with the same number of concurrent workers.

    python benchmarks/code_throughput.py [--repeat 2] [--limit N]

Prints a table and writes benchmarks/results/code_throughput.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rewardkit.seam.catalog import resolve_catalog
from rewardkit_rl.code.provider import CaseOutcome, outcome_of_asserts
from rewardkit_rl.code.reference import parse_reference
from rewardkit_rl.code.sandbox import SandboxConfig, Slot

ROOT = Path(__file__).resolve().parents[1]
RUNS = "reflexion_{run}.jsonl"


def load_rollouts(limit: int | None) -> list[dict]:
    rollouts = []
    for run in ("simple_mbpp_py", "simple_mbpp_py2"):
        for line in (ROOT / "testdata" / "code" / RUNS.format(run=run)).open():
            row = json.loads(line)
            reference = {key: row[key] for key in ("prompt", "test", "entry_point")}
            rollouts.append(
                {
                    "trajectory_id": f"{run}:{row['name']}",
                    "completion": row["solution"],
                    "reference": reference,
                    "is_solved": row["is_solved"],
                }
            )
    return rollouts[:limit] if limit else rollouts


def run_provider(rollouts: list[dict], workers: int) -> tuple[float, list[bool]]:
    bound = resolve_catalog().bind("code-tests", {"cgroup": "required", "concurrency": workers})
    # one group per task with the same reference; groups of 8 as a trainer would send
    bound.score_group("warm", rollouts[:1])
    start = time.perf_counter()
    verdicts = []
    for first in range(0, len(rollouts), 8):
        chunk = rollouts[first : first + 8]
        # candidates of different tasks cannot share a group (common reference), so score one
        # group per rollout but keep `workers` groups in flight, as a trainer's worker would
        with ThreadPoolExecutor(workers) as pool:
            results = list(
                pool.map(lambda r: bound.score_group(r["trajectory_id"], [r]).items[0].result, chunk)
            )
        verdicts += [r.status == "scored" and r.terms["all_passed"] == 1.0 for r in results]
    elapsed = time.perf_counter() - start
    bound.provider.close()
    return elapsed, verdicts


def run_baseline(rollouts: list[dict], workers: int) -> tuple[float, list[bool]]:
    config = SandboxConfig(cgroup="required")
    provider = resolve_catalog().bind("code-tests", {"cgroup": "required"}).provider

    def one(index_rollout: tuple[int, dict]) -> bool:
        index, rollout = index_rollout
        plan = parse_reference(rollout["reference"])
        program = plan.program_from(rollout["completion"])
        statuses = []
        for case in range(plan.case_count):
            slot = Slot(config, 10_000 + index * 16 + case)
            try:
                single = dataclasses.replace(plan, tests=(plan.tests[case],))
                response = slot.run(provider._request(single, program))
            finally:
                slot.close()
            outcome = outcome_of_asserts(response, 1)
            statuses += outcome.statuses if isinstance(outcome, CaseOutcome) else ["skipped"]
        return all(status == "pass" for status in statuses)

    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        verdicts = list(pool.map(one, enumerate(rollouts)))
    return time.perf_counter() - start, verdicts


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    rollouts = load_rollouts(args.limit)
    workers = os.cpu_count() or 1
    rows = []
    for _ in range(args.repeat):
        base_s, base_v = run_baseline(rollouts, workers)
        prov_s, prov_v = run_provider(rollouts, workers)
        assert base_v == prov_v, "baseline and provider disagree on verdicts"
        rows.append({"baseline_s": base_s, "provider_s": prov_s})
    n = len(rollouts)
    best_base = min(row["baseline_s"] for row in rows)
    best_prov = min(row["provider_s"] for row in rows)
    result = {
        "rollouts": n,
        "workers": workers,
        "baseline_rollouts_per_s": n / best_base,
        "provider_rollouts_per_s": n / best_prov,
        "speedup": best_base / best_prov,
        "runs": rows,
    }
    print(f"{'variant':<44}{'rollouts/s':>12}")
    print(f"{'baseline: fresh sandbox per test case':<44}{result['baseline_rollouts_per_s']:>12.1f}")
    print(f"{'code-tests: warm slots, zygote fork per run':<44}{result['provider_rollouts_per_s']:>12.1f}")
    print(f"{'speedup (x baseline)':<44}{result['speedup']:>12.2f}")
    print(f"rollouts={n} workers={workers} repeat={args.repeat} (best of each)")
    out = ROOT / "benchmarks" / "results" / "code_throughput.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
