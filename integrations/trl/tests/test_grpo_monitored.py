"""The reward monitor inside TRL's real ``GRPOTrainer`` (docs/monitor.md).

The binding hands the monitor each batch with TRL's ``global_step``; a step's figures are logged at
the next call (the step is finished when a batch of a new step arrives), as
``rewardkit/reward_monitor/<signal>`` beside TRL's own metrics, and every step goes to the log.
"""

from __future__ import annotations

import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["WANDB_DISABLED"] = "true"

import pytest
import trl
from datasets import Dataset
from test_grpo_trainer import CONFIG, GROUP, ROWS, Snapshot
from tiny import tiny_model, tiny_tokenizer

from rewardkit_bindings.loading import forget_rewards
from rewardkit_bindings.trl import binding

STEPS = 3


def test_grpo_trainer_feeds_the_monitor_and_logs_its_signals(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(os.path.dirname(__file__))  # trl_catalog, named in the config
    forget_rewards()
    logdir = tmp_path / "monitor"
    config = {**CONFIG, "rl.monitor": {"reference": "nonempty", "logdir": str(logdir)}}
    tokenizer = tiny_tokenizer()
    bound = binding(config)
    args = trl.GRPOConfig(
        output_dir=str(tmp_path / "out"),
        max_steps=STEPS,
        per_device_train_batch_size=4,
        num_generations=GROUP,
        max_completion_length=8,
        learning_rate=1e-3,
        beta=0.0,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=False,
        seed=0,
        reward_weights=bound.weights(),
    )
    snapshot = Snapshot()
    dataset = Dataset.from_dict({"prompt": [p for p, _ in ROWS], "answer": [a for _, a in ROWS]})
    trainer = trl.GRPOTrainer(
        model=tiny_model(tokenizer),
        reward_funcs=bound.functions(),
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=[snapshot],
    )
    snapshot.trainer = trainer
    trainer.train()
    forget_rewards()  # closes the monitor, which finishes the last step

    records = [json.loads(line) for line in (logdir / "monitor.jsonl").read_text().splitlines()]
    assert [record["step"] for record in records] == list(range(STEPS))
    assert all(record["source"] == "trl" and record["rollouts"] == 4 for record in records)
    assert all(record["groups"] == 4 // GROUP for record in records)
    for number, step in enumerate(snapshot.steps):
        logs = step["logs"]
        assert logs["rewardkit/reward_monitor/alarm"] == 0.0
        if number == 0:
            continue  # the first step is finished by the second step's call
        # What TRL logged at this step is the monitor's figure of the step before, from the same rewards.
        previous = snapshot.steps[number - 1]["rewards"]["rewardkit"]
        assert logs["rewardkit/reward_monitor/reward_mean"] == pytest.approx(sum(previous) / len(previous))
        assert records[number - 1]["signals"]["reward_mean"] == pytest.approx(sum(previous) / len(previous))
        if number >= 2:  # a step carries TRL's entropy as last logged when its batch came (the step before)
            logged = snapshot.steps[number - 2]["logs"]["entropy"]
            assert logs["rewardkit/reward_monitor/entropy"] == pytest.approx(logged)
