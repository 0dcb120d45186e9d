"""``MediaServiceConfig``: the value contract shared by the decoded-media reward adapters.

Dependency-light (pydantic only): the deployed scorer's revision (required; the recipe's sentinel
is refused), the enqueue and pull URLs, the bearer token by reference (an environment variable's
name), the reward types to request with the score keys read from each, transport bounds, the
absolute per-sample deadline, the spool folder and the exact uint8 transform. A provider's
params are validated against it strictly at ``load``, and (normalised) they enter its identity.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from pydantic import Field, field_validator, model_validator

from rewardkit.plugin import NAME_PATTERN, ParamsModel, operator_only

# What a recipe carries until the operator sets the deployed scorer's immutable revision.
REVISION_SENTINEL = "UNSET-deployed-scorer-revision"
# round_half_to_even((clamp(x.float(), -1, 1) + 1) * 127.5), in fp32: -1 -> 0, 0 -> 128, 1 -> 255.
UINT8_TRANSFORM: Final = "fp32-clamp-then-scale-round-half-even"
MAX_DEADLINE_S = 3600.0
MAX_CALL_TIMEOUT_S = 600.0
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class MediaServiceConfig(ParamsModel):
    """What a decoded-media adapter needs to score one sample against the reward service."""

    revision: str = Field(
        description="immutable revision of the deployed scorer (the recipe's sentinel is refused)"
    )
    enqueue_url: str = Field(
        description="full URL of the service's enqueue endpoint (POST /api/reward/enqueue)",
        json_schema_extra=operator_only("url"),
    )
    pull_url: str = Field(
        description="full URL of the service's pull endpoint (POST /api/reward/pull)",
        json_schema_extra=operator_only("url"),
    )
    token_env: str = Field(
        description="name of the environment variable holding the bearer token (never the token)",
        json_schema_extra=operator_only("credential"),
    )
    reward_types: dict[str, list[str]] = Field(
        description="reward type to request (the service's reward_fn key) -> score keys read from its answer"
    )
    deadline_s: float = Field(
        120.0,
        gt=0,
        le=MAX_DEADLINE_S,
        description="absolute wall-clock bound per sample: decode, enqueue and every poll",
        json_schema_extra=operator_only("resource"),
    )
    enqueue_timeout_s: float = Field(
        60.0,
        gt=0,
        le=MAX_CALL_TIMEOUT_S,
        description="bound on the one enqueue call (upload included)",
        json_schema_extra=operator_only("resource"),
    )
    pull_timeout_s: float = Field(
        10.0,
        gt=0,
        le=MAX_CALL_TIMEOUT_S,
        description="bound on each pull call",
        json_schema_extra=operator_only("resource"),
    )
    poll_interval_s: float = Field(
        0.1, gt=0, le=60.0, description="first wait between polls while the score is pending"
    )
    max_poll_interval_s: float = Field(
        2.0, gt=0, le=60.0, description="cap of the doubling wait between polls and between pull retries"
    )
    spool_dir: str | None = Field(
        None,
        description="actor-local folder for spool files (null: the platform temporary folder)",
        json_schema_extra=operator_only("path"),
    )
    active_ranks: int = Field(
        1,
        ge=1,
        le=4096,
        description="ranks that may spool at once into spool_dir (its capacity is checked for all)",
        json_schema_extra=operator_only("resource"),
    )
    range_tolerance: float = Field(
        0.05,
        ge=0,
        le=0.5,
        description="how far outside [-1, 1] decoded values may stray before the sample is refused",
    )
    uint8_transform: Literal["fp32-clamp-then-scale-round-half-even"] = Field(
        UINT8_TRANSFORM, description="the pixel transform (fixed; named so that it enters the identity)"
    )

    @field_validator("revision")
    @classmethod
    def _revision(cls, value: str) -> str:
        if value.strip() == REVISION_SENTINEL:
            raise ValueError(
                f"revision is still the recipe's sentinel {REVISION_SENTINEL!r}: set it to the immutable "
                "revision of the deployed scorer"
            )
        if not value.strip():
            raise ValueError("revision must name the deployed scorer's revision")
        return value

    @field_validator("enqueue_url", "pull_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"{value!r} must be an http:// or https:// URL")
        return value

    @field_validator("token_env")
    @classmethod
    def _token_env(cls, value: str) -> str:
        if not _ENV_NAME.match(value):
            raise ValueError(f"{value!r} is not an environment variable name (give the name, not the token)")
        return value

    @field_validator("reward_types")
    @classmethod
    def _reward_types(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        if not value:
            raise ValueError("request at least one reward type")
        seen: dict[str, str] = {}
        for reward_type, keys in value.items():
            if not reward_type.strip():
                raise ValueError("a reward type must be a non-empty name")
            if not keys:
                raise ValueError(f"reward type {reward_type!r} reads no score key")
            for key in keys:
                if not NAME_PATTERN.match(key):
                    raise ValueError(f"score key {key!r} of {reward_type!r} is not a valid term name")
                if key in seen:
                    raise ValueError(f"score key {key!r} is read from both {seen[key]!r} and {reward_type!r}")
                seen[key] = reward_type
        return value

    @model_validator(mode="after")
    def _intervals(self) -> MediaServiceConfig:
        if self.max_poll_interval_s < self.poll_interval_s:
            raise ValueError("max_poll_interval_s must be at least poll_interval_s")
        return self

    def score_keys(self) -> tuple[str, ...]:
        """Every score key read, in the order declared (the provider's terms)."""
        return tuple(key for keys in self.reward_types.values() for key in keys)
