"""A batch mixing data sources (GSM8K, countdown, anything else) through verl's own reward code.

``rl.reward.by_data_source`` gives each source its own provider, so the responses of one batch
come from different selections. verl collects every key a reward function returns over the whole
batch: its reward loop (``RewardLoopManager.compute_rm_score``) takes the first response's keys
and reads them from every other response, and the legacy ``NaiveRewardManager`` appends each key
to its own list. Both break unless every response carries the same keys.

The reward loop runs its real ``RewardLoopWorker`` (tokenizer loaded from a folder written here,
reward manager and ``compute_score`` loaded from the config as a verl run does) and its real
``compute_rm_score``; only Ray's transport is replaced by running the worker's coroutine on the
worker's own event loop, as the existing tests drive ``run_single``.
"""

from __future__ import annotations

import math
import os
from types import SimpleNamespace

os.environ["HF_HUB_OFFLINE"] = "1"

import numpy as np
import pytest
import torch
import verl.experimental.reward_loop.reward_loop as reward_loop
from omegaconf import OmegaConf
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
from verl import DataProto
from verl.trainer.ppo.reward import extract_reward, get_custom_reward_fn, resolve_reward_manager_cls
from verl.workers.reward_manager.naive import NaiveRewardManager

import rewardkit_bindings.verl as binding
from rewardkit_bindings.loading import forget_rewards

REWARD = {
    "rl.reward.provider": "nonempty",
    "rl.reward.by_data_source": {
        "openai/gsm8k": {"provider": "gsm8k"},
        "countdown": {"provider": "countdown"},
    },
}
# prompt, response, data_source, ground truth, expected reward
ROWS = [
    ("what is two plus two", "the answer is #### 4", "openai/gsm8k", "4", 1.0),
    ("make 6 from 1 2 3", "<answer> 1+2+3 </answer>", "countdown", {"target": 6, "numbers": [1, 2, 3]}, 1.0),
    ("what is two plus two", "#### 5", "openai/gsm8k", "4", 0.0),
    ("say hello", "hello", "chat", "anything", 1.0),
    ("make 7 from 1 2 3", "<answer> 1*2*3 </answer>", "countdown", {"target": 7, "numbers": [1, 2, 3]}, 0.0),
]
KEYS = ["score", "nonempty", "gsm8k", "countdown"]


def tokenizer() -> PreTrainedTokenizerFast:
    words = sorted({word for prompt, response, *_ in ROWS for word in (prompt + " " + response).split()})
    vocab = {word: index for index, word in enumerate(["<pad>", "<unk>", *words])}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", unk_token="<unk>")


def batch(tok: PreTrainedTokenizerFast) -> DataProto:
    width_p, width_r = 6, 6
    prompts, responses, masks = [], [], []
    for prompt, response, *_ in ROWS:
        p_ids, r_ids = tok(prompt)["input_ids"], tok(response)["input_ids"]
        prompts.append([tok.pad_token_id] * (width_p - len(p_ids)) + p_ids)
        responses.append(r_ids + [tok.pad_token_id] * (width_r - len(r_ids)))
        masks.append(
            [0] * (width_p - len(p_ids)) + [1] * (len(p_ids) + len(r_ids)) + [0] * (width_r - len(r_ids))
        )
    return DataProto.from_dict(
        tensors={
            "prompts": torch.tensor(prompts),
            "responses": torch.tensor(responses),
            "attention_mask": torch.tensor(masks),
        },
        non_tensors={
            "data_source": np.array([row[2] for row in ROWS], dtype=object),
            "reward_model": np.array([{"ground_truth": row[3]} for row in ROWS], dtype=object),
            "extra_info": np.array([{"index": i} for i in range(len(ROWS))], dtype=object),
        },
    )


def verl_config(tokenizer_dir: str):
    return OmegaConf.create(
        {
            "actor_rollout_ref": {"model": {"path": tokenizer_dir, "tokenizer_path": tokenizer_dir}},
            "reward": {
                "custom_reward_function": {
                    "path": binding.__file__,
                    "name": "compute_score",
                    "reward_kwargs": {"config": REWARD},
                },
                "reward_manager": {"source": "register", "name": "naive"},
                "reward_model": {"enable": False},
                "num_workers": 1,
            },
        }
    )


@pytest.fixture(autouse=True)
def _fresh() -> None:
    forget_rewards()


def final_scores(reward_tensor: torch.Tensor) -> list[float]:
    return [float(row.sum()) for row in reward_tensor]


def test_reward_loop_scores_a_mixed_source_batch(tmp_path):
    tok = tokenizer()
    tok.save_pretrained(tmp_path / "tok")
    config = verl_config(str(tmp_path / "tok"))
    worker = reward_loop.RewardLoopWorker(config)

    class LocalWorker:  # what ray.remote(RewardLoopWorker) would be, minus Ray
        compute_score_batch = SimpleNamespace(remote=worker.compute_score_batch)

    def run_here(coroutines):  # ray.get over the "remote" calls: run each on the worker's loop
        return [worker.loop.run_until_complete(coroutine) for coroutine in coroutines]

    manager = object.__new__(reward_loop.RewardLoopManager)
    manager.config = config
    manager.reward_model_manager = None
    manager.reward_loop_workers = [LocalWorker()]
    manager.reward_manager_cls = resolve_reward_manager_cls(config)
    original_ray = reward_loop.ray
    reward_loop.ray = SimpleNamespace(get=run_here)
    try:
        scored = manager.compute_rm_score(batch(tok))
    finally:
        reward_loop.ray = original_ray
    reward_tensor, extra = extract_reward(scored)
    assert final_scores(reward_tensor) == [row[4] for row in ROWS]
    assert list(extra) == KEYS
    assert all(len(values) == len(ROWS) for values in extra.values())
    # Each source's own component holds its score; the others are NaN for that response.
    for index, (_, _, source, _, expected) in enumerate(ROWS):
        own = {"openai/gsm8k": "gsm8k", "countdown": "countdown"}.get(source, "nonempty")
        assert extra[own][index] == expected
        assert all(math.isnan(extra[key][index]) for key in KEYS[1:] if key != own)


def test_legacy_naive_manager_keeps_one_value_per_response_for_every_key():
    tok = tokenizer()
    manager = NaiveRewardManager(
        tok, num_examine=0, compute_score=get_custom_reward_fn(verl_config("unused"))
    )
    out = manager(batch(tok), return_dict=True)
    assert final_scores(out["reward_tensor"]) == [row[4] for row in ROWS]
    assert list(out["reward_extra_info"]) == KEYS
    assert [len(values) for values in out["reward_extra_info"].values()] == [len(ROWS)] * len(KEYS)
