"""``rewards.service``, the section rewardkit-service owns (registered by its plugin through
``register_config_sections``): the Reward Service's policy for what clients may choose."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from rewardkit.plugin import Section

__all__ = ["AllowedProvider", "ServiceAllow", "ServiceConfig", "SpecField"]


SpecField = Literal["floor", "onError", "clip", "weight", "gate", "threshold"]


class AllowedProvider(Section):
    """``rewards.service.allow.providers.<name>``: the params a client may set on this provider."""

    params: list[str] = Field(default_factory=list)

    @field_validator("params")
    @classmethod
    def _distinct(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError(f"params are listed twice: {sorted({v for v in value if value.count(v) > 1})}")
        return value


class ServiceAllow(Section):
    """``rewards.service.allow``: what a Reward Service client may select beyond the configured reward
    (``rl.reward`` or ``rl.validation.reward``); empty, the default, allows nothing else."""

    providers: dict[str, AllowedProvider] = Field(default_factory=dict)
    spec_fields: list[SpecField] = Field(default_factory=list)
    # "fixed": a client keeps the configured components (none dropped, added or renamed); "any": it need not.
    components: Literal["fixed", "any"] = "fixed"


class ServiceConfig(Section):
    """``rewards.service``: the Reward Service's policy for what clients may choose."""

    allow: ServiceAllow = Field(default_factory=ServiceAllow)
