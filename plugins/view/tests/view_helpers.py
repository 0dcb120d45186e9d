"""Helpers of the view tests: the real ``rewardkit`` command of this environment, and the README's
example rollouts (``examples/gsm8k``), optionally with some completions replaced."""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import groupby
from pathlib import Path
from typing import Any

import rewardkit as rk

ROOT = Path(__file__).resolve().parents[3]
README_CONFIG = ROOT / "examples" / "gsm8k" / "config.yaml"
README_ROLLOUTS = ROOT / "examples" / "gsm8k" / "rollouts.jsonl"


def rewardkit(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``rewardkit ARGV`` as a user runs it: the console script of this environment, plugins from
    their entry points."""
    command = [str(Path(sys.executable).with_name("rewardkit")), *argv]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=300, check=False)


def readme_rollouts() -> list[dict[str, Any]]:
    return [json.loads(line) for line in README_ROLLOUTS.read_text(encoding="utf-8").splitlines() if line]


def write_rollouts(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def score(config: Path, rollouts: Path, out: Path, *overrides: str) -> Path:
    """``rewardkit score CONFIG rl.data.rollouts_path=ROLLOUTS --out OUT``; a non-zero exit fails the test."""
    done = rewardkit(
        "score",
        str(config),
        f"rl.data.rollouts_path={rollouts}",
        *overrides,
        "--out",
        str(out),
        cwd=out.parent,
    )
    assert done.returncode == 0, done.stderr
    return out


# -- the README rollouts with hedges planted, and what strict and lenient gsm8k make of them ---------

LENIENT = "rl.reward.params.fallback_last_number=true"


def plant_hedges(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The README rollouts with the first wrong candidate of each group rewritten as a hedge without an
    answer marker: "It is <wrong> or maybe <gold>." in even groups (the last number is right, so only
    the lenient reward pays it), "It is <gold> or maybe <wrong>." in odd ones (neither pays)."""
    planted = []
    for index, (_, members) in enumerate(groupby(rows, key=lambda row: row["group_id"])):
        hedged = False
        for row in members:
            row = dict(row)
            lines = row["completion"].splitlines()
            gold = row["answer"].rsplit("####", 1)[1].strip()
            stated = lines[-1].removeprefix("A:").strip()
            if not hedged and lines[-1].startswith("A:") and stated != gold:
                ends = (stated, gold) if index % 2 == 0 else (gold, stated)
                row["completion"] = "\n".join([*lines[:-1], f"It is {ends[0]} or maybe {ends[1]}."])
                hedged = True
            planted.append(row)
    return planted


def direct(rows: list[dict[str, Any]], lenient: bool) -> dict[str, tuple[float, float]]:
    """Each candidate's final reward and advantage, from the in-process API."""
    params = {"fallback_last_number": lenient}
    reward = rk.load({"rl": {"group_size": 4, "reward": {"provider": "gsm8k", "params": params}}})
    groups = [
        (
            group,
            [
                {
                    "trajectory_id": row["trajectory_id"],
                    "completion": row["completion"],
                    "prompt": row["question"],
                    "reference": row["answer"],
                }
                for row in members
            ],
        )
        for group, members in groupby(rows, key=lambda row: row["group_id"])
    ]
    batch = reward.score(groups)
    return {
        candidate.trajectory_id: (candidate.final, candidate.advantage) for _, candidate in batch.candidates()
    }


def sign(value: float) -> int:
    return 0 if abs(value) <= 1e-9 else (1 if value > 0 else -1)


def expected(rows: list[dict[str, Any]]) -> dict[str, Any]:
    strict, lenient = direct(rows, False), direct(rows, True)
    group_of = {row["trajectory_id"]: row["group_id"] for row in rows}
    return {
        "only_a_pays": [t for t in strict if strict[t][0] > 0 and not lenient[t][0] > 0],
        "only_b_pays": [t for t in strict if lenient[t][0] > 0 and not strict[t][0] > 0],
        "changed": sorted(t for t in strict if strict[t][0] != lenient[t][0]),
        "flipped_groups": sorted({group_of[t] for t in strict if sign(strict[t][1]) != sign(lenient[t][1])}),
    }
