"""Provider parameter schemas: what each param of a provider may be, and who may set it.

A provider's schema is a pydantic model: its ``params_schema`` (group-native factories such as
``code-tests`` declare one), or one derived from the annotated keyword parameters of its factory
(or of the scorer of ``partial(map_candidates, scorer)``); a factory taking ``**kwargs`` has none
and checks its params alone. ``validate_params`` checks a configuration at ``load``, strictly: JSON
types only, so ``"8"`` is not 8 and ``"true"`` is not true.

A field marked ``operator_only(reason)`` is never client-settable in the Reward Service, whatever
its allow-list says: ``isolation`` (weakens the sandbox), ``resource`` (raises a count, time or
memory limit, up to a documented maximum, ``le=``), ``url``, ``credential`` (a *reference*, such as
an API key variable's name) or ``path``. Values that disable the sandbox (``unsandboxed=("none",)``)
need ``REWARDKIT_ALLOW_UNSANDBOXED=1`` and log a warning, in process and in the service alike.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import os
import re
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from pydantic.fields import FieldInfo

from rewardkit.scoring.pointwise import map_candidates

log = logging.getLogger("rewardkit.contracts.params")

OperatorOnly = Literal["isolation", "resource", "url", "credential", "path"]
OPERATOR_ONLY_REASONS: tuple[str, ...] = typing.get_args(OperatorOnly)
UNSANDBOXED_ENV = "REWARDKIT_ALLOW_UNSANDBOXED"

# Params named like these are never client-settable even when a provider did not mark them:
# the Reward Service refuses to start with such a param in its allow-list.
_NAME_WORDS: dict[str, frozenset[str]] = {
    "isolation": frozenset({"isolation", "sandbox", "cgroup", "unsandboxed", "seccomp"}),
    "resource": frozenset(
        {
            "worker",
            "workers",
            "concurrency",
            "timeout",
            "memory",
            "mb",
            "bytes",
            "processes",
            "threads",
            "parallelism",
            "limit",
        }
    ),
    "url": frozenset({"url", "endpoint", "host", "port", "address", "uri"}),
    "credential": frozenset({"key", "token", "secret", "password", "credential", "credentials", "env"}),
    "path": frozenset({"path", "file", "dir", "directory", "folder"}),
}


class ParamsModel(BaseModel):
    """Base of declared parameter schemas: unknown params are errors and types are strict."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def operator_only(
    reason: OperatorOnly, *, unsandboxed: tuple[Any, ...] = (), expects: str | None = None
) -> dict[str, Any]:
    """``json_schema_extra`` marking a field operator-only for ``reason``; ``unsandboxed``: values that
    disable isolation; ``expects``: the description of a valid value in error messages."""
    if reason not in OPERATOR_ONLY_REASONS:
        raise ValueError(f"operator_only reason must be one of {list(OPERATOR_ONLY_REASONS)}, got {reason!r}")
    extra: dict[str, Any] = {"operator_only": reason}
    if unsandboxed:
        extra["unsandboxed"] = list(unsandboxed)
    if expects:
        extra["expects"] = expects
    return extra


def _extra(field: FieldInfo) -> dict[str, Any]:
    extra = field.json_schema_extra
    return extra if isinstance(extra, dict) else {}


def operator_only_reason(model: type[BaseModel] | None, name: str) -> str | None:
    """Why param ``name`` is never client-settable, or ``None`` when an allow-list may permit it. The field's
    own mark wins; else the name decides (``base_url``, ``workers``, ``cache_dir``...)."""
    field = model.model_fields.get(name) if model is not None else None
    if field is not None and _extra(field).get("operator_only"):
        return str(_extra(field)["operator_only"])
    words = set(re.split(r"[^a-z0-9]+", name.lower()))
    return next((reason for reason, hints in _NAME_WORDS.items() if words & hints), None)


def _signature_target(factory: Any) -> tuple[Any, int, frozenset[str]]:
    """The callable whose keyword params are the provider's, how many leading params to skip,
    and the names a ``partial`` already binds."""
    bound: set[str] = set()
    target = factory
    skip = 0
    while isinstance(target, functools.partial):
        bound.update(target.keywords)
        if target.func is map_candidates and target.args:
            return target.args[0], 2, frozenset(bound)  # scorer(candidate, context, **params)
        skip += len(target.args)
        target = target.func
    return target, skip, frozenset(bound)


def _annotation(hints: Mapping[str, Any], name: str) -> Any:
    annotation = hints.get(name, Any)
    try:
        TypeAdapter(annotation).json_schema()  # only JSON-describable types are checked
    except Exception:
        return Any
    return annotation


def derive_params_model(factory: Any, name: str = "provider") -> type[BaseModel] | None:
    """A strict schema from the factory's (or the lifted scorer's) keyword parameters; ``None`` when
    the factory takes ``**kwargs`` or has no inspectable signature."""
    target, skip, bound = _signature_target(factory)
    try:
        parameters = list(inspect.signature(target).parameters.values())[skip:]
    except (TypeError, ValueError):
        return None
    try:
        hints = typing.get_type_hints(
            target.__init__ if inspect.isclass(target) else target, include_extras=True
        )
    except Exception:
        hints = {}
    fields: dict[str, Any] = {}
    for parameter in parameters:
        if parameter.kind is parameter.VAR_KEYWORD:
            return None
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.POSITIONAL_ONLY) or parameter.name in bound:
            continue
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (_annotation(hints, parameter.name), default)
    model_name = "Params_" + re.sub(r"\W", "_", name)
    try:
        return create_model(model_name, __base__=ParamsModel, **fields)
    except Exception:
        return None


class ParamsError(ValueError):
    """Params do not fit the schema; the message names each param, what it must be and its value."""

    def __init__(self, message: str, *, unknown: tuple[str, ...] = (), fields: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.unknown = unknown
        self.fields = fields


_TYPE_WORDS = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "str": "a string",
    "list": "a list",
    "tuple": "a list",
    "dict": "a mapping",
    "NoneType": "null",
}


def _type_text(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _type_text(typing.get_args(annotation)[0])
    if origin is Literal:
        return "one of " + repr(list(typing.get_args(annotation)))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(dict.fromkeys(_type_text(arg) for arg in typing.get_args(annotation)))
    base = origin or annotation
    return _TYPE_WORDS.get(getattr(base, "__name__", ""), getattr(base, "__name__", str(base)))


_BOUND_SIDES = {"ge": ("low", False), "gt": ("low", True), "le": ("high", False), "lt": ("high", True)}


def _bounds(field: FieldInfo) -> str:
    found: dict[str, tuple[Any, bool]] = {}  # side -> (value, open), the last one given
    for item in field.metadata:
        for attr, (side, is_open) in _BOUND_SIDES.items():
            if getattr(item, attr, None) is not None:
                found[side] = (getattr(item, attr), is_open)
    low, low_open = found.get("low", (None, False))
    high, high_open = found.get("high", (None, False))
    if low is None and high is None:
        return ""
    if high is None:
        return f" {'>' if low_open else '>='} {low}"
    if low is None:
        return f" {'<' if high_open else '<='} {high} (the documented maximum)"
    return f" in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"


def expects(model: type[BaseModel], name: str) -> str:
    """What a valid value of param ``name`` is, in words (used in errors and in the docs)."""
    field = model.model_fields[name]
    custom = _extra(field).get("expects")
    return str(custom) if custom else _type_text(field.annotation) + _bounds(field)


_TYPE_ERRORS = ("_type", "_parsing", "union_tag")


def validate_params(
    model: type[BaseModel], params: Mapping[str, Any], *, json_text: str | None = None
) -> BaseModel:
    """The params validated against ``model`` (strict JSON types), or ``ParamsError`` naming, per
    param, what it must be and the value given."""
    try:
        return model.model_validate_json(json_text if json_text is not None else json.dumps(dict(params)))
    except ValidationError as error:
        problems: list[str] = []
        unknown: list[str] = []
        seen: list[str] = []
        for item in error.errors(include_url=False):
            name = str(item["loc"][0]) if item["loc"] else "(params)"
            if item["type"] == "extra_forbidden":
                unknown.append(name)
                continue
            if name in seen or name not in model.model_fields:
                continue
            seen.append(name)
            if item["type"] == "missing":
                problems.append(f"param {name} is required ({expects(model, name)})")
                continue
            field = model.model_fields[name]
            wanted = expects(model, name)
            type_error = any(tag in str(item["type"]) for tag in _TYPE_ERRORS)
            if type_error and typing.get_origin(field.annotation) is not Literal:
                wanted = _type_text(field.annotation)  # the type is what is wrong, not the range
            shown = repr(params.get(name))
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            problems.append(f"param {name} must be {wanted}; got {shown} ({item['msg']})")
        if unknown:
            problems.insert(0, f"unknown params {sorted(unknown)}; it accepts {list(model.model_fields)}")
        raise ParamsError("; ".join(problems), unknown=tuple(sorted(unknown)), fields=tuple(seen)) from None


def normalise(model: type[BaseModel] | None, params: Mapping[str, Any]) -> dict[str, Any]:
    """The params with the schema's defaults filled in, as JSON values (for comparing selections)."""
    return dict(params) if model is None else normalised_params(model, params)


def normalised_params(
    model: type[BaseModel], params: Mapping[str, Any], *, json_text: str | None = None
) -> dict[str, Any]:
    """What identity hashes: the validated params, defaults filled in, each dumped to JSON as its declared
    type (a ``float`` given ``6`` is ``6.0``); a default JSON cannot hold is left out, covered by the
    revision."""
    validated = validate_params(model, params, json_text=json_text)
    try:
        return validated.model_dump(mode="json")
    except Exception:
        values = {}
        for name in model.model_fields:
            try:
                values[name] = TypeAdapter(Any).dump_python(getattr(validated, name), mode="json")
            except Exception:
                if name in params:
                    values[name] = params[name]
        return values


def unsandboxed_choices(model: type[BaseModel] | None, params: Mapping[str, Any]) -> list[str]:
    """``param=value`` for each param set to a value that disables isolation."""
    if model is None:
        return []
    chosen = []
    for name, field in model.model_fields.items():
        values = _extra(field).get("unsandboxed") or ()
        value = params.get(name, field.default)
        if any(value == unsafe and type(value) is type(unsafe) for unsafe in values):
            chosen.append(f"{name}={value!r}")
    return chosen


def require_unsandboxed_opt_in(provider: str, choices: list[str]) -> None:
    """Refuse an unsandboxed choice unless ``REWARDKIT_ALLOW_UNSANDBOXED=1``; warn when allowed."""
    if not choices:
        return
    shown = ", ".join(choices)
    if os.environ.get(UNSANDBOXED_ENV) != "1":
        raise ParamsError(
            f"{shown} runs untrusted completions without a sandbox, as this process's user; "
            f"set {UNSANDBOXED_ENV}=1 in the environment to allow it (for trusted code only)"
        )
    log.warning(
        "provider %r runs WITHOUT a sandbox (%s; %s=1): completions run as this process's user, uid %s",
        provider,
        shown,
        UNSANDBOXED_ENV,
        os.getuid(),
    )


def schema_document(model: type[BaseModel] | None) -> dict[str, Any] | None:
    """A JSON description of the schema: per param its type, default, limits and operator-only reason."""
    if model is None:
        return None
    document: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        entry: dict[str, Any] = {"expects": expects(model, name)}
        if not field.is_required():
            default = list(field.default) if isinstance(field.default, tuple) else field.default
            entry["default"] = default if _is_json(default) else repr(default)
        reason = operator_only_reason(model, name)
        if reason:
            entry["operator_only"] = reason
        document[name] = entry
    return document


def _is_json(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str, list, tuple, dict))


__all__ = [
    "OPERATOR_ONLY_REASONS",
    "UNSANDBOXED_ENV",
    "Field",
    "OperatorOnly",
    "ParamsError",
    "ParamsModel",
    "derive_params_model",
    "expects",
    "normalise",
    "normalised_params",
    "operator_only",
    "operator_only_reason",
    "require_unsandboxed_opt_in",
    "schema_document",
    "unsandboxed_choices",
    "validate_params",
]
