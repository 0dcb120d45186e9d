"""``RemoteReward``: a ``Reward`` scored by a Reward Service (``rl.reward.service: URL``).

It has the in-process ``Reward`` surface (``score``/``ascore``/``process``/``providers``/``spec``/
``needs``/``validation``/``close``) and returns the same ``ScoredBatch`` types with the same
values. The selection, group size and advantage scaling come from the client's own configuration
and travel with every request, so the server's configured reward is only its default.

Groups are packed many to a request, up to the server's per-call limit. A call that fits in one
request is scored exactly as in process. A larger call is split by whole groups and finished by
``rewardkit.scoring.split_batch``: advantages recomputed over the whole call (they depend only on the
totals), counts summed, each mean weighted by what it averaged in each request (the server's
``metric_weights``), so the metrics equal in-process ones with skips, errors and splits.

At ``load`` a service that cannot be reached fails at once, naming the URL: a host name that does
not resolve, a refused connection, or no connection within 10 s (a wrong URL must not look like a
slow service). A 503 (a service still starting, as when a trainer and its service start
together, or one with no capacity yet) is waited for, with a log line saying what for, until the
deadline. While scoring, retries until the call's deadline are limited to what cannot score
anything twice or lose anything: a refused connection (the request was never sent; the service
answered at load, so it is restarting), a 503 (the server refused before scoring), and a
connection closed before any response (scoring is a pure function of the request, so sending it
again is idempotent). Everything else is raised at once with the server's message.

A call's timeout (``timeout_s``, default ``rewards.request_timeout_s``) bounds the whole call,
retries included. Each request carries the time left in the ``Rewardkit-Timeout-Ms`` header, so
the service cancels the work when it passes and answers 504, which is raised as
``RequestTimeout`` and never retried (the work was cancelled; sending it again would only repeat
the cost). Should no answer come a second after that, the connection is closed, which the
service also takes as a cancellation.

The HTTP client is aiohttp: on loopback at concurrency 64 it served ~6x the requests/s of httpx's
async client (``benchmarks/http_clients.py``). It runs on a private event-loop thread, so ``score``
works from plain threads and ``ascore`` from any event loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from concurrent.futures import Future
from typing import Any

import orjson

from rewardkit.plugin import (
    REWARD_FIELDS,
    BackpressureTimeout,
    CompositionError,
    GroupLike,
    PreflightError,
    ProviderError,
    ProviderRecord,
    RequestTimeout,
    RequestTooLarge,
    RewardContractError,
    RewardkitConfig,
    RewardkitError,
    RewardLike,
    RewardSelection,
    RewardSpec,
    ScoredBatch,
    ScoredCandidate,
    ScoredGroup,
    SelectionRefused,
    as_batch,
    check_deadline,
    finish_split_batch,
    group_parts,
)

TOKEN_ENV = "REWARDKIT_TOKEN"
_WIRE_FIELDS = ("trajectory_id", "completion", "group_id", "prompt", "reference", "completion_token_count",
                "finish_reason")  # fmt: skip
_BACKOFF_START_S = 0.05
_BACKOFF_MAX_S = 1.0
_CONNECT_TIMEOUT_S = 10.0
_WAIT_LOG_EVERY_S = 30.0
TIMEOUT_HEADER = "Rewardkit-Timeout-Ms"
# How long after its timeout the client still waits for the service's 504 before hanging up.
_TIMEOUT_GRACE_S = 1.0
log = logging.getLogger("rewardkit_service.client")


class RemoteServiceError(RewardkitError):
    """The Reward Service answered with an error, or could not be reached before the deadline."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def _error_for(status: int, body: bytes, url: str) -> RewardkitError:
    try:
        error = json.loads(body)["error"]
        code, message = str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        code, message = "http_error", body[:500].decode("utf-8", "replace") or f"HTTP {status}"
    where = f"Reward Service {url} answered {status}"
    if status == 403 and code == "selection_refused":
        try:
            field = str(error["details"][0]["path"])
            reason = str(error["details"][0]["message"])
        except (LookupError, TypeError):
            field, reason = "(selection)", message
        return SelectionRefused(
            f"{reason} (the Reward Service at {url.rsplit('/v1/', 1)[0]} refused this selection; select its "
            "configured reward, or ask its operator to allow it in rewards.service.allow)",
            field=field,
        )
    if status == 504 and code == "timeout":
        return RequestTimeout(f"{where}: {message}")
    if status == 401:
        return RemoteServiceError(f"{where}: unauthorized; set {TOKEN_ENV} to a token the service accepts",
                                  status=status, code=code)  # fmt: skip
    by_code: dict[str, type[RewardkitError]] = {
        "composition_failed": CompositionError,
        "invalid_spec": CompositionError,
        "contract_violation": RewardContractError,
        "provider_failed": ProviderError,
        "reward_unavailable": PreflightError,
        "too_many_rollouts": RequestTooLarge,
    }
    kind = by_code.get(code)
    if kind is not None:
        return kind(message)
    return RemoteServiceError(f"{where} ({code}): {message}", status=status, code=code)


def _selection_payload(selection: RewardSelection) -> dict[str, Any]:
    if selection.spec is not None:
        return {"spec": selection.spec}
    if selection.term is not None:
        # A request names no term: a provider with a chosen term is sent as its one-component spec.
        component = {"provider": selection.provider, "params": selection.params, "term": selection.term}
        return {"spec": {"components": [component]}}
    payload: dict[str, Any] = {"provider": selection.provider}
    if selection.params:
        payload["params"] = selection.params
    return payload


class RemoteReward:
    """A preflighted reward whose scoring happens in a Reward Service."""

    def __init__(
        self,
        config: RewardkitConfig,
        selection: RewardSelection | None = None,
        *,
        namespace: str = "train",
        group_size: int | None = None,
        token: str | None = None,
    ) -> None:
        self.config = config
        self.selection = selection or config.rl.reward
        service = self.selection.service or config.rl.reward.service
        if service is None:
            raise PreflightError("RemoteReward needs rl.reward.service (the Reward Service URL)")
        self.url = service.rstrip("/")
        self.namespace = namespace
        self.group_size = group_size if group_size is not None else config.rl.group_size
        self._token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="rewardkit-remote", daemon=True)
        self._thread.start()
        self._session: Any = None
        self._closed = False
        self._validation: RemoteReward | None = None
        try:
            resolved = self._call(self._post("/v1/resolve", _selection_payload(self.selection),
                                             time.monotonic() + config.rewards.deadline_s))  # fmt: skip
        except BaseException:
            self.close()
            raise
        self._spec = RewardSpec.parse(resolved["spec"])
        self._records = tuple(ProviderRecord.from_json(record) for record in resolved["providers"])
        self._needs = tuple(resolved["needs"])
        self.max_rollouts_per_call = int(resolved["max_rollouts_per_call"])

    def __repr__(self) -> str:
        return f"RemoteReward({self.url!r}, namespace={self.namespace!r})"

    # -- the Reward surface ----------------------------------------------------------------------

    @property
    def spec(self) -> RewardSpec:
        """The composed spec, with every component's term resolved (by the service)."""
        return self._spec

    @property
    def providers(self) -> tuple[ProviderRecord, ...]:
        return self._records

    @property
    def needs(self) -> tuple[str, ...]:
        return self._needs

    @property
    def spec_identity(self) -> dict[str, Any]:
        """What a run records of the spec: the spec as the service resolved it."""
        return self._spec.to_json()

    @property
    def catalog(self) -> None:
        """``None``: the catalog is resolved in the service, not here."""
        return None

    def score(
        self,
        groups: Iterable[GroupLike],
        *,
        deadline_s: float | None = None,
        timeout_s: float | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> ScoredBatch:
        """Score complete groups in the service; same result as ``Reward.score``."""
        return self._call(self._score(as_batch(groups), deadline_s, progress, timeout_s))

    async def ascore(
        self,
        groups: Iterable[GroupLike],
        *,
        deadline_s: float | None = None,
        timeout_s: float | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> ScoredBatch:
        future = asyncio.run_coroutine_threadsafe(
            self._score(as_batch(groups), deadline_s, progress, timeout_s), self._loop
        )
        return await asyncio.wrap_future(future)

    def process(
        self, groups: Iterable[GroupLike], *, deadline_s: float | None = None, timeout_s: float | None = None
    ) -> ScoredBatch:
        """Score, then write ``reward`` and ``advantage`` into the trajectories (nothing on failure)."""
        groups = as_batch(groups)
        trajectories: list[MutableMapping[str, Any]] = []
        for group in groups:
            for rollout in group_parts(group)[1]:
                if not isinstance(rollout, MutableMapping):
                    raise RewardkitError(
                        "process() writes rewards into trajectories, so each must be a mutable mapping; "
                        f"got {type(rollout).__name__}"
                    )
                trajectories.append(rollout)
        batch = self.score(groups, deadline_s=deadline_s, timeout_s=timeout_s)  # raises before any write
        for trajectory, (_, candidate) in zip(trajectories, batch.candidates()):
            trajectory[REWARD_FIELDS[0]] = {
                "final": candidate.final,
                "gated": candidate.gated,
                "breakdown": candidate.breakdown,
            }
            trajectory[REWARD_FIELDS[1]] = candidate.advantage
        return batch

    def validation(self) -> RemoteReward:
        """The held-out reward (``rl.validation.reward``) from the same service, namespace ``val``."""
        validation = self.config.rl.validation
        selection = self.selection
        if validation is not None and validation.reward is not None:
            chosen = validation.reward
            selection = (
                RewardSelection(provider=chosen, catalog=self.selection.catalog)
                if isinstance(chosen, str)
                else chosen
            )
        size = validation.n_generation if validation is not None else None
        if self._validation is None:  # built once: ``load`` builds it, so a wrong one fails there
            self._validation = RemoteReward(
                self.config, selection, namespace="val", group_size=size, token=self._token
            )
        return self._validation

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._validation is not None:
            self._validation.close()
        if self._session is not None:
            asyncio.run_coroutine_threadsafe(self._session.close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> RemoteReward:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------------

    def _call(self, coroutine: Any) -> Any:
        if self._closed:
            coroutine.close()
            raise RewardkitError("this RemoteReward is closed")
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result()

    def _chunks(self, groups: Sequence[GroupLike]) -> list[list[tuple[str, list[dict[str, Any]]]]]:
        seen: set[str] = set()
        chunks: list[list[tuple[str, list[dict[str, Any]]]]] = [[]]
        size = 0
        limit = self.max_rollouts_per_call
        for group in groups:
            group_id, rollouts = group_parts(group)
            if group_id in seen:
                raise RewardkitError(
                    f"group {group_id!r} appears twice in the batch; a group must be complete in one place"
                )
            seen.add(group_id)
            wire = [
                {key: rollout[key] for key in _WIRE_FIELDS if key in rollout}
                if isinstance(rollout, Mapping)
                else rollout
                for rollout in rollouts
            ]
            if len(wire) > limit:
                raise RequestTooLarge(
                    f"group {group_id!r} has {len(wire)} rollouts, over the service's per-call limit of "
                    f"{limit}; raise rewards.max_inflight on the service"
                )
            if chunks[-1] and size + len(wire) > limit:
                chunks.append([])
                size = 0
            chunks[-1].append((group_id, wire))
            size += len(wire)
        return chunks if chunks[0] else []

    async def _score(
        self,
        groups: Sequence[GroupLike],
        deadline_s: float | None,
        progress: Callable[[int], None] | None,
        timeout_s: float | None = None,
    ) -> ScoredBatch:
        chunks = self._chunks(groups)
        if not chunks:
            raise RewardkitError("score() needs at least one group")
        budget = check_deadline(deadline_s) if deadline_s is not None else self.config.rewards.deadline_s
        deadline = time.monotonic() + budget
        timeout = check_deadline(timeout_s, "timeout_s") if timeout_s is not None else None
        timeout = timeout if timeout is not None else self.config.rewards.request_timeout_s
        timeout_at = time.monotonic() + timeout if timeout is not None else None
        base: dict[str, Any] = {
            **_selection_payload(self.selection),
            "group_size": self.group_size,
            "advantage_scaling": self.config.rl.advantage_scaling,
            "namespace": self.namespace,
        }

        async def one(chunk: list[tuple[str, list[dict[str, Any]]]]) -> dict[str, Any]:
            payload = {**base, "groups": [{"group_id": gid, "rollouts": rows} for gid, rows in chunk]}
            answer = await self._post("/v1/score", payload, deadline, timeout_at)
            if progress is not None:
                progress(sum(len(rows) for _, rows in chunk))
            return answer

        answers = await asyncio.gather(*(one(chunk) for chunk in chunks))
        return self._batch(answers)

    def _batch(self, answers: Sequence[dict[str, Any]]) -> ScoredBatch:
        providers = tuple(ProviderRecord.from_json(record) for record in answers[0]["providers"])
        parts = [
            ScoredBatch(
                tuple(_scored_group(group) for group in answer["groups"]),
                answer["metrics"],
                providers,
                answer.get("metric_weights") or {},
            )
            for answer in answers
        ]
        # Advantages depend only on totals: the finisher recomputes them over the whole call (it may
        # have been split across requests) with this client's rl settings. A service older than
        # metric_weights leaves each request's rollouts as the best weight known for its means.
        rollouts = [float(sum(len(group["candidates"]) for group in answer["groups"])) for answer in answers]
        return finish_split_batch(parts, self.config.rl, default_weights=rollouts)

    async def _ensure_session(self) -> Any:
        if self._session is None:
            import aiohttp

            headers = {"content-type": "application/json"}
            if self._token:
                headers["authorization"] = f"Bearer {self._token}"
            self._session = aiohttp.ClientSession(
                headers=headers,
                connector=aiohttp.TCPConnector(limit=64),
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=_CONNECT_TIMEOUT_S),
            )
        return self._session

    async def _post(
        self, path: str, payload: dict[str, Any], deadline: float, timeout_at: float | None = None
    ) -> dict[str, Any]:
        import aiohttp

        session = await self._ensure_session()
        url = self.url + path
        at_load = path == "/v1/resolve"
        backoff = _BACKOFF_START_S
        unreachable: Exception | None = None
        waited_for: str | None = None  # what the last 503 said, for the log and the deadline error
        logged_at = -math.inf
        while True:
            headers, timeout = self._timeout_headers(timeout_at)
            remaining = deadline - time.monotonic()
            if remaining <= 0 and unreachable is not None:
                raise RemoteServiceError(
                    f"the Reward Service at {self.url} could not be reached before the deadline: "
                    f"{unreachable}"
                ) from unreachable
            if remaining <= 0:
                raise BackpressureTimeout(
                    f"the deadline passed before the Reward Service at {self.url} accepted the request"
                    + (f" (it kept answering {waited_for})" if waited_for else "")
                    + "; retry later, raise the deadline or add service capacity",
                    waited_s=0.0,
                )
            if path == "/v1/score":
                payload["deadline_s"] = remaining
            body = orjson.dumps(payload)
            try:
                bounded = {} if timeout is None else {"headers": headers, "timeout": timeout}
                async with session.post(url, data=body, **bounded) as reply:
                    data = await reply.read()
                    if reply.status == 200:
                        return orjson.loads(data)
                    if reply.status != 503:
                        raise _error_for(reply.status, data, url)
                    # Refused before scoring (starting, draining, or no capacity): wait and send again.
                    retry_after = reply.headers.get("Retry-After")
                    wait = _seconds(retry_after) if retry_after is not None else backoff
                    backoff = min(backoff * 2, _BACKOFF_MAX_S)
                    waited_for = f"503 {_reason(data)}"
                    if timeout_at is not None and time.monotonic() + wait >= timeout_at:
                        raise RequestTimeout(
                            f"the request timeout passed while the Reward Service at {self.url} answered "
                            f"{waited_for}; raise the timeout, or add service capacity"
                        )
                    if time.monotonic() + wait >= deadline:
                        raise _deadline_error(data, self.url)
                    now = time.monotonic()
                    if now - logged_at >= _WAIT_LOG_EVERY_S:
                        logged_at = now
                        log.warning("waiting for the Reward Service at %s: it answered %s; retrying "
                                    "until the deadline (%.0f s left)", self.url, waited_for,
                                    deadline - now)  # fmt: skip
                    await asyncio.sleep(wait)
                    continue
            except aiohttp.ClientConnectorError as error:
                if at_load:  # nothing listens there, or the name does not resolve: a wrong URL
                    raise RemoteServiceError(_unreachable_message(self.url, error)) from error
                unreachable = error  # refused: never sent; the service answered at load, so it restarts
            except aiohttp.ServerDisconnectedError as error:
                unreachable = error  # closed before any answer (a restart): nothing was scored twice
            except aiohttp.ServerTimeoutError as error:
                raise RemoteServiceError(
                    f"no connection to the Reward Service at {self.url} within {_CONNECT_TIMEOUT_S:g} s "
                    f"({type(error).__name__}); check rl.reward.service and that the host is reachable"
                ) from error
            except RequestTimeout:
                raise  # the service's 504 (a TimeoutError too, which the next clause is not for)
            except asyncio.TimeoutError:
                # The service did not answer its 504 in time: hanging up cancels the work there too.
                raise RequestTimeout(
                    f"the request timeout passed and the Reward Service at {self.url} had not answered "
                    f"{_TIMEOUT_GRACE_S:g} s later; the connection was closed"
                ) from None
            await asyncio.sleep(min(backoff, max(0.0, deadline - time.monotonic())))
            backoff = min(backoff * 2, _BACKOFF_MAX_S)

    @staticmethod
    def _timeout_headers(timeout_at: float | None) -> tuple[dict[str, str] | None, Any]:
        """The header with the time left, and the client's own timeout for the answer (or none)."""
        if timeout_at is None:
            return None, None
        import aiohttp

        left = timeout_at - time.monotonic()
        if left <= 0:
            raise RequestTimeout("the request timeout passed before the request could be sent")
        timeout = aiohttp.ClientTimeout(total=left + _TIMEOUT_GRACE_S, sock_connect=_CONNECT_TIMEOUT_S)
        return {TIMEOUT_HEADER: str(max(1, int(left * 1000)))}, timeout


_REMOTE_REWARD_IS_REWARD_LIKE: type[RewardLike] = RemoteReward  # checked by the type checker


def _reason(data: bytes) -> str:
    try:
        error = json.loads(data)["error"]
        return f"{error['code']}: {error['message']}"
    except (ValueError, KeyError, TypeError):
        return data[:200].decode("utf-8", "replace") or "(no body)"


def _unreachable_message(url: str, error: Exception) -> str:
    os_error = getattr(error, "os_error", None)
    if isinstance(os_error, socket.gaierror):
        why = f"its host name does not resolve ({os_error.strerror or os_error})"
    elif isinstance(os_error, ConnectionRefusedError):
        why = "the connection was refused (nothing listens there)"
    else:
        why = f"{type(os_error or error).__name__}: {os_error or error}"
    return (
        f"cannot reach the Reward Service at {url}: {why}; check rl.reward.service (the service URL) "
        "and that the service is running"
    )


def _seconds(retry_after: str) -> float:
    try:
        value = float(retry_after)
    except ValueError:
        return 1.0  # an HTTP date: not sent by rewardkit; wait a second
    return value if math.isfinite(value) and value >= 0 else 1.0


def _deadline_error(data: bytes, url: str) -> BackpressureTimeout:
    """The service answered 503 and waiting longer would pass the deadline: say what it answered."""
    try:
        error = json.loads(data)["error"]
        code, message = str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        code, message = "unavailable", "the service had no capacity before the deadline"
    if code == "deadline_exceeded":  # the service's own back-pressure
        return BackpressureTimeout(f"Reward Service {url}: {message}", waited_s=0.0)
    return BackpressureTimeout(
        f"Reward Service {url} still answered 503 ({code}: {message}) when the deadline came; "
        "it may still be starting: raise rewards.deadline_s or check the service",
        waited_s=0.0,
    )


def _scored_group(group: dict[str, Any]) -> ScoredGroup:
    candidates = tuple(
        ScoredCandidate(
            c["trajectory_id"],
            c["final"],
            c["gated"],
            c["breakdown"],
            c["advantage"],
            c.get("diagnostics") or {},  # a service older than diagnostics sends none
        )
        for c in group["candidates"]
    )
    return ScoredGroup(group["group_id"], candidates)
