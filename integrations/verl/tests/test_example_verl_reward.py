"""``examples/verl_reward/score.py`` runs as a user runs it: ``python examples/verl_reward/score.py``.

The script has verl's own ``RewardLoopWorker`` load rewardkit's ``compute_score`` from the
``reward.custom_reward_function`` settings a verl run is given and score a tiny rollout batch with
verl's ``naive`` manager. The test checks it scored every response, that every printed score is
finite, and that each is what rewardkit's ``compute_score`` gives the same response directly.
"""

from __future__ import annotations

import ast
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import rewardkit_bindings.verl as binding
from rewardkit_bindings.loading import forget_rewards

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "verl_reward"
LINE = re.compile(
    r"^score (?P<score>\S+)  (?P<source>'[^']*') (?P<response>'[^']*') \(ground truth (?P<truth>'[^']*')\)"
)


def test_verl_reward_example_scores_through_verls_reward_worker(tmp_path):
    # Run from an unrelated folder: the script must find its reward.yaml by itself.
    done = subprocess.run(
        [sys.executable, str(EXAMPLE / "score.py")],
        cwd=tmp_path,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [match.groupdict() for line in done.stdout.splitlines() if (match := LINE.match(line))]
    assert len(rows) == 5, done.stdout
    assert "scored 5 responses, mean score 0.6000" in done.stdout
    forget_rewards()
    for row in rows:
        printed = float(row["score"])
        assert math.isfinite(printed), row
        source, response, truth = (ast.literal_eval(row[key]) for key in ("source", "response", "truth"))
        direct = binding.compute_score(source, response, truth, {}, config=str(EXAMPLE / "reward.yaml"))
        assert printed == direct["score"], (row, direct)
    # Both selections were exercised, each with a right and a wrong answer.
    assert sorted(float(row["score"]) for row in rows) == [0.0, 0.0, 1.0, 1.0, 1.0]
