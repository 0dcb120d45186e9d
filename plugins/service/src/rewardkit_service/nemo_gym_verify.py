"""``nemo-gym-verify``: a reward scored by a NeMo Gym resources server's ``POST /verify``.

Each candidate is posted as NeMo Gym's agents post a finished trajectory: the row (the prompt as
``responses_create_params.input``; the reference under ``reference_field``, or, when the reference
is a JSON object, its keys at the row's top level, as Gym task fields are) plus a ``response`` whose
one assistant message holds the completion as ``output_text``. The term ``reward`` is the answer's
``reward``; its ``reward_components``, when sent, come back as the note ``reward_components`` (JSON).

The server's identity is the params: ``url``, ``server_name`` (the Gym instance) and
``server_version`` (NeMo Gym servers expose no version, so it is declared here, and a change of it
is a change of the reward). Requests go through the core transport: ``timeout_s`` per call,
``attempts`` tries on 408/429/5xx and dropped connections, all within ``deadline_s`` per group.

A candidate whose call failed (no answer in time, an error status, an answer without a finite
``reward``) is decided by reproduction: a canary (another candidate of the group that was verified,
drawn per request, or else a random answer made for this request) is posted to the same server,
then the candidate once more alone. Fails again: charged (``reward`` = ``worst``, diagnostic = the
fault's kind). The canary fails: the server is down or broken, an error naming the canary (the
spec's ``onError`` decides; under ``raise`` the batch fails loudly).
"""

from __future__ import annotations

import asyncio
import json
import math
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rewardkit.plugin import (
    CanaryFailed,
    Charged,
    Fault,
    HttpClient,
    HttpError,
    HttpTimeout,
    RerunBudget,
    RetryPolicy,
    RewardCandidate,
    RewardCandidateResult,
    RewardContext,
    RewardGroupRequest,
    RewardGroupResult,
    RewardProviderResult,
    RewardProviderSpec,
    areproduce,
    rerun_budget,
    run_sync,
    thaw,
)

NAME = "nemo-gym-verify"
COMPONENTS_NOTE = "reward_components"
# The kinds of fault a call can meet; each is the diagnostic set to 1 on a charged candidate.
FAULT_KINDS = ("timeout", "server_error", "verdict_unreadable")


class VerifyParams(BaseModel):
    """The params of ``nemo-gym-verify`` (all of them are in its identity)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    url: str = Field(description="the resources server's base URL (it answers POST {url}/verify)")
    server_name: str = Field(default="", description="the NeMo Gym server instance's name")
    server_version: str | None = Field(default=None, description="its version, as you know it")
    reference_field: str = Field(
        default="reference", min_length=1, description="the row field of the reference"
    )
    token_env: str | None = Field(default=None, description="environment variable holding a bearer token")
    timeout_s: float = Field(default=60.0, gt=0, description="seconds one call may take")
    deadline_s: float = Field(default=600.0, gt=0, description="seconds a whole group may take")
    attempts: int = Field(default=4, ge=1, le=10, description="tries per call on retryable failures")
    concurrency: int = Field(default=16, ge=1, le=1024, description="calls in flight per group")
    worst: float = Field(default=0.0, description="the reward of a candidate charged for a fault")

    @field_validator("url")
    @classmethod
    def _plain_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{value!r} is not an http(s) URL")
        if parts.username or parts.password or parts.query or parts.fragment:
            # The URL is identity and appears in messages: a credential in it would be published.
            raise ValueError(
                "give the URL without credentials, query or fragment (a token goes in token_env)"
            )
        return value.rstrip("/")

    @field_validator("timeout_s", "deadline_s", "worst")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value


@dataclass(frozen=True)
class Verified:
    reward: float
    components: dict[str, float] | None


def verify_row(candidate: RewardCandidate, context: RewardContext, reference_field: str) -> dict[str, Any]:
    """The ``/verify`` body for ``candidate``: its row and a response holding its completion."""
    prompt = thaw(context.prompt) if context.prompt is not None else ""
    row: dict[str, Any] = {"responses_create_params": {"input": prompt}}
    reference = thaw(context.reference) if context.reference is not None else None
    if isinstance(reference, dict):
        row.update(
            {
                key: value
                for key, value in reference.items()
                if key not in ("responses_create_params", "response")
            }
        )
    elif reference is not None:
        row[reference_field] = reference
    message = {
        "type": "message",
        "id": "msg_0",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": candidate.completion, "annotations": []}],
    }
    response: dict[str, Any] = {
        "id": f"resp_{secrets.token_hex(8)}",
        "object": "response",
        "created_at": float(int(time.time())),
        "model": "rewardkit",
        "output": [message],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "status": "completed",
    }
    if candidate.completion_token_count is not None:
        response["usage"] = {"output_tokens": candidate.completion_token_count}
    if candidate.is_length_truncated:
        response["status"] = "incomplete"
        response["incomplete_details"] = {"reason": "max_output_tokens"}
    row["response"] = response
    return row


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def read_answer(answer: Any) -> Verified | Fault:
    """The reward (and components) of a ``/verify`` answer, or the fault that it is unreadable."""
    reward = _number(answer.get("reward")) if isinstance(answer, dict) else None
    if reward is None:
        shown = repr(answer.get("reward")) if isinstance(answer, dict) else type(answer).__name__
        return Fault("verdict_unreadable", f"the /verify answer has no finite 'reward' (got {shown[:80]})")
    raw = answer.get("reward_components")
    components = None
    if isinstance(raw, dict):
        numbers = {str(name): _number(value) for name, value in raw.items()}
        components = {name: value for name, value in numbers.items() if value is not None}
    return Verified(reward, components)


class NemoGymVerify:
    """Group provider: every candidate of a group is verified concurrently (``concurrency`` at once)."""

    def __init__(self, settings: VerifyParams) -> None:
        self.settings = settings

    def __repr__(self) -> str:
        return f"NemoGymVerify(url={self.settings.url!r}, server_name={self.settings.server_name!r})"

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        deadline = time.monotonic() + self.settings.deadline_s
        budget = rerun_budget()  # the batch's, read in this thread: run_sync's loop thread has no context
        results = run_sync(lambda: self._group(request, deadline, budget))
        return RewardGroupResult(
            request.group_id,
            tuple(
                RewardCandidateResult(candidate.trajectory_id, result)
                for candidate, result in zip(request.candidates, results, strict=True)
            ),
        )

    async def _group(
        self, request: RewardGroupRequest, deadline: float, budget: RerunBudget
    ) -> list[RewardProviderResult]:
        settings = self.settings
        retry = RetryPolicy(attempts=settings.attempts)
        async with HttpClient(
            settings.url, token_env=settings.token_env, timeout_s=settings.timeout_s, retry=retry
        ) as client:
            slots = asyncio.Semaphore(settings.concurrency)
            rows = [verify_row(c, request.context, settings.reference_field) for c in request.candidates]

            async def post(row: dict[str, Any]) -> Verified | Fault:
                async with slots:
                    return await self._post(client, row, deadline)

            outcomes = list(await asyncio.gather(*(post(row) for row in rows)))
            verified = [index for index, outcome in enumerate(outcomes) if isinstance(outcome, Verified)]
            return list(
                await asyncio.gather(
                    *(
                        self._settle(index, request, rows, outcomes, verified, post, budget)
                        for index in range(len(rows))
                    )
                )
            )

    async def _post(self, client: HttpClient, row: dict[str, Any], deadline: float) -> Verified | Fault:
        try:
            answer = await client.request("POST", "/verify", json_body=row, deadline=deadline)
        except HttpTimeout as error:
            return Fault("timeout", f"POST /verify gave no answer in time: {error}")
        except HttpError as error:
            return Fault("server_error", f"POST /verify failed: {error}")
        try:
            parsed = json.loads(answer.body)
        except ValueError as error:
            return Fault("verdict_unreadable", f"the /verify answer is not JSON ({error})")
        return read_answer(parsed)

    async def _settle(
        self,
        index: int,
        request: RewardGroupRequest,
        rows: Sequence[dict[str, Any]],
        outcomes: Sequence[Verified | Fault],
        verified: Sequence[int],
        post: Any,
        budget: RerunBudget,
    ) -> RewardProviderResult:
        """Candidate ``index``'s result: its answer, or its fault decided by reproduction."""
        outcome = outcomes[index]
        if isinstance(outcome, Verified):
            return _scored(outcome)
        others = [other for other in verified if other != index]
        if others:
            # Another candidate's row that was verified: a canary this candidate cannot recognise.
            chosen = secrets.choice(others)
            canary_row = rows[chosen]
            name = f"candidate {request.candidates[chosen].trajectory_id!r} of the group, posted again"
        else:
            canary_row = json.loads(json.dumps(rows[index]))
            canary_row["response"]["output"][0]["content"][0]["text"] = secrets.token_hex(16)
            name = "a random answer to the same task, made for this request"

        async def canary() -> str | None:
            answer = await post(canary_row)
            return answer.detail if isinstance(answer, Fault) else None

        async def again() -> Verified | Fault:
            result: Verified | Fault = await post(rows[index])
            return result

        try:
            decided = await areproduce(outcome, canary_name=name, canary=canary, rerun=again, budget=budget)
        except CanaryFailed as failed:
            where = f"NeMo Gym server {self.settings.server_name or self.settings.url!r}"
            return RewardProviderResult.fail(f"{where}: {failed}")
        if isinstance(decided, Charged):
            return decided.result({"reward": self.settings.worst})
        return _scored(decided)


def _scored(verified: Verified) -> RewardProviderResult:
    notes: Mapping[str, str] = {}
    if verified.components is not None:
        notes = {COMPONENTS_NOTE: json.dumps(verified.components, sort_keys=True)}
    return RewardProviderResult(terms={"reward": verified.reward}, notes=notes)


def make_nemo_gym_verify(**params: Any) -> NemoGymVerify:
    """The factory: checks the params (and that a named token variable is set); calls nothing."""
    settings = VerifyParams.model_validate(params)
    return NemoGymVerify(settings)


SPEC = RewardProviderSpec(
    name=NAME,
    factory=make_nemo_gym_verify,
    needs=("prompt", "reference"),
    revision="1",
    terms=("reward",),
    diagnostics=FAULT_KINDS,
    semantic_identity={
        "protocol": "NeMo Gym resources server POST /verify: the row (responses_create_params.input = "
        "prompt; reference under reference_field, or a JSON-object reference's keys at the top level) plus "
        "a response with one assistant message holding the completion as output_text; the answer's reward "
        "is the term",
        "failure_policy": "timeouts, error statuses after retries and answers without a finite reward are "
        "decided by reproduction: a canary (another verified candidate of the group drawn per request, "
        "else a random answer) then the candidate alone; reproduced: worst; canary failed: an error "
        "naming it",
    },
    description="a reward scored by a NeMo Gym resources server's /verify (HTTP)",
    params_schema=VerifyParams,
    notes=(COMPONENTS_NOTE,),
)
