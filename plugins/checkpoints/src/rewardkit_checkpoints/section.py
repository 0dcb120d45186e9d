"""``checkpoints``, the section rewardkit-checkpoints owns (registered by its plugin through
``register_config_sections``): the run spec of checkpoint evaluation."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from rewardkit.plugin import DataConfig, Section, non_empty

__all__ = [
    "PATH_KEYS",
    "CheckpointsConfig",
    "GateConfig",
    "GenerationConfig",
    "PromptsConfig",
    "ServingChoice",
]

# Keys of the section holding local file paths, resolved against a configuration file's folder.
PATH_KEYS = ("dir", "log_dir", "base", "prompts.path", "gate.stop_file")


class PromptsConfig(DataConfig):
    """``checkpoints.prompts``: the evaluation prompts, a data section read as ``rl.data`` is, plus the
    columns naming each record and its cluster. Without it, checkpoint evaluation reads ``rl.data``."""

    SECTION: ClassVar[str] = "checkpoints.prompts"

    path: str
    id_column: str | None = None
    cluster_column: str | None = None

    @field_validator("id_column", "cluster_column")
    @classmethod
    def _column_not_blank(cls, value: str | None) -> str | None:
        return non_empty(value, "the column")

    @model_validator(mode="after")
    def _prompts_only(self) -> PromptsConfig:
        if self.rollouts_path is not None:
            raise ValueError("checkpoints.prompts holds prompts; rollouts_path belongs to rl.data")
        return self


class GenerationConfig(Section):
    """``checkpoints.generation``: how each served checkpoint is asked (OpenAI-compatible)."""

    mode: Literal["completions", "chat"] = "completions"
    temperature: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    top_p: float = Field(default=1.0, gt=0, le=1)
    max_tokens: int = Field(default=256, ge=1)
    n: int = Field(default=1, ge=1, le=64)
    seed: int | None = 0
    concurrency: int = Field(default=8, ge=1, le=256)
    timeout_s: float = Field(default=120.0, gt=0, le=3600)
    deadline_s: float = Field(default=3600.0, gt=0, le=86_400)


class ServingChoice(Section):
    """``checkpoints.serving``: a serving strategy by name and its params."""

    strategy: str = "vllm-serve"
    params: dict[str, Any] = Field(default_factory=dict)


class GateConfig(Section):
    """``checkpoints.gate``: the regression gate (see rewardkit_stats.gate)."""

    tolerance: float = Field(default=0.01, ge=0, allow_inf_nan=False)
    alpha: float = Field(default=0.05, gt=0, lt=1)
    horizon: int = Field(default=20, ge=1)
    method: Literal["t", "bootstrap"] = "t"
    level: float = Field(default=0.95, gt=0, lt=1)
    stop_file: str | None = None


class CheckpointsConfig(Section):
    """``checkpoints``: the run spec of checkpoint evaluation (``rewardkit checkpoints watch``)."""

    dir: str
    log_dir: str
    base: str | None = None
    prompts: PromptsConfig | None = None  # None: the prompts of rl.data
    generation: GenerationConfig = Field(default_factory=GenerationConfig)
    serving: ServingChoice = Field(default_factory=ServingChoice)
    metric: Literal["mean", "pass@k"] = "mean"
    k: int = Field(default=1, ge=1)
    success_threshold: float = Field(default=1.0, allow_inf_nan=False)
    gate: GateConfig = Field(default_factory=GateConfig)
    settle_s: float = Field(default=10.0, ge=0)
    scan_interval_s: float = Field(default=10.0, gt=0)
    max_attempts: int = Field(default=3, ge=1)

    @model_validator(mode="after")
    def _k_fits(self) -> CheckpointsConfig:
        if self.metric == "pass@k" and self.k > self.generation.n:
            raise ValueError(f"pass@k needs k <= generation.n; k is {self.k}, n is {self.generation.n}")
        return self
