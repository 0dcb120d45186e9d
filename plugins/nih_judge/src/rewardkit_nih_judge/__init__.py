"""rewardkit-nih-judge: rubric and comparative LLM judges on any OpenAI-compatible chat API.

Registers ``nih-rubric`` and ``nih-compare`` through the ``rewardkit`` entry-point group; they
work with NVIDIA's hosted endpoint, vLLM and any OpenAI-compatible server. See docs/nih_judge.md.
"""

from __future__ import annotations

from collections.abc import Callable

from rewardkit import RewardProviderSpec, hookimpl
from rewardkit_nih_judge.compare import CompareJudge
from rewardkit_nih_judge.params import CompareParams, RubricParams
from rewardkit_nih_judge.rubric import RubricJudge
from rewardkit_nih_judge.specs import SPECS

__all__ = ["CompareJudge", "CompareParams", "RubricJudge", "RubricParams"]


@hookimpl
def register_reward_providers(register: Callable[[RewardProviderSpec], None]) -> None:
    """Registers ``nih-rubric`` and ``nih-compare``."""
    for spec in SPECS:
        register(spec)
