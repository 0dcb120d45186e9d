"""Score a tiny batch with rewardkit through verl's own reward loading (CPU, nothing downloaded).

Run it from anywhere: ``python examples/verl_reward/score.py`` (needs ``rewardkit-core``, ``verl``
and ``torch``). It builds the configuration a verl run gets from these command-line overrides::

    reward.custom_reward_function.path=<rewardkit_bindings/verl.py>
    reward.custom_reward_function.name=compute_score
    +reward.custom_reward_function.reward_kwargs.config=<abs path to reward.yaml>

then lets verl's ``RewardLoopWorker`` (the object each of verl's reward workers builds) load
rewardkit's ``compute_score`` and its ``naive`` reward manager from that configuration, and score a
batch shaped as verl's rollout hands it over: token ids, attention mask, ``data_source`` and
``reward_model.ground_truth`` per response. The tokenizer is a word-level one built here.
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

# Everything is built locally: make any attempt to reach the Hugging Face hub fail fast.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch
from omegaconf import OmegaConf
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
from verl import DataProto
from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

import rewardkit_bindings.verl

REWARD = Path(__file__).with_name("reward.yaml").resolve()
# (prompt, response, data_source, ground truth) as a verl dataset row and its rollout give them.
ROWS = [
    ("what is two plus two", "the answer is #### 4", "openai/gsm8k", "4"),
    ("what is two plus two", "#### 5", "openai/gsm8k", "4"),
    ("what is two plus three", "two plus three is 5 so #### 5", "openai/gsm8k", "5"),
    ("say hello", "hello", "chat", "anything"),
    ("say hello", "", "chat", "anything"),
]
WIDTH = 8  # verl pads every prompt (on the left) and every response (on the right) to fixed widths


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    """A word-level tokenizer over the words of ``ROWS``."""
    words = sorted({word for prompt, response, *_ in ROWS for word in f"{prompt} {response}".split()})
    vocab = {word: index for index, word in enumerate(["<pad>", "<unk>", *words])}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", unk_token="<unk>")


def rollout_batch(tokenizer: PreTrainedTokenizerFast) -> DataProto:
    """The batch verl's rollout produces: padded prompt and response ids, and the mask of real tokens."""
    pad = tokenizer.pad_token_id
    prompts, responses, masks = [], [], []
    for prompt, response, *_ in ROWS:
        prompt_ids = tokenizer(prompt)["input_ids"]
        response_ids = tokenizer(response)["input_ids"]
        prompts.append([pad] * (WIDTH - len(prompt_ids)) + prompt_ids)
        responses.append(response_ids + [pad] * (WIDTH - len(response_ids)))
        real = len(prompt_ids) + len(response_ids)
        masks.append([0] * (WIDTH - len(prompt_ids)) + [1] * real + [0] * (WIDTH - len(response_ids)))
    return DataProto.from_dict(
        tensors={
            "prompts": torch.tensor(prompts),
            "responses": torch.tensor(responses),
            "attention_mask": torch.tensor(masks),
        },
        non_tensors={
            "data_source": np.array([row[2] for row in ROWS], dtype=object),
            "reward_model": np.array([{"ground_truth": row[3]} for row in ROWS], dtype=object),
            "extra_info": np.array([{"index": index} for index in range(len(ROWS))], dtype=object),
        },
    )


def verl_config(tokenizer_dir: str) -> Any:
    """verl's configuration after the command-line overrides in this module's docstring."""
    return OmegaConf.from_dotlist(
        [
            f"reward.custom_reward_function.path={rewardkit_bindings.verl.__file__}",
            "reward.custom_reward_function.name=compute_score",
            f"reward.custom_reward_function.reward_kwargs.config={REWARD}",
            # verl's defaults for the rest of what the reward worker reads
            "reward.reward_manager.source=register",
            "reward.reward_manager.name=naive",
            "reward.reward_model.enable=false",
            f"actor_rollout_ref.model.path={tokenizer_dir}",
            f"actor_rollout_ref.model.tokenizer_path={tokenizer_dir}",
        ]
    )


def main() -> int:
    tokenizer = tiny_tokenizer()
    with tempfile.TemporaryDirectory() as folder:
        # verl's reward worker loads the policy's tokenizer from its folder, as in a real run.
        tokenizer.save_pretrained(folder)
        worker = RewardLoopWorker(verl_config(folder))
        results = worker.loop.run_until_complete(worker.compute_score_batch(rollout_batch(tokenizer)))
    scores = []
    for (_, response, source, truth), result in zip(ROWS, results, strict=True):
        score = float(result["reward_score"])
        scores.append(score)
        # Every response carries every selection's components; those its selection lacks are NaN.
        parts = ", ".join(f"{key}={value}" for key, value in result["reward_extra_info"].items())
        print(f"score {score}  {source!r} {response!r} (ground truth {truth!r})  [{parts}]")
    print(f"scored {len(scores)} responses, mean score {sum(scores) / len(scores):.4f}")
    return 0 if all(math.isfinite(score) for score in scores) else 1


if __name__ == "__main__":
    sys.exit(main())
