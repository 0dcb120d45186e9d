"""The configured reward as an Open Reward Standard (ORS) environment, under ``/ors``.

One environment, ``rewardkit``, with one split, ``train``: its tasks are the rows of the configured
prompts file (``rl.data.path``), or the groups of the rollouts file (``rl.data.rollouts_path``), in
order. A task the client sees is ``{"index", "prompt"}``: the reference stays on the server, so
neither the trainer nor anything it forwards to the policy can read the gold answer. Each task has
one tool, ``submit``, whose input is ``{"answer": str}``: the answer is scored as the task's one
candidate by the configured reward, and the tool's output carries ``reward`` (the final reward;
null when a component errored under ``onError: none``) with ``finished: true``; a session takes one
submission.

Sessions live in this process (``X-Session-ID``), belong to the client token that made them, end
on ``/delete`` or after ``SESSION_IDLE_S`` unused; at most ``MAX_SESSIONS`` at once (429 past it).
Scoring goes through the service's own steps (limits, capacity, request timeout, metrics); auth is
the service's bearer token, also read from ``X-API-Key``, the header the ORS SDK's client sends.

The ORS SDK's client (``ors-sdk`` 0.1.0 on aiohttp >= 3.10) resolves its paths, which start with a
slash, against the host root and drops a base path, so the same routes also answer at the root;
point that client at ``http://host:port/``.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, JsonValue
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

from rewardkit.plugin import RewardkitError, canonical_json, load_prompt_rows, read_rollouts
from rewardkit_service.app import Reply, RewardService, _json
from rewardkit_service.models import Selection
from rewardkit_service.ors_paths import BASE_PATH, ENVIRONMENT, authorization_of

SPLIT = "train"
SUBMIT = "submit"
SESSION_IDLE_S = 900.0  # the ORS SDK server's reaping age
MAX_SESSIONS = 10_000
SSE_CHUNK_CHARS = 4096  # the SDK splits longer results into ``chunk`` events; so do we
SESSION_HEADER = "x-session-id"
SUBMIT_SCHEMA = {
    "properties": {"answer": {"title": "Answer", "type": "string"}},
    "required": ["answer"],
    "title": "SubmitInput",
    "type": "object",
}
SUBMIT_TOOL = {
    "name": SUBMIT,
    "description": "Submit the final answer to the task; ends the episode.",
    "input_schema": SUBMIT_SCHEMA,
}

Handler = Callable[[Request], Awaitable[Response]]
Endpoint = Callable[[str], Callable[[Handler], Any]]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class SplitRequest(_Body):
    split: str


class TaskRequest(_Body):
    split: str
    index: int


class RangeRequest(_Body):
    split: str
    start: int | None = None
    stop: int | None = None


class CreateRequest(_Body):
    """``CreateSession``: exactly one of ``task_spec`` or ``split`` and ``index``."""

    env_name: str | None = None
    task_spec: dict[str, JsonValue] | None = None
    split: str | None = None
    index: int | None = None
    secrets: dict[str, str] | None = None


class ToolCall(_Body):
    name: str
    input: dict[str, JsonValue] = Field(default_factory=dict)
    task_id: str | None = None


@dataclass(frozen=True)
class Task:
    """One task: what the client sees (``public``) and what scoring reads."""

    public: dict[str, Any]
    prompt: Any
    reference: Any


@dataclass
class Session:
    owner: str | None
    last_used: float
    task: Task | None = None
    finished: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


def prompt_blocks(prompt: Any) -> list[dict[str, Any]]:
    """The prompt as ORS text blocks: a string as one block, a chat as one block per message."""
    if isinstance(prompt, str):
        return [{"type": "text", "text": prompt, "detail": None}]
    if isinstance(prompt, list) and all(
        isinstance(m, dict) and isinstance(m.get("content"), str) for m in prompt
    ):
        return [{"type": "text", "text": message["content"], "detail": None} for message in prompt]
    return [{"type": "text", "text": orjson.dumps(prompt).decode(), "detail": None}]


def _sse(events: list[tuple[str, str]]) -> Response:
    text = "".join(f"event: {name}\ndata: {data}\n\n" for name, data in events)
    return Response(text, media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


def _result_events(result: dict[str, Any]) -> list[tuple[str, str]]:
    payload = orjson.dumps(result).decode()  # one line: no newline inside orjson's output
    pieces = [payload[i : i + SSE_CHUNK_CHARS] for i in range(0, len(payload), SSE_CHUNK_CHARS)] or [""]
    return [("task_id", uuid.uuid4().hex), *(("chunk", piece) for piece in pieces[:-1]), ("end", pieces[-1])]


class OrsEnvironment:
    """The tasks and the sessions of the ``rewardkit`` environment."""

    def __init__(self, service: RewardService) -> None:
        self.service = service
        self._tasks: list[Task] | None = None
        self._tasks_lock = threading.Lock()
        self._sessions: dict[str, Session] = {}
        self._sessions_lock = threading.Lock()

    # -- tasks -------------------------------------------------------------------------------------

    def tasks(self) -> list[Task]:
        """The ``train`` split, read once from the configured data (in a worker thread)."""
        with self._tasks_lock:
            if self._tasks is None:
                self._tasks = self._read_tasks()
            return self._tasks

    def _read_tasks(self) -> list[Task]:
        data = self.service.config.rl.data
        worker = self.service.resolve(Selection(), openrlhf=True)
        # The prompt always (it is the task); the reference where the reward reads it.
        needs = ["prompt", *(["reference"] if "reference" in worker.needs else [])]
        try:
            if data.path is not None:
                rows = load_prompt_rows(data, needs)
                found = [(row.prompt, row.reference) for row in rows]
            elif data.rollouts_path is not None:
                groups = read_rollouts(
                    data.rollouts_path,
                    prompt_column=data.prompt_column,
                    response_column=data.reference_column,
                    needs=needs,
                )
                found = [
                    (group.rollouts[0].get("prompt"), group.rollouts[0].get("reference")) for group in groups
                ]
            else:
                raise Reply(
                    404,
                    "no_tasks",
                    "this service has no tasks: set rl.data.path (prompts) or "
                    "rl.data.rollouts_path in its configuration",
                    cause="validation",
                )
        except RewardkitError as error:
            raise Reply(
                422, "invalid_data", f"the configured tasks cannot be read: {error}", cause="validation"
            ) from None
        return [
            Task({"index": index, "prompt": prompt}, prompt, reference)
            for index, (prompt, reference) in enumerate(found)
        ]

    async def split_tasks(self, split: str) -> list[Task]:
        if split != SPLIT:
            raise Reply(400, "invalid_split", f"split {split!r}: this environment has one split, {SPLIT!r}")
        return await run_in_threadpool(self.tasks)

    async def task_at(self, split: str, index: int) -> Task:
        tasks = await self.split_tasks(split)
        if not 0 <= index < len(tasks):
            raise Reply(400, "invalid_index", f"index {index}: split {split!r} has {len(tasks)} tasks")
        return tasks[index]

    # -- sessions ----------------------------------------------------------------------------------

    def open_session(self, owner: str | None) -> str:
        now = time.monotonic()
        with self._sessions_lock:
            idle = [
                sid for sid, session in self._sessions.items() if now - session.last_used > SESSION_IDLE_S
            ]
            for sid in idle:
                del self._sessions[sid]
            if len(self._sessions) >= MAX_SESSIONS:
                raise Reply(
                    429,
                    "too_many_sessions",
                    f"{MAX_SESSIONS} sessions are open; delete finished ones",
                    limit=MAX_SESSIONS,
                    cause="too_many_runs",
                )
            sid = uuid.uuid4().hex  # unguessable: a session is reached by its id alone
            self._sessions[sid] = Session(owner, now)
        return sid

    def session(self, request: Request, owner: str | None, *, needs_task: bool = True) -> tuple[str, Session]:
        sid = request.headers.get(SESSION_HEADER)
        if not sid:
            raise Reply(400, "missing_session", "the X-Session-ID header is required", cause="validation")
        with self._sessions_lock:
            session = self._sessions.get(sid)
        # Another client's session is as unknown as one that never existed.
        if session is None or session.owner != owner or time.monotonic() - session.last_used > SESSION_IDLE_S:
            raise Reply(404, "unknown_session", f"no session {sid!r}", cause="validation")
        session.last_used = time.monotonic()
        if needs_task and session.task is None:
            raise Reply(400, "no_task", "the session has no task yet: POST /create first", cause="validation")
        return sid, session

    def close_session(self, sid: str, owner: str | None) -> None:
        """End session ``sid`` if ``owner`` owns it (another client's is left alone)."""
        with self._sessions_lock:
            session = self._sessions.get(sid)
            if session is not None and session.owner == owner:
                del self._sessions[sid]


def routes(service: RewardService, endpoint: Endpoint) -> list[Route | Mount]:
    """The ORS routes, under ``/ors`` and at the root (see the module docstring)."""
    environment = OrsEnvironment(service)
    metrics = service.metrics

    def owner_of(request: Request) -> str | None:
        raw = authorization_of(request.url.path, _header(request, "authorization"), request.headers.raw)
        return service.checker.client_of(raw) if service.checker.enabled else None

    def checked_env(request: Request) -> None:
        name = request.path_params["env"]
        if name != ENVIRONMENT:
            raise Reply(
                404, "unknown_environment", f"no environment {name!r}; this server has {ENVIRONMENT!r}"
            )

    async def health(request: Request) -> Response:
        return _json({"status": "ok"})

    @endpoint("/ors/list_environments")
    async def list_environments(request: Request) -> Response:
        return _json([ENVIRONMENT])

    @endpoint("/ors/tools")
    async def tools(request: Request) -> Response:
        checked_env(request)
        return _json({"tools": [SUBMIT_TOOL]})

    @endpoint("/ors/splits")
    async def splits(request: Request) -> Response:
        checked_env(request)
        return _json([{"name": SPLIT, "type": "train"}])

    @endpoint("/ors/tasks")
    async def tasks(request: Request) -> Response:
        checked_env(request)
        parsed: SplitRequest = service.parse(SplitRequest, await service.body(request))
        found = await environment.split_tasks(parsed.split)
        return _json({"tasks": [task.public for task in found], "env_name": ENVIRONMENT})

    @endpoint("/ors/num_tasks")
    async def num_tasks(request: Request) -> Response:
        checked_env(request)
        parsed: SplitRequest = service.parse(SplitRequest, await service.body(request))
        return _json({"num_tasks": len(await environment.split_tasks(parsed.split))})

    @endpoint("/ors/task")
    async def task(request: Request) -> Response:
        checked_env(request)
        parsed: TaskRequest = service.parse(TaskRequest, await service.body(request))
        return _json({"task": (await environment.task_at(parsed.split, parsed.index)).public})

    @endpoint("/ors/task_range")
    async def task_range(request: Request) -> Response:
        checked_env(request)
        parsed: RangeRequest = service.parse(RangeRequest, await service.body(request))
        found = await environment.split_tasks(parsed.split)
        return _json({"tasks": [item.public for item in found[parsed.start : parsed.stop]]})

    @endpoint("/ors/create_session")
    async def create_session(request: Request) -> Response:
        sid = environment.open_session(owner_of(request))
        return _sse([("task_id", sid), ("end", orjson.dumps({"sid": sid}).decode())])

    @endpoint("/ors/create")
    async def create(request: Request) -> Response:
        sid, session = environment.session(request, owner_of(request), needs_task=False)
        parsed: CreateRequest = service.parse(CreateRequest, await service.body(request))
        if parsed.env_name not in (None, ENVIRONMENT):
            raise Reply(404, "unknown_environment", f"no environment {parsed.env_name!r}")
        by_index = parsed.split is not None and parsed.index is not None
        if (parsed.task_spec is not None) == by_index or (parsed.split is None) != (parsed.index is None):
            raise Reply(
                400, "invalid_request", "give either task_spec or split and index", cause="validation"
            )
        if parsed.task_spec is not None:
            index = parsed.task_spec.get("index")
            listed = await environment.task_at(SPLIT, index) if isinstance(index, int) else None
            # Only a listed task: a client-made task_spec could carry any prompt (and no reference).
            if listed is None or canonical_json(listed.public) != canonical_json(parsed.task_spec):
                raise Reply(
                    400,
                    "unknown_task",
                    "task_spec is not a task of this environment's train split "
                    "(send one from /tasks unchanged, or split and index)",
                    cause="validation",
                )
            chosen = listed
        else:
            assert parsed.split is not None and parsed.index is not None
            chosen = await environment.task_at(parsed.split, parsed.index)
        with session.lock:
            if session.task is not None:
                raise Reply(400, "session_exists", "Session already exists", cause="validation")
            session.task = chosen
        return _json({"sid": sid})

    @endpoint("/ors/prompt")
    async def prompt(request: Request) -> Response:
        checked_env(request)
        _, session = environment.session(request, owner_of(request))
        assert session.task is not None
        return _json(prompt_blocks(session.task.prompt))

    @endpoint("/ors/task_tools")
    async def task_tools(request: Request) -> Response:
        checked_env(request)
        environment.session(request, owner_of(request))
        return _json({"tools": [SUBMIT_TOOL]})

    @endpoint("/ors/call")
    async def call(request: Request) -> Response:
        arrived = time.monotonic()
        checked_env(request)
        _, session = environment.session(request, owner_of(request))
        parsed: ToolCall = service.parse(ToolCall, await service.body(request))
        refused = _refusal(parsed)
        if refused is not None:
            return _sse(_result_events({"ok": False, "error": refused}))
        scope = service.request_scope(request, None, arrived)
        worker = service.resolve(Selection(), openrlhf=True)
        with session.lock:
            if session.finished:
                return _sse(
                    _result_events(
                        {"ok": False, "error": "the episode is finished: one submission per session"}
                    )
                )
            session.finished = True  # before scoring: two concurrent submits cannot both be scored
        assert session.task is not None
        answer = parsed.input["answer"]
        assert isinstance(answer, str)
        rollout: dict[str, Any] = {
            "trajectory_id": SUBMIT,
            "completion": answer,
            "prompt": session.task.prompt,
        }
        if session.task.reference is not None:
            rollout["reference"] = session.task.reference
        try:
            batch, _, _ = await service.scored(worker, [("submit", [rollout])], 1, None, scope, request)
        except BaseException:
            session.finished = False  # not scored (capacity, timeout): the client may submit again
            raise
        metrics.rollouts.labels("/ors/call").inc(1)
        ((_, candidate),) = batch.candidates()
        components = {name: entry["contribution"] for name, entry in candidate.breakdown.items()}
        shown = (
            "no reward (a component errored)" if candidate.final is None else f"reward {candidate.final:g}"
        )
        output = {
            "blocks": [{"type": "text", "text": f"submitted; {shown}", "detail": None}],
            # The components' contributions only: reasons may quote the reference.
            "metadata": {"components": components, "gated": candidate.gated},
            "reward": candidate.final,
            "finished": True,
        }
        return _sse(_result_events({"ok": True, "output": output}))

    @endpoint("/ors/ping")
    async def ping(request: Request) -> Response:
        environment.session(request, owner_of(request), needs_task=False)
        return _json({"status": "ok"})

    @endpoint("/ors/delete")
    async def delete(request: Request) -> Response:
        owner = owner_of(request)
        sid, _ = environment.session(request, owner, needs_task=False)
        environment.close_session(sid, owner)
        return _json({"sid": sid})

    @endpoint("/ors/delete_session")
    async def delete_session(request: Request) -> Response:
        # A no-op in the ORS SDK's server; here it ends the caller's own session, if there is one.
        sid = request.headers.get(SESSION_HEADER) or ""
        environment.close_session(sid, owner_of(request))
        return _json({"sid": sid})

    table: list[tuple[str, Handler, str]] = [
        ("/health", health, "GET"),
        ("/list_environments", list_environments, "GET"),
        ("/create_session", create_session, "POST"),
        ("/create", create, "POST"),
        ("/ping", ping, "POST"),
        ("/delete", delete, "POST"),
        ("/delete_session", delete_session, "POST"),
        ("/{env}/tools", tools, "GET"),
        ("/{env}/splits", splits, "GET"),
        ("/{env}/tasks", tasks, "POST"),
        ("/{env}/num_tasks", num_tasks, "POST"),
        ("/{env}/task", task, "POST"),
        ("/{env}/task_range", task_range, "POST"),
        ("/{env}/prompt", prompt, "GET"),
        ("/{env}/task_tools", task_tools, "GET"),
        ("/{env}/call", call, "POST"),
    ]
    own = [Route(path, handler, methods=[method]) for path, handler, method in table]
    return [Mount(BASE_PATH, routes=own), *own]


def _header(request: Request, name: str) -> bytes | None:
    value = request.headers.get(name)
    return None if value is None else value.encode("latin-1")


def _refusal(call: ToolCall) -> str | None:
    """Why a tool call is refused (a tool-level failure, not an HTTP error), or None."""
    if call.name != SUBMIT:
        return f"unknown tool {call.name!r}; this environment has one tool, {SUBMIT!r}"
    if set(call.input) != {"answer"} or not isinstance(call.input["answer"], str):
        return "submit takes one field, 'answer', a string"
    return None
