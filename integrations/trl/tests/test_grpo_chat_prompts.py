"""TRL's real ``GRPOTrainer`` with conversational prompts: the provider receives each prompt as the
list of messages in the dataset, the same value the core's prompt-row loader (the one checkpoint
evaluation reads its prompts with) gives for those rows, so evaluation scores what training scored.

The tokenizer gets a plain chat template (contents joined by spaces) so TRL can render the messages
for the tiny model; nothing is downloaded. The recording provider and its catalog live here
(``rl.reward.catalog: test_grpo_chat_prompts:catalog``).
"""

from __future__ import annotations

import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["WANDB_DISABLED"] = "true"

# Imported plainly: run under `tox -e trl`, and a missing trainer is an import error, not a skip.
import trl
from datasets import Dataset
from tiny import tiny_model, tiny_tokenizer

from rewardkit import (
    RewardCandidateResult,
    RewardGroupRequest,
    RewardGroupResult,
    RewardProviderResult,
    RewardProviderSpec,
)
from rewardkit.config import DataConfig
from rewardkit.contracts.frozen import freeze, strictly_equal
from rewardkit.job.data import load_prompt_rows
from rewardkit_bindings.trl import reward_funcs

RECEIVED: list[dict] = []
ROWS = [
    {
        "prompt": [
            {"role": "system", "content": "the answer"},
            {"role": "user", "content": "what is two plus three"},
        ],
        "answer": "five",
    },
    {"prompt": [{"role": "user", "content": "what is four minus one"}], "answer": "three"},
]
GROUP = 2


class Recorder:
    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        RECEIVED.append({"prompt": request.context.prompt, "reference": request.context.reference})
        return RewardGroupResult(
            group_id=request.group_id,
            items=tuple(
                RewardCandidateResult(
                    trajectory_id=candidate.trajectory_id,
                    result=RewardProviderResult(terms={"task": float(len(candidate.completion.split()))}),
                )
                for candidate in request.candidates
            ),
        )


def catalog() -> list[RewardProviderSpec]:
    return [RewardProviderSpec("recorder", Recorder, ("prompt", "reference"), "1", ("task",))]


def test_conversational_prompts_reach_the_provider_as_the_loader_reads_them(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(os.path.dirname(__file__))  # this module is the catalog
    RECEIVED.clear()
    tokenizer = tiny_tokenizer()
    tokenizer.chat_template = "{% for message in messages %}{{ message['content'] }} {% endfor %}"
    config = {
        "rl.group_size": GROUP,
        "rl.data.response_column": "answer",
        "rl.reward": {"provider": "recorder", "catalog": "test_grpo_chat_prompts:catalog"},
    }
    funcs, weights = reward_funcs(config)
    args = trl.GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=1,
        per_device_train_batch_size=4,
        num_generations=GROUP,
        max_completion_length=4,
        beta=0.0,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=False,
        seed=0,
        dataloader_num_workers=0,
        reward_weights=weights,
    )
    trainer = trl.GRPOTrainer(
        model=tiny_model(tokenizer),
        reward_funcs=funcs,
        args=args,
        train_dataset=Dataset.from_list(ROWS),
        processing_class=tokenizer,
    )
    trainer.train()

    rows_file = tmp_path / "rows.jsonl"
    rows_file.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    loaded = load_prompt_rows(
        DataConfig(path=str(rows_file), response_column="answer"), ("prompt", "reference")
    )
    assert len(RECEIVED) == 2, "one step of 4 samples is 2 groups"
    for group in RECEIVED:
        assert not isinstance(group["prompt"], str), "TRL's messages reached the provider as a string"
        matches = [row for row in loaded if strictly_equal(freeze(row.prompt), group["prompt"])]
        assert len(matches) == 1, group["prompt"]
        assert strictly_equal(freeze(matches[0].reference), group["reference"])
