"""Shared pieces of the Reward Service tests: real GSM8K groups, a slow provider catalog (so that
back-pressure is observable), and a helper that starts ``rewardkit serve`` with the test catalogs
importable: this folder's (``service_fixtures:slow_catalog``, ``policy_fixtures:guarded_catalog``)
and the core's ``tests/`` folder, whose fixture modules these tests share (``charges_fixtures``,
``reasons_fixtures``, ``remote_fixtures``...)."""

from __future__ import annotations

import json
import os
import time
from functools import partial
from pathlib import Path
from typing import Any

from rewardkit import RewardProviderResult, RewardProviderSpec, map_candidates
from rewardkit.contracts import RewardCandidate, RewardContext
from rewardkit_service.testing import ServerProcess, write_config

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
CORE_TESTS = REPO / "tests"
MODELS = ("6b_finetuning", "6b_verification", "175b_finetuning", "175b_verification")


def shared_data() -> Path:
    override = os.environ.get("REWARDKIT_SHARED_DATA")
    return Path(override) if override else REPO / "testdata" / "shared"


def gsm8k_groups(count: int, offset: int = 0) -> list[dict[str, Any]]:
    """Groups of 4 real model solutions per GSM8K problem, with the gold answer as reference."""
    path = (
        shared_data() / "grade-school-math" / "grade_school_math" / "data" / "example_model_solutions.jsonl"
    )
    if not path.is_file():
        raise FileNotFoundError(f"GSM8K model solutions not found at {path}; set REWARDKIT_SHARED_DATA")
    groups = []
    with path.open(encoding="utf-8") as handle:
        for index, line in enumerate(handle):
            if index < offset:
                continue
            if len(groups) == count:
                break
            row = json.loads(line)
            gold = row["ground_truth"].rsplit("A:", 1)[1].strip()
            rollouts = [
                {
                    "trajectory_id": f"p{index}-{model}",
                    "completion": row[model]["solution"],
                    "prompt": row["question"],
                    "reference": gold,
                }
                for model in MODELS
            ]
            groups.append({"group_id": f"p{index}", "rollouts": rollouts})
    return groups


def _slow_exact(
    candidate: RewardCandidate, context: RewardContext, *, delay_s: float = 0.05
) -> RewardProviderResult:
    time.sleep(delay_s)  # stands in for a sandbox or a judge call: wall-clock work per candidate
    return RewardProviderResult({"match": float(candidate.completion.strip() == str(context.reference))})


def _busy_exact(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    deadline = time.perf_counter() + 0.0005  # half a millisecond of pure CPU per candidate
    while time.perf_counter() < deadline:
        pass
    return RewardProviderResult({"match": float(candidate.completion.strip() == str(context.reference))})


def slow_catalog() -> list[RewardProviderSpec]:
    return [
        RewardProviderSpec(
            "slow-exact", partial(map_candidates, _slow_exact), ("reference",), "1", ("match",)
        ),
        # declared cheap although it is not: it holds the scoring thread, which must never be the
        # event loop's
        RewardProviderSpec(
            "busy-exact", partial(map_candidates, _busy_exact), ("reference",), "1", ("match",), cheap=True
        ),
    ]


def fixtures_pythonpath() -> str:
    """``PYTHONPATH`` for a child process that imports the test catalogs by dotted path."""
    return os.pathsep.join(filter(None, [str(HERE), str(CORE_TESTS), os.environ.get("PYTHONPATH", "")]))


def start_server(
    tmp: Path, config: str, *args: str, env: dict[str, str] | None = None, port: int = 0
) -> ServerProcess:
    path = write_config(tmp, config, f"service-{time.monotonic_ns()}.yaml")
    pythonpath = fixtures_pythonpath()
    return ServerProcess(path, port=port, args=args, env={"PYTHONPATH": pythonpath, **(env or {})}).start()


def slow_groups(count: int, size: int = 4, prefix: str = "s") -> list[dict[str, Any]]:
    return [
        {
            "group_id": f"{prefix}{g}",
            "rollouts": [
                {"trajectory_id": f"{prefix}{g}-{i}", "completion": str(i % 2), "reference": "1"}
                for i in range(size)
            ],
        }
        for g in range(count)
    ]
