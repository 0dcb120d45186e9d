"""rewardkit-rl plugin: verifiers shaped for rewards (registered through the ``rewardkit`` entry point).

``math`` (math-verify in killable workers), ``multiple-choice``, ``format``, ``overlong`` (DAPO)
and ``repetition``. Factories only check parameters; worker processes start on first scoring.
"""

from __future__ import annotations

from collections.abc import Callable

import importlib_metadata
from pydantic import Field

from rewardkit import RewardProviderSpec, hookimpl
from rewardkit.plugin import EXTRACTED_ANSWER, ParamsModel, operator_only
from rewardkit_rl.verifiers.format_tags import format_provider
from rewardkit_rl.verifiers.math_cost import COST_LIMITS
from rewardkit_rl.verifiers.math_verifier import MATH_DIAGNOSTICS, MathVerifier
from rewardkit_rl.verifiers.math_verifier import REVISION as MATH_REVISION
from rewardkit_rl.verifiers.multiple_choice import multiple_choice_provider
from rewardkit_rl.verifiers.overlong import overlong_provider
from rewardkit_rl.verifiers.repetition import REVISION as REPETITION_REVISION
from rewardkit_rl.verifiers.repetition import SEMANTIC_IDENTITY as REPETITION_IDENTITY
from rewardkit_rl.verifiers.repetition import repetition_provider


def _math_verify_version() -> str:
    # The equivalence checker's version changes verdicts, so it is part of the identity.
    try:
        return importlib_metadata.version("math-verify")
    except importlib_metadata.PackageNotFoundError:
        return "missing"


class MathParams(ParamsModel):
    """Params of ``math``, checked at load; all of them raise a limit, so they are operator-only."""

    timeout_s: float = Field(
        5.0, gt=0, le=60, json_schema_extra=operator_only("resource", expects="in (0, 60] seconds")
    )
    max_answer_chars: int = Field(1000, ge=1, le=100_000, json_schema_extra=operator_only("resource"))
    workers: int = Field(0, ge=0, le=64, json_schema_extra=operator_only("resource"))  # 0: CPU count, up to 8
    memory_limit_mb: int = Field(4096, ge=256, le=65_536, json_schema_extra=operator_only("resource"))


@hookimpl
def register_reward_providers(register: Callable[[RewardProviderSpec], None]) -> None:
    """Registers math, multiple-choice, format, overlong and repetition."""
    register(
        RewardProviderSpec(
            name="math",
            factory=MathVerifier,
            params_schema=MathParams,
            needs=("reference",),
            revision=MATH_REVISION,
            terms=("task",),
            diagnostics=MATH_DIAGNOSTICS,
            notes=(EXTRACTED_ANSWER,),  # the answer text it read (display only, not identity)
            scoring_packages=("math-verify", "latex2sympy2_extended", "sympy"),
            cacheable=True,  # the same answer against the same reference: one comparison
            semantic_identity={
                "extraction": "visible text; all boxes (several: a list)>answer-tag>final-answer maths",
                "equivalence": "exact-normalised, then answer forms with math-verify latex-only leaves",
                "cost_guards": COST_LIMITS,
                "percent": "50\\% answers 50; 0.5 only when the reference is a percent",
                "units": "\\text{} taken off only when it holds a unit",
                "charges": "refused_cost (unpriceable counts as expensive); timeout, out_of_memory, "
                "comparison_error, worker_crash when they reproduce beside a canary",
                "math_verify": _math_verify_version(),
            },
            description="1 when the final answer (the \\boxed{} answers, <answer>, 'final answer'; "
            "several different boxes state a list; \\phantom and white text are not read) equals the "
            "LaTeX reference (params: timeout_s=5, max_answer_chars=1000, workers=0 (cpu count), "
            "memory_limit_mb=4096). An answer whose evaluation would explode, or whose cost cannot be "
            "estimated, scores 0 (refused_cost); a worker timeout, memory error, exception or crash "
            "scores 0 (timeout, out_of_memory, comparison_error, worker_crash) when it reproduces on a "
            "worker a canary has just shown healthy, else the second verdict counts; a failed canary "
            "is an error.",
        )
    )
    register(
        RewardProviderSpec(
            name="multiple-choice",
            factory=multiple_choice_provider,
            needs=("reference",),
            revision="3",  # multiple_choice.REVISION
            terms=("task",),
            cheap=True,
            diagnostics=("extracted",),
            notes=(EXTRACTED_ANSWER,),  # the letter it read (display only, not identity)
            semantic_identity={"extraction": "boxed>answer-tag>phrasing>bare", "text": "fold_lookalikes"},
            description="1 when the stated option letter equals the reference letter (param: letters); "
            "a phrasing that lists several options ('(B) or (C)') states none and scores 0.",
        )
    )
    register(
        RewardProviderSpec(
            name="format",
            factory=format_provider,
            needs=(),
            revision="3",  # format_tags.REVISION
            terms=("format",),
            cheap=True,
            diagnostics=("tags_found",),
            semantic_identity={
                "rule": "each tag exactly once, in order",
                "text": "fold_lookalikes; a block needs a letter or a digit",
            },
            description="1 when the completion is <think>..</think><answer>..</answer>, each block "
            "holding a letter or a digit (params: tags, allow_outside_text=false).",
        )
    )
    register(
        RewardProviderSpec(
            name="overlong",
            factory=overlong_provider,
            # the count is what it reads; a rollout without one is skipped, and a caller that can
            # never carry one (OpenRLHF's /get_reward) is refused instead of skipping silently
            needs=("completion_token_count",),
            skip_when_absent=("completion_token_count",),
            revision="2",
            terms=("overlong",),
            cheap=True,
            semantic_identity={"rule": "DAPO soft overlong punishment"},
            description="DAPO soft overlong penalty in [-1, 0] from completion_token_count "
            "(params: max_tokens, buffer_tokens); skipped without a token count.",
        )
    )
    register(
        RewardProviderSpec(
            name="repetition",
            factory=repetition_provider,
            needs=(),
            revision=REPETITION_REVISION,
            terms=("repetition",),
            cheap=True,
            semantic_identity=REPETITION_IDENTITY,
            description="Minus the share of repeated word n-grams (params: ngram_size=3, max_penalty=1).",
        )
    )
