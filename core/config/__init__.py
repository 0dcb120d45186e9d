"""The run configuration's schema: the core's sections (``rl``, ``rl.data``, ``rl.reward``,
``rewards``, ``score``) as pydantic models, the schema built with the installed plugins' sections, and
``load_config``. Reading the keys is ``rewardkit.config.keys``'s work, general to any model: YAML or TOML
files with dotted keys, nested and dotted forms mixed freely (``rl: {data.path: x}`` is
``rl.data.path: x``), a key given twice is an error rather than last-one-wins, and command-line overrides
(``rl.group_size=8``, ``rl.reward.params={value: 2}``), read as YAML scalars or flow collections, replace
what the file holds.

Relative paths in a file (``rl.data.path``, ...) are resolved against its folder, so a config means
the same from any working directory; those in overrides or a mapping stay relative to the working
directory, where the user typed them. Every problem raises ``ConfigError`` naming the dotted key
(an unknown key also names the nearest known one)."""

from __future__ import annotations

import math
import os
import re
import typing
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal
from urllib.parse import urlparse

from pydantic import (
    BaseModel,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from rewardkit.config import keys as config_keys
from rewardkit.config.keys import (
    Section,
    apply_override,
    model_in,
    nest,
    parse_override,
    read_file,
    resolve_paths,
    validation_error,
)
from rewardkit.contracts.errors import ConfigError
from rewardkit.seam.extensions import LOCAL_BACKEND, ConfigSectionSpec, expand_selection, is_expansion_key
from rewardkit.seam.moved import REMOVED_IN

__all__ = [
    "ConfigError",
    "DataConfig",
    "RLConfig",
    "RewardSelection",
    "RewardkitConfig",
    "RewardsConfig",
    "ScoreJobConfig",
    "Section",
    "ValidationConfig",
    "known_keys",
    "load_config",
    "parse_override",
    "schema",
]

_DOTTED_CALLABLE = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")
# The core's keys holding local file paths; resolved against the config file's folder (a plugin's
# section adds its own: ``ConfigSectionSpec.path_keys``).
_PATH_KEYS: tuple[tuple[str, ...], ...] = (("rl", "data", "path"), ("rl", "data", "rollouts_path"))


def non_empty(value: str | None, what: str) -> str | None:
    """``value`` unless it is blank (a validator's helper: ``ValueError`` saying ``what`` is empty)."""
    if value is not None and not value.strip():
        raise ValueError(f"{what} must not be empty")
    return value


class DataConfig(Section):
    """``rl.data``: where prompts and rollouts come from and how their columns map to canonical names.
    ``reference_column`` and ``response_column`` (the seeds' and trainers' name, although it maps the
    gold *reference*, never the response) are one key; after validation both hold the column."""

    # Where the section sits in a configuration, for messages naming its keys.
    SECTION: ClassVar[str] = "rl.data"
    # An override of either name replaces the file's value under both.
    SAME_KEY: ClassVar[tuple[tuple[str, ...], ...]] = (("response_column", "reference_column"),)

    path: str | None = None
    source: Literal["jsonl", "hf"] = "jsonl"
    prompt_column: str = "prompt"
    response_column: str | None = None
    reference_column: str | None = None
    items_fn: str | None = None
    split: str | None = None
    rollouts_path: str | None = None

    @field_validator("path", "prompt_column", "response_column", "reference_column", "split", "rollouts_path")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        return non_empty(value, "the value")

    @field_validator("items_fn")
    @classmethod
    def _dotted(cls, value: str | None) -> str | None:
        if value is not None and not _DOTTED_CALLABLE.match(value):
            raise ValueError(f"{value!r} is not a 'package.module:function' path")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> DataConfig:
        response, reference = self.response_column, self.reference_column
        if response is not None and reference is not None and response != reference:
            raise ValueError(
                f"{self.SECTION}.response_column ({response!r}) and {self.SECTION}.reference_column "
                f"({reference!r}) are two names for one key, the column holding the gold reference; "
                "give one of them"
            )
        self.response_column = self.reference_column = reference if reference is not None else response
        hf_only = [name for name in ("items_fn", "split") if getattr(self, name) is not None]
        if hf_only and self.source != "hf":
            raise ValueError(
                f"{self.SECTION}.{hf_only[0]} applies only to {self.SECTION}.source: hf "
                f"(source is {self.source!r})"
            )
        if self.response_column is not None and self.response_column == self.prompt_column:
            raise ValueError(
                f"prompt_column and reference_column (response_column) are both {self.prompt_column!r}; "
                "the prompt and the reference must come from two different columns"
            )
        return self


# Spec-wide keys a one-provider ``rl.reward`` has not got: they live in ``rl.reward.spec``.
_SPEC_ONLY = ("onError", "on_error", "floor", "clip", "components", "breaker", "reruns")


class RewardSelection(Section):
    """``rl.reward``: one provider by name (with ``params``) or one composed ``spec``, never both."""

    provider: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    # Which of the provider's terms is optimised; None: its first (``rewardkit show NAME`` lists them).
    term: str | None = None
    spec: dict[str, Any] | None = None
    catalog: str | None = None
    service: str | None = None
    # verl's data_source -> the selection used for rows of that source (verl binding); others use this one.
    by_data_source: dict[str, RewardSelection] = Field(default_factory=dict)

    @classmethod
    def takes_key(cls, name: str) -> bool:
        # A distribution's expansion key (``grader``): ``_expanded`` turns it into ``spec`` below.
        return is_expansion_key(name)

    @classmethod
    def misplaced_key(cls, parts: Sequence[str], source: str | None) -> ConfigError | None:
        if parts[-1] not in _SPEC_ONLY:
            return None
        section = ".".join(parts[:-1])
        return ConfigError(
            f"{parts[-1]!r} is a key of a composed spec ({section}.spec.{parts[-1]}), not of {section}; "
            f"a one-provider {section}.provider has none: write it as {section}.spec: "
            f"{{components: [{{provider: NAME, params: {{...}}}}], {parts[-1]}: ...}}",
            key=".".join(parts),
            source=source,
        )

    @model_validator(mode="before")
    @classmethod
    def _expanded(cls, data: Any, info: ValidationInfo) -> Any:
        # A distribution's key (``grader``) becomes the spec it stands for (``register_reward_expansions``).
        return expand_selection(data, cls.model_fields, (info.context or {}).get("base_dir"))

    @field_validator("provider", "catalog", "term")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        return non_empty(value, "the value")

    @field_validator("service")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        parsed = urlparse(value) if value is not None else None
        if parsed is not None and (parsed.scheme not in ("http", "https") or not parsed.netloc):
            raise ValueError(f"{value!r} is not a Reward Service URL; expected http(s)://host[:port][/path]")
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> RewardSelection:
        if (self.provider is None) == (self.spec is None):
            given = "both" if self.provider is not None else "neither"
            raise ValueError(
                "set exactly one of 'provider' (one provider by name) or 'spec' (a composed reward); "
                f"{given} given"
            )
        if self.spec is not None and self.params:
            raise ValueError("'params' goes with 'provider'; with 'spec', give params on each component")
        if self.spec is not None and self.term is not None:
            raise ValueError("'term' goes with 'provider'; with 'spec', give term on each component")
        nested = sorted(source for source, chosen in self.by_data_source.items() if chosen.by_data_source)
        if nested:
            raise ValueError(
                f"by_data_source entries {nested} have their own by_data_source; nest one level only"
            )
        return self


class ValidationConfig(Section):
    """``rl.validation``: the held-out reward (a provider name or a full selection) and its group size."""

    reward: str | RewardSelection | None = None
    n_generation: int | None = Field(default=None, ge=1)

    @field_validator("reward")
    @classmethod
    def _not_blank(cls, value: str | RewardSelection | None) -> str | RewardSelection | None:
        if isinstance(value, str):
            non_empty(value, "the provider name")
        return value


class RLConfig(Section):
    """``rl``: data, group size and the reward used for training and validation."""

    MISSING_HINTS: ClassVar[Mapping[str, str]] = {"reward": "; set rl.reward.provider (or rl.reward.spec)"}

    data: DataConfig = Field(default_factory=DataConfig)
    group_size: int | None = Field(default=None, ge=1)
    advantage_scaling: Literal["group", "batch", "none"] = "group"
    # GRPO's standard deviation: "sample" (n - 1, as TRL and verl) or "population" (n).
    advantage_std: Literal["sample", "population"] = "sample"
    # Added to the deviation before dividing; None: the binding's trainer's (TRL 1e-4, verl 1e-6), else 1e-6.
    advantage_eps: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    reward: RewardSelection
    validation: ValidationConfig | None = None


MAX_DEADLINE_S = 86_400.0  # a day: the longest a scoring call may wait (rewards.deadline_s)


def check_deadline(value: float, key: str = "rewards.deadline_s") -> float:
    """``value`` if it is a valid deadline (or timeout) in seconds, else ``ConfigError`` naming the limit."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_DEADLINE_S:
        raise ConfigError(
            f"a deadline must be a number of seconds in (0, {MAX_DEADLINE_S:g}], got {value!r}",
            key=key,
        )
    return float(value)


class RewardsConfig(Section):
    """``rewards``: execution limits and backend."""

    max_inflight: int = Field(default=1024, ge=1, description="rollouts in flight before callers wait")
    # One limit wherever a deadline is given: in process, on Ray and in the Reward Service alike.
    deadline_s: float = Field(default=600.0, gt=0)
    # Bounds the whole call (waiting, scoring, answering); past it the work is cancelled and the
    # call fails with RequestTimeout (504 from the service). None: no bound but deadline_s's.
    request_timeout_s: float | None = Field(default=None, gt=0)
    concurrency: int | None = Field(default=None, ge=1)
    # "local" (this process) or a backend a plugin registers (``register_reward_backends``).
    backend: str = LOCAL_BACKEND

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        if value == LOCAL_BACKEND:
            return value  # always known: no need to gather the plugins' backends for the default
        names = backend_names()
        if value not in names:
            shown = (
                ", ".join(map(repr, names[:-1])) + f" or {names[-1]!r}" if len(names) > 1 else repr(names[0])
            )
            raise ValueError(f"Input should be {shown} (got {value!r})")
        return value

    @field_validator("deadline_s", "request_timeout_s")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number of seconds")
        if value is not None and value > MAX_DEADLINE_S:
            raise ValueError(
                f"must be at most {MAX_DEADLINE_S:g} seconds (a day), as the Reward Service allows"
            )
        return value


class ScoreJobConfig(Section):
    """``score``: how ``rewardkit score`` cuts its file into chunks, each scored, then journaled
    (fsynced) before the next starts: a crash or a kill loses at most the chunk in flight."""

    # The most rollouts a chunk holds (whole groups: a chunk closes at this many or more). Unset:
    # ``rewardkit.job.score_job.CHUNK_ROLLOUTS`` (4,096).
    chunk_rollouts: int | None = Field(default=None, ge=1)
    # The wall time a chunk should take: after each chunk the next is sized from the rate just
    # measured (at most 8 times the last, at most ``chunk_rollouts``), so a slow provider (a judge,
    # a sandbox) loses about this much work to a crash. The first chunk holds at most 64 rollouts.
    # ``null``: every chunk holds ``chunk_rollouts``.
    chunk_seconds: float | None = Field(default=30.0, gt=0, le=MAX_DEADLINE_S)

    @field_validator("chunk_seconds")
    @classmethod
    def _finite_seconds(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number of seconds")
        return value


class RewardkitConfig(Section):
    """A whole run configuration: the core's sections here, a plugin's in the subclass ``schema()``
    builds. ``source_path`` is the file it was read from, absolute (``None`` for a mapping)."""

    MISSING_HINTS: ClassVar[Mapping[str, str]] = {
        "rl": "; a run needs at least rl.reward.provider (or rl.reward.spec)"
    }

    rl: RLConfig
    rewards: RewardsConfig = Field(default_factory=RewardsConfig)
    score: ScoreJobConfig = Field(default_factory=ScoreJobConfig)

    _source_path: Path | None = PrivateAttr(default=None)

    @property
    def source_path(self) -> Path | None:
        return self._source_path

    def section(self, path: str, model: type[SectionT]) -> SectionT | None:
        """A plugin's section (``config.section("rewards.ray", RayConfig)``): ``None`` when it is not
        configured. A section kept unchecked (its plugin was not loaded when this configuration was read)
        is validated now, with the same messages."""
        node: Any = self
        for part in path.split("."):
            node = getattr(node, part, None)
            if node is None:
                return None
        if isinstance(node, model):
            return node
        if isinstance(node, Mapping):
            try:
                return model.model_validate(dict(node))
            except ValidationError as error:
                raise validation_error(error, None, model, path.split(".")) from None
        raise TypeError(f"section {path} holds {type(node).__name__}, not {model.__name__}")


SectionT = typing.TypeVar("SectionT", bound=BaseModel)


def backend_names() -> list[str]:
    """What ``rewards.backend`` takes: ``local``, then the installed backends and the known ones of this
    repository's distributions (which fail with their install line when used), sorted."""
    from rewardkit.seam.catalog import reward_backends
    from rewardkit.seam.extras import KNOWN_BACKENDS

    installed = {entry.name for entry in reward_backends() if not entry.value.by_service_url}
    return [LOCAL_BACKEND, *sorted(installed | set(KNOWN_BACKENDS))]


def schema() -> type[RewardkitConfig]:
    """The configuration's model: the core's sections and every installed plugin's (built once per set of
    plugins). A known section whose distribution is missing is kept as given, unchecked."""
    return _schema_and_path_keys()[0]


def _schema_and_path_keys() -> tuple[type[RewardkitConfig], tuple[tuple[str, ...], ...]]:
    from rewardkit.seam.catalog import config_sections
    from rewardkit.seam.plugins import load_plugins

    manager = load_plugins()
    built = manager.cache.get("config_schema")
    if built is None:
        specs = [entry.value for entry in config_sections(manager)]
        built = manager.cache["config_schema"] = (_build_schema(specs), _path_keys(specs))
    return built  # type: ignore[return-value]  # the pair stored just above


def _path_keys(specs: Sequence[ConfigSectionSpec]) -> tuple[tuple[str, ...], ...]:
    owned = tuple((*spec.path.split("."), *key.split(".")) for spec in specs for key in spec.path_keys)
    return _PATH_KEYS + owned


def _build_schema(specs: Sequence[ConfigSectionSpec]) -> type[RewardkitConfig]:
    from rewardkit.seam.extras import KNOWN_SECTIONS

    bases: dict[str, type[BaseModel]] = {"": RewardkitConfig, "rl": RLConfig, "rewards": RewardsConfig}
    fields: dict[str, dict[str, Any]] = {parent: {} for parent in bases}
    for path in KNOWN_SECTIONS.keys() - {spec.path for spec in specs}:
        parent, _, name = path.rpartition(".")
        fields[parent][name] = (dict[str, Any] | None, None)
    for spec in specs:
        parent, _, name = spec.path.rpartition(".")
        if name in bases[parent].model_fields:
            raise ConfigError(f"a plugin registers the section {spec.path}, which is the core's own")
        default = Field(default_factory=spec.schema) if spec.always else None
        fields[parent][name] = (spec.schema if spec.always else spec.schema | None, default)
    if not any(fields.values()):
        return RewardkitConfig
    rl = create_model("RLConfig", __base__=RLConfig, __module__=__name__, **fields["rl"])
    rewards = create_model("RewardsConfig", __base__=RewardsConfig, __module__=__name__, **fields["rewards"])
    return create_model(
        "RewardkitConfig",
        __base__=RewardkitConfig,
        __module__=__name__,
        rl=(rl, ...),
        rewards=(rewards, Field(default_factory=rewards)),
        **fields[""],
    )


# Models of sections that moved to the distribution owning them in 0.2 (``rewardkit.config.RayConfig``).
_MOVED_MODELS = frozenset(
    {"AllowedProvider", "CheckpointsConfig", "GateConfig", "GenerationConfig", "PromptsConfig"}
    | {"RayConfig", "ServiceAllow", "ServiceConfig", "ServingChoice"}
)


def __getattr__(name: str) -> Any:
    # A moved model is found among the installed plugins' section models, with a warning until 0.3.
    from rewardkit.seam.catalog import config_sections

    if name not in _MOVED_MODELS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    for entry in config_sections():
        for model in _models_below(entry.value.schema):
            if model.__name__ == name:
                warnings.warn(
                    f"rewardkit.config.{name} moved to {model.__module__}.{name} (the distribution owning "
                    f"{entry.value.path}); the old path is removed in rewardkit {REMOVED_IN}",
                    DeprecationWarning,
                    stacklevel=2,
                )
                return model
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _models_below(model: type[BaseModel]) -> list[type[BaseModel]]:
    """``model`` and every section model inside it (``dict[str, Model]`` values included)."""
    found = [model]
    for info in model.model_fields.values():
        annotation = info.annotation
        values = typing.get_args(annotation)[-1] if typing.get_origin(annotation) is dict else None
        for inner in (model_in(annotation), model_in(values)):
            for below in _models_below(inner) if inner is not None else []:
                if below not in found:
                    found.append(below)
    return found


def known_keys(model: type[BaseModel] | None = None, prefix: str = "") -> list[str]:
    """Every dotted key the configuration accepts (``model``'s; by default the whole schema, plugins'
    sections included), sections included, in declaration order."""
    return config_keys.known_keys(model or schema(), prefix)


def load_config(
    source: str | os.PathLike[str] | Mapping[str, Any], overrides: Sequence[str] = ()
) -> RewardkitConfig:
    """Read a configuration from a YAML/TOML file or a mapping, apply ``key=value`` overrides, validate."""
    if isinstance(overrides, str):
        raise ConfigError("overrides must be a sequence of 'key=value' strings, not one string")
    source_path: Path | None = None
    label: str | None = None
    root, path_keys = _schema_and_path_keys()
    if isinstance(source, Mapping):
        tree = nest(source, label, root)
    else:
        source_path = Path(source).expanduser().resolve()
        label = str(source_path)
        tree = nest(read_file(source_path), label, root)
        resolve_paths(tree, source_path.parent, path_keys)
    for text in overrides:
        apply_override(tree, text, root)
    try:
        config = root.model_validate(tree, context={"base_dir": source_path and source_path.parent})
    except ValidationError as error:
        where = label if not overrides else f"{label or 'config'} (with overrides)"
        raise validation_error(error, where, root) from None
    config._source_path = source_path
    return config
