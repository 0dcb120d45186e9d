"""rewardkit-vllm: checkpoint serving strategies on vLLM (``vllm-serve``, ``vllm-lora``).

Registered through the ``rewardkit`` entry-point group. See docs/serving.md.
"""

from __future__ import annotations

from collections.abc import Callable

from rewardkit import ServingStrategySpec, hookimpl
from rewardkit_vllm.strategies import VllmLoraStrategy, VllmServeStrategy

__all__ = ["VllmLoraStrategy", "VllmServeStrategy"]


@hookimpl
def register_serving_strategies(register: Callable[[ServingStrategySpec], None]) -> None:
    """Registers ``vllm-serve`` and ``vllm-lora``."""
    register(
        ServingStrategySpec(
            name="vllm-serve",
            factory=VllmServeStrategy,
            description="start a vLLM server per checkpoint folder; every process ends with the block",
        )
    )
    register(
        ServingStrategySpec(
            name="vllm-lora",
            factory=VllmLoraStrategy,
            description="hot-load each LoRA adapter into one shared vLLM server, unload it afterwards",
        )
    )
