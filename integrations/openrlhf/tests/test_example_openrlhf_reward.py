"""``examples/openrlhf_reward/score.py`` runs as a user runs it: ``python examples/openrlhf_reward/score.py``.

The script builds OpenRLHF's ``SingleTurnAgentExecutor`` from ``--remote_rm_url`` pointing at
rewardkit's binding file and runs its real ``execute`` on a tiny batch. The test checks every
response got a finite reward and that each is the total rewardkit gives the same response directly
(``rewardkit.load`` on the example's ``reward.yaml``; the response is the text after the prompt,
without ``</s>``).
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
EXAMPLE = ROOT / "examples" / "openrlhf_reward"
LINE = re.compile(
    r"^reward (?P<reward>\S+)  (?P<prompt>'[^']*') -> (?P<response>'[^']*') \(label (?P<label>'[^']*')\)"
)


def test_openrlhf_reward_example_scores_through_openrlhfs_executor(tmp_path):
    env = {key: value for key, value in os.environ.items() if key != "REWARDKIT_CONFIG"}
    # Run from an unrelated folder: the script must find its reward.yaml by itself.
    done = subprocess.run(
        [sys.executable, str(EXAMPLE / "score.py")],
        cwd=tmp_path,
        env={**env, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [match.groupdict() for line in done.stdout.splitlines() if (match := LINE.match(line))]
    assert len(rows) == 4, done.stdout
    assert re.search(r"^scored 4 responses, mean reward \d\.\d{4}$", done.stdout, re.MULTILINE), done.stdout

    reward = rewardkit.load(EXAMPLE / "reward.yaml")
    printed = [float(row["reward"]) for row in rows]
    assert all(math.isfinite(value) for value in printed)
    groups = [
        (
            f"g{index}",
            [
                {
                    "trajectory_id": "t",
                    "completion": ast.literal_eval(row["response"]).removesuffix("</s>").strip(),
                    "prompt": ast.literal_eval(row["prompt"]),
                    "reference": ast.literal_eval(row["label"]),
                }
            ],
        )
        for index, row in enumerate(rows)
    ]
    ours = [candidate.final for _, candidate in reward.score(groups).candidates()]
    assert printed == [round(value, 4) for value in ours], (printed, ours)
    # The batch has a right answer in each answer form and a wrong and an empty one.
    assert sorted(ours) == [0.0, 0.1, 1.1, 1.1]
