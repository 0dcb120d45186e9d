"""An async HTTP client for the services rewardkit calls (vLLM, judges, reward services).

One ``HttpClient`` per base URL pools connections. A request has a per-call timeout and an
absolute deadline (``time.monotonic()`` seconds); a retryable answer (429, 5xx, a dropped
connection) is retried with capped exponential backoff, jitter and ``Retry-After``, but only when
the retry can finish before the deadline: otherwise the last error comes at once, not a doomed
wait. Requests that must not run twice pass ``retry=False``. A bearer token is given as the *name*
of an environment variable, read when the client is made; it never appears in an error or a repr.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import os
import random
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO, TypeVar

import aiohttp

from rewardkit.contracts.errors import RewardkitError
from rewardkit.scoring.cancellation import CancelScope, current

T = TypeVar("T")


class HttpError(RewardkitError):
    """A request that failed: the status (None when no answer came), the URL and what was said."""

    def __init__(self, message: str, *, url: str, status: int | None = None, body: str = "") -> None:
        super().__init__(message)
        self.url = url
        self.status = status
        self.body = body


class HttpTimeout(HttpError):
    """The deadline passed before an answer came (or before a retry could finish)."""


@dataclass(frozen=True)
class RetryPolicy:
    """How a retryable failure is retried: at most ``attempts`` tries in all."""

    attempts: int = 4
    backoff_s: float = 0.25
    max_backoff_s: float = 8.0
    jitter: float = 0.25
    statuses: frozenset[int] = frozenset({408, 429, 500, 502, 503, 504})

    def delay(self, attempt: int, retry_after: float | None) -> float:
        base = min(self.max_backoff_s, self.backoff_s * (2 ** min(attempt, 32)))
        base *= 1 + self.jitter * random.random()
        return max(base, retry_after or 0.0)


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: Mapping[str, str]
    body: bytes
    url: str

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError as error:
            message = f"{self.url} answered {self.status} with a body that is not JSON ({error})"
            raise _answer_error(self, message) from None

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


def bearer_token(env_var: str | None) -> str | None:
    """The token held by environment variable ``env_var`` (None when no variable is named)."""
    if not env_var:
        return None
    value = os.environ.get(env_var)
    if not value:
        raise RewardkitError(f"the bearer token variable {env_var} is not set in the environment")
    return value


def _answer_error(response: HttpResponse, what: str, limit: int = 500) -> HttpError:
    text = response.text
    body = text if len(text) <= limit else text[:limit] + "..."
    return HttpError(f"{what}: {body}", url=response.url, status=response.status, body=body)


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The seconds a ``Retry-After`` header asks for (a number or an HTTP date), or None. Any mapping
    of headers: the name is matched without regard to case, as HTTP reads it."""
    value = next((text for name, text in headers.items() if name.lower() == "retry-after"), None)
    if not value:
        return None
    with contextlib.suppress(ValueError):
        return max(0.0, float(value))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class HttpClient:
    """``async with HttpClient(url) as client: await client.request("GET", "/v1/models")``."""

    def __init__(
        self,
        base_url: str,
        *,
        token_env: str | None = None,
        timeout_s: float = 30.0,
        retry: RetryPolicy | None = None,
        max_connections: int = 64,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise RewardkitError(f"base URL {base_url!r} must start with http:// or https://")
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self.max_connections = max_connections
        self.token_env = token_env
        self._token = bearer_token(token_env)
        self._session: aiohttp.ClientSession | None = None

    def __repr__(self) -> str:
        token = f", token_env={self.token_env!r}" if self.token_env else ""
        return f"HttpClient({self.base_url!r}{token})"

    async def __aenter__(self) -> HttpClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _session_now(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
            connector = aiohttp.TCPConnector(limit=self.max_connections)
            self._session = aiohttp.ClientSession(connector=connector, headers=headers)
        return self._session

    async def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        data: bytes | BinaryIO | aiohttp.FormData | None = None,
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
        timeout_s: float | None = None,
        retry: bool = True,
        expect: tuple[int, ...] | None = (200,),
    ) -> HttpResponse:
        """Send one request, retried on retryable failures while the deadline allows. A status not
        in ``expect`` raises ``HttpError`` (after the retries, for a retryable one); ``None``: none does."""
        url = self.base_url + path
        per_call = timeout_s or self.timeout_s
        deadline = deadline if deadline is not None else time.monotonic() + per_call * self.retry.attempts
        attempts = self.retry.attempts if retry else 1
        last: HttpError | None = None
        for attempt in range(attempts):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise HttpTimeout(f"{method} {url}: the deadline passed" + _after(last), url=url)
            call_s = min(per_call, remaining)
            retry_after = None
            try:
                timeout = aiohttp.ClientTimeout(total=call_s)
                async with self._session_now().request(
                    method, url, json=json_body, data=data, headers=dict(headers or {}), timeout=timeout
                ) as answer:
                    response = HttpResponse(answer.status, dict(answer.headers), await answer.read(), url)
            except asyncio.TimeoutError:
                last = HttpTimeout(f"{method} {url}: no answer within {call_s:.3g} s", url=url)
            except aiohttp.ClientError as error:
                last = HttpError(f"{method} {url}: {type(error).__name__}: {error}", url=url)
            else:
                if expect is None or response.status in expect:
                    return response
                last = _answer_error(response, f"{method} {url} answered {response.status}")
                if response.status not in self.retry.statuses:
                    raise last
                retry_after = retry_after_seconds(response.headers)
            if attempt + 1 >= attempts:
                break
            wait = self.retry.delay(attempt, retry_after)
            if time.monotonic() + wait >= deadline:
                message = f"{method} {url}: no retry can finish before the deadline" + _after(last)
                raise HttpTimeout(message, url=url, status=last.status, body=last.body)
            await asyncio.sleep(wait)
        assert last is not None
        raise last

    async def get_json(self, path: str, **options: Any) -> Any:
        return (await self.request("GET", path, **options)).json()

    async def post_json(self, path: str, body: Any, **options: Any) -> Any:
        return (await self.request("POST", path, json_body=body, **options)).json()


def _after(last: HttpError | None) -> str:
    return f" (last error: {last})" if last is not None else ""


def run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine from synchronous code, also when the caller is inside an event loop (in a
    thread of its own). When the request it runs for is cancelled (``rewardkit.scoring.cancellation``), the
    coroutine is cancelled too, which closes its HTTP requests, and the request's error is raised."""
    scope = current()
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_cancellable(make, scope))
    # A plain thread, not an executor: Ctrl-C in the caller's join is not held until the coroutine ends.
    result: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            result.append(asyncio.run(_cancellable(make, scope)))
        except BaseException as error:
            failure.append(error)

    thread = threading.Thread(target=target, name="rewardkit-run-sync")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]


async def _cancellable(make: Callable[[], Awaitable[T]], scope: CancelScope) -> T:
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    assert task is not None
    remove = scope.add_callback(lambda: loop.call_soon_threadsafe(task.cancel))
    try:
        return await make()
    except asyncio.CancelledError:
        scope.raise_if_cancelled()
        raise
    finally:
        remove()
