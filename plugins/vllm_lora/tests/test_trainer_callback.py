"""rewardkit's TrainerCallback inside a real transformers Trainer (CPU, tiny model built here)."""

from __future__ import annotations

import torch
from transformers import LlamaForCausalLM, Trainer, TrainingArguments

from rewardkit_checkpoints.discovery import READY_MARKER, Settling, discover
from rewardkit_checkpoints.trainer_callback import QueueCheckpoints
from rewardkit_vllm.testing import build_tiny_llama


class _Tokens(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 8

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        ids = torch.tensor([4 + index, 5 + index, 6 + index, 7 + index])
        return {"input_ids": ids, "labels": ids.clone()}


def test_each_saved_checkpoint_is_marked_ready_for_the_watcher(tmp_path):
    base = build_tiny_llama(tmp_path / "base")
    model = LlamaForCausalLM.from_pretrained(base)
    args = TrainingArguments(
        output_dir=str(tmp_path / "run"),
        max_steps=2,
        save_steps=1,
        per_device_train_batch_size=2,
        report_to=[],
        use_cpu=True,
        logging_steps=1,
    )
    Trainer(model=model, args=args, train_dataset=_Tokens(), callbacks=[QueueCheckpoints()]).train()
    found = discover(tmp_path / "run")
    assert [item.step for item in found] == [1, 2]
    settling = Settling(settle_s=0.0)
    for item in found:
        assert (item.folder / READY_MARKER).read_text() == str(item.step)
        assert item.kind == "full" and settling.complete(item)
