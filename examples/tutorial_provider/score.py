"""Score one group in process with the installed ``final-answer`` provider."""

from __future__ import annotations

import rewardkit

rollouts = [
    {"trajectory_id": "a", "completion": "Answer: Paris", "reference": "Paris"},
    {"trajectory_id": "b", "completion": "Answer: Lyon", "reference": "Paris"},
]
with rewardkit.load({"rl": {"group_size": 2, "reward": {"provider": "final-answer"}}}) as reward:
    batch = reward.score([("capital", rollouts)])
for _, candidate in batch.candidates():
    print(candidate.trajectory_id, candidate.final, candidate.breakdown["final-answer"]["status"])
