"""The trainer bindings this distribution registers (entry point ``bindings``, group ``rewardkit``); each
target is the import path docs/bindings.md gives its trainer (``tests/test_bindings_registry.py``
compares the two)."""

from __future__ import annotations

from rewardkit import TrainerBindingSpec, hookimpl
from rewardkit.plugin import TrainerBindingRegistrar

BINDINGS: tuple[TrainerBindingSpec, ...] = (
    TrainerBindingSpec(
        "trl",
        "rewardkit_bindings.trl:reward_funcs",
        "TRL GRPOTrainer: reward_funcs(config) -> (funcs, weights); total at 1, components at 0",
    ),
    TrainerBindingSpec(
        "verl",
        "rewardkit_bindings.verl:compute_score",
        "verl custom_reward_function: compute_score(data_source, solution_str, ground_truth, extra_info)",
    ),
    TrainerBindingSpec(
        "verl-batch",
        "rewardkit_bindings.verl:compute_score_batch",
        "verl 0.5 batch reward manager: compute_score_batch(data_sources, solution_strs, ground_truths, "
        "extra_infos)",
    ),
    TrainerBindingSpec(
        "openrlhf",
        "rewardkit_bindings.openrlhf:reward_func",
        "OpenRLHF --remote_rm_url file.py: reward_func(queries, prompts, labels)",
    ),
)


@hookimpl
def register_trainer_bindings(register: TrainerBindingRegistrar) -> None:
    for spec in BINDINGS:
        register(spec)
