"""``rl.reward.grader``: an OpenAI grader spec expanded into the composed spec it stands for.

The value is the grader itself (a JSON object, JSON text, or the path of a JSON file), or an object
holding it under ``spec`` beside what the grader cannot say: ``judge`` (the server of a model
grader: ``base_url``, ``api_key_env``... as ``nih-rubric`` takes them), ``sandbox`` (a python
grader's ``timeout_s``, ``memory_mb``, ``isolation``) and ``reference_field`` (the item field a
reference that is not an object stands for). It becomes one component on the provider of the
grader's type (``openai-string-check``...), whose params hold the grader as written, so the
grader is the reward's identity.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rewardkit.plugin import NAME_PATTERN
from rewardkit_rl.graders.spec import (
    PROVIDERS,
    GraderSpecError,
    needs_judge,
    needs_sandbox,
    parse_grader,
    read_grader,
)

ENVELOPE = ("spec", "judge", "sandbox", "reference_field")
SANDBOX_SETTINGS = ("timeout_s", "memory_mb", "isolation")
# What the grader decides for the judge; the operator's ``judge`` settings cannot override it.
GRADER_OWNED_JUDGE_SETTINGS = ("model", "rubric", "rubric_path", "template", "scale")


def expand_grader(value: Any, base_dir: Path | None) -> dict[str, Any]:
    """The ``rl.reward.spec`` mapping for the grader ``value`` (see the module docstring)."""
    options: Mapping[str, Any] = {}
    if isinstance(value, Mapping) and "type" not in value:
        unknown = sorted(str(key) for key in value if key not in ENVELOPE)
        if unknown or "spec" not in value:
            raise GraderSpecError(
                f"grader: unsupported field(s) {unknown}; give a grader spec (with 'type'), or an object "
                f"with {list(ENVELOPE)} holding it under 'spec'"
            )
        options = value
        raw = read_grader(value["spec"], base_dir, "grader.spec")
    else:
        raw = read_grader(value, base_dir)
    grader = parse_grader(raw)
    params: dict[str, Any] = {"grader": raw, **grader_options(grader, options)}
    name = component_name(grader.name, PROVIDERS[raw["type"]])
    return {"components": [{"name": name, "provider": PROVIDERS[raw["type"]], "params": params}]}


def grader_options(grader: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """The provider params besides the grader: each option checked against what the grader needs."""
    params: dict[str, Any] = {}
    judge = options.get("judge")
    if needs_judge(grader):
        if not isinstance(judge, Mapping):
            raise GraderSpecError(
                "grader.judge: a model grader needs its judge server: {spec: ..., judge: {base_url: "
                "http://host:port/v1, api_key_env: NAME}} (the settings nih-rubric takes)"
            )
        owned = sorted(key for key in judge if key in GRADER_OWNED_JUDGE_SETTINGS)
        if owned:
            raise GraderSpecError(f"grader.judge: {owned} are the grader's to say, not the judge settings'")
        params["judge"] = dict(judge)
    elif judge is not None:
        raise GraderSpecError("grader.judge: the grader has no score_model or label_model to judge")
    sandbox = options.get("sandbox")
    if sandbox is not None:
        if not needs_sandbox(grader):
            raise GraderSpecError("grader.sandbox: the grader has no python grader to run")
        if not isinstance(sandbox, Mapping):
            raise GraderSpecError(f"grader.sandbox: expected an object with {list(SANDBOX_SETTINGS)}")
        unknown = sorted(str(key) for key in sandbox if key not in SANDBOX_SETTINGS)
        if unknown:
            raise GraderSpecError(
                f"grader.sandbox: unsupported field(s) {unknown} (it takes {list(SANDBOX_SETTINGS)})"
            )
        params.update(sandbox)
    field = options.get("reference_field")
    if field is not None:
        if not isinstance(field, str) or not field.isidentifier():
            raise GraderSpecError(f"grader.reference_field: expected a field name, got {field!r}")
        params["reference_field"] = field
    return params


def component_name(name: str, fallback: str) -> str:
    """The grader's name as a component name (lower case, other characters as '-'), else ``fallback``."""
    cleaned = re.sub(r"[^a-z0-9_.-]+", "-", name.lower()).strip("-_.")[:64]
    return cleaned if NAME_PATTERN.match(cleaned) else fallback
