"""Score a tiny batch with rewardkit through OpenRLHF's own ``--remote_rm_url`` code (CPU).

Run it from anywhere: ``python examples/openrlhf_reward/score.py`` (needs ``rewardkit-core``,
``openrlhf`` (installable with ``--no-deps`` on CPU), ``torch`` and ``transformers``). An OpenRLHF run
given ``--remote_rm_url /path/to/rewardkit_bindings/openrlhf.py`` builds a ``SingleTurnAgentExecutor``
that imports ``reward_func`` from that file; for every prompt it generates a response, decodes
prompt and response into one query and calls ``reward_func([query], [prompt], [label])``. This
script builds that executor and runs its real ``execute``; only the vLLM engine (GPU-only) is
replaced by one that returns fixed responses. The reward is ``$REWARDKIT_CONFIG``, by default
``reward.yaml`` beside this file; the tokenizer is a word-level one built here.
"""

from __future__ import annotations

import asyncio
import math
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

# Everything is built locally: make any attempt to reach the Hugging Face hub fail fast.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# What a user exports before launching OpenRLHF: the reward configuration the binding loads.
os.environ.setdefault("REWARDKIT_CONFIG", str(Path(__file__).with_name("reward.yaml").resolve()))

from openrlhf.utils.agent import SingleTurnAgentExecutor
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

import rewardkit_bindings.openrlhf

# (prompt, label, the response the "engine" generates); the label is the reference answer.
ROWS = [
    ("Question: what is two plus two ? Answer:", "4", "two plus two is #### 4 </s>"),
    ("Question: what is two plus two ? Answer:", "4", "#### 5 </s>"),
    ("Question: what is two plus three ? Answer:", "5", "the answer is 5 </s>"),
    ("Question: what is two plus three ? Answer:", "5", "</s>"),
]


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    """A word-level tokenizer over the words of ``ROWS``, with ``</s>`` as its end of sequence."""
    words = sorted(
        {word for prompt, _, response in ROWS for word in f"{prompt} {response}".split()} - {"</s>"}
    )
    vocab = {word: index for index, word in enumerate(["<pad>", "<unk>", "</s>", *words])}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", eos_token="</s>"
    )


class FixedEngine:
    """Stands in for OpenRLHF's vLLM engine: ``generate`` returns the token ids of a given text."""

    def __init__(self, token_ids: list[int]) -> None:
        self.token_ids = token_ids

    async def generate(self, prompt_token_ids: list[int], params: Any, multi_modal_data: Any = None) -> Any:
        output = SimpleNamespace(token_ids=list(self.token_ids), finish_reason="stop", logprobs=None)
        return SimpleNamespace(outputs=[output])


async def rollouts(
    executor: SingleTurnAgentExecutor, tokenizer: PreTrainedTokenizerFast
) -> list[dict[str, Any]]:
    """One ``execute`` per prompt, run concurrently as OpenRLHF's vLLM actor runs them."""
    params = SimpleNamespace(max_tokens=16, logprobs=None)
    calls = [
        executor.execute(
            prompt,
            label,
            params,
            64,
            tokenizer,
            FixedEngine(tokenizer(response, add_special_tokens=False)["input_ids"]),
        )
        for prompt, label, response in ROWS
    ]
    return list(await asyncio.gather(*calls))


def main() -> int:
    tokenizer = tiny_tokenizer()
    # What OpenRLHF builds from `--remote_rm_url`: a path ending in .py is imported for `reward_func`.
    executor = SingleTurnAgentExecutor(remote_rm_url=rewardkit_bindings.openrlhf.__file__)
    rewards = []
    for (prompt, label, response), output in zip(
        ROWS, asyncio.run(rollouts(executor, tokenizer)), strict=True
    ):
        if output["reward"] is None:
            # OpenRLHF logs a failing reward_func at INFO level and leaves the reward unset.
            print(f"no reward for {response!r}: reward_func failed (see OpenRLHF's log)")
            return 1
        reward = float(output["reward"][0])
        rewards.append(reward)
        # OpenRLHF hands back float32 tensors: 4 decimals show them without float32 noise.
        logs = ", ".join(f"{key}={float(value[0]):.4f}" for key, value in output["extra_logs"].items())
        print(f"reward {reward:.4f}  {prompt!r} -> {response!r} (label {label!r})  [{logs}]")
    print(f"scored {len(rewards)} responses, mean reward {sum(rewards) / len(rewards):.4f}")
    return 0 if all(math.isfinite(reward) for reward in rewards) else 1


if __name__ == "__main__":
    sys.exit(main())
