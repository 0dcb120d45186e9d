"""Train a tiny model for 2 GRPO steps on CPU with TRL's GRPOTrainer and a rewardkit reward.

Run it from anywhere: ``python examples/trl_grpo/train.py`` (needs ``rewardkit-core``, ``trl`` and
``torch``). The model (a 1-layer Llama with random weights) and its word-level tokenizer are built
here, so nothing is downloaded. The reward is ``reward.yaml`` beside this file; the script prints
every completion with the total reward rewardkit gave it, then the means TRL logged for each step.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

# Everything is built locally: make any attempt to reach the Hugging Face hub fail fast.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast, TrainerCallback
from trl import GRPOConfig, GRPOTrainer

from rewardkit_bindings.trl import reward_funcs

REWARD = Path(__file__).with_name("reward.yaml")
GROUP = 4  # must equal rl.group_size in reward.yaml
STEPS = 2
# Questions with a GSM8K-style reference; the model's words come from the same small vocabulary,
# so a completion such as "#### 5" can score 1 by chance.
ROWS = [
    ("what is 2 plus 3", "5"),
    ("what is 4 minus 1", "3"),
    ("what is 2 times 3", "6"),
    ("what is 1 plus 1", "2"),
]
SPECIALS = ["<pad>", "<unk>", "<bos>", "<eos>"]
WORDS = ["what", "is", "plus", "minus", "times", "the", "answer", "####", *"0123456789"]


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    """A word-level tokenizer over ``WORDS``: small enough to build in a millisecond."""
    vocab = {token: index for index, token in enumerate(SPECIALS + WORDS)}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", bos_token="<bos>", eos_token="<eos>"
    )
    tokenizer.padding_side = "left"  # generation appends to the right of each prompt
    return tokenizer


def tiny_model(tokenizer: PreTrainedTokenizerFast) -> LlamaForCausalLM:
    """A 1-layer Llama with random weights (a few thousand parameters)."""
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return LlamaForCausalLM(config)


def printing(total: Any) -> Any:
    """Wraps rewardkit's total reward function to print each completion with its reward; the name is
    kept (``functools.wraps``) because TRL logs each function under its ``__name__``."""

    @functools.wraps(total)
    def show(prompts: list[str], completions: list[str], answer: list[str], **kwargs: Any) -> list[Any]:
        rewards = total(prompts=prompts, completions=completions, answer=answer, **kwargs)
        for prompt, completion, reference, reward in zip(prompts, completions, answer, rewards, strict=True):
            print(f"  reward {reward}  {prompt!r} -> {completion!r} (answer {reference!r})")
        return rewards

    return show


class PrintSteps(TrainerCallback):
    """Prints the reward means TRL logged at the end of each step."""

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, float] | None = None, **kw: Any
    ) -> None:
        if logs and "reward" in logs:
            means = "  ".join(
                f"{key}={value:.4f}" for key, value in logs.items() if key.startswith("rewards/")
            )
            print(f"step {state.global_step}: reward={logs['reward']:.4f}  {means}", flush=True)


def main() -> int:
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer)
    dataset = Dataset.from_dict({"prompt": [p for p, _ in ROWS], "answer": [a for _, a in ROWS]})
    # One function for the total (weight 1) and one per component (weight 0): TRL logs each
    # component without counting it twice.
    funcs, weights = reward_funcs(REWARD, tokenizer=tokenizer)
    funcs[0] = printing(funcs[0])
    with tempfile.TemporaryDirectory() as output_dir:
        args = GRPOConfig(
            output_dir=output_dir,
            max_steps=STEPS,
            per_device_train_batch_size=2 * GROUP,  # two prompts, GROUP completions each, per step
            num_generations=GROUP,
            max_completion_length=8,
            learning_rate=1e-3,
            beta=0.0,
            logging_steps=1,
            save_strategy="no",
            report_to="none",
            use_cpu=True,
            bf16=False,  # TRL's default bf16 fails on CPU
            seed=0,
            reward_weights=weights,
        )
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=funcs,
            args=args,
            train_dataset=dataset,
            processing_class=tokenizer,
            callbacks=[PrintSteps()],
        )
        trainer.train()
    print(f"trained {trainer.state.global_step} steps")
    return 0 if trainer.state.global_step == STEPS else 1


if __name__ == "__main__":
    sys.exit(main())
