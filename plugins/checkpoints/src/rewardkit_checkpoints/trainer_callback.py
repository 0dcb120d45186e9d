"""A Hugging Face ``TrainerCallback`` that hands each saved checkpoint to the watcher.

``on_save`` writes the ``.rewardkit-ready`` marker into the folder the Trainer just finished
writing (on the main process only). It does no evaluation and waits for nothing, so training
never blocks; ``rewardkit checkpoints watch`` (beside the trainer, or as a Kubernetes Job)
evaluates the checkpoint as soon as it sees the marker. Works for TRL's trainers, which are
Trainer subclasses::

    from rewardkit_checkpoints.trainer_callback import QueueCheckpoints
    trainer = GRPOTrainer(..., callbacks=[QueueCheckpoints()])

verl writes ``latest_checkpointed_iteration.txt`` after each ``global_step_N``; the watcher
reads that instead, so verl needs no callback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from rewardkit_checkpoints.discovery import READY_MARKER


class QueueCheckpoints(TrainerCallback):
    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if getattr(state, "is_world_process_zero", True):
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if folder.is_dir():
                (folder / READY_MARKER).write_text(str(state.global_step), encoding="utf-8")
        return control
