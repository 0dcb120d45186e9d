"""The Reward Service ASGI application: ``create_app(config) -> Starlette``.

Every scoring endpoint follows one path: authenticate (the guard around the app), read the body
under the size limit, validate it with the wire models (a 400 names the field path), refuse a
request over the rollouts limit at once (413, with the limit), resolve the reward (cached per
spec; a 422 says why it cannot be built), wait for in-flight capacity in arrival order until the
deadline (503 with ``Retry-After``), then score in a worker thread so the event loop keeps
accepting and answering health checks.

A scoring request runs in a ``CancelScope``. Its timeout is the smallest of
``rewards.request_timeout_s``, the ``Rewardkit-Timeout-Ms`` header (the client's remaining time)
and the body's ``request_timeout_s``; it bounds waiting, scoring and answering. When it passes, or
the client disconnects, the scope is cancelled: queued groups are dropped, the providers' callbacks
kill running sandboxes and cancel judge calls, and the answer is 504 ``timeout`` at once. The
request's in-flight capacity is given back when its scoring thread has really stopped.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rewardkit.plugin import (
    CANDIDATE_NEEDS,
    KNOWN_NEEDS,
    MAX_DEADLINE_S,
    BindingError,
    CancelScope,
    Catalog,
    CompositionError,
    ObservedBatch,
    PreflightError,
    ProviderError,
    RequestCancelled,
    RequestTimeout,
    RewardContractError,
    RewardkitConfig,
    RewardkitError,
    RewardSelection,
    RewardSpec,
    RewardSpecError,
    RewardWorker,
    Scaling,
    ScoredBatch,
    SelectionRefused,
    canonical_json,
    compose,
    entered,
    import_optional,
    resolve_catalog,
    response_of,
    timeout_of,
    usable_cpus,
)
from rewardkit_service import ors_paths
from rewardkit_service.auth import TokenChecker
from rewardkit_service.limiter import AsyncInflightLimiter, BackpressureTimeout, RequestTooLarge
from rewardkit_service.metrics import ServiceMetrics
from rewardkit_service.models import (
    COLUMNS,
    ComposeRequest,
    GetRewardRequest,
    MappedScoreRequest,
    ResolveRequest,
    ScoreRequest,
    Selection,
    column_aliases,
    openapi_document,
)
from rewardkit_service.policy import SelectionPolicy
from rewardkit_service.section import ServiceConfig

log = logging.getLogger("rewardkit_service")
T = TypeVar("T")

OPEN_PATHS = frozenset(("/healthz", "/readyz"))
# The client's remaining time in milliseconds (as Connect's Connect-Timeout-Ms): up to 10 digits.
TIMEOUT_HEADER = "rewardkit-timeout-ms"
# With rl.monitor configured, a request naming its training run feeds that run's reward monitor
# (docs/monitor.md); the step header groups a training step's requests.
RUN_HEADER = "x-rewardkit-run"
STEP_HEADER = "x-rewardkit-step"
DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024
_KNOWN_ENDPOINTS = (
    frozenset(
        (
            "/v1/score",
            "/v1/resolve",
            "/v1/compose",
            "/get_reward",
            "/v1/providers",
            "/metrics",
            "/openapi.json",
            # NeMo Gym's resources-server paths (rewardkit_service.nemo_gym)
            "/seed_session",
            "/verify",
            "/aggregate_metrics",
            "/reverify_mode",
        )
    )
    | OPEN_PATHS
)


@dataclass(frozen=True)
class ServiceSettings:
    """Limits and access of one service; ``max_rollouts_per_call`` defaults to ``rewards.max_inflight``."""

    tokens: tuple[str, ...] = ()
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_rollouts_per_call: int | None = None
    worker_cache_size: int = 32

    def __repr__(self) -> str:  # tokens never appear in a log line or a traceback
        return (
            f"ServiceSettings(tokens=<{len(self.tokens)}>, max_body_bytes={self.max_body_bytes}, "
            f"max_rollouts_per_call={self.max_rollouts_per_call})"
        )


class Reply(Exception):
    """An error answer: status, a machine-readable code, a message and optional details/headers."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        cause: str | None = None,
        details: Sequence[dict[str, str]] = (),
        limit: int | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.cause = cause or code
        self.details = list(details)
        self.limit = limit
        self.retry_after_s = retry_after_s

    def response(self) -> Response:
        error: dict[str, Any] = {"code": self.code, "message": self.message, "details": self.details}
        headers = {}
        if self.limit is not None:
            error["limit"] = self.limit
        if self.retry_after_s is not None:
            error["retry_after_s"] = self.retry_after_s
            headers["Retry-After"] = str(max(1, math.ceil(self.retry_after_s)))
        if self.status == 401:
            headers["WWW-Authenticate"] = "Bearer"
        return _json({"error": error}, self.status, headers)


def _json(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    # orjson: a 1024-rollout answer encodes in ~2 ms instead of ~15 ms (benchmarks/service.py).
    # Every number here is finite by contract (the worker checks terms; composition checks totals).
    return Response(orjson.dumps(payload), status, headers, media_type="application/json")


def _field_path(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(body)"


def _invalid(error: ValidationError) -> Reply:
    details = []
    for item in error.errors(include_url=False):
        loc = item["loc"]
        if item["type"] == "json_invalid":
            message = f"not valid JSON: {item['msg']}"
            details.append({"path": "(body)", "message": message})
            continue
        # Union member tags ('str', 'list[...]') are pydantic's, not the user's field names.
        path = _field_path([part for part in loc if isinstance(part, int) or "[" not in part])
        details.append({"path": path, "message": item["msg"].removeprefix("Value error, ")})
    shown = "; ".join(f"{detail['path']}: {detail['message']}" for detail in details[:5])
    more = f" (and {len(details) - 5} more)" if len(details) > 5 else ""
    return Reply(400, "invalid_request", f"{shown}{more}", details=details)


class RewardService:
    """The state behind the app: configuration, catalog, limiter, metrics and the worker cache."""

    def __init__(self, config: RewardkitConfig, settings: ServiceSettings) -> None:
        self.config = config
        self.settings = settings
        self.limiter = AsyncInflightLimiter(config.rewards.max_inflight)
        self.max_rollouts_per_call = min(
            settings.max_rollouts_per_call or config.rewards.max_inflight, config.rewards.max_inflight
        )
        self.metrics = ServiceMetrics()
        self.metrics.capacity.set(config.rewards.max_inflight)
        # A client may name the prompt and the reference as the configuration's data does
        # (``reference_column: answer`` and a rollout with ``answer``), as well as canonically.
        data = config.rl.data
        aliases = column_aliases(data.prompt_column, data.reference_column)
        self.score_request: type[ScoreRequest] = MappedScoreRequest if aliases else ScoreRequest
        self.columns: dict[str, Any] | None = {COLUMNS: aliases} if aliases else None
        self.checker = TokenChecker(settings.tokens)
        self.catalog: Catalog | None = None
        self.policy: SelectionPolicy | None = None
        self.ready = False
        self.draining = False
        self._workers: OrderedDict[str, RewardWorker] = OrderedDict()
        self._workers_lock = threading.Lock()
        self._recent_score_s = 1.0
        # Groups of one request are scored concurrently, as Reward.score does in process.
        threads = config.rewards.concurrency or min(8, usable_cpus() * 4)
        self.executor = ThreadPoolExecutor(threads, thread_name_prefix="rewardkit-service")
        self.monitors: Any = None
        # The run monitors' refusals, answered 403 and 429 (the distribution is imported lazily).
        self.run_refusals: tuple[type[Exception], type[Exception]] | None = None
        # ``rl.monitor``: the monitor distribution's section, a field only where it is installed or known.
        if getattr(config.rl, "monitor", None) is not None:
            needed_for = "`rl.monitor` in the service"
            self.monitors = import_optional("rewardkit_monitor", "RunMonitors", needed_for)(config)
            self.run_refusals = (
                import_optional("rewardkit_monitor", "RunOwnedElsewhere", needed_for),
                import_optional("rewardkit_monitor", "TooManyRuns", needed_for),
            )

    # -- preflight and the worker cache ----------------------------------------------------------

    def preflight(self) -> None:
        """Resolve the catalog, build every configured reward and the selection policy; ready after."""
        self.catalog = resolve_catalog(self.config.rl.reward.catalog)
        configured = [self._configured_spec(self.config.rl.reward)]
        validation = self.config.rl.validation
        if validation is not None and validation.reward is not None:
            chosen = validation.reward
            if isinstance(chosen, str):
                chosen = RewardSelection(provider=chosen)
            elif chosen.catalog is not None and chosen.catalog != self.config.rl.reward.catalog:
                # Validation selects from the training catalog; a second one would be ignored here.
                raise PreflightError(
                    f"rl.validation.reward.catalog {chosen.catalog!r}: validation selects from the "
                    f"training catalog ({self.config.rl.reward.catalog!r}); leave the key out"
                )
            configured.append(self._configured_spec(chosen))
        self.worker_for(configured[0])
        self.worker_for(configured[0], openrlhf=True)
        for spec in configured[1:]:
            self.worker_for(spec)
        self.policy = SelectionPolicy(
            self.catalog,
            configured,
            (self.config.section("rewards.service", ServiceConfig) or ServiceConfig()).allow,
        )
        self.ready = True

    @staticmethod
    def _configured_spec(selection: RewardSelection) -> RewardSpec:
        if selection.spec is not None:
            return RewardSpec.parse(selection.spec)
        assert selection.provider is not None
        return RewardSpec.single(selection.provider, selection.params, selection.term)

    def admit(self, selection: Selection) -> RewardSpec:
        """The spec a request selects: the configured reward, or what the policy admits (or 403)."""
        if selection.provider is None and selection.spec is None:
            return self._configured_spec(self.config.rl.reward)
        assert self.policy is not None, "preflight() first"
        return self.policy.admit(selection.provider, selection.params, selection.spec)

    def worker_for(
        self,
        spec: RewardSpec,
        group_size: int | None = None,
        scaling: Scaling | None = None,
        *,
        openrlhf: bool = False,
        namespace: str = "train",
    ) -> RewardWorker:
        """The worker scoring ``spec``; built (preflight) once per distinct spec and kept."""
        assert self.catalog is not None, "preflight() first"
        # OpenRLHF sends single responses without groups: no group size, no advantages.
        size = None if openrlhf else group_size if group_size is not None else self.config.rl.group_size
        chosen_scaling: Scaling = "none" if openrlhf else scaling or self.config.rl.advantage_scaling
        key = canonical_json(
            {"spec": spec.to_json(), "size": size, "scaling": chosen_scaling, "namespace": namespace}
        )
        with self._workers_lock:
            worker = self._workers.get(key)
            if worker is not None:
                self._workers.move_to_end(key)
                return worker
        worker = RewardWorker(
            spec,
            self.catalog,
            group_size=size,
            scaling=chosen_scaling,
            namespace=namespace,
            available_inputs=KNOWN_NEEDS,
        )
        with self._workers_lock:
            self._workers[key] = worker
            while len(self._workers) > self.settings.worker_cache_size:
                self._workers.popitem(last=False)
        return worker

    def resolve(self, selection: Selection, group_size: int | None = None, scaling: Scaling | None = None,
                *, openrlhf: bool = False, namespace: str = "train") -> RewardWorker:  # fmt: skip
        """Admit the selection (403 when refused: nothing is built), then its worker (422 if it fails)."""
        try:
            spec = self.admit(selection)
            return self.worker_for(spec, group_size, scaling, openrlhf=openrlhf, namespace=namespace)
        except SelectionRefused as refused:
            raise Reply(403, "selection_refused", str(refused), cause="forbidden",
                        details=[{"path": refused.field, "message": refused.reason}]) from None  # fmt: skip
        except (PreflightError, RewardSpecError, RewardkitError) as error:
            raise Reply(422, "reward_unavailable", str(error), cause="preflight") from None

    # -- shared request steps ------------------------------------------------------------------

    async def body(self, request: Request) -> bytes:
        limit = self.settings.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise Reply(413, "body_too_large", f"the body is {declared} bytes; the limit is {limit}",
                        limit=limit, cause="too_large")  # fmt: skip
        size = 0
        chunks = []
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise Reply(413, "body_too_large", f"the body is over the limit of {limit} bytes",
                            limit=limit, cause="too_large")  # fmt: skip
            chunks.append(chunk)
        return b"".join(chunks)

    def parse(self, model: type[BaseModel], body: bytes, context: dict[str, Any] | None = None) -> Any:
        if not body.strip():
            raise Reply(400, "invalid_request", "(body): the request needs a JSON object body",
                        details=[{"path": "(body)", "message": "empty body"}])  # fmt: skip
        try:
            return model.model_validate_json(body, context=context)
        except ValidationError as error:
            raise _invalid(error) from None

    def check_size(self, rollouts: int) -> None:
        limit = self.max_rollouts_per_call
        if rollouts > limit:
            raise Reply(413, "too_many_rollouts",
                        f"the request has {rollouts} rollouts; the limit per call is {limit} "
                        "(rewards.max_inflight); split it into smaller calls", limit=limit,
                        cause="too_large")  # fmt: skip

    def request_scope(self, request: Request, body_timeout_s: float | None, arrived: float) -> CancelScope:
        """The request's scope: its timeout counted from ``arrived`` (``time.monotonic()``)."""
        header = request.headers.get(TIMEOUT_HEADER)
        header_s = None
        if header is not None:
            if not (header.isascii() and header.isdigit() and 0 < len(header) <= 10 and int(header) > 0):
                message = f"{header!r} is not a positive whole number of milliseconds (at most 10 digits)"
                raise Reply(400, "invalid_request", f"header Rewardkit-Timeout-Ms: {message}",
                            details=[{"path": "Rewardkit-Timeout-Ms", "message": message}])  # fmt: skip
            header_s = min(int(header) / 1000, MAX_DEADLINE_S)
        timeout = timeout_of(self.config.rewards.request_timeout_s, header_s, body_timeout_s)
        if timeout is None:
            return CancelScope()
        return CancelScope(timeout_s=timeout, deadline=arrived + timeout)

    async def scored(
        self,
        worker: RewardWorker,
        groups: list[tuple[str, list[Any]]],
        weight: int,
        deadline_s: float | None,
        scope: CancelScope,
        request: Request,
    ) -> tuple[ScoredBatch, float, float]:
        """Wait for capacity, then score in a thread; returns the batch, seconds waited and scored.

        Both steps end early, with the scope cancelled, when the request times out (504) or its
        client disconnects.
        """
        loop = asyncio.get_running_loop()
        budget = deadline_s if deadline_s is not None else self.config.rewards.deadline_s
        capacity_deadline = loop.time() + budget  # the loop's clock is time.monotonic()
        wait_until = capacity_deadline if scope.deadline is None else min(capacity_deadline, scope.deadline)
        metrics = self.metrics
        metrics.waiting_requests.inc()
        try:
            waited = await _watched(self.limiter.acquire(weight, wait_until), scope, request)
        except BackpressureTimeout as error:
            metrics.wait_seconds.observe(error.waited_s)
            if wait_until < capacity_deadline:  # the request's own timeout came first
                scope.time_out()
                raise _cancelled_reply(scope) from None
            raise Reply(503, "deadline_exceeded", str(error), retry_after_s=self._retry_after(),
                        cause="deadline") from None  # fmt: skip
        except RequestTooLarge as error:
            raise Reply(413, "too_many_rollouts", str(error), limit=self.limiter.capacity,
                        cause="too_large") from None  # fmt: skip
        finally:
            metrics.waiting_requests.dec()
        metrics.wait_seconds.observe(waited)
        metrics.inflight_rollouts.inc(weight)
        started = time.perf_counter()
        executor = self.executor if len(groups) > 1 else None
        work = asyncio.ensure_future(run_in_threadpool(_in_scope, scope, worker.evaluate, groups, executor))

        def release(done: asyncio.Future[Any]) -> None:
            # Only when the thread has stopped: a cancelled request's sandboxes are dead by then,
            # so the next request gets their slots, not a wait behind a killed program.
            if not done.cancelled():
                done.exception()  # retrieved: an abandoned request's error is not logged as lost
            self.limiter.release(weight)
            metrics.inflight_rollouts.dec(weight)

        work.add_done_callback(release)
        try:
            batch = await _watched(asyncio.shield(work), scope, request)
        except RequestCancelled:
            raise _cancelled_reply(scope) from None
        except RewardContractError as error:
            raise Reply(422, "contract_violation", str(error), cause="contract") from None
        except CompositionError as error:
            raise Reply(422, "composition_failed", str(error), cause="composition") from None
        except ProviderError as error:
            raise Reply(422, "provider_failed", str(error), cause="provider") from None
        except RewardkitError as error:
            raise Reply(422, "invalid_groups", str(error), cause="contract") from None
        elapsed = time.perf_counter() - started
        metrics.score_seconds.observe(elapsed)
        self._recent_score_s = 0.8 * self._recent_score_s + 0.2 * elapsed
        return batch, waited, elapsed

    async def open_run(self, request: Request) -> None:
        """Before any scoring, open the run the request names, or refuse it: 400 for a run or step
        header that cannot be read, 403 for a run that another client token opened, 429 for a new
        run past the token's cap of active runs."""
        run = request.headers.get(RUN_HEADER)
        if self.monitors is None or run is None:
            return
        self._step_of(request)
        await self._with_run(self.monitors.monitor, run, self._client_of(request))

    async def monitored(
        self, request: Request, groups: list[tuple[str, list[Any]]], batch: ScoredBatch
    ) -> dict[str, float] | None:
        """What the run's monitor says of this batch, when the request names a run (else None)."""
        run = request.headers.get(RUN_HEADER)
        if self.monitors is None or run is None:
            return None
        inputs = [{"group_id": group_id, "rollouts": rollouts} for group_id, rollouts in groups]
        observed = ObservedBatch(inputs, batch, "service", step=self._step_of(request))
        result: dict[str, float] = await self._with_run(
            self.monitors.observe, run, observed, self._client_of(request)
        )
        return result

    def _step_of(self, request: Request) -> int | None:
        step_text = request.headers.get(STEP_HEADER)
        try:
            return None if step_text is None else int(step_text)
        except ValueError:
            raise Reply(400, "invalid_header", f"{STEP_HEADER} must be an integer step, got {step_text!r}",
                        cause="contract") from None  # fmt: skip

    def _client_of(self, request: Request) -> str | None:
        """Whose the request is: None for all on a service without tokens (one owner for all)."""
        authorization = request.headers.get("authorization")
        client = self.checker.client_of(None if authorization is None else authorization.encode("latin-1"))
        if client is None and self.checker.enabled:  # the guard let no such request through
            raise Reply(401, "unauthorized", "unauthorized")
        return client

    async def _with_run(self, call: Callable[..., T], *args: Any) -> T:
        """``call`` on the run monitors in a worker thread, their refusals as replies."""
        try:
            return await run_in_threadpool(call, *args)
        except RewardkitError as error:
            assert self.run_refusals is not None  # set with the monitors
            not_yours, too_many = self.run_refusals
            if isinstance(error, not_yours):
                raise Reply(403, "run_not_yours", f"{RUN_HEADER}: {error}", cause="forbidden") from None
            if isinstance(error, too_many):
                raise Reply(429, "too_many_runs", f"{RUN_HEADER}: {error}", cause="too_many_runs",
                            limit=getattr(error, "max_runs", None)) from None  # fmt: skip
            # A run id that cannot name the run's log folder.
            raise Reply(400, "invalid_header", f"{RUN_HEADER}: {error}", cause="contract") from None

    def _retry_after(self) -> float:
        # Roughly when the work ahead may have drained: one recent scoring time, at least a second.
        return max(1.0, round(self._recent_score_s, 1))


def _in_scope(scope: CancelScope, call: Callable[..., T], *args: Any) -> T:
    with entered(scope):  # the worker hands this context on to its executor threads
        return call(*args)


async def _disconnected(request: Request) -> None:
    """Return when the client has gone away (the body was read, so only a disconnect can come)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _watched(work: Awaitable[T], scope: CancelScope, request: Request) -> T:
    """``await work``, unless the scope's deadline passes or the client disconnects first: then
    cancel the scope (and ``work``) and raise the 504 (or 499) reply.

    ``work`` that ends with the scope already cancelled (a sandbox killed by the cancellation
    reports an error, not a score) gives the same reply: a cancelled request has no answer.
    """
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(_disconnected(request))
    try:
        done, _ = await asyncio.wait({task, watch}, timeout=scope.remaining(), return_when="FIRST_COMPLETED")
    except BaseException:
        task.cancel()
        raise
    finally:
        watch.cancel()
    if task in done and not scope.cancelled:
        return task.result()
    if watch in done:
        scope.cancel(RequestCancelled("the client disconnected before the answer; its work was cancelled"))
    else:
        scope.time_out()
    task.cancel()  # a capacity wait gives back its place; a shielded scoring thread runs down itself
    raise _cancelled_reply(scope)


def _cancelled_reply(scope: CancelScope) -> Reply:
    error = scope.error
    if isinstance(error, RequestTimeout) or error is None:
        return Reply(504, "timeout", str(error or "the request timed out"), cause="timeout")
    # Nobody reads it (the client left); 499 keeps these apart from timeouts in the metrics.
    return Reply(499, "cancelled", str(error), cause="disconnected")


def _records(batch_or_worker: Any) -> list[dict[str, Any]]:
    return [record.to_json() for record in batch_or_worker.records]


def create_app(config: RewardkitConfig, settings: ServiceSettings | None = None) -> ASGIApp:
    """The Reward Service as an ASGI app; providers are preflighted at startup (``/readyz`` waits)."""
    service = RewardService(config, settings or ServiceSettings())
    metrics = service.metrics

    def endpoint(name: str) -> Callable[[Callable[[Request], Awaitable[Response]]], Any]:
        def decorate(handler: Callable[[Request], Awaitable[Response]]) -> Any:
            async def wrapped(request: Request) -> Response:
                try:
                    return await handler(request)
                except Reply as reply:
                    metrics.failures.labels(reply.cause).inc()
                    return reply.response()
                except Exception:
                    log.exception("internal error on %s", name)
                    metrics.failures.labels("internal").inc()
                    return Reply(500, "internal", "internal error; see the service log").response()

            return wrapped

        return decorate

    @endpoint("/v1/score")
    async def score(request: Request) -> Response:
        arrived = time.monotonic()
        body = await service.body(request)
        parsed: ScoreRequest = service.parse(service.score_request, body, service.columns)
        scope = service.request_scope(request, parsed.request_timeout_s, arrived)
        weight = sum(len(group.rollouts) for group in parsed.groups)
        service.check_size(weight)
        worker = service.resolve(
            parsed, parsed.group_size, parsed.advantage_scaling, namespace=parsed.namespace
        )
        await service.open_run(request)
        groups = [(group.group_id, group.rollouts) for group in parsed.groups]
        batch, waited, elapsed = await service.scored(
            worker, groups, weight, parsed.deadline_s, scope, request
        )
        metrics.rollouts.labels("/v1/score").inc(weight)
        with_advantage = parsed.advantages
        monitored = await service.monitored(request, groups, batch)
        return _json({
            "groups": [
                {"group_id": group.group_id, "candidates": [
                    {"trajectory_id": c.trajectory_id, "final": c.final, "gated": c.gated,
                     "advantage": c.advantage if with_advantage else None, "breakdown": c.breakdown,
                     "diagnostics": c.diagnostics}
                    for c in group.candidates]}
                for group in batch.groups
            ],
            "metrics": batch.metrics,
            "metric_weights": batch.metric_weights,
            "providers": [record.to_json() for record in batch.providers],
            "waited_s": waited,
            "scored_s": elapsed,
            **({} if monitored is None else {"monitor": monitored}),
        })  # fmt: skip

    @endpoint("/v1/resolve")
    async def resolve(request: Request) -> Response:
        parsed: ResolveRequest = service.parse(ResolveRequest, await service.body(request))
        worker = await run_in_threadpool(service.resolve, parsed)
        return _json({
            "spec": worker.spec.to_json(),
            "providers": _records(worker),
            "needs": list(worker.needs),
            "max_rollouts_per_call": service.max_rollouts_per_call,
            "max_inflight": service.limiter.capacity,
        })  # fmt: skip

    @endpoint("/v1/compose")
    async def compose_outcomes(request: Request) -> Response:
        parsed: ComposeRequest = service.parse(ComposeRequest, await service.body(request))
        try:
            spec = RewardSpec.parse(parsed.spec)
        except RewardSpecError as error:
            raise Reply(422, "invalid_spec", str(error), cause="composition") from None
        results = []
        for index, outcomes in enumerate(parsed.candidates):
            try:
                results.append(compose(spec, outcomes).to_json())
            except CompositionError as error:
                raise Reply(422, "composition_failed", f"candidates[{index}]: {error}",
                            cause="composition") from None  # fmt: skip
            except (ArithmeticError, ValueError, TypeError) as error:
                # A number JSON can carry but a float cannot (10**400) is bad input, not a crash.
                raise Reply(422, "composition_failed", f"candidates[{index}]: {error}",
                            cause="composition") from None  # fmt: skip
        return _json({"results": results})

    @endpoint("/get_reward")
    async def get_reward(request: Request) -> Response:
        arrived = time.monotonic()
        parsed: GetRewardRequest = service.parse(GetRewardRequest, await service.body(request))
        scope = service.request_scope(request, parsed.request_timeout_s, arrived)
        count = len(parsed.query)
        service.check_size(count)
        worker = service.resolve(Selection(), openrlhf=True)
        needed = (need for bound in worker.providers.values() for need in bound.spec.needs)
        fields = sorted({need for need in needed if need in CANDIDATE_NEEDS})
        if fields:
            # Skipping them on every query would be a silent change of the reward.
            raise Reply(422, "needs_candidate_fields",
                        f"the configured reward needs {fields} on every candidate, which OpenRLHF's "
                        "/get_reward body cannot carry (query, prompts and labels only): score through "
                        "/v1/score, or configure a reward without them", cause="validation")  # fmt: skip
        groups = []
        for index, query in enumerate(parsed.query):
            # OpenRLHF's query is the prompt followed by the response: score only the response, cut
            # exactly as the in-process binding cuts it, so both paths give the same reward.
            prompt = parsed.prompts[index] if parsed.prompts is not None else ""
            try:
                completion = response_of(query, prompt, index)
            except BindingError as error:
                raise Reply(422, "invalid_query", str(error), cause="validation") from None
            rollout: dict[str, Any] = {"trajectory_id": f"q{index}", "completion": completion}
            if parsed.prompts is not None:
                rollout["prompt"] = prompt
            if parsed.labels is not None:
                rollout["reference"] = parsed.labels[index]
            groups.append((f"q{index}", [rollout]))
        batch, _, _ = await service.scored(worker, groups, count, None, scope, request)
        metrics.rollouts.labels("/get_reward").inc(count)
        rewards: list[float] = []
        extra: dict[str, list[float]] = {name: [] for name in worker.spec.names}
        extra["gated"] = []
        for index, (_, candidate) in enumerate(batch.candidates()):
            if candidate.final is None:
                raise Reply(422, "no_reward",
                            f"query[{index}]: the reward is null (a component errored under onError: none); "
                            "OpenRLHF needs a number for every query, so use onError: zero or raise",
                            cause="composition")  # fmt: skip
            rewards.append(candidate.final)
            extra["gated"].append(float(candidate.gated))
            for name, entry in candidate.breakdown.items():
                extra[name].append(float(entry["contribution"]))
        return _json({"rewards": rewards, "scores": list(rewards), "extra_logs": extra})

    @endpoint("/v1/providers")
    async def providers(request: Request) -> Response:
        assert service.catalog is not None
        return _json([entry.describe() for entry in service.catalog.entries()])

    @endpoint("/metrics")
    async def prometheus(request: Request) -> Response:
        metrics.waiting_requests.set(service.limiter.waiting)
        return Response(metrics.render(), media_type=metrics.content_type)

    document = openapi_document(_version())

    @endpoint("/openapi.json")
    async def openapi(request: Request) -> Response:
        return _json(document)

    async def healthz(request: Request) -> Response:
        return _json({"status": "ok"})

    async def readyz(request: Request) -> Response:
        if service.draining:
            return Reply(503, "draining", "the service is shutting down").response()
        if not service.ready:
            return Reply(503, "starting", "providers are still being preflighted").response()
        return _json({"status": "ready"})

    @asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        await run_in_threadpool(service.preflight)
        log.info("reward service ready: %d worker(s) preflighted", len(service._workers))
        try:
            yield
        finally:
            service.executor.shutdown(wait=True)
            if service.monitors is not None:
                service.monitors.close()
            with service._workers_lock:
                workers = list(service._workers.values())
            for worker in workers:  # provider processes and sandboxes end with the service
                try:
                    worker.close()
                except Exception as error:
                    log.warning("closing a reward worker failed: %s: %s", type(error).__name__, error)

    # The protocols other trainers speak, on the same service steps (docs/protocols.md); imported
    # here because they build on this module's Reply and RewardService.
    from rewardkit_service import nemo_gym, ors

    app = Starlette(
        routes=[
            *nemo_gym.routes(service, endpoint),
            Route("/v1/score", score, methods=["POST"]),
            Route("/v1/resolve", resolve, methods=["POST"]),
            Route("/v1/compose", compose_outcomes, methods=["POST"]),
            Route("/get_reward", get_reward, methods=["POST"]),
            Route("/v1/providers", providers, methods=["GET"]),
            Route("/metrics", prometheus, methods=["GET"]),
            Route("/openapi.json", openapi, methods=["GET"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
            *ors.routes(service, endpoint),
        ],
        lifespan=lifespan,
    )
    guarded = _Guard(app, service)
    guarded.service = service
    return guarded


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rewardkit-core")
    except PackageNotFoundError:
        return "0"


class _Guard:
    """Authenticates every path but the health checks, and counts answers by endpoint and code."""

    def __init__(self, app: ASGIApp, service: RewardService) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        label = path if path in _KNOWN_ENDPOINTS else ors_paths.metric_label(path) or "other"
        metrics = self.service.metrics
        if path not in OPEN_PATHS and self.service.checker.enabled:
            authorization = next((value for key, value in scope["headers"] if key == b"authorization"), None)
            # An ORS client sends the token as X-API-Key (rewardkit_service.ors).
            authorization = ors_paths.authorization_of(path, authorization, scope["headers"])
            if not self.service.checker.allows(authorization):
                metrics.failures.labels("unauthorized").inc()
                metrics.requests.labels(label, "401").inc()
                # No detail: whether the token was absent, malformed or wrong is not said.
                await Reply(401, "unauthorized", "unauthorized").response()(scope, receive, send)
                return

        async def counting_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                metrics.requests.labels(label, str(message["status"])).inc()
            await send(message)

        await self.app(scope, receive, counting_send)
