"""The parameter schemas of ``nih-rubric`` and ``nih-compare``, validated at ``load``.

Every setting that changes what the judge says or how hard it is tried is a param, so it is part
of the provider's identity (the catalog hashes the normalised params). One more value is added to
the normalised params: ``judge_content_sha256``, the hash of everything the judge reads besides
the candidates (system message, template, rubric text, also when read from ``rubric_path``, and
scale). Changing a rubric file therefore changes the identity although its path did not change.

The URL, the credential references, file paths and the limits are operator-only: a Reward
Service client can never set them. ``api_key_env`` and ``fence_secret_env`` name environment
variables; the key and the fence secret themselves are never params, never hashed and never
shown.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import Field, PrivateAttr, ValidationInfo, computed_field, field_validator, model_validator

from rewardkit.plugin import ParamsError, ParamsModel, operator_only, validate_params
from rewardkit_nih_judge import prompts

MAX_TIMEOUT_S = 600.0
MAX_DEADLINE_S = 3600.0
MAX_CONCURRENCY = 256
MAX_RETRIES = 10
MAX_PER_MINUTE = 1_000_000
MAX_TOKENS = 32768
MAX_COMPARISONS = 4096
MAX_RUBRIC_BYTES = 1 << 20
MIN_FENCE_SECRET = 16
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

P = TypeVar("P", bound="JudgeParams")


def _resource(expects: str | None = None) -> dict[str, Any]:
    return operator_only("resource", expects=expects)


class JudgeParams(ParamsModel):
    """What both judges share: the server, the judge, sampling, limits, failure handling, cache."""

    base_url: str = Field(
        description="API root of an OpenAI-compatible server; requests go to <base_url>/chat/completions "
        "(api chat) or <base_url>/completions (api completions)",
        json_schema_extra=operator_only(
            "url", expects="an http:// or https:// API root such as http://127.0.0.1:8000/v1"
        ),
    )
    # The API decides what the model reads (the server's chat template, or the plain prompt
    # ``prompts.completion_prompt`` lays out), so it is a param and therefore identity; it is the
    # operator's, like base_url, because only the operator knows what the server at the URL serves.
    api: Literal["chat", "completions"] = Field(
        "chat",
        description="chat: POST <base_url>/chat/completions with a system and a user message (the "
        "server applies its chat template); completions: POST <base_url>/completions with one plain "
        "prompt, the system text and the user text each followed by a blank line, no chat template",
        json_schema_extra=operator_only("url", expects="chat or completions"),
    )
    model: str = Field(description="the judge model, as the server names it")
    judge_revision: str | None = Field(
        None, description="the judge model's revision or snapshot (identity only; servers do not check it)"
    )
    api_key_env: str | None = Field(
        None,
        description="NAME of the environment variable holding the API key; null for keyless servers",
        json_schema_extra=operator_only(
            "credential", expects="the name of an environment variable (not the key itself), or null"
        ),
    )
    rubric: str | None = Field(None, description="the rubric or criteria, inline")
    rubric_path: str | None = Field(
        None,
        validate_default=True,
        description="a UTF-8 file holding the rubric (instead of rubric); its content is in the identity",
        json_schema_extra=operator_only("path", expects="the path of a readable UTF-8 rubric file, or null"),
    )
    temperature: float = Field(0.0, ge=0, le=2, description="sampling temperature of the judge")
    max_tokens: int = Field(
        512, ge=1, le=MAX_TOKENS, description="tokens the judge may write", json_schema_extra=_resource()
    )
    timeout_s: float = Field(
        60.0,
        gt=0,
        le=MAX_TIMEOUT_S,
        description="seconds one request may take",
        json_schema_extra=_resource(f"a positive number of seconds, at most {MAX_TIMEOUT_S:g}"),
    )
    deadline_s: float = Field(
        600.0,
        gt=0,
        le=MAX_DEADLINE_S,
        description="seconds one group may take in all: requests, retries, re-asks and queueing",
        json_schema_extra=_resource(f"a positive number of seconds, at most {MAX_DEADLINE_S:g}"),
    )
    max_concurrency: int = Field(
        8,
        ge=1,
        le=MAX_CONCURRENCY,
        description="requests in flight at once, across every group this provider scores",
        json_schema_extra=_resource(),
    )
    retries: int = Field(
        3,
        ge=0,
        le=MAX_RETRIES,
        description="retries of a request after 408, 5xx, a timeout or a connection error (a 429 is "
        "waited out, not counted)",
        json_schema_extra=_resource(),
    )
    # The endpoint's budgets (see budgets.py): the operator's, since only the operator knows the
    # plan of the server at base_url, and a client raising them could exhaust it for every trainer.
    requests_per_minute: int | None = Field(
        None,
        ge=1,
        le=MAX_PER_MINUTE,
        description="requests started per minute to the endpoint, across every group; past it a "
        "request waits (within the group's deadline); null: no limit",
        json_schema_extra=_resource(f"a whole number from 1 to {MAX_PER_MINUTE}, or null"),
    )
    tokens_per_minute: int | None = Field(
        None,
        ge=1,
        le=MAX_PER_MINUTE * MAX_TOKENS,
        description="estimated tokens per minute to the endpoint (prompt characters / 4 + max_tokens, "
        "as OpenAI counts before a reply); past it a request waits; null: no limit",
        json_schema_extra=_resource("a whole number of tokens, or null"),
    )
    retries_per_minute: int | None = Field(
        None,
        ge=0,
        le=MAX_PER_MINUTE,
        description="retries per minute to the endpoint, across every request (408, 5xx, timeouts, "
        "connection errors); past it a failed request is not retried; null: only retries bounds them",
        json_schema_extra=_resource(f"a whole number from 0 to {MAX_PER_MINUTE}, or null"),
    )
    rate_window_s: float = Field(
        60.0,
        gt=0,
        le=3600,
        description="the seconds the per-minute budgets are counted over (a minute; shorter only to "
        "match an endpoint that counts another window, or a test's stub)",
        json_schema_extra=_resource("a positive number of seconds, at most 3600"),
    )
    backoff_s: float = Field(
        0.5,
        ge=0,
        le=60,
        description="first retry delay; doubles per retry, capped at 8 s, with jitter",
        json_schema_extra=_resource(),
    )
    parse_retries: int = Field(
        1,
        ge=0,
        le=5,
        description="times an unreadable or off-scale verdict is asked again",
        json_schema_extra=_resource(),
    )
    json_mode: Literal["auto", "on", "off"] = Field(
        "auto",
        description="response_format of the questions: auto (json_schema, then json_object, then none, "
        "stepping down when the server refuses one), on (never below json_object) or off (none)",
    )
    cache_path: str | None = Field(
        None,
        description="SQLite file caching verdicts of a temperature-0 judge; null: no cache",
        json_schema_extra=operator_only("path", expects="the path of a SQLite file, or null"),
    )
    fence_secret_env: str | None = Field(
        None,
        description="NAME of the environment variable holding the secret the fence markers are derived "
        "from; null: a random key kept in <cache_path>.fence-key, or one per process without a cache",
        json_schema_extra=operator_only(
            "credential", expects="the name of an environment variable (not the secret itself), or null"
        ),
    )

    _rubric_text: str = PrivateAttr("")

    # -- what a judge kind changes -----------------------------------------------------------------

    def kind(self) -> str:
        raise NotImplementedError

    def system_message(self) -> str:
        raise NotImplementedError

    def default_template(self) -> str:
        raise NotImplementedError

    def judged_scale(self) -> tuple[float, float] | None:
        return None

    # -- checks ------------------------------------------------------------------------------------

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")) or len(value) <= len("https://"):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")

    @field_validator("model")
    @classmethod
    def _model(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must name the judge model")
        return value

    @field_validator("rubric")
    @classmethod
    def _rubric(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("an empty rubric tells the judge nothing")
        return value

    @field_validator("rubric_path")
    @classmethod
    def _rubric_path(cls, value: str | None, info: ValidationInfo) -> str | None:
        inline = info.data.get("rubric")
        if value is not None and inline is not None:
            raise ValueError("give rubric or rubric_path, not both")
        if value is None:
            if inline is None and cls._rubric_required():
                raise ValueError("give the rubric inline (rubric) or in a file (rubric_path)")
            return None
        _read_rubric(value)
        return value

    @classmethod
    def _rubric_required(cls) -> bool:
        return True

    @field_validator("cache_path")
    @classmethod
    def _cache(cls, value: str | None, info: ValidationInfo) -> str | None:
        temperature = info.data.get("temperature")
        if value is not None and temperature not in (None, 0, 0.0):
            raise ValueError(
                f"a cache keeps one verdict per question, which is right only for a temperature-0 "
                f"judge (temperature is {temperature})"
            )
        if value is not None and not value.strip():
            raise ValueError("an empty path")
        return value

    @model_validator(mode="after")
    def _content(self) -> JudgeParams:
        text = _read_rubric(self.rubric_path) if self.rubric_path is not None else self.rubric
        self._rubric_text = text if text is not None else prompts.COMPARE_CRITERIA
        return self

    # -- what the judge reads --------------------------------------------------------------------------

    @property
    def rubric_text(self) -> str:
        return self._rubric_text

    @property
    def user_template(self) -> str:
        template = getattr(self, "template", None)
        return template if template is not None else self.default_template()

    @computed_field  # type: ignore[prop-decorator]
    @property
    def judge_content_sha256(self) -> str:
        """SHA-256 of the system message, template, rubric text and scale (part of the identity)."""
        return prompts.content_sha256(
            self.kind(), self.system_message(), self.user_template, self.rubric_text, self.judged_scale()
        )


def _read_rubric(path: str) -> str:
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"no rubric file at {file}")
    try:
        data = file.read_bytes()
    except OSError as error:
        raise ValueError(f"cannot read {file}: {error.strerror}") from None
    if len(data) > MAX_RUBRIC_BYTES:
        raise ValueError(f"{file} is {len(data)} bytes; a rubric may be at most {MAX_RUBRIC_BYTES}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{file} is not UTF-8 text") from None
    if not text.strip():
        raise ValueError(f"{file} is empty")
    return text


def _check_template(template: str | None, kind: str) -> str | None:
    if template is None:
        return None
    missing = prompts.missing_slots(template, kind)
    if missing:
        slots = ", ".join("{" + slot + "}" for slot in missing)
        raise ValueError(
            f"a {kind} template must contain {slots}: the answers are placed there, inside fences the "
            "candidate cannot close (there is no other way to show them to the judge)"
        )
    return template


class RubricParams(JudgeParams):
    """Params of ``nih-rubric`` (see docs/nih_judge.md)."""

    template: str | None = Field(
        None,
        description="user message with {completion} and optionally {prompt}, {rubric}, {lo}, {hi}",
    )
    scale: tuple[float, float] = Field(
        (1.0, 10.0),
        description="the judge's score range [lo, hi]; a score s becomes (s - lo) / (hi - lo)",
        json_schema_extra={"expects": "[lo, hi]: two finite numbers with lo < hi"},
    )

    def kind(self) -> str:
        return "rubric"

    def system_message(self) -> str:
        return prompts.RUBRIC_SYSTEM

    def default_template(self) -> str:
        return prompts.RUBRIC_TEMPLATE

    def judged_scale(self) -> tuple[float, float]:
        return self.scale

    @field_validator("template")
    @classmethod
    def _template(cls, value: str | None) -> str | None:
        return _check_template(value, "rubric")

    @field_validator("scale")
    @classmethod
    def _scale(cls, value: tuple[float, float]) -> tuple[float, float]:
        lo, hi = value
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise ValueError("lo and hi must be finite")
        if lo >= hi:
            raise ValueError(f"lo ({prompts.number_text(lo)}) must be below hi ({prompts.number_text(hi)})")
        return value


class CompareParams(JudgeParams):
    """Params of ``nih-compare`` (see docs/nih_judge.md)."""

    mode: Literal["pairwise", "listwise"] = Field(
        "pairwise", description="pairwise: pairs in both orders; listwise: the whole group ranked twice"
    )
    max_comparisons: int = Field(
        28,
        ge=1,
        le=MAX_COMPARISONS,
        description="pairwise: most pairs per group (each asked in both orders); all pairs when they fit",
        json_schema_extra=_resource(),
    )
    template: str | None = Field(
        None,
        description="user message: pairwise needs {first} and {second}, listwise {answers}; "
        "both may use {prompt} and {rubric}",
    )

    @classmethod
    def _rubric_required(cls) -> bool:
        return False

    def kind(self) -> str:
        return self.mode

    def system_message(self) -> str:
        return prompts.PAIR_SYSTEM if self.mode == "pairwise" else prompts.LIST_SYSTEM

    def default_template(self) -> str:
        return prompts.PAIR_TEMPLATE if self.mode == "pairwise" else prompts.LIST_TEMPLATE

    @field_validator("template")
    @classmethod
    def _template(cls, value: str | None, info: ValidationInfo) -> str | None:
        return _check_template(value, info.data.get("mode", "pairwise"))


def checked(model: type[P], params: dict[str, Any]) -> P:
    """``params`` validated against ``model``, and the key variable checked (its value never shown).

    Called by the factories, so a missing key variable fails at ``load`` naming the param.
    """
    settings = validate_params(model, params)
    assert isinstance(settings, model)
    name = settings.api_key_env
    if name is not None:
        if not _ENV_NAME.match(name):
            raise ParamsError(
                "param api_key_env must be the NAME of an environment variable (letters, digits and _), "
                "not the key itself; the value given is not shown"
            )
        if not os.environ.get(name):
            raise ParamsError(
                f"param api_key_env names the environment variable {name}, which is not set (or empty); "
                "export the API key in it, or use null for a server without keys"
            )
    name = settings.fence_secret_env
    if name is not None:
        if not _ENV_NAME.match(name):
            raise ParamsError(
                "param fence_secret_env must be the NAME of an environment variable (letters, digits and _), "
                "not the secret itself; the value given is not shown"
            )
        if len(os.environ.get(name, "")) < MIN_FENCE_SECRET:
            raise ParamsError(
                f"param fence_secret_env names the environment variable {name}, which does not hold a "
                f"secret of at least {MIN_FENCE_SECRET} characters (its value is not shown); export one "
                "(e.g. python -c 'import secrets; print(secrets.token_hex(32))'), or use null"
            )
    return settings
