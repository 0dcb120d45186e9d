"""The reward monitor through verl's own reward loading and naive manager (docs/monitor.md).

verl scores one response at a time and names no step, so ``rl.monitor.rollouts_per_step`` makes a
step of that many responses; every response carries the alarm flag (verl gathers each key over the
batch), and the signals go to the monitor's log.
"""

from __future__ import annotations

import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"

from test_verl_reward_loading import REWARD, sample, tokenizer, verl_config
from verl.trainer.ppo.reward import load_reward_manager

from rewardkit_bindings.loading import forget_rewards

CASES = [
    ("what is two plus three", "five", "arith", "five"),
    ("what is two plus three", "six", "arith", "five"),
    ("what is two plus three", "five five", "arith", "five"),
    ("what is two plus three", "five", "arith", "five"),
]


def test_naive_manager_feeds_the_monitor_one_step_per_rollouts_per_step(tmp_path):
    forget_rewards()
    monitored = {**REWARD, "rl.monitor": {"reference": "exact-match", "logdir": str(tmp_path),
                                          "rollouts_per_step": 2}}  # fmt: skip
    config = verl_config()
    config.reward.custom_reward_function.reward_kwargs.config = monitored
    manager = load_reward_manager(config, tokenizer())
    tok = tokenizer()
    outputs = [manager.loop.run_until_complete(manager.run_single(sample(tok, *case))) for case in CASES]
    for out in outputs:
        assert out["reward_extra_info"]["reward_monitor/alarm"] == 0.0, out
    forget_rewards()  # closes the monitor, which finishes a step still buffered
    records = [json.loads(line) for line in (tmp_path / "monitor.jsonl").read_text().splitlines()]
    assert [record["rollouts"] for record in records] == [2, 2]
    assert [record["source"] for record in records] == ["verl", "verl"]
    # exact-match is both the reward and the reference: the means agree step by step.
    assert [record["signals"]["reward_mean"] for record in records] == [0.5, 0.5]
    assert [record["signals"]["reference_mean"] for record in records] == [0.5, 0.5]
    # verl's per-sample manager has no groups: within-group signals are undefined.
    assert all(record["signals"].get("length_coupling") is None for record in records)
