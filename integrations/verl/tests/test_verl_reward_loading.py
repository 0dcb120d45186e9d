"""verl's own reward loading runs rewardkit's ``compute_score``.

``verl.trainer.ppo.reward.load_reward_manager`` reads ``reward.custom_reward_function`` (path, name,
reward_kwargs) from an OmegaConf config exactly as a verl run does, builds the registered ``naive``
reward manager around the loaded function, and the test feeds that manager a real ``DataProto``
whose response is decoded by a tokenizer built here. The reward verl computes must be rewardkit's.
"""

from __future__ import annotations

import math
import os

os.environ["HF_HUB_OFFLINE"] = "1"

import numpy as np
import torch
from omegaconf import OmegaConf
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
from verl import DataProto
from verl.trainer.ppo.reward import get_custom_reward_fn, load_reward_manager

import rewardkit_bindings.verl as binding
from rewardkit_bindings.loading import forget_rewards

WORDS = ["<pad>", "<unk>", "the", "answer", "is", "five", "six", "what", "two", "plus", "three"]
REWARD = {
    "rl.reward.provider": "nonempty",
    "rl.reward.by_data_source": {"arith": {"provider": "exact-match"}},
}


def tokenizer() -> PreTrainedTokenizerFast:
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", unk_token="<unk>")


def verl_config():
    return OmegaConf.create(
        {
            "reward": {
                "custom_reward_function": {
                    "path": binding.__file__,
                    "name": "compute_score",
                    "reward_kwargs": {"config": REWARD},
                },
                "reward_manager": {"source": "register", "name": "naive"},
            }
        }
    )


def sample(tok, prompt: str, response: str, data_source: str, truth: str) -> DataProto:
    prompt_ids = tok(prompt)["input_ids"]
    response_ids = tok(response)["input_ids"]
    width = 6
    padded = response_ids + [tok.pad_token_id] * (width - len(response_ids))
    mask = [1] * len(prompt_ids) + [1] * len(response_ids) + [0] * (width - len(response_ids))
    return DataProto.from_dict(
        tensors={
            "prompts": torch.tensor([prompt_ids]),
            "responses": torch.tensor([padded]),
            "attention_mask": torch.tensor([mask]),
        },
        non_tensors={
            "data_source": np.array([data_source], dtype=object),
            "reward_model": np.array([{"ground_truth": truth}], dtype=object),
            "extra_info": np.array([{"index": 0}], dtype=object),
        },
    )


def test_get_custom_reward_fn_loads_compute_score_with_reward_kwargs():
    forget_rewards()
    fn = get_custom_reward_fn(verl_config())
    # Every response carries every selection's components (verl collects each key over the batch).
    arith = fn(data_source="arith", solution_str="five", ground_truth="five", extra_info={})
    assert list(arith) == ["score", "nonempty", "exact-match"]
    assert arith["score"] == arith["exact-match"] == 1.0 and math.isnan(arith["nonempty"])
    other = fn(data_source="other", solution_str="", ground_truth="five", extra_info={})
    assert list(other) == ["score", "nonempty", "exact-match"]
    assert other["score"] == other["nonempty"] == 0.0 and math.isnan(other["exact-match"])


def test_naive_reward_manager_scores_a_dataproto_with_rewardkit():
    forget_rewards()
    tok = tokenizer()
    manager = load_reward_manager(verl_config(), tok)
    cases = [
        ("what is two plus three", "the answer is five", "arith", "five", 0.0),
        ("what is two plus three", "five", "arith", "five", 1.0),
        ("what is two plus three", "six", "arith", "five", 0.0),
        ("what is two plus three", "six", "chat", "five", 1.0),
    ]
    for prompt, response, source, truth, expected in cases:
        out = manager.loop.run_until_complete(
            manager.run_single(sample(tok, prompt, response, source, truth))
        )
        assert out["reward_score"] == expected, (response, source, out)
        direct = binding.compute_score(source, response, truth, {}, config=REWARD)
        assert list(out["reward_extra_info"]) == list(direct)
        for key, value in direct.items():
            got = out["reward_extra_info"][key]
            assert got == value or (math.isnan(got) and math.isnan(value)), (key, got, value)
