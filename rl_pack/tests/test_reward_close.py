"""``Reward.close()`` ends the math worker pools of the training and the validation reward."""

from __future__ import annotations

from pathlib import Path

import rewardkit


def child_pids() -> set[int]:
    """Live child processes of this test process (every thread's children)."""
    pids: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        pids.update(int(pid) for pid in (task / "children").read_text().split())
    return {pid for pid in pids if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"}


def group(group_id: str) -> dict:
    # \sqrt{4} against 2 and 3 needs the equivalence checker: each reward starts its worker pool
    rollouts = [
        {"trajectory_id": f"{group_id}/{k}", "completion": f"so \\boxed{{{k + 2}}}", "reference": "\\sqrt{4}"}
        for k in range(2)
    ]
    return {"group_id": group_id, "rollouts": rollouts}


CONFIG = {
    "rl": {
        "group_size": 2,
        "reward": {"provider": "math", "params": {"workers": 1}},
        "validation": {"reward": {"provider": "math", "params": {"workers": 2}}, "n_generation": 2},
    }
}


def test_close_ends_both_math_pools():
    before = child_pids()
    reward = rewardkit.load(CONFIG)
    validation = reward.validation()
    assert [c.final for c in reward.score([group("g")]).groups[0].candidates] == [1.0, 0.0]
    assert [c.final for c in validation.score([group("v")]).groups[0].candidates] == [1.0, 0.0]
    assert len(child_pids() - before) >= 2, "both pools started"
    reward.close()
    assert child_pids() - before == set(), "no math worker outlives close()"


def test_with_ends_the_math_pool():
    before = child_pids()
    with rewardkit.load(CONFIG) as reward:
        reward.score([group("g")])
        assert child_pids() - before
    assert child_pids() - before == set()
