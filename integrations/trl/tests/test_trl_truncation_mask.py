"""The TRL binding's ``finish_reason`` equals TRL's own truncation mask, on ids the test chooses.

TRL 1.13's ``GRPOTrainer._generate_and_score_completions`` zeroes the completion mask of every
completion it calls truncated when ``mask_truncated_completions`` is on: one whose last id is
neither the tokenizer's EOS nor its pad id. A real trainer runs one step with a ``rollout_func``
(TRL's own hook for a custom generator) that returns fixed completion ids: ended by EOS, by pad,
by the ``max_completion_length`` budget, short without EOS, and with an EOS that is not last. The
step's completion mask is TRL's verdict; ``overlong`` (budget far above the completions, so only a
``"length"`` verdict gives -1) reports the binding's. The two must agree id list by id list, with
pad distinct from EOS and with pad == EOS (a tokenizer without its own pad token).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["WANDB_DISABLED"] = "true"
# rollout_func is marked experimental in trl 1.13; the warning says nothing this test needs.
os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"

import pytest
import trl
from datasets import Dataset
from tiny import tiny_model, tiny_tokenizer
from transformers import PreTrainedTokenizerFast

from rewardkit_bindings.loading import forget_rewards
from rewardkit_bindings.trl import binding

RL_PACK = Path(__file__).resolve().parents[3] / "rl_pack" / "src"
MAX_COMPLETION = 5
GROUP = 2
PROMPTS = ["what is two plus three", "what is four minus one", "what is one plus one", "the sum of two"]
CONFIG = {
    "rl.group_size": GROUP,
    "rl.reward.catalog": "truncation_catalog:catalog",
    "rl.reward.spec": {
        "components": [{"provider": "overlong", "params": {"max_tokens": 64, "buffer_tokens": 8}}]
    },
}
WORD = 4  # "what": neither EOS nor pad in either tokenizer
OTHER = 5  # "is"


@pytest.fixture
def catalog_on_path(monkeypatch, tmp_path_factory):
    # The rl pack's package alone, as in test_grpo_truncation.py (its egg-info would register it twice).
    packages = tmp_path_factory.mktemp("rl-pack")
    (packages / "rewardkit_rl").symlink_to(RL_PACK / "rewardkit_rl")
    monkeypatch.syspath_prepend(str(packages))
    monkeypatch.syspath_prepend(os.path.dirname(__file__))
    forget_rewards()


def run_step(
    tmp_path: Path, tokenizer: PreTrainedTokenizerFast, completions: list[list[int]], pass_tokenizer: bool
) -> tuple[list[list[int]], list[bool], list[bool]]:
    """One GRPO step on ``completions``: the ids TRL passed, TRL's truncated flags (a zeroed mask row)
    and the binding's (``overlong`` at -1), each in TRL's batch order."""
    bound = binding(CONFIG, tokenizer=tokenizer) if pass_tokenizer else binding(CONFIG)
    funcs = bound.functions()
    seen: list[tuple[list[int], float]] = []
    overlong = funcs[1]

    def recording(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
        values = overlong(prompts, completions, **kwargs)
        seen.extend(zip([list(ids) for ids in kwargs["completion_ids"]], values, strict=True))
        return values

    recording.__name__ = overlong.__name__
    handed = iter(completions)

    def rollout(prompts: list[Any], trainer: trl.GRPOTrainer) -> dict[str, Any]:
        # One completion per prompt of the slice (the sampler already repeats each prompt GROUP times).
        prompt_ids = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in prompts]
        return {"prompt_ids": prompt_ids, "completion_ids": [next(handed) for _ in prompts], "logprobs": None}

    args = trl.GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=1,
        per_device_train_batch_size=len(completions),
        num_generations=GROUP,
        max_completion_length=MAX_COMPLETION,
        mask_truncated_completions=True,
        learning_rate=1e-3,
        beta=0.0,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=False,
        seed=0,
        dataloader_num_workers=0,
        reward_weights=bound.weights(),
    )
    trainer = trl.GRPOTrainer(
        model=tiny_model(tokenizer),
        reward_funcs=[funcs[0], recording],
        args=args,
        train_dataset=Dataset.from_dict({"prompt": PROMPTS * (len(completions) // len(PROMPTS))}),
        processing_class=tokenizer,
        rollout_func=rollout,
    )
    masks: list[Any] = []
    generate_and_score = trainer._generate_and_score_completions

    def capture(inputs: list[dict[str, Any]]) -> dict[str, Any]:
        output = generate_and_score(inputs)
        masks.append(output["completion_mask"])
        return output

    trainer._generate_and_score_completions = capture  # type: ignore[method-assign]
    trainer.train()
    assert len(masks) == 1 and len(seen) == len(completions)
    ids = [ids for ids, _ in seen]
    trl_truncated = [not bool(row.any()) for row in masks[0]]
    binding_truncated = [value == -1.0 for _, value in seen]
    assert all(value in (-1.0, 0.0) for _, value in seen)
    return ids, trl_truncated, binding_truncated


def check(
    ids: list[list[int]],
    trl_truncated: list[bool],
    binding_truncated: list[bool],
    expected: dict[tuple[int, ...], bool],
) -> None:
    # Every chosen ending reached TRL unchanged, so the comparison covers each of them.
    assert sorted(map(tuple, ids)) == sorted(expected)
    trl_expected = [expected[tuple(row)] for row in ids]
    assert trl_expected == trl_truncated, "TRL's own mask is not what the test expects"
    disagreements = {
        tuple(row): {"trl_truncated": theirs, "binding_truncated": ours}
        for row, theirs, ours in zip(ids, trl_truncated, binding_truncated, strict=True)
        if theirs != ours
    }
    assert disagreements == {}


@pytest.mark.parametrize("pass_tokenizer", [True, False], ids=["tokenizer-argument", "trainer-tokenizer"])
def test_pad_distinct_from_eos(tmp_path, catalog_on_path, pass_tokenizer):
    tokenizer = tiny_tokenizer()
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    assert eos != pad
    # completion ids -> truncated by TRL's rule
    expected = {
        (WORD, OTHER, eos): False,  # ended by EOS
        (WORD, OTHER, pad): False,  # ended by pad without EOS: TRL 1.13 counts it as stopped
        (WORD, eos, pad): False,  # EOS then pad
        (eos,): False,  # EOS at once
        (WORD,) * MAX_COMPLETION: True,  # ended by the budget
        (WORD, OTHER): True,  # short, without EOS (a stop string): TRL calls it truncated
        (WORD, eos, OTHER): True,  # an EOS that is not last
        (pad, WORD): True,  # a pad that is not last
    }
    check(*run_step(tmp_path, tokenizer, [list(ids) for ids in expected], pass_tokenizer), expected)


@pytest.mark.parametrize("pass_tokenizer", [True, False], ids=["tokenizer-argument", "trainer-tokenizer"])
def test_pad_equal_to_eos(tmp_path, catalog_on_path, pass_tokenizer):
    tokenizer = tiny_tokenizer()
    tokenizer.pad_token = tokenizer.eos_token  # what TRL does for a tokenizer without a pad token
    eos = tokenizer.eos_token_id
    assert tokenizer.pad_token_id == eos
    unused_pad = tokenizer.convert_tokens_to_ids("<pad>")  # no longer the pad id: an ordinary token
    expected = {
        (WORD, OTHER, eos): False,
        (WORD, eos, eos): False,
        (eos,): False,
        (OTHER, eos): False,
        (WORD,) * MAX_COMPLETION: True,
        (WORD, OTHER): True,
        (WORD, eos, OTHER): True,
        (WORD, OTHER, unused_pad): True,
    }
    check(*run_step(tmp_path, tokenizer, [list(ids) for ids in expected], pass_tokenizer), expected)
