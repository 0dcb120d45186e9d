"""``examples/trl_grpo/train.py`` runs as a user runs it: ``python examples/trl_grpo/train.py``.

The script trains a tiny model for 2 GRPO steps with TRL's real trainer and prints each completion
with the reward it got. The test checks the run finished both steps, that every printed reward is
finite, and that each is the total rewardkit itself gives that completion (``rewardkit.load`` on the
example's ``reward.yaml``, groups of 4 consecutive completions as TRL lays them out).
"""

from __future__ import annotations

import ast
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import rewardkit

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "trl_grpo"
GROUP = 4
SAMPLE = re.compile(
    r"^  reward (?P<reward>\S+)  (?P<prompt>'[^']*') -> (?P<completion>'[^']*')"
    r" \(answer (?P<answer>'[^']*')\)$"
)


def test_trl_grpo_example_trains_two_steps_and_prints_rewardkit_rewards(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    # Run from an unrelated folder: the script must find its reward.yaml by itself.
    done = subprocess.run(
        [sys.executable, str(EXAMPLE / "train.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "trained 2 steps" in lines, done.stdout
    steps = [line for line in lines if re.match(r"^step \d+: reward=", line)]
    assert [line.split(":")[0] for line in steps] == ["step 1", "step 2"], done.stdout
    for line in steps:
        means = dict(part.split("=") for part in line.split(": ", 1)[1].split())
        assert {"reward", "rewards/rewardkit/mean", "rewards/gsm8k/mean", "rewards/nonempty/mean"} <= set(
            means
        )
        assert all(math.isfinite(float(value)) for value in means.values()), line

    samples = [match.groupdict() for line in lines if (match := SAMPLE.match(line))]
    assert len(samples) == 2 * 8, done.stdout  # 2 steps x (2 prompts x 4 completions)
    printed = [float(sample["reward"]) for sample in samples]
    assert all(math.isfinite(value) for value in printed)

    groups = []
    for start in range(0, len(samples), GROUP):
        members = samples[start : start + GROUP]
        assert len({member["prompt"] for member in members}) == 1, members
        rollouts = [
            {
                "trajectory_id": f"t{start + offset}",
                "completion": ast.literal_eval(member["completion"]),
                "prompt": ast.literal_eval(member["prompt"]),
                "reference": ast.literal_eval(member["answer"]),
            }
            for offset, member in enumerate(members)
        ]
        groups.append({"group_id": f"g{start}", "rollouts": rollouts})
    ours = [
        candidate.final for _, candidate in rewardkit.load(EXAMPLE / "reward.yaml").score(groups).candidates()
    ]
    assert printed == [float(value) for value in ours]
