"""The parameter schema of ``code-tests``: types, documented maxima, and who may set each param.

Validated at ``load`` (``rewardkit.contracts.params``), strictly. Every param that weakens the sandbox or
raises a limit is operator-only: a Reward Service client can never set it, whatever the
service's allow-list says. ``isolation: none`` also needs ``REWARDKIT_ALLOW_UNSANDBOXED=1``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rewardkit.plugin import ParamsModel, operator_only

MAX_TIMEOUT_S = 60.0
MAX_MEMORY_MB = 8192
MAX_PROCESSES = 256
MAX_OUTPUT_LIMIT_BYTES = 64 << 20
MAX_CONCURRENCY = 256


class CodeTestsParams(ParamsModel):
    """Params of ``code-tests`` (see docs/code_rewards.md)."""

    timeout_s: float = Field(
        6.0,
        gt=0,
        le=MAX_TIMEOUT_S,
        description="wall-clock seconds per program run",
        json_schema_extra=operator_only(
            "resource", expects=f"a positive number of seconds, at most {MAX_TIMEOUT_S:g}"
        ),
    )
    memory_mb: int = Field(
        1024,
        ge=16,
        le=MAX_MEMORY_MB,
        description="address-space limit",
        json_schema_extra=operator_only("resource"),
    )
    max_processes: int = Field(
        16,
        ge=1,
        le=MAX_PROCESSES,
        description="processes per sandbox",
        json_schema_extra=operator_only("resource"),
    )
    output_limit_bytes: int = Field(
        1 << 20,
        ge=1,
        le=MAX_OUTPUT_LIMIT_BYTES,
        description="captured output per run",
        json_schema_extra=operator_only("resource"),
    )
    isolation: Literal["bwrap", "none"] = Field(
        "bwrap",
        description="'none' runs completions unsandboxed, as this process's user",
        json_schema_extra=operator_only("isolation", unsandboxed=("none",), expects="'bwrap' or 'none'"),
    )
    cgroup: Literal["required", "auto", "off"] = Field(
        "auto", description="pids cgroup per sandbox", json_schema_extra=operator_only("isolation")
    )
    concurrency: int | None = Field(
        None,
        ge=1,
        le=MAX_CONCURRENCY,
        description="programs run at once (null: CPU count; never more than the CPU count)",
        json_schema_extra=operator_only("resource"),
    )
    compare: Literal["exact", "token", "float"] = Field("token", description="how stdout is compared")
    float_rel_tol: float = Field(1e-6, ge=0, le=1, description="relative tolerance of compare: float")
    float_abs_tol: float = Field(1e-6, ge=0, le=1, description="absolute tolerance of compare: float")
    # Revision 3's starvation rule, removed (a candidate could game it): accepted so existing configs
    # load, ignored (the provider warns), refused from 0.3. Left out of the identity (exclude).
    starved_cpu_share: float | None = Field(
        None,
        gt=0,
        le=1,
        exclude=True,
        description="deprecated and ignored (removed in 0.3): timeouts are charged by reproduction",
        json_schema_extra=operator_only("resource"),
    )
    starved_wait_share: float | None = Field(
        None,
        ge=0,
        le=1,
        exclude=True,
        description="deprecated and ignored (removed in 0.3): timeouts are charged by reproduction",
        json_schema_extra=operator_only("resource"),
    )
