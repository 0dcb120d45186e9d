"""The built-in trainer bindings, registered through ``register_trainer_bindings``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rewardkit.extensions import TrainerBindingSpec
from rewardkit.hookspecs import hookimpl

BINDINGS: tuple[TrainerBindingSpec, ...] = (
    TrainerBindingSpec(
        "trl",
        "rewardkit.bindings.trl:reward_funcs",
        "TRL GRPOTrainer: reward_funcs(config) -> (funcs, weights); total at 1, components at 0",
    ),
    TrainerBindingSpec(
        "verl",
        "rewardkit.bindings.verl:compute_score",
        "verl custom_reward_function: compute_score(data_source, solution_str, ground_truth, extra_info)",
    ),
    TrainerBindingSpec(
        "openrlhf",
        "rewardkit.bindings.openrlhf:reward_func",
        "OpenRLHF --remote_rm_url file.py: reward_func(queries, prompts, labels)",
    ),
)


@hookimpl
def register_trainer_bindings(register: Callable[[Any], None]) -> None:
    for spec in BINDINGS:
        register(spec)
