"""Truncation facts under verl: rewardkit's reward manager passes them, any other manager is refused.

verl's managers call ``compute_score`` with the decoded text only. ``RewardkitRewardManager`` is
loaded the way a verl run loads a custom manager (``reward.reward_manager.source=importlib``), by
verl's own ``RewardLoopWorker``, and scores a ``DataProto`` built as verl's agent loop builds the
one it sends to the reward workers (``AgentLoopWorker._compute_score``: unpadded prompt and response,
an all-ones attention mask, ``prompt_len``/``response_len``), and as its postprocessed batch holds
it (left-padded prompts, responses right-padded to ``response_length``). ``overlong`` (the rl pack's,
from the source tree) scores the length it measured and the ``"length"`` verdict: a response that
filled the budget without EOS. The ``naive`` manager passes neither, so the same reward is refused
on its first call, naming the field.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"

import numpy as np
import pytest
import torch
import verl.experimental.reward_loop.reward_loop as reward_loop
from omegaconf import OmegaConf
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
from verl import DataProto

import rewardkit_bindings.verl as binding
import rewardkit_bindings.verl_manager as manager_module
from rewardkit.plugin import BindingError
from rewardkit_bindings.loading import forget_rewards

RL_PACK = Path(__file__).resolve().parents[3] / "rl_pack" / "src"
BUDGET = 4
WORDS = ["<pad>", "<unk>", "</s>", "what", "is", "two", "plus", "three", "five", "six"]
REWARD = {
    "rl.reward.catalog": "truncation_catalog:catalog",
    # 4 tokens sit on the ramp (-0.5); only the "length" verdict makes them -1
    "rl.reward.spec": {
        "components": [{"provider": "overlong", "params": {"max_tokens": 6, "buffer_tokens": 4}}]
    },
}
# response, overlong
CASES = [
    ("five six five six", -1.0),  # filled the budget without EOS: cut
    ("five six five </s>", -0.5),  # EOS as the last allowed token: stopped, and 4 tokens long
    ("five six", 0.0),  # short without EOS (a stop string): stopped
]


def tokenizer() -> PreTrainedTokenizerFast:
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", eos_token="</s>"
    )


@pytest.fixture(autouse=True)
def catalog_on_path(monkeypatch, tmp_path_factory):
    # The package alone (see the TRL test): no egg-info beside it whose entry points register it twice.
    packages = tmp_path_factory.mktemp("rl-pack")
    (packages / "rewardkit_rl").symlink_to(RL_PACK / "rewardkit_rl")
    monkeypatch.syspath_prepend(str(packages))
    monkeypatch.syspath_prepend(os.path.dirname(__file__))
    forget_rewards()


def verl_config(tokenizer_dir: str, manager: dict):
    return OmegaConf.create(
        {
            "actor_rollout_ref": {
                "model": {"path": tokenizer_dir, "tokenizer_path": tokenizer_dir},
                "rollout": {"prompt_length": 8, "response_length": BUDGET},
            },
            "reward": {
                "custom_reward_function": {
                    "path": binding.__file__,
                    "name": "compute_score",
                    "reward_kwargs": {"config": REWARD},
                },
                "reward_manager": manager,
                "reward_model": {"enable": False},
                "num_workers": 1,
            },
        }
    )


REWARDKIT_MANAGER = {
    "source": "importlib",
    "name": "RewardkitRewardManager",
    "module": {"path": manager_module.__file__, "name": "RewardkitRewardManager"},
}
SAMPLE = {"data_source": "arith", "reward_model": {"ground_truth": "five"}, "extra_info": {"index": 0}}


def for_reward_worker(prompt_ids: list[int], response_ids: list[int]) -> DataProto:
    """One sample as ``AgentLoopWorker._compute_score`` (verl 0.9.1) sends it to a reward worker."""
    prompts, responses = torch.tensor(prompt_ids), torch.tensor(response_ids)
    input_ids = torch.cat([prompts, responses], dim=0)
    attention_mask = torch.ones_like(input_ids)
    pad = torch.nn.utils.rnn.pad_sequence
    batch = {
        "prompts": pad([prompts], batch_first=True, padding_value=0),
        "responses": pad([responses], batch_first=True, padding_value=0),
        "attention_mask": pad([attention_mask], batch_first=True, padding_value=0),
        "input_ids": pad([input_ids], batch_first=True, padding_value=0),
        "position_ids": pad([torch.arange(len(input_ids))], batch_first=True, padding_value=0),
    }
    non_tensors = {
        **{key: np.array([value]) for key, value in SAMPLE.items()},
        "__num_turns__": np.array([2]),
        "tool_extra_fields": np.array([{}], dtype=object),
        "prompt_len": np.array([len(prompt_ids)]),
        "response_len": np.array([len(response_ids)]),
    }
    return DataProto.from_dict(tensors=batch, non_tensors=non_tensors)


def postprocessed(prompt_ids: list[int], response_ids: list[int], pad_id: int) -> DataProto:
    """The same sample as the postprocessed batch holds it: prompt left-padded, response right-padded."""
    prompt_pad, response_pad = 8 - len(prompt_ids), BUDGET - len(response_ids)
    mask = [0] * prompt_pad + [1] * (len(prompt_ids) + len(response_ids)) + [0] * response_pad
    return DataProto.from_dict(
        tensors={
            "prompts": torch.tensor([[pad_id] * prompt_pad + prompt_ids]),
            "responses": torch.tensor([response_ids + [pad_id] * response_pad]),
            "attention_mask": torch.tensor([mask]),
            "response_mask": torch.tensor([[1] * len(response_ids) + [0] * response_pad]),
        },
        non_tensors={key: np.array([value], dtype=object) for key, value in SAMPLE.items()},
    )


def test_rewardkit_manager_passes_length_and_verdict(tmp_path):
    tok = tokenizer()
    tok.save_pretrained(tmp_path / "tok")
    worker = reward_loop.RewardLoopWorker(verl_config(str(tmp_path / "tok"), REWARDKIT_MANAGER))
    assert type(worker.reward_manager).__name__ == "RewardkitRewardManager"
    prompt_ids = tok("what is two plus three", add_special_tokens=False)["input_ids"]
    for response, expected in CASES:
        response_ids = tok(response, add_special_tokens=False)["input_ids"]
        for data in (for_reward_worker(prompt_ids, response_ids), postprocessed(prompt_ids, response_ids, 0)):
            out = worker.loop.run_until_complete(worker.compute_score(data))
            assert out["reward_score"] == out["reward_extra_info"]["overlong"] == expected, (response, out)


def test_naive_manager_is_refused_naming_the_field(tmp_path):
    tok = tokenizer()
    tok.save_pretrained(tmp_path / "tok")
    naive = {"source": "register", "name": "naive"}
    worker = reward_loop.RewardLoopWorker(verl_config(str(tmp_path / "tok"), naive))
    prompt_ids = tok("what is two plus three", add_special_tokens=False)["input_ids"]
    data = for_reward_worker(prompt_ids, tok("five six", add_special_tokens=False)["input_ids"])
    with pytest.raises(BindingError, match="'completion_token_count' \\(read by 'overlong'\\)") as refused:
        worker.loop.run_until_complete(worker.compute_score(data))
    assert "RewardkitRewardManager" in str(refused.value)
