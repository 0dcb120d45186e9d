"""Run configuration: YAML or TOML files with dotted keys, and ``key=value`` overrides.
In a file a key may be written nested or dotted, the two forms mixed freely (``rl: {data.path: x}``
is ``rl.data.path: x``); a key given twice, in either form, is an error rather than last-one-wins.
Command-line overrides (``rl.group_size=8``, ``rl.reward.params={value: 2}``) are read as YAML
scalars or flow collections and replace what the file holds.

Relative paths in a file (``rl.data.path``, ...) are resolved against its folder, so a config means
the same from any working directory; those in overrides or a mapping stay relative to the working
directory, where the user typed them. Every problem raises ``ConfigError`` naming the dotted key
(an unknown key also names the nearest known one)."""

from __future__ import annotations

import math
import os
import re
import sys
import types
import typing
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal
from urllib.parse import urlparse

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from rewardkit.errors import ConfigError, nearest
from rewardkit.extensions import LOCAL_BACKEND, ConfigSectionSpec, expand_selection, is_expansion_key
from rewardkit.moved import REMOVED_IN

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

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


class Section(BaseModel):
    """The base of every section, the core's and the plugins': unknown keys are errors (with the nearest
    known one), and types are strict."""

    # strict: "8" is not silently an int; overrides are YAML-typed, so users get real types anyway.
    model_config = ConfigDict(extra="forbid", strict=True, validate_default=True)


_Section = Section


def non_empty(value: str | None, what: str) -> str | None:
    """``value`` unless it is blank (a validator's helper: ``ValueError`` saying ``what`` is empty)."""
    if value is not None and not value.strip():
        raise ValueError(f"{what} must not be empty")
    return value


class DataConfig(_Section):
    """``rl.data``: where prompts and rollouts come from and how their columns map to canonical names.
    ``reference_column`` and ``response_column`` (the seeds' and trainers' name, although it maps the
    gold *reference*, never the response) are one key; after validation both hold the column."""

    # Where the section sits in a configuration, for messages naming its keys.
    SECTION: ClassVar[str] = "rl.data"

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


class RewardSelection(_Section):
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


class ValidationConfig(_Section):
    """``rl.validation``: the held-out reward (a provider name or a full selection) and its group size."""

    reward: str | RewardSelection | None = None
    n_generation: int | None = Field(default=None, ge=1)

    @field_validator("reward")
    @classmethod
    def _not_blank(cls, value: str | RewardSelection | None) -> str | RewardSelection | None:
        if isinstance(value, str):
            non_empty(value, "the provider name")
        return value


class RLConfig(_Section):
    """``rl``: data, group size and the reward used for training and validation."""

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


class RewardsConfig(_Section):
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


class ScoreJobConfig(_Section):
    """``score``: how ``rewardkit score`` cuts its file into chunks, each scored, then journaled
    (fsynced) before the next starts: a crash or a kill loses at most the chunk in flight."""

    # The most rollouts a chunk holds (whole groups: a chunk closes at this many or more). Unset:
    # ``rewardkit.score_job.CHUNK_ROLLOUTS`` (4,096).
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


class RewardkitConfig(_Section):
    """A whole run configuration: the core's sections here, a plugin's in the subclass ``schema()``
    builds. ``source_path`` is the file it was read from, absolute (``None`` for a mapping)."""

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
                raise _validation_error(error, None, model, path.split(".")) from None
        raise TypeError(f"section {path} holds {type(node).__name__}, not {model.__name__}")


SectionT = typing.TypeVar("SectionT", bound=BaseModel)


def backend_names() -> list[str]:
    """What ``rewards.backend`` takes: ``local``, then the installed backends and the known ones of this
    repository's distributions (which fail with their install line when used), sorted."""
    from rewardkit.catalog import reward_backends
    from rewardkit.extras import KNOWN_BACKENDS

    installed = {entry.name for entry in reward_backends() if not entry.value.by_service_url}
    return [LOCAL_BACKEND, *sorted(installed | set(KNOWN_BACKENDS))]


def schema() -> type[RewardkitConfig]:
    """The configuration's model: the core's sections and every installed plugin's (built once per set of
    plugins). A known section whose distribution is missing is kept as given, unchecked."""
    return _schema_and_path_keys()[0]


def _schema_and_path_keys() -> tuple[type[RewardkitConfig], tuple[tuple[str, ...], ...]]:
    from rewardkit.catalog import config_sections
    from rewardkit.plugins import load_plugins

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
    from rewardkit.extras import KNOWN_SECTIONS

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
    from rewardkit.catalog import config_sections

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
        for inner in (_model_in(annotation), _model_in(values)):
            for below in _models_below(inner) if inner is not None else []:
                if below not in found:
                    found.append(below)
    return found


# The key tree, derived from the models so it can never drift from them.


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The section model a field holds (directly or inside a union), or ``None`` for a plain value."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return next(filter(None, map(_model_in, typing.get_args(annotation))), None)
    return None


def _is_free_mapping(annotation: Any) -> bool:
    """Whether a field holds an open mapping (``params``, ``spec``) whose own keys are not checked; a field
    typed ``Any`` too, as its validator reads the value as written (``rl.monitor.reference``)."""
    if annotation is dict or annotation is Any or typing.get_origin(annotation) is dict:
        return True
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    return union and any(_is_free_mapping(member) for member in typing.get_args(annotation))


def known_keys(model: type[BaseModel] | None = None, prefix: str = "") -> list[str]:
    """Every dotted key the configuration accepts, sections included, in declaration order."""
    model = model or schema()
    keys: list[str] = []
    for name, info in model.model_fields.items():
        sub = _model_in(info.annotation)
        keys.append(f"{prefix}{name}")
        keys.extend(known_keys(sub, f"{prefix}{name}.") if sub is not None else [])
    return keys


def _suggest(parts: Sequence[str], model: type[BaseModel]) -> str | None:
    """The nearest known key to an unknown one: a sibling first, then a same-named key elsewhere."""
    parent = ".".join(parts[:-1])
    wrong = parts[-1]
    close = nearest(wrong, model.model_fields)
    if close is not None:
        return f"{parent}.{close}" if parent else close
    everywhere = known_keys()
    # A right name in the wrong section (``group_size`` at the top) is the next most likely slip.
    by_leaf = {key: key.rsplit(".", 1)[-1] for key in everywhere}
    leaf_match = nearest(wrong, set(by_leaf.values()), cutoff=0.75)
    if leaf_match is not None:
        return next(key for key, leaf in by_leaf.items() if leaf == leaf_match)
    return nearest(".".join(parts), everywhere)


# Spec-wide keys a one-provider ``rl.reward`` has not got: they live in ``rl.reward.spec``.
_SPEC_ONLY = ("onError", "on_error", "floor", "clip", "components", "breaker", "reruns")


def _unknown_key(parts: Sequence[str], model: type[BaseModel], source: str | None) -> ConfigError:
    dotted = ".".join(parts)
    if issubclass(model, RewardSelection) and parts[-1] in _SPEC_ONLY:
        section = ".".join(parts[:-1])
        return ConfigError(
            f"{parts[-1]!r} is a key of a composed spec ({section}.spec.{parts[-1]}), not of {section}; "
            f"a one-provider {section}.provider has none: write it as {section}.spec: "
            f"{{components: [{{provider: NAME, params: {{...}}}}], {parts[-1]}: ...}}",
            key=dotted,
            source=source,
        )
    nearest = _suggest(parts, model)
    hint = f"; did you mean {nearest}?" if nearest else ""
    parent = ".".join(parts[:-1]) or "the top level"
    known = ", ".join(model.model_fields)
    return ConfigError(f"unknown key{hint} (keys under {parent}: {known})", key=dotted, source=source)


# Turning dotted and nested keys into one nested tree.

_MISSING = object()


def _split_key(key: object, prefix: Sequence[str], source: str | None) -> list[str]:
    where = ".".join(prefix) or None
    if not isinstance(key, str):
        raise ConfigError(f"key {key!r} is not a string", key=where, source=source)
    parts = key.split(".")
    if any(not part.strip() for part in parts):
        raise ConfigError(f"key {key!r} has an empty segment", key=where, source=source)
    return parts


def _put(
    tree: dict[str, Any],
    model: type[BaseModel] | None,
    prefix: list[str],
    parts: Sequence[str],
    value: Any,
    *,
    replace: bool,
    source: str | None,
) -> None:
    """Set ``value`` at ``prefix + parts`` inside ``tree`` (which sits at ``prefix``). ``model`` is the
    section at ``prefix`` (``None``: an open mapping); ``replace=False`` (a file) refuses a key set twice."""
    head, rest = parts[0], parts[1:]
    path = [*prefix, head]
    dotted = ".".join(path)
    sub_model: type[BaseModel] | None = None
    free = model is None
    if model is not None:
        info = model.model_fields.get(head)
        if info is None and not (issubclass(model, RewardSelection) and is_expansion_key(head)):
            raise _unknown_key(path, model, source)
        sub_model = _model_in(info.annotation) if info is not None else None
        free = _is_free_mapping(info.annotation) if info is not None else True  # an expansion's value is open
        if rest and sub_model is None and not free and not isinstance(tree.get(head), (list, tuple)):
            raise ConfigError(
                f"{dotted} is a single value, it has no key {rest[0]!r}",
                key=".".join([*path, *rest[:1]]),
                source=source,
            )
    if rest:
        current = tree.get(head, _MISSING)
        # Inside an open mapping, a digit segment indexes a list; a mapping's own "0" key stays a key.
        indexed = model is None and _is_index(rest[0]) and not isinstance(current, dict)
        if isinstance(current, (list, tuple)) or indexed:
            tree[head] = _put_item(current, path, rest, value, replace=replace, source=source)
            return
        if current is _MISSING or (replace and not isinstance(current, dict)):
            current = tree[head] = {}
        elif not isinstance(current, dict):
            raise ConfigError(
                f"{dotted} is already set to {current!r}, so it cannot also take the key {rest[0]!r}",
                key=".".join([*path, *rest[:1]]),
                source=source,
            )
        _put(current, sub_model, path, rest, value, replace=replace, source=source)
        return
    descend = sub_model is not None or (free and model is not None)
    if descend and isinstance(value, Mapping):
        # Sections and open mappings are merged key by key, so dotted and nested forms can mix.
        target = tree.get(head, _MISSING)
        if replace or not isinstance(target, dict):
            if target is not _MISSING and not replace:
                raise ConfigError("given twice", key=dotted, source=source)
            target = tree[head] = {}
        for key, item in value.items():
            if sub_model is None:
                # Keys inside an open mapping (a parameter named "a.b") are kept verbatim.
                if not isinstance(key, str):
                    raise ConfigError(f"key {key!r} is not a string", key=dotted, source=source)
                if key in target and not replace:
                    raise ConfigError("given twice", key=f"{dotted}.{key}", source=source)
                target[key] = item
            else:
                split = _split_key(key, path, source)
                _put(target, sub_model, path, split, item, replace=replace, source=source)
        return
    if head in tree and not replace:
        raise ConfigError("given twice", key=dotted, source=source)
    tree[head] = value


def _is_index(segment: str) -> bool:
    """Whether a key segment is a list index (``components.0.weight``): digits only."""
    return segment.isascii() and segment.isdigit()


def _put_item(
    current: Any, path: Sequence[str], parts: Sequence[str], value: Any, *, replace: bool, source: str | None
) -> Any:
    """A copy of ``current`` (the list at ``path``) with ``value`` set at ``parts``, whose first
    segment indexes it; a dict inside it is an open mapping (the model validates its keys)."""
    dotted = ".".join(path)
    head, rest = parts[0], parts[1:]
    key = f"{dotted}.{head}"
    if not isinstance(current, (list, tuple)):
        what = "is not set" if current is _MISSING else f"is {current!r}, not a list"
        raise ConfigError(f"{dotted} {what}, so it has no index {head}", key=key, source=source)
    if not _is_index(head):
        raise ConfigError(
            f"{dotted} is a list; index it with 0 to {len(current) - 1} ({dotted}.0), not {head!r}",
            key=key,
            source=source,
        )
    index = int(head)
    if index >= len(current):
        held = f"indices 0 to {len(current) - 1}" if current else "no items"
        raise ConfigError(
            f"index {index} is out of range: {dotted} has {len(current)} item(s) ({held})",
            key=key,
            source=source,
        )
    items = list(current)
    if not rest:
        items[index] = value
        return items
    item = items[index]
    if isinstance(item, (list, tuple)):
        items[index] = _put_item(item, [*path, head], rest, value, replace=replace, source=source)
    elif isinstance(item, dict):
        copy = dict(item)
        _put(copy, None, [*path, head], rest, value, replace=replace, source=source)
        items[index] = copy
    else:
        raise ConfigError(
            f"{key} is {item!r}, a single value, so it has no key {rest[0]!r}",
            key=f"{key}.{rest[0]}",
            source=source,
        )
    return items


def _nest(raw: object, source: str | None, root: type[RewardkitConfig]) -> dict[str, Any]:
    """A raw mapping with dotted and nested keys as one nested tree of known keys."""
    if not isinstance(raw, Mapping | None):
        raise ConfigError(f"the top level must be a mapping of keys, got {type(raw).__name__}", source=source)
    tree: dict[str, Any] = {}
    for key, value in (raw or {}).items():
        _put(tree, root, [], _split_key(key, [], source), value, replace=False, source=source)
    return tree


def parse_override(text: str) -> tuple[str, Any]:
    """Split ``key=value`` and read the value as YAML (``8`` -> int, ``{a: 1}`` -> dict, ``x`` -> str)."""
    source = f"override {text!r}"
    key, sep, raw_value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError("expected key=value, e.g. rl.group_size=8", source=source)
    if any(char.isspace() for char in key):
        raise ConfigError(f"key {key!r} contains whitespace", source=source)
    try:
        value = yaml.load(raw_value, Loader=_StrictLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as error:
        raise ConfigError(
            f"value is not a YAML scalar or flow collection: {error}", key=key, source=source
        ) from error
    return key, value


# Reading files.


class _StrictLoader(yaml.SafeLoader):
    """A safe YAML loader that refuses duplicate keys instead of keeping the last one."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: dict[Any, Any] = {}
    for key_node, _value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen[key] = True
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _read_file(path: Path) -> object:
    suffix = path.suffix.lower()
    if suffix not in (".yaml", ".yml", ".toml"):
        raise ConfigError(
            f"unsupported config format {suffix or '(no suffix)'!r}; use .yaml, .yml or .toml",
            source=str(path),
        )
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("config file not found", source=str(path)) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read config file: {error}", source=str(path)) from error
    if suffix == ".toml":
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise ConfigError(f"invalid TOML: {error}", source=str(path)) from error
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as error:
        raise ConfigError(f"invalid YAML: {error}", source=str(path)) from error


def _resolve_paths(tree: dict[str, Any], base: Path, path_keys: Sequence[tuple[str, ...]]) -> None:
    for keys in path_keys:
        node: Any = tree
        for key in keys[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and isinstance(node.get(keys[-1]), str) and node[keys[-1]].strip():
            value = Path(os.path.expanduser(node[keys[-1]]))
            node[keys[-1]] = str(value if value.is_absolute() else (base / value))


# Validation errors in the user's words.


def _dotted_loc(loc: Sequence[int | str], root: type[BaseModel]) -> str:
    """A pydantic error location as the user's dotted key (union member tags dropped)."""
    parts: list[str] = []
    model: type[BaseModel] | None = root
    free = False
    for item in loc:
        if free:
            parts.append(str(item))
            continue
        if model is not None and isinstance(item, str) and item in model.model_fields:
            info = model.model_fields[item]
            parts.append(item)
            free = _is_free_mapping(info.annotation) and _model_in(info.annotation) is None
            model = _model_in(info.annotation)
        # Anything else is a union member tag such as 'str' or 'RewardSelection': not a user key.
    return ".".join(parts) or "(top level)"


_MISSING_HINTS = {
    "rl": "; a run needs at least rl.reward.provider (or rl.reward.spec)",
    "rl.reward": "; set rl.reward.provider (or rl.reward.spec)",
}


def _section_at(loc: Sequence[int | str], root: type[BaseModel]) -> type[BaseModel] | None:
    """The section model at ``loc``, following ``dict[str, Model]`` values; ``None`` if free."""
    model: type[BaseModel] | None = root
    values: type[BaseModel] | None = None
    for item in loc:
        if values is not None:
            model, values = values, None
            continue
        if model is None or not isinstance(item, str) or item not in model.model_fields:
            if model is not None and isinstance(item, str) and item[:1].isupper():
                continue  # a union member tag
            return None
        annotation = model.model_fields[item].annotation
        model = _model_in(annotation)
        # The section model of the values of a ``dict[str, Model]`` field (``allow.providers``).
        values = _model_in(typing.get_args(annotation)[-1]) if typing.get_origin(annotation) is dict else None
    return None if values is not None else model


def _describe(error: Mapping[str, Any], root: type[BaseModel], prefix: Sequence[str]) -> str:
    if error["type"] == "extra_forbidden":
        parent = _section_at(error["loc"][:-1], root)
        if parent is not None:
            wrong = str(error["loc"][-1])
            close = nearest(wrong, parent.model_fields)
            hint = f"; did you mean {close}?" if close is not None else ""
            return f"unknown key {wrong!r}{hint} (known keys: {', '.join(parent.model_fields)})"
    message = str(error["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if error["type"] == "missing":
        dotted = ".".join([*prefix, _dotted_loc(error["loc"], root)])
        return "required key is missing" + _MISSING_HINTS.get(dotted, "")
    if error["type"] not in ("value_error", "assertion_error") and "input" in error:
        shown = repr(error["input"])
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        message = f"{message} (got {shown})"
    return message


def _validation_error(
    error: ValidationError, source: str | None, root: type[BaseModel], prefix: Sequence[str] = ()
) -> ConfigError:
    """``error`` of validating ``root`` (the whole configuration, or the section at ``prefix``) in the
    user's words, each problem under its dotted key."""
    by_key: dict[str, list[str]] = {}
    for item in error.errors():
        key = (
            ".".join([*prefix, _dotted_loc(item["loc"], root)]) if prefix else _dotted_loc(item["loc"], root)
        )
        text = _describe(item, root, prefix)
        if text not in by_key.setdefault(key, []):
            by_key[key].append(text)
    if len(by_key) == 1:
        key, texts = next(iter(by_key.items()))
        return ConfigError(" | ".join(texts), key=key, source=source)
    lines = [f"{key}: {' | '.join(texts)}" for key, texts in by_key.items()]
    return ConfigError("invalid configuration:\n  " + "\n  ".join(lines), source=source)


# The two names of the reference column of a data section (see DataConfig).
_REFERENCE_NAMES = ("response_column", "reference_column")


def _drop_other_name(tree: dict[str, Any], parts: Sequence[str], root: type[BaseModel]) -> None:
    """An override of one name of the reference column replaces the file's value under either name, in
    every data section (``rl.data`` and a plugin's ``DataConfig`` subclass alike)."""
    section, name = tuple(parts[:-1]), parts[-1]
    model = _section_at(section, root) if section else None
    if name not in _REFERENCE_NAMES or model is None or not issubclass(model, DataConfig):
        return
    node: Any = tree
    for key in section:
        node = node.get(key) if isinstance(node, dict) else None
    if isinstance(node, dict):
        for other in _REFERENCE_NAMES:
            node.pop(other, None)


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
        tree = _nest(source, label, root)
    else:
        source_path = Path(source).expanduser().resolve()
        label = str(source_path)
        tree = _nest(_read_file(source_path), label, root)
        _resolve_paths(tree, source_path.parent, path_keys)
    for text in overrides:
        key, value = parse_override(text)
        origin = f"override {text!r}"
        parts = _split_key(key, [], origin)
        _drop_other_name(tree, parts, root)
        _put(tree, root, [], parts, value, replace=True, source=origin)
    try:
        config = root.model_validate(tree, context={"base_dir": source_path and source_path.parent})
    except ValidationError as error:
        where = label if not overrides else f"{label or 'config'} (with overrides)"
        raise _validation_error(error, where, root) from None
    config._source_path = source_path
    return config
