"""rewardkit's verl reward manager: ``compute_score`` with each response's length and EOS fact, which
verl's own managers do not pass, read from ``DataProto`` (docs/bindings.md). This module imports verl.
"""

from __future__ import annotations

import inspect
from typing import Any

from verl import DataProto
from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase

from rewardkit.plugin import CANDIDATE_NEEDS, BindingError
from rewardkit_bindings import verl as verl_binding
from rewardkit_bindings.loading import plain
from rewardkit_bindings.truncation import budget_finish_reason

BUDGET_KEY = "actor_rollout_ref.rollout.response_length"


def response_budget(config: Any) -> int:
    """The rollout's per-response token budget, ``actor_rollout_ref.rollout.response_length``."""
    node = config
    for part in BUDGET_KEY.split("."):
        node = node.get(part) if hasattr(node, "get") else None
        if node is None:
            raise BindingError(
                f"RewardkitRewardManager needs {BUDGET_KEY} (the response token budget) in verl's config "
                "to tell a response cut at the budget from one that stopped"
            )
    if isinstance(node, bool) or not isinstance(node, int) or node < 1:
        raise BindingError(f"{BUDGET_KEY} must be a positive integer, got {node!r}")
    return node


def eos_ids(tokenizer: Any) -> frozenset[int]:
    """The tokenizer's EOS ids (``eos_token_id`` may be one id or a list)."""
    value = getattr(tokenizer, "eos_token_id", None)
    values = value if isinstance(value, (list, tuple, set, frozenset)) else [value]
    return frozenset(int(item) for item in values if item is not None)


def _reward_config(config: Any) -> Any:
    function = config.get("reward", {}).get("custom_reward_function") or {}
    return plain((function.get("reward_kwargs") or {}).get("config"))


class RewardkitRewardManager(RewardManagerBase):
    """verl's reward manager for rewardkit: one response at a time, with its length and EOS fact."""

    def __init__(
        self,
        config: Any,
        tokenizer: Any,
        compute_score: Any,
        reward_router_address: str | None = None,
        reward_model_tokenizer: Any = None,
    ) -> None:
        super().__init__(config, tokenizer, compute_score)
        self.compute_score: Any = compute_score or verl_binding.compute_score
        self.is_async_reward_score = inspect.iscoroutinefunction(self.compute_score)
        self.budget = response_budget(config)
        self.eos_ids = eos_ids(tokenizer)
        # Fail here, when verl builds its reward workers, not at the first rollout's score.
        verl_binding.preflight(_reward_config(config), provided=CANDIDATE_NEEDS)

    def measure(self, data: DataProto) -> tuple[Any, int, str]:
        """The last sequence's valid response ids, their count and the finish reason."""
        item = data[-1:][0]
        response_ids = item.batch["responses"]
        width = response_ids.shape[-1]
        length = int(item.batch["attention_mask"][-width:].sum())
        valid = response_ids[:length]
        ends_with_eos = length > 0 and int(valid[-1]) in self.eos_ids
        return valid, length, budget_finish_reason(length, self.budget, ends_with_eos)

    async def run_single(self, data: DataProto) -> dict[str, Any]:
        valid, length, finish_reason = self.measure(data)
        item = data[-1:][0]
        extra_info = dict(item.non_tensor_batch.get("extra_info", None) or {})
        text = await self.loop.run_in_executor(
            None, lambda: self.tokenizer.decode(valid, skip_special_tokens=True)
        )
        arguments = {
            "data_source": item.non_tensor_batch["data_source"],
            "solution_str": text,
            "ground_truth": item.non_tensor_batch["reward_model"]["ground_truth"],
            "extra_info": extra_info,
            "completion_token_count": length,
            "finish_reason": finish_reason,
        }
        if self.is_async_reward_score:
            result = await self.compute_score(**arguments)
        else:
            result = await self.loop.run_in_executor(None, lambda: self.compute_score(**arguments))
        return {"reward_score": result["score"], "reward_extra_info": dict(result)}
