"""One rank of a 2-process GRPOTrainer run; started by ``test_grpo_two_ranks.py`` through torchrun.

``python grpo_ranks.py OUT_DIR RUN...`` trains one tiny model per RUN (``pointwise``,
``group-native``, ``uneven``, ``fails-on-rank-1``) for 2 steps with ``per_device_train_batch_size=2`` and
``num_generations=4``, so each rank holds half of every group. Each rank writes
``OUT_DIR/<run>-rank<r>.json``: what its reward functions were called with and returned, and on
rank 0 what TRL logged for the whole batch (prompts, completions and rewards, gathered by TRL) and
its metrics; every rank also records what the binding passed to TRL's ``log_metric`` on each call.
A run that raises records the error instead.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["WANDB_DISABLED"] = "true"

import trl
from accelerate import PartialState
from datasets import Dataset
from tiny import tiny_model, tiny_tokenizer
from transformers import TrainerCallback, set_seed

from rewardkit_bindings.loading import forget_rewards
from rewardkit_bindings.trl import binding

ROWS = [
    ("what is two plus three", "five"),
    ("what is four minus one", "three"),
    ("what is two times three", "six"),
    ("what is one plus one", "two"),
]
GROUP = 4
RUNS = {
    "pointwise": [
        {"provider": "word-overlap", "weight": 2.0},
        {"provider": "long-answer", "weight": 0.5},
        {"provider": "nonempty", "weight": 1.0},
    ],
    "group-native": [
        {"provider": "position", "weight": 1.0},
        {"provider": "word-overlap", "weight": 2.0},
    ],
    "uneven": [
        {"provider": "uneven", "weight": 1.0},
        {"provider": "word-overlap", "weight": 2.0},
    ],
    "fails-on-rank-1": [{"provider": "fails-on-rank-1", "weight": 1.0}],
}


def config(run: str) -> dict:
    return {
        "rl.group_size": GROUP,
        "rl.data.response_column": "answer",
        "rl.reward.catalog": "trl_catalog:catalog",
        "rl.reward.spec": {"components": RUNS[run]},
    }


class Snapshot(TrainerCallback):
    """On each logged step: TRL's metrics and its whole-batch table (gathered from every rank)."""

    def __init__(self) -> None:
        self.trainer = None
        self.steps: list[dict] = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs is None or "reward" not in logs:
            return
        samples = self.trainer._logs
        self.steps.append(
            {
                "logs": dict(logs),
                "prompts": list(samples["prompt"]),
                "completions": list(samples["completion"]),
                "rewards": {name: list(values) for name, values in samples["rewards"].items()},
                "advantages": list(samples["advantages"]),
            }
        )


def recorded(function, calls: list[dict]):
    def wrapper(prompts, completions, **kwargs):
        metrics: list = []
        log_metric = kwargs.get("log_metric")
        if callable(log_metric):

            def logging(name, value):
                metrics.append((name, value))
                log_metric(name, value)

            kwargs["log_metric"] = logging
        out = function(prompts=prompts, completions=completions, **kwargs)
        calls.append(
            {"name": function.__name__, "prompts": list(prompts), "rewards": list(out), "metrics": metrics}
        )
        return out

    wrapper.__name__ = function.__name__
    return wrapper


def train(run: str, out: Path, rank: int) -> None:
    set_seed(0)
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer)
    dataset = Dataset.from_dict({"prompt": [p for p, _ in ROWS], "answer": [a for _, a in ROWS]})
    bound = binding(config(run))
    calls: list[dict] = []
    funcs = [recorded(function, calls) for function in bound.functions()]
    args = trl.GRPOConfig(
        output_dir=str(out / f"{run}-trainer"),
        max_steps=2,
        per_device_train_batch_size=2,
        num_generations=GROUP,
        max_completion_length=8,
        learning_rate=1e-3,
        beta=0.0,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        bf16=False,
        fp16=False,
        use_vllm=False,
        seed=0,
        dataloader_num_workers=0,
        reward_weights=bound.weights(),
    )
    snapshot = Snapshot()
    record: dict = {"run": run, "rank": rank, "calls": calls}
    try:
        trainer = trl.GRPOTrainer(
            model=model,
            reward_funcs=funcs,
            args=args,
            train_dataset=dataset,
            processing_class=tokenizer,
            callbacks=[snapshot],
        )
        snapshot.trainer = trainer
        record["world"] = trainer.accelerator.num_processes
        trainer.train()
        record["global_step"] = trainer.state.global_step
    except Exception as error:  # recorded for the test, which checks every rank failed the same way
        record["error"] = {"type": type(error).__name__, "message": str(error)}
    record["steps"] = snapshot.steps if rank == 0 else []
    (out / f"{run}-rank{rank}.json").write_text(json.dumps(record))


def main() -> None:
    out = Path(sys.argv[1])
    state = PartialState(cpu=True)
    try:
        for run in sys.argv[2:]:
            train(run, out, state.process_index)
    finally:
        shut_down(state)


def shut_down(state: PartialState) -> None:
    """End the rank as a multi-process training script should (docs/bindings.md, "Ending a
    multi-process run"): let gloo finish with the last collective, close what rewardkit opened, then
    tear the process group down while the interpreter is whole.

    A gloo worker thread frees a finished collective's tensors a moment after ``wait()`` has returned
    on the main thread, and freeing a tensor that Python knew needs the GIL. When that collective was
    the script's last act (here the failure exchange of ``fails-on-rank-1``), the main thread could
    meanwhile hold the GIL in a call that waits for that worker (the process group's destructor,
    reached from the trainer's DDP reducer: a deadlock) or be finalising the interpreter (CPython
    makes the worker exit; it unwinds through torch's ``noexcept`` destructor and the rank aborts
    with "terminate called without an active exception", after its results were written). The
    barrier releases the GIL while it waits, so the worker finishes then; after it every worker is
    idle, and collecting the trainers now destroys the group's threads before finalisation.
    """
    state.wait_for_everyone()
    forget_rewards()  # closes the rewards and monitors the bindings cached
    state.destroy_process_group()
    gc.collect()  # the trainers (in cycles with their callbacks) hold the group through DDP


if __name__ == "__main__":
    main()
