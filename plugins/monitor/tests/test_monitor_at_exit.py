"""A trainer never tells a reward function that training ended: the monitor a binding built is
closed when the process exits, so the run's last, still buffered step reaches the log."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap


def test_the_last_buffered_step_is_written_when_the_process_exits(tmp_path):
    script = textwrap.dedent(
        f"""
        from rewardkit_bindings.verl import compute_score_batch

        config = {{"rl.reward.provider": "exact-match",
                   "rl.monitor": {{"reference": "exact-match", "logdir": {str(tmp_path)!r},
                                  "rollouts_per_step": 100}}}}
        compute_score_batch(["math", "math"], ["5", "6"], ["5", "5"], config=config)
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    records = [json.loads(line) for line in (tmp_path / "monitor.jsonl").read_text().splitlines()]
    assert [(record["step"], record["rollouts"]) for record in records] == [(0, 2)]
    assert records[0]["signals"]["reference_mean"] == 0.5
