"""``overlong`` inside TRL's real ``GRPOTrainer``: truncated completions get the penalty by TRL's rule.

TRL keeps a completion up to its first EOS, or ``max_completion_length`` ids when there is none, and
calls it truncated when its last id is neither EOS nor padding. The binding derives
``finish_reason`` by that rule from the ``completion_ids`` TRL passes, with the EOS and pad ids of
the trainer's tokenizer. ``overlong`` gets a budget far above ``max_completion_length``, so only the
``"length"`` verdict can give a completion -1: a completion scores -1 exactly when TRL's own ids say
it was cut, and 0 otherwise.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["WANDB_DISABLED"] = "true"

import pytest
import trl
from datasets import Dataset
from tiny import tiny_model, tiny_tokenizer

from rewardkit_bindings.loading import forget_rewards
from rewardkit_bindings.trl import binding

RL_PACK = Path(__file__).resolve().parents[3] / "rl_pack" / "src"
PROMPTS = [
    "what is two plus three",
    "what is four minus one",
    "what is one plus one",
    "what is ten minus two",
]
MAX_COMPLETION = 6
GROUP = 2
CONFIG = {
    "rl.group_size": GROUP,
    "rl.reward.catalog": "truncation_catalog:catalog",
    "rl.reward.spec": {
        "components": [{"provider": "overlong", "params": {"max_tokens": 64, "buffer_tokens": 8}}]
    },
}


@pytest.fixture
def catalog_on_path(monkeypatch, tmp_path_factory):
    # The package alone, linked into a folder of its own: rl_pack/src may also hold the pack's
    # egg-info (from an editable install elsewhere), whose entry points would register it twice.
    packages = tmp_path_factory.mktemp("rl-pack")
    (packages / "rewardkit_rl").symlink_to(RL_PACK / "rewardkit_rl")
    monkeypatch.syspath_prepend(str(packages))
    monkeypatch.syspath_prepend(os.path.dirname(__file__))
    forget_rewards()


def train(tmp_path, bound, tokenizer) -> list[tuple[list[int], float]]:
    """Two GRPO steps; every (completion ids, overlong value) the reward function was called with."""
    funcs, weights = bound.functions(), bound.weights()
    seen: list[tuple[list[int], float]] = []
    overlong = funcs[1]

    def recording(prompts, completions, **kwargs):
        values = overlong(prompts, completions, **kwargs)
        seen.extend(zip([list(ids) for ids in kwargs["completion_ids"]], values, strict=True))
        return values

    recording.__name__ = overlong.__name__
    args = trl.GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=2,
        per_device_train_batch_size=8,
        num_generations=GROUP,
        max_completion_length=MAX_COMPLETION,
        # EOS a little likelier than the other 28 words, so both endings occur in 16 completions
        generation_kwargs={"sequence_bias": [[[tokenizer.eos_token_id], 1.5]]},
        learning_rate=1e-3,
        beta=0.0,
        temperature=1.0,
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
        reward_funcs=[funcs[0], recording],
        args=args,
        train_dataset=Dataset.from_dict({"prompt": PROMPTS * 2}),
        processing_class=tokenizer,
    )
    trainer.train()
    assert trainer.state.global_step == 2
    return seen


def check_verdicts(seen: list[tuple[list[int], float]], tokenizer) -> None:
    stop = {tokenizer.eos_token_id, tokenizer.pad_token_id}
    truncated = [value for ids, value in seen if ids[-1] not in stop]
    stopped = [value for ids, value in seen if ids[-1] in stop]
    assert len(seen) == 16
    assert truncated and stopped, "the run must produce both endings for the test to mean anything"
    assert all(len(ids) == MAX_COMPLETION for ids, value in seen if ids[-1] not in stop)
    assert truncated == [-1.0] * len(truncated)
    assert stopped == [0.0] * len(stopped)


def test_overlong_penalises_what_trl_truncated(tmp_path, catalog_on_path):
    tokenizer = tiny_tokenizer()
    check_verdicts(train(tmp_path, binding(CONFIG, tokenizer=tokenizer), tokenizer), tokenizer)


def test_the_trainer_tokenizer_is_found_without_tokenizer_argument(tmp_path, catalog_on_path):
    # GRPOTrainer passes log_metric, one of its own methods: the binding reads its processing_class.
    tokenizer = tiny_tokenizer()
    check_verdicts(train(tmp_path, binding(CONFIG), tokenizer), tokenizer)
