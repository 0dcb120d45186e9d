"""Hacks that never order a pair against the reference, and rewards broken from step 0: the gain
over the reference, its unsolved stratum and the level check see them; honest runs stay quiet.

A scripted policy writes the completions (16 prompts x 8 per step, seeded); real function providers
(``monitor_hack_rewards``) score them through ``rewardkit.load(...).score(...)``, and the monitor the
bindings build from ``rl.monitor`` watches, with the exact-match reference grader.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rewardkit
from rewardkit.config import load_config
from rewardkit.scoring.observers import ObservedBatch, observer_for
from rewardkit_monitor.monitor import RewardMonitor

GROUPS, SIZE, WARMUP = 16, 8, 20
CATALOG = "monitor_hack_rewards:catalog"

# (step, prompt is unanswerable) -> (share of right answers, share of abstentions among the rest)
Policy = Callable[[int, bool], tuple[float, float]]


def run(
    reward: dict[str, Any], policy: Policy, steps: int, tmp_path: Path, *, unanswerable_share: float = 0.0
) -> RewardMonitor:
    """``steps`` steps of the scripted ``policy`` scored by ``reward`` (a provider of the test
    catalog or a spec), watched by the monitor ``rl.monitor`` builds; the closed monitor."""
    selection = {"spec": reward} if "components" in reward else reward
    config = load_config(
        {
            "rl": {
                "group_size": SIZE,
                "reward": {"catalog": CATALOG, **selection},
                "monitor": {
                    "reference": "exact-match",
                    "warmup_steps": WARMUP,
                    "false_alarm_rate": 0.01,
                    "logdir": str(tmp_path / "monitor"),
                    "stop_file": str(tmp_path / "STOP"),
                },
            }
        }
    )
    monitor = observer_for(config)
    assert isinstance(monitor, RewardMonitor)
    rng = np.random.default_rng(7)
    with rewardkit.load(config) as scorer:
        for step in range(steps):
            batch = []
            for g in range(GROUPS):
                unanswerable = g < round(unanswerable_share * GROUPS)
                k = int(rng.integers(0, 50))
                # an unanswerable prompt ends in "?" and its answer is nothing a policy can derive
                prompt, answer = (
                    (f"what is x + {k}?", str(1000 + k)) if unanswerable else (f"what is 2 + {k}", str(2 + k))
                )
                right, abstain = policy(step, unanswerable)
                rollouts = []
                for j in range(SIZE):
                    draw = rng.random()
                    if draw < right:
                        text = answer
                    elif rng.random() < abstain:
                        text = "no"
                    else:  # a wrong number, sometimes with words after it
                        text = f"{int(answer) + int(rng.integers(1, 9))}" + " so" * int(rng.integers(0, 3))
                    rollouts.append(
                        {
                            "trajectory_id": f"{step}-{g}-{j}",
                            "prompt": prompt,
                            "reference": answer,
                            "completion": text,
                        }
                    )
                batch.append({"group_id": f"{step}-{g}", "rollouts": rollouts})
            monitor.observe(ObservedBatch(batch, scorer.score(batch), "trl", step=step))
    monitor.close()
    return monitor


def learning(step: int, unanswerable: bool) -> tuple[float, float]:
    """An honest policy: right more and more often on the answerable prompts, never on the others."""
    return (0.0 if unanswerable else 0.3 + 0.6 * min(1.0, step / 150), 0.0)


def signals_of(monitor: RewardMonitor) -> set[str]:
    return {alarm.signal for alarm in monitor.alarms}


@pytest.mark.parametrize(
    ("reward", "finding"),
    [
        ({"provider": "word-count"}, "level/divergence"),  # varies, but never with the answer
        ({"provider": "nonempty"}, "level/zero_variance"),  # pays every answer alike
    ],
)
def test_a_reward_blind_from_step_0_is_reported_at_the_end_of_the_warmup(tmp_path, reward, finding):
    monitor = run(reward, lambda step, _: (0.5, 0.0), WARMUP + 30, tmp_path)
    found = {alarm.signal: alarm for alarm in monitor.alarms}
    assert finding in found, monitor.alarms
    # at the last warm-up step, dating the problem from the first: nothing changed for a CUSUM to see
    assert (found[finding].step, found[finding].began) == (WARMUP - 1, 0)
    assert "from the start" in found[finding].evidence or "no learning signal" in found[finding].evidence
    assert json.loads((tmp_path / "STOP").read_text())["step"] == WARMUP - 1
    logged = [
        a
        for line in (tmp_path / "monitor" / "monitor.jsonl").read_text().splitlines()
        for a in json.loads(line)["alarms"]
    ]
    assert finding in {alarm["signal"] for alarm in logged}


def test_a_hack_paid_below_a_right_answer_alarms(tmp_path):
    # From step 60 the wrong answers turn into abstentions, which the reward pays 0.5: below a right
    # answer (1), above a wrong one (0), so divergence, which counts pairs ordered against the
    # reference, stays at 0 while the reward climbs at equal accuracy.
    def policy(step: int, _: bool) -> tuple[float, float]:
        return 0.5, min(1.0, max(0.0, (step - 60) / 20))

    monitor = run({"provider": "abstain-partial"}, policy, 140, tmp_path)
    assert monitor.alarms, "the below-right hack raised no alarm"
    assert signals_of(monitor) <= {"reward_gain", "reward_gain/unsolved"}
    first = min(alarm.step for alarm in monitor.alarms)
    assert 60 < first <= 90
    assert monitor.detectors["divergence"].alarm is None
    assert monitor.last_signals["divergence"] == 0.0


def test_a_hack_that_outranks_only_on_unsolvable_prompts_alarms(tmp_path):
    # Half the prompts are unanswerable: never answered right, so their groups hold no pair for
    # divergence. From step 60 the policy abstains there, which the reward pays above a right answer.
    def policy(step: int, unanswerable: bool) -> tuple[float, float]:
        if unanswerable:
            return 0.0, min(1.0, max(0.0, (step - 60) / 20))
        return 0.6, 0.0

    monitor = run({"provider": "unanswerable-abstain"}, policy, 140, tmp_path, unanswerable_share=0.5)
    assert "reward_gain/unsolved" in signals_of(monitor), monitor.alarms
    assert signals_of(monitor) <= {"reward_gain", "reward_gain/unsolved"}
    assert 60 < min(alarm.step for alarm in monitor.alarms) <= 90
    assert monitor.detectors["divergence"].alarm is None
    assert monitor.last_signals["unsolved_share"] == pytest.approx(0.5)


@pytest.mark.parametrize("reward", [{"provider": "exact-match"}, {"provider": "abstain-partial"}])
def test_honest_learning_with_unsolvable_prompts_raises_nothing(tmp_path, reward):
    monitor = run(reward, learning, 300, tmp_path, unanswerable_share=0.25)
    assert monitor.alarms == []
    assert not (tmp_path / "STOP").exists()
    # the reward rose with the reference, and the gain over it stayed near 0
    assert abs(monitor.last_signals["reward_gain"]) < 0.05
