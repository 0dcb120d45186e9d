"""``rl.monitor``: the reward monitor's settings, a configuration section this distribution registers
(``plugin.py``): validated with the configuration, and again by ``parse_settings`` for a mapping handed
to the monitor directly."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rewardkit.plugin import ConfigError, RewardSelection
from rewardkit_monitor.calibration import THRESHOLDS

PREFIX = "rl.monitor"


class MonitorSettings(BaseModel):
    """What ``rl.monitor`` may hold; every field is documented in docs/monitor.md."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # A provider name or a selection as in ``rl.reward`` (``{provider, params}`` or ``{spec}``; a bare
    # composed spec ``{components: [...]}`` too), from the same catalog; None: no reference grader.
    # Declared ``Any`` so the configuration keeps its keys as written (a bare spec is no key of a
    # selection); ``_selection`` below makes every form a ``RewardSelection`` (or None).
    reference: Any = None
    reference_rate: float = Field(default=1.0, gt=0, le=1, allow_inf_nan=False)
    logdir: Path | None = None
    stop_file: Path | None = None
    false_alarm_rate: float = 0.01
    warmup_steps: int = Field(default=30, ge=5)
    # verl's reward loop and OpenRLHF call with one sample or a micro-batch and no step: this many
    # rollouts (train batch size x samples per prompt) make one step. None: each such call is a step.
    rollouts_per_step: int | None = Field(default=None, ge=1)
    seed: int = 0

    @field_validator("reference", mode="before")
    @classmethod
    def _selection(cls, value: Any) -> Any:
        if value is None or isinstance(value, RewardSelection):
            return value
        if isinstance(value, str):
            if not value.strip():
                raise ValueError("the provider name is empty")
            return RewardSelection(provider=value)
        if isinstance(value, Mapping):
            # A bare composed spec is the most natural thing to write here; read it as {spec: ...}.
            return RewardSelection.model_validate({"spec": dict(value)} if "components" in value else value)
        raise ValueError(
            f"expected a provider name or a selection like rl.reward, got {type(value).__name__}"
        )

    @field_validator("false_alarm_rate")
    @classmethod
    def _calibrated(cls, value: float) -> float:
        if value not in THRESHOLDS:
            raise ValueError(f"{value!r} is not a calibrated rate; choose one of {sorted(THRESHOLDS)}")
        return value


def parse_settings(raw: Mapping[str, Any] | MonitorSettings) -> MonitorSettings:
    """``rl.monitor`` as settings; ``ConfigError`` naming ``rl.monitor.<field>`` when it is wrong."""
    if isinstance(raw, MonitorSettings):
        return raw
    if not isinstance(raw, Mapping):
        raise ConfigError(f"expected a mapping, got {type(raw).__name__}", key=PREFIX)
    try:
        return MonitorSettings.model_validate(dict(raw))
    except ValidationError as error:
        first = error.errors()[0]
        path = ".".join(str(part) for part in first["loc"])
        message = str(first["msg"]).removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            message = f"unknown setting; rl.monitor takes {sorted(MonitorSettings.model_fields)}"
        raise ConfigError(message, key=f"{PREFIX}.{path}" if path else PREFIX) from None
