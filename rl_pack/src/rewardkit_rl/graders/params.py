"""The params every ``openai-*`` grader provider takes, and what its results may hold (light: no sandbox,
no judge is imported here, so registering the providers costs nothing)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from rewardkit.plugin import REPRODUCTION_NOTE, ParamsModel, operator_only

TERMS = ("score",)
DIAGNOSTICS = (
    "invalid_variable",
    "python_invalid",
    "python_fault",
    "judge_charged",
    "formula_error",
    "label",
)
GRADES_NOTE = "grades"  # a multi grader's sub-grades, as JSON text
NOTES = (REPRODUCTION_NOTE, GRADES_NOTE)


class GraderParams(ParamsModel):
    """Params of every ``openai-*`` grader provider; ``rl.reward.grader`` writes them."""

    grader: dict[str, Any] = Field(description="the OpenAI grader spec, as JSON")
    reference_field: str | None = Field(
        None, description="the item field a reference that is not an object stands for"
    )
    judge: dict[str, Any] | None = Field(
        None,
        description="settings of the nih-rubric judge a model grader asks (base_url, api_key_env, limits)",
        json_schema_extra=operator_only("url", expects="an object of nih-rubric settings with base_url"),
    )
    timeout_s: float = Field(
        30.0, gt=0, le=120, description="seconds a python grader may run per sample (the guide allows 120)",
        json_schema_extra=operator_only("resource"),
    )  # fmt: skip
    memory_mb: int = Field(
        2048, ge=64, le=2048, description="address space of a python grader, in MiB (the guide allows 2048)",
        json_schema_extra=operator_only("resource"),
    )  # fmt: skip
    isolation: Literal["bwrap", "none"] = Field(
        "bwrap",
        description="bwrap: the code sandbox; none: no isolation (trusted graders only)",
        json_schema_extra=operator_only("isolation", unsandboxed=("none",), expects="'bwrap' or 'none'"),
    )
