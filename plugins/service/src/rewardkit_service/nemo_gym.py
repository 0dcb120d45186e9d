"""The configured reward as a NeMo Gym resources server, at the root paths NeMo Gym calls.

A NeMo Gym agent posts one finished trajectory per ``POST /verify``: the dataset row (the original
``responses_create_params``, task fields at the top level) plus the model's ``response``; it reads
back the same body with ``reward`` added. The rules this server keeps (docs/protocols.md):

- **Completion text**: the OpenAI SDK's ``Response.output_text`` rule, as NeMo Gym's
  ``math_with_judge`` and ``mcqa`` servers read it: every ``output_text`` part of every ``message``
  item of ``response.output``, joined with ``""``. Reasoning, function calls, tool outputs and
  refusals are not the answer.
- **Task fields**: the prompt is ``responses_create_params.input`` as sent (a string or the list of
  input items); the reference is the row's top-level field named by ``rl.data.reference_column``
  (``reference`` when unset). ``response.usage.output_tokens`` is the completion's token count and
  ``incomplete_details.reason == "max_output_tokens"`` its ``length`` finish reason, for rewards
  that read them.
- **Groups**: one trajectory per call, scored as a group of one, without advantages (NeMo RL
  computes its own). A reward that compares a group's candidates sees one candidate: score such a
  reward through ``/v1/score``.
- **Echo**: the answer is the request's bytes, unchanged, with ``reward``, ``reward_components``
  and ``rewardkit`` added before the closing brace: trainers read token ids from
  ``response.output[*]``, so nothing is parsed and written again. A body that already holds one of
  those keys (a stored answer verified again) is answered with the parsed body and the keys replaced.
- **Components**: ``reward_components`` holds each component's contribution (weight x value), and,
  for a spec with a gate or a clip, ``_composition``: the final reward minus their sum (what a failed
  gate's floor or the clip changed), so that ``reward`` is always their plain sum, as NeMo RL requires.

Every call goes through the service's own steps: the guard's bearer token, the body limit, the
rollouts limit, the request timeout, capacity with its deadline, the worker's contract checks and
the metrics, labelled by path.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from rewardkit_service.app import Reply, RewardService, _json
from rewardkit_service.models import Selection

VERIFY_PATHS = ("/seed_session", "/verify", "/aggregate_metrics", "/reverify_mode")
# Added to the echoed row: NeMo Gym's two, and rewardkit's breakdown, diagnostics and identities.
ADDED_KEYS = ("reward", "reward_components", "rewardkit")
# Not a component name (names start with a letter or digit), so it never collides with one.
COMPOSITION_COMPONENT = "_composition"
LENGTH_FINISH = "length"

Handler = Callable[[Request], Awaitable[Response]]
Endpoint = Callable[[str], Callable[[Handler], Any]]


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def parse_row(body: bytes) -> dict[str, Any]:
    """The request's row as a dict; Python's parser keeps any integer exactly, NaN is refused."""
    if not body.strip():
        raise Reply(
            400,
            "invalid_request",
            "(body): the request needs a JSON object body",
            details=[{"path": "(body)", "message": "empty body"}],
        )
    try:
        row = json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError) as error:
        raise _invalid("(body)", f"not valid JSON: {error}") from None
    if not isinstance(row, dict):
        raise _invalid("(body)", "the body must be a JSON object (a NeMo Gym row with 'response')")
    return row


def _invalid(path: str, message: str) -> Reply:
    return Reply(400, "invalid_request", f"{path}: {message}", details=[{"path": path, "message": message}])


def completion_text(response: Mapping[str, Any]) -> str:
    """``Response.output_text``: every ``output_text`` part of every ``message`` item, joined."""
    output = response.get("output")
    if not isinstance(output, list):
        raise _invalid("response.output", "must be a list of output items")
    texts: list[str] = []
    for index, item in enumerate(output):
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            raise _invalid(f"response.output[{index}]", "an output item is an object with a 'type'")
        if item["type"] != "message":
            continue
        content = item.get("content")
        if not isinstance(content, list):
            raise _invalid(f"response.output[{index}].content", "a message's content is a list of parts")
        for part_index, part in enumerate(content):
            if isinstance(part, dict) and part.get("type") == "output_text":
                text = part.get("text")
                if not isinstance(text, str):
                    path = f"response.output[{index}].content[{part_index}].text"
                    raise _invalid(path, "an output_text part's text is a string")
                texts.append(text)
    return "".join(texts)


def rollout_of(row: Mapping[str, Any], reference_column: str) -> dict[str, Any]:
    """The rollout the worker scores for one ``/verify`` row (see the module docstring)."""
    create = row.get("responses_create_params")
    if not isinstance(create, dict) or "input" not in create:
        raise _invalid("responses_create_params", "must be an object holding the prompt as 'input'")
    response = row.get("response")
    if not isinstance(response, dict):
        raise _invalid("response", "must be the model's response object (the row plus 'response')")
    rollout: dict[str, Any] = {
        "trajectory_id": "verify",
        "completion": completion_text(response),
        "prompt": create["input"],
    }
    if reference_column in row:
        rollout["reference"] = row[reference_column]
    usage = response.get("usage")
    tokens = usage.get("output_tokens") if isinstance(usage, dict) else None
    if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0:
        rollout["completion_token_count"] = tokens
    incomplete = response.get("incomplete_details")
    if isinstance(incomplete, dict) and incomplete.get("reason") == "max_output_tokens":
        rollout["finish_reason"] = LENGTH_FINISH
    elif response.get("status") == "completed":
        rollout["finish_reason"] = "stop"
    return rollout


def adjusts(spec: Any) -> bool:
    """Whether the spec's final reward can differ from the plain sum of its contributions."""
    return spec.clip is not None or any(component.gate for component in spec.components)


def reward_components(
    breakdown: Mapping[str, Mapping[str, Any]], final: float, adjusted: bool
) -> dict[str, float]:
    """Each component's contribution, plus ``_composition`` for a spec that can adjust the sum."""
    components = {name: float(entry["contribution"]) for name, entry in breakdown.items()}
    if adjusted:
        total = 0.0
        for value in components.values():  # in order, as NeMo RL's sum() adds them
            total += value
        components[COMPOSITION_COMPONENT] = final - total
    return components


def echoed(body: bytes, row: dict[str, Any], added: dict[str, Any]) -> bytes:
    """The request's bytes with ``added`` inserted before the closing brace (see the module docstring)."""
    if any(key in row for key in added):
        # Python's encoder: it writes any integer the parser read (orjson stops at 64 bits).
        return json.dumps({**row, **added}, ensure_ascii=False, separators=(",", ":")).encode()
    head = body.rstrip()
    assert head.endswith(b"}")  # a JSON object that parsed
    inner = head[:-1]
    extra = orjson.dumps(added)[1:-1]  # the added keys without their braces
    separator = b"" if not row else b","
    return inner + separator + extra + b"}"


def aggregate(responses: list[Any]) -> dict[str, Any]:
    """``/aggregate_metrics``: mean reward and mean of each component, overall and per task."""
    rewards: list[float] = []
    components: dict[str, list[float]] = {}
    by_task: dict[str, list[float]] = {}
    for index, item in enumerate(responses):
        reward = item.get("reward") if isinstance(item, dict) else None
        if isinstance(reward, bool) or not isinstance(reward, (int, float)) or not math.isfinite(reward):
            raise _invalid(f"verify_responses[{index}].reward", "every verify response holds a finite reward")
        rewards.append(float(reward))
        for name, value in (item.get("reward_components") or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                components.setdefault(name, []).append(float(value))
        task = item.get("_ng_task_index")
        if task is not None:
            by_task.setdefault(json.dumps(task), []).append(float(reward))
    agent = {"mean/reward": _mean(rewards), "count": float(len(rewards))}
    agent.update({f"mean/{name}": _mean(values) for name, values in components.items()})
    groups = [
        {
            "_ng_task_index": json.loads(task),
            "mean/reward": _mean(values),
            "max/reward": max(values),
            "count": float(len(values)),
        }
        for task, values in by_task.items()
    ]
    return {
        "group_level_metrics": groups,
        "agent_metrics": agent,
        "key_metrics": {"mean/reward": agent["mean/reward"]},
    }


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def routes(service: RewardService, endpoint: Endpoint) -> list[Route]:
    """The four NeMo Gym routes, each wrapped by the app's ``endpoint`` (errors and failure metrics)."""
    metrics = service.metrics
    data = service.config.rl.data
    reference_column = data.reference_column or "reference"

    @endpoint("/verify")
    async def verify(request: Request) -> Response:
        arrived = time.monotonic()
        body = await service.body(request)
        row = parse_row(body)
        scope = service.request_scope(request, None, arrived)
        service.check_size(1)
        rollout = rollout_of(row, reference_column)
        # The single-response worker: no group size to check, no advantages (as /get_reward).
        worker = service.resolve(Selection(), openrlhf=True)
        await service.open_run(request)
        groups = [("verify", [rollout])]
        batch, _, _ = await service.scored(worker, groups, 1, None, scope, request)
        metrics.rollouts.labels("/verify").inc(1)
        monitored = await service.monitored(request, groups, batch)
        ((_, candidate),) = batch.candidates()
        if candidate.final is None:
            raise Reply(
                422,
                "no_reward",
                "the reward is null (a component errored under onError: none); NeMo Gym needs a "
                "number for every trajectory, so use onError: zero or raise",
                cause="composition",
            )
        added = {
            "reward": candidate.final,
            "reward_components": reward_components(
                candidate.breakdown, candidate.final, adjusts(worker.spec)
            ),
            "rewardkit": {
                "gated": candidate.gated,
                "breakdown": candidate.breakdown,
                "diagnostics": candidate.diagnostics,
                "providers": [record.to_json() for record in batch.providers],
                **({} if monitored is None else {"monitor": monitored}),
            },
        }
        return Response(echoed(body, row, added), media_type="application/json")

    @endpoint("/seed_session")
    async def seed_session(request: Request) -> Response:
        parse_row(await service.body(request))  # stateless: the row is read for validity only
        return _json({})

    @endpoint("/aggregate_metrics")
    async def aggregate_metrics(request: Request) -> Response:
        body = parse_row(await service.body(request))
        responses = body.get("verify_responses")
        if not isinstance(responses, list):
            raise _invalid("verify_responses", "must be the list of /verify answers")
        return _json(aggregate(responses))

    @endpoint("/reverify_mode")
    async def reverify_mode(request: Request) -> Response:
        # A verdict depends only on the row and the response: a stored trajectory may be verified again.
        return _json("stateless")

    return [
        Route("/verify", verify, methods=["POST"]),
        Route("/seed_session", seed_session, methods=["POST"]),
        Route("/aggregate_metrics", aggregate_metrics, methods=["POST"]),
        Route("/reverify_mode", reverify_mode, methods=["GET"]),
    ]
