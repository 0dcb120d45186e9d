"""The Reward Service's wire models: requests are validated with these, and the OpenAPI document
is generated from them, so the two cannot drift apart.

Rollouts are ``TypedDict``s rather than models: pydantic validates them just as strictly but hands
back plain dicts, which is what the worker reads, without a copy per rollout on the hot path.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationInfo, field_validator, model_validator
from pydantic.json_schema import models_json_schema
from typing_extensions import NotRequired, TypedDict

from rewardkit.plugin import (
    MAX_DEADLINE_S,  # one limit: what load() accepts, the service accepts
    canonical_json,
)


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Rollout(TypedDict):
    """One candidate completion of a group (the rollout fields of the binding contract)."""

    __pydantic_config__ = ConfigDict(extra="forbid", strict=True)  # type: ignore[misc]

    trajectory_id: str
    completion: str
    group_id: NotRequired[str]
    prompt: NotRequired[JsonValue]
    reference: NotRequired[JsonValue]
    completion_token_count: NotRequired[int | None]
    finish_reason: NotRequired[str | None]


class Group(_Wire):
    """Every candidate of one group, in order."""

    group_id: str = Field(min_length=1)
    rollouts: list[Rollout] = Field(min_length=1)


class Selection(_Wire):
    """Which reward to score with: one ``provider`` (with ``params``), a RewardSpec as ``spec``, or
    neither (the reward the service was configured with). Anything but the configured reward must be
    permitted by the operator's allow-list (``rewards.service.allow``), else the answer is 403."""

    provider: str | None = Field(default=None, min_length=1)
    params: dict[str, JsonValue] | None = None
    spec: dict[str, JsonValue] | None = None

    @model_validator(mode="after")
    def _one_reward(self) -> Selection:
        if self.provider is not None and self.spec is not None:
            raise ValueError("give either 'provider' or 'spec', not both")
        if self.params is not None and self.provider is None:
            raise ValueError("'params' goes with 'provider'; with 'spec', give params on each component")
        return self


def _deadline(value: float | None) -> float | None:
    if value is not None and (not math.isfinite(value) or value <= 0 or value > MAX_DEADLINE_S):
        raise ValueError(f"must be a number of seconds in (0, {MAX_DEADLINE_S:g}]")
    return value


_TIMEOUT_DOC = (
    "seconds the whole request may take (waiting, scoring, answering); past it the work is cancelled "
    "and the answer is 504. The smallest of this, the Rewardkit-Timeout-Ms header and "
    "rewards.request_timeout_s applies"
)


class ScoreRequest(Selection):
    """``POST /v1/score``: complete groups, the reward to use and how long to wait for capacity."""

    groups: list[Group] = Field(min_length=1)
    deadline_s: float | None = Field(
        default=None, description="seconds this request may wait for capacity (default rewards.deadline_s)"
    )
    request_timeout_s: float | None = Field(default=None, description=_TIMEOUT_DOC)
    group_size: int | None = Field(default=None, ge=1, description="expected candidates per group")
    advantage_scaling: Literal["group", "batch", "none"] | None = None
    advantages: bool = Field(default=True, description="include GRPO advantages in the answer")
    namespace: Literal["train", "val"] = Field(default="train", description="metric namespace")

    _check_deadline = field_validator("deadline_s", "request_timeout_s")(
        classmethod(lambda cls, value: _deadline(value))
    )


# The validation context key of the configured column names: ``{column: "prompt" | "reference"}``.
COLUMNS = "columns"


def column_aliases(prompt_column: str | None, reference_column: str | None) -> dict[str, str]:
    """The configuration's column names (``rl.data.prompt_column``, ``rl.data.reference_column``) a
    rollout may use for ``prompt`` and ``reference``; a rollout field's own name always means itself."""
    fields = Rollout.__required_keys__ | Rollout.__optional_keys__
    named = ((prompt_column, "prompt"), (reference_column, "reference"))
    return {column: canonical for column, canonical in named if column is not None and column not in fields}


def _same(first: Any, second: Any) -> bool:
    try:  # type-strict: 1, 1.0 and true are three different references
        return canonical_json(first) == canonical_json(second)
    except ValueError:
        return False


class MappedGroup(Group):
    """A ``Group`` whose rollouts may name the prompt and the reference by the configured column names
    (passed as the validation context ``{COLUMNS: column_aliases(...)}``), renamed before validation."""

    @model_validator(mode="before")
    @classmethod
    def _canonical_names(cls, data: Any, info: ValidationInfo) -> Any:
        aliases: dict[str, str] = (info.context or {}).get(COLUMNS) or {}
        rollouts = data.get("rollouts") if isinstance(data, dict) else None
        if not aliases or not isinstance(rollouts, list):
            return data
        renamed = []
        for index, rollout in enumerate(rollouts):
            if isinstance(rollout, dict) and not aliases.keys().isdisjoint(rollout):
                rollout = dict(rollout)
                for column, canonical in aliases.items():
                    if column not in rollout:
                        continue
                    value = rollout.pop(column)
                    if canonical in rollout and not _same(rollout[canonical], value):
                        raise ValueError(
                            f"rollouts[{index}] gives {canonical!r} and {column!r} (the configured "
                            f"rl.data.{canonical}_column) with different values; send one of them"
                        )
                    rollout[canonical] = value
            renamed.append(rollout)
        return {**data, "rollouts": renamed}


class MappedScoreRequest(ScoreRequest):
    """``ScoreRequest`` for a service whose configuration maps its columns (see ``MappedGroup``)."""

    groups: list[MappedGroup] = Field(min_length=1)  # type: ignore[assignment]


class ResolveRequest(Selection):
    """``POST /v1/resolve``: admit and preflight a reward without scoring anything."""


class ProviderRecordOut(_Wire):
    catalog: str | None
    provider: str
    revision: str
    identity: str
    code_fingerprint: str


class ResolveResponse(_Wire):
    spec: dict[str, Any] = Field(description="the RewardSpec with every component's term resolved")
    providers: list[ProviderRecordOut]
    needs: list[str]
    max_rollouts_per_call: int
    max_inflight: int


class ScoredCandidateOut(_Wire):
    trajectory_id: str
    final: float | None
    gated: bool
    advantage: float | None = None
    breakdown: dict[str, dict[str, Any]]
    # provider -> {diagnostic: value} for this candidate (reporting only, never in final)
    diagnostics: dict[str, dict[str, float]] = {}


class ScoredGroupOut(_Wire):
    group_id: str
    candidates: list[ScoredCandidateOut]


class ScoreResponse(_Wire):
    groups: list[ScoredGroupOut]
    metrics: dict[str, float]
    # The weight of each mean in metrics (how many values it averages): lets a client merge split calls.
    metric_weights: dict[str, float] = {}
    providers: list[ProviderRecordOut]
    waited_s: float
    scored_s: float


class Outcome(_Wire):
    status: Literal["scored", "skipped", "error"]
    value: float | None = None
    reason: str | None = None


class ComposeRequest(_Wire):
    """``POST /v1/compose``: compose given component outcomes under a spec (no provider runs)."""

    spec: dict[str, JsonValue]
    candidates: list[dict[str, dict[str, JsonValue]]] = Field(
        min_length=1, max_length=10_000, description="per candidate: component name -> outcome"
    )


class CompositionOut(_Wire):
    total: float | None
    gated: bool
    breakdown: dict[str, dict[str, Any]]


class ComposeResponse(_Wire):
    results: list[CompositionOut]


class GetRewardRequest(BaseModel):
    """OpenRLHF's remote reward request: ``query`` (prompt + response text), ``prompts``, ``labels``."""

    # OpenRLHF may add keys over time; unknown ones are ignored here as its own servers do.
    model_config = ConfigDict(extra="ignore", strict=True)

    query: list[str] = Field(min_length=1)
    prompts: list[str] | None = None
    labels: list[JsonValue] | None = None
    request_timeout_s: float | None = Field(default=None, description=_TIMEOUT_DOC)

    _check_timeout = field_validator("request_timeout_s")(classmethod(lambda cls, value: _deadline(value)))

    @model_validator(mode="after")
    def _same_lengths(self) -> GetRewardRequest:
        for name in ("prompts", "labels"):
            values = getattr(self, name)
            if values is not None and len(values) != len(self.query):
                raise ValueError(f"'{name}' has {len(values)} items but 'query' has {len(self.query)}")
        return self


class GetRewardResponse(_Wire):
    rewards: list[float]
    scores: list[float]
    extra_logs: dict[str, list[float]]


class ErrorDetail(_Wire):
    path: str
    message: str


class ErrorInfo(_Wire):
    code: str
    message: str
    details: list[ErrorDetail] = Field(default_factory=list)
    limit: int | None = None
    retry_after_s: float | None = None


class ErrorResponse(_Wire):
    error: ErrorInfo


class Health(_Wire):
    status: str


REQUEST_MODELS: tuple[type[BaseModel], ...] = (ScoreRequest, ResolveRequest, ComposeRequest, GetRewardRequest)
RESPONSE_MODELS: tuple[type[BaseModel], ...] = (
    ScoreResponse,
    ResolveResponse,
    ComposeResponse,
    GetRewardResponse,
    ErrorResponse,
    Health,
)

_REF = "#/components/schemas/{model}"
_COMMON_ERRORS = {
    "400": "malformed JSON, or a field that fails validation (the answer names the field path)",
    "401": "missing or wrong bearer token",
    "413": "the body or the number of rollouts is over the limit (the answer gives the limit)",
}
_FORBIDDEN = (
    "the selection is neither the configured reward nor permitted by the operator's allow-list "
    "(rewards.service.allow); the answer names the field; nothing was built or run"
)
_TIMED_OUT = (
    "the request timeout passed (request_timeout_s, Rewardkit-Timeout-Ms or rewards.request_timeout_s); "
    "the work was cancelled. Not retried"
)
# path, method, request model, response (model name, "text" or a schema), summary, errors, open
_OPERATIONS: tuple[tuple[str, str, str | None, Any, str, dict[str, str], bool], ...] = (
    ("/v1/score", "post", "ScoreRequest", "ScoreResponse", "Score complete groups",
     {**_COMMON_ERRORS, "403": _FORBIDDEN, "422": "the reward cannot be built or a group broke the contract",
      "503": "the deadline passed while waiting for capacity; Retry-After says when to retry",
      "504": _TIMED_OUT}, False),
    ("/v1/resolve", "post", "ResolveRequest", "ResolveResponse", "Preflight a reward without scoring",
     {**_COMMON_ERRORS, "403": _FORBIDDEN, "422": "the reward cannot be built"}, False),
    ("/v1/compose", "post", "ComposeRequest", "ComposeResponse", "Compose given component outcomes",
     {**_COMMON_ERRORS, "422": "composition refused the spec or the outcomes"}, False),
    ("/get_reward", "post", "GetRewardRequest", "GetRewardResponse", "OpenRLHF remote reward protocol",
     {**_COMMON_ERRORS, "422": "a query could not be scored",
      "503": "the deadline passed while waiting for capacity", "504": _TIMED_OUT}, False),
    ("/v1/providers", "get", None, {"type": "array", "items": {"type": "object"}},
     "Installed providers: what `rewardkit providers --json` prints", {"401": _COMMON_ERRORS["401"]}, False),
    ("/metrics", "get", None, "text", "Prometheus metrics", {"401": _COMMON_ERRORS["401"]}, False),
    ("/openapi.json", "get", None, {"type": "object"}, "This document",
     {"401": _COMMON_ERRORS["401"]}, False),
    ("/healthz", "get", None, "Health", "Liveness", {}, True),
    ("/readyz", "get", None, "Health", "Readiness: every configured provider preflighted, not draining",
     {"503": "not ready (starting or draining)"}, True),
)  # fmt: skip


def _content(response: Any) -> dict[str, Any]:
    if response == "text":
        return {"text/plain": {"schema": {"type": "string"}}}
    schema = {"$ref": _REF.format(model=response)} if isinstance(response, str) else response
    return {"application/json": {"schema": schema}}


def openapi_document(version: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document of every endpoint, built from the models above."""
    _, definitions = models_json_schema(
        [(model, "validation") for model in REQUEST_MODELS]
        + [(model, "serialization") for model in RESPONSE_MODELS],
        ref_template=_REF,
    )
    paths: dict[str, Any] = {}
    for path, method, request, response, summary, errors, open_ in _OPERATIONS:
        operation: dict[str, Any] = {
            "summary": summary,
            "operationId": path.strip("/").replace("/", "_").replace(".", "_") or "root",
            "responses": {"200": {"description": "OK", "content": _content(response)}},
        }
        for code, description in errors.items():
            operation["responses"][code] = {
                "description": description,
                "content": _content("ErrorResponse"),
            }
        if request is not None:
            operation["requestBody"] = {"required": True, "content": _content(request)}
        if not open_:
            operation["security"] = [{"bearer": []}]
        paths[path] = {method: operation}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "rewardkit Reward Service",
            "version": version,
            "description": "Score RL rollouts with rewardkit reward providers and composed RewardSpecs.",
        },
        "paths": paths,
        "components": {
            "schemas": definitions.get("$defs", {}),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
