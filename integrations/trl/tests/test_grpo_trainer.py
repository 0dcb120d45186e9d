"""TRL's real ``GRPOTrainer`` trains 2 steps on CPU with rewardkit's reward functions.

The model and the tokenizer are built here (a 1-layer Llama with random weights over a 30-word
vocabulary), so nothing is downloaded. After each step the test takes the completions TRL
generated and the rewards TRL logged for them, scores the same completions with rewardkit
directly (``rewardkit.load(config).score``), and checks they agree sample by sample and in TRL's
logged means. It runs twice: with the plain reward functions, and with the async ones, which score
each batch through a stream (``Reward.astream``).
"""

from __future__ import annotations

import inspect
import math
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["WANDB_DISABLED"] = "true"

# Imported plainly: run under `tox -e trl`, and a missing trainer is an import error, not a skip.
import pytest
import trl
from datasets import Dataset
from tiny import tiny_model, tiny_tokenizer
from transformers import TrainerCallback

import rewardkit
from rewardkit_bindings.trl import binding

ROWS = [
    ("what is two plus three", "five"),
    ("what is four minus one", "three"),
    ("what is two times three", "six"),
    ("what is one plus one", "two"),
    ("what is nine minus four", "five"),
    ("what is ten minus two", "eight"),
    ("what is three plus four", "seven"),
    ("what is zero plus nine", "nine"),
]
GROUP = 2
CONFIG = {
    "rl.group_size": GROUP,
    "rl.data.response_column": "answer",
    "rl.reward.catalog": "trl_catalog:catalog",
    "rl.reward.spec": {
        "components": [
            {"provider": "word-overlap", "weight": 2.0},
            {"provider": "long-answer", "weight": 0.5},
            {"provider": "nonempty", "weight": 1.0},
        ]
    },
}
COMPONENTS = ("word-overlap", "long-answer", "nonempty")


class Snapshot(TrainerCallback):
    """After each logged step: TRL's logged metrics, and the completions and rewards of that step."""

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


def same(logged: float, ours: float | None) -> bool:
    if ours is None:
        return math.isnan(logged)
    return math.isclose(logged, ours, rel_tol=1e-5, abs_tol=1e-6)  # TRL keeps rewards in float32


def nanmean(values: list[float | None]) -> float:
    present = [value for value in values if value is not None]
    return sum(present) / len(present) if present else math.nan


@pytest.mark.parametrize("asynchronous", [False, True], ids=["reward_funcs", "async_reward_funcs"])
def test_grpo_trainer_logs_rewardkit_scores(tmp_path, monkeypatch, asynchronous):
    monkeypatch.syspath_prepend(os.path.dirname(__file__))  # trl_catalog, named in the config
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer)
    dataset = Dataset.from_dict({"prompt": [p for p, _ in ROWS], "answer": [a for _, a in ROWS]})

    bound = binding(CONFIG)
    calls: list[int] = []
    score = bound.reward.score
    monkeypatch.setattr(
        bound.reward, "score", lambda groups, **kw: calls.append(len(groups)) or score(groups, **kw)
    )
    # The async functions score through a stream (reward.astream): count the groups each one took.
    streamed: list[list[str]] = []
    open_stream = bound.reward.stream

    def counted_stream(**kw):
        stream = open_stream(**kw)
        submit, submitted = stream.submit, []
        streamed.append(submitted)
        stream.submit = lambda group: submitted.append(group["group_id"]) or submit(group)
        return stream

    monkeypatch.setattr(bound.reward, "stream", counted_stream)
    funcs = bound.async_functions() if asynchronous else bound.functions()
    weights = bound.weights()
    assert all(inspect.iscoroutinefunction(f) == asynchronous for f in funcs)  # what TRL dispatches on
    assert [f.__name__ for f in funcs] == ["rewardkit", *COMPONENTS]
    assert weights == [1.0, 0.0, 0.0, 0.0]

    args = trl.GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=2,
        per_device_train_batch_size=4,
        num_generations=GROUP,
        max_completion_length=8,
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
    snapshot = Snapshot()
    trainer = trl.GRPOTrainer(
        model=model,
        reward_funcs=funcs,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=[snapshot],
    )
    snapshot.trainer = trainer
    trainer.train()

    assert trainer.state.global_step == 2
    assert len(snapshot.steps) == 2, "TRL logged fewer steps than it trained"
    # One scoring pass per batch, although TRL called four functions per batch: one score call, or
    # one stream of the batch's two groups.
    assert (calls, [len(groups) for groups in streamed]) == (([], [2, 2]) if asynchronous else ([2, 2], []))

    answer_of = dict(ROWS)
    reference = rewardkit.load(CONFIG)
    for number, step in enumerate(snapshot.steps, start=1):
        prompts, completions = step["prompts"], step["completions"]
        assert len(completions) == 4
        groups = []
        for start in range(0, len(completions), GROUP):
            assert prompts[start] == prompts[start + 1], "TRL lays a prompt's completions next to each other"
            rollouts = [
                {
                    "trajectory_id": f"t{start + offset}",
                    "completion": completions[start + offset],
                    "prompt": prompts[start],
                    "reference": answer_of[prompts[start]],
                }
                for offset in range(GROUP)
            ]
            groups.append({"group_id": f"step{number}-{start}", "rollouts": rollouts})
        ours = [candidate for _, candidate in reference.score(groups).candidates()]
        # The binding's reward computes advantages as TRL does (sample std, std + 1e-4): the same numbers.
        advantages = [c.advantage for _, c in bound.reward.score(groups).candidates()]
        assert step["advantages"] == pytest.approx(advantages, rel=1e-4, abs=1e-5), (step, advantages)
        assert any(abs(value) > 0.1 for value in advantages)
        totals = [candidate.final for candidate in ours]
        per_component = {
            name: [
                c.breakdown[name]["value"] if c.breakdown[name]["status"] == "scored" else None for c in ours
            ]
            for name in COMPONENTS
        }

        logged = step["rewards"]
        assert all(same(got, want) for got, want in zip(logged["rewardkit"], totals, strict=True)), (
            number,
            logged["rewardkit"],
            totals,
        )
        for name in COMPONENTS:
            assert all(
                same(got, want) for got, want in zip(logged[name], per_component[name], strict=True)
            ), (
                number,
                name,
                logged[name],
                per_component[name],
            )

        logs = step["logs"]
        assert same(logs["rewards/rewardkit/mean"], sum(totals) / len(totals))
        # The components are weighted 0, so TRL's reward is exactly rewardkit's total.
        assert same(logs["reward"], sum(totals) / len(totals))
        for name in COMPONENTS:
            want = nanmean(per_component[name])
            assert (
                math.isnan(logs[f"rewards/{name}/mean"])
                if math.isnan(want)
                else same(logs[f"rewards/{name}/mean"], want)
            )
        words = [len(text.split()) for text in completions]
        assert same(logs["rewardkit/reward_provider/word-overlap/words"], sum(words) / len(words))
        assert logs["rewardkit/reward_provider/word-overlap/sample_count"] == 4

    # The run really trained on these rewards: the scores were not all equal, so advantages moved.
    assert any(len(set(step["rewards"]["rewardkit"])) > 1 for step in snapshot.steps)
