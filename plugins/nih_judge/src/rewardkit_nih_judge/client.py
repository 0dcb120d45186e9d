"""The judge's side of the wire: an OpenAI-compatible chat-completions or completions client on the
core transport.

One ``JudgeRunner`` per provider owns a private event loop in a daemon thread, started on the
first ``evaluate`` (a factory starts nothing), and on it one ``rewardkit.transport.HttpClient``:
one connection pool, ``max_concurrency`` requests in flight across every group the provider
scores, each request bounded by ``timeout_s`` and retried on 408/5xx, timeouts and dropped
connections with capped, jittered backoff (within the endpoint's ``retries_per_minute``), all
inside the group's absolute deadline. Requests keep to the endpoint's ``requests_per_minute`` and
``tokens_per_minute``, and a 429 is waited out for the ``Retry-After`` it gives, never counted as a
failure (``budgets``); the seconds a question waited are its ``rate_wait_s``. ``ask`` sends one
question, reads the verdict, asks again when it cannot be read or is off the scale, and consults
the verdict cache. The API key is read from the variable
``api_key_env`` names; its value is removed from every reason and rationale that leaves this module.

A failed question is a ``JudgeFailure`` of one ``kind``: ``unreadable`` or ``off_scale`` (after the
re-asks), ``refused`` (the judge or its server declined to answer for the content: a reply whose
``finish_reason`` is ``content_filter`` or whose message carries a ``refusal``, or a 400/422 whose
body names a content filter or policy; not asked again, since the same text is refused again),
``too_long`` (the server refused the request for its length: 413, or a 400/422 whose body speaks
of the context length), ``request_failed`` (the request itself failed before the group's
deadline: a 5xx or 408 after the retries, any other error answer, a timeout of ``timeout_s``, a
dropped connection, a reply without a message), or ``infra`` (what says nothing about the
request: a rate limit that outlasts the deadline, the deadline itself, including an attempt the
deadline cut short, the cache, a structured-output format the server refuses). A candidate's
text can cause each of the first five (a payload can crash or stall a model server as surely as
it can make a judge refuse), so they are charged only as ``attribution`` says: beside a canary,
once they reproduce; ``infra`` never is.

**Structured output.** The verdict is asked for with ``response_format`` ``json_schema`` (the
verdict's schema, ``verdicts.verdict_schema``), then ``json_object``, then neither (the reply is
then read from its envelope, ``verdicts``): ``json_mode: auto`` starts at the schema and steps
down one format each time the server refuses one with a 400/422 that names a structured-output
field (``response_format``, ``json_schema``, ``json_object``, ``guided_json``,
``structured_outputs``); ``on`` never drops below ``json_object``; ``off`` sends none. The format
reached is kept for the runner's endpoint (one URL per runner), under a lock, and every request
refused for the format it carried is sent again in the next one, so requests in flight when the
server first refuses are retried, never failed. The format a verdict was asked with is the
``structured_output`` diagnostic (``FORMAT_CODES``); it is no param, so no identity.

**The API** (param ``api``). ``chat`` posts ``messages`` to ``/chat/completions`` and reads
``choices[0].message.content``; ``completions`` posts the same messages laid out as one plain
prompt (``prompts.completion_prompt``) to ``/completions`` and reads ``choices[0].text``. Everything
else is one code path for both: the structured-output step-down (vLLM's completions endpoint
takes ``response_format`` too), the verdict lines (they are in the text either way), re-asks
(appended to the conversation, so to the prompt), retries, deadlines, the cache and the charges.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import json
import os
import re
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, TypeVar

import aiohttp

from rewardkit.plugin import (
    HttpClient,
    HttpError,
    HttpResponse,
    HttpTimeout,
    ProviderError,
    RetryPolicy,
    current,
    retry_after_seconds,
)
from rewardkit_nih_judge import prompts
from rewardkit_nih_judge.budgets import EndpointBudgets, NoRoom, estimated_tokens
from rewardkit_nih_judge.cache import CacheError, VerdictCache
from rewardkit_nih_judge.params import JudgeParams
from rewardkit_nih_judge.verdicts import OffScale, Unreadable, Verdict, verdict_schema

T = TypeVar("T")

MAX_BACKOFF_S = 8.0
# Time past a group's deadline a caller waits for the loop to report back before giving up on it.
GRACE_S = 5.0
EXCERPT = 300
# Answers retried (within ``retries`` and the endpoint's ``retries_per_minute``); a 429 is waited out.
RETRIED_STATUSES = frozenset({408, 500, 502, 503, 504})
ERROR_BODY = 500  # characters of an error answer's body kept in its error, as the transport keeps

Message = dict[str, str]
FailureKind = Literal["unreadable", "off_scale", "refused", "too_long", "request_failed", "infra"]
Format = Literal["json_schema", "json_object", "envelope"]
Api = Literal["chat", "completions"]
# Per API: the path under base_url, and the field of the reply that holds the judge's text.
PATHS: dict[Api, str] = {"chat": "/chat/completions", "completions": "/completions"}
READS: dict[Api, str] = {"chat": "choices[0].message.content", "completions": "choices[0].text"}
# The structured_output diagnostic: how strongly the server held the reply to the verdict's shape.
FORMAT_CODES: dict[Format, int] = {"json_schema": 2, "json_object": 1, "envelope": 0}
# Formats tried, strongest first, per json_mode.
FORMATS: dict[str, tuple[Format, ...]] = {
    "auto": ("json_schema", "json_object", "envelope"),
    "on": ("json_schema", "json_object"),
    "off": ("envelope",),
}
# Fields of a structured-output request a server names when it refuses one (OpenAI, vLLM, TGI, NIM).
_STRUCTURED_FIELDS = ("response_format", "json_schema", "json_object", "guided_json", "structured_outputs")

# What servers say when a request is longer than the model's context (vLLM, OpenAI, TGI, NIM).
_TOO_LONG = re.compile(
    r"context[ _-]?length|context window|maximum (?:context|input|prompt)|too many (?:input )?tokens"
    r"|(?:prompt|input|request|messages?) (?:is |are )?too long|reduce the length"
    r"|longer than the (?:model|maximum)|exceeds? the (?:model'?s? )?(?:maximum|context|max)",
    re.IGNORECASE,
)
# What servers say when they refuse a request for its content (Azure OpenAI's content_filter and
# "content management policy", OpenAI's content_policy_violation, guardrail and safety refusals).
_CONTENT_REFUSED = re.compile(
    r"content[ _-]?filter|content[ _-]?(?:management[ _-])?policy|guardrail"
    r"|safety[ _-]?(?:system|polic|filter)",
    re.IGNORECASE,
)


class _NotDecided(HttpTimeout):
    """A request that could not finish for the endpoint's budgets (a 429 outlasting the deadline)
    or the group's deadline, not for anything it held: never the candidate's, however often."""


class JudgeFailure(Exception):
    """One question got no usable verdict; ``reason`` says why (the secret already removed)."""

    def __init__(
        self,
        reason: str,
        *,
        asks: int = 0,
        reasks: int = 0,
        kind: FailureKind = "infra",
        format: Format | None = None,
        rate_wait_s: float = 0.0,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.asks = asks
        self.reasks = reasks
        self.kind: FailureKind = kind
        self.format: Format | None = format
        self.rate_wait_s = rate_wait_s


@dataclass(frozen=True)
class Exchange:
    """A verdict and what it took: requests sent, re-asks after unreadable replies, cache hit, the
    format its last request asked for (None when read from the cache), and the seconds its requests
    waited for the endpoint's budgets or a 429."""

    verdict: Verdict
    asks: int
    reasks: int
    cached: bool
    format: Format | None = None
    rate_wait_s: float = 0.0


class _Waited:
    """The seconds one question's requests have waited for the endpoint's budgets so far."""

    __slots__ = ("seconds",)

    def __init__(self) -> None:
        self.seconds = 0.0


class _LoopState:
    """What lives on the runner's event loop; closed by a finalizer that does not hold the runner."""

    def __init__(self, name: str, settings: JudgeParams) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), name=name, daemon=True)
        # The runner retries itself (``JudgeRunner._post``): the endpoint's retry budget and the
        # 429 waits are counted there; the policy gives the backoff.
        self.retry = RetryPolicy(
            attempts=settings.retries + 1, backoff_s=settings.backoff_s, max_backoff_s=MAX_BACKOFF_S
        )
        self.client = HttpClient(
            settings.base_url,
            token_env=settings.api_key_env,
            timeout_s=settings.timeout_s,
            retry=self.retry,
            max_connections=settings.max_concurrency,
        )
        self.budgets = EndpointBudgets(
            requests_per_minute=settings.requests_per_minute,
            tokens_per_minute=settings.tokens_per_minute,
            retries_per_minute=settings.retries_per_minute,
            window_s=settings.rate_window_s,
        )
        self.semaphore: asyncio.Semaphore | None = None
        self.thread.start()
        ready.wait()

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(ready.set)
        self.loop.run_forever()

    async def _shut_down(self) -> None:
        """Cancel what still runs on the loop (questions of a batch that was stopped), let it end,
        then close the connections: a task left pending when the loop closes is reported on stderr
        ("Task was destroyed but it is pending") long after the user's Ctrl-C or error."""
        running = asyncio.current_task()
        others = [task for task in asyncio.all_tasks() if task is not running]
        for task in others:
            task.cancel()
        if others:
            await asyncio.wait(others, timeout=2.0)
        await self.client.close()

    def close(self) -> None:
        if self.pid != os.getpid() or self.loop.is_closed():
            return  # a forked child: the loop's thread lives only in the parent
        if self.thread.is_alive():
            future = asyncio.run_coroutine_threadsafe(self._shut_down(), self.loop)
            with contextlib.suppress(Exception):
                future.result(timeout=5.0)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=5.0)
        if not self.thread.is_alive():
            self.loop.close()


class JudgeRunner:
    """Runs a provider's judge calls; shared by every group and thread that uses the provider."""

    def __init__(self, settings: JudgeParams, provider: str) -> None:
        self.settings = settings
        self.provider = provider
        self._path = PATHS[settings.api]
        self.url = settings.base_url + self._path
        self._formats = FORMATS[settings.json_mode]
        self._format_at = 0  # index into _formats: the strongest format this endpoint has not refused
        self._schema = verdict_schema(settings.kind())
        self._lock = threading.Lock()
        self._state: _LoopState | None = None
        self._finalizer: weakref.finalize | None = None
        self._cache = VerdictCache(settings.cache_path) if settings.cache_path else None
        judge = settings.model_dump(mode="json", exclude={"cache_path"})
        self._cache_base = json.dumps(judge, sort_keys=True, separators=(",", ":"))

    def __repr__(self) -> str:
        return f"JudgeRunner({self.provider!r}, {self.url!r}, model={self.settings.model!r})"

    # -- the loop ----------------------------------------------------------------------------------

    def _state_now(self) -> _LoopState:
        with self._lock:
            state = self._state
            if state is None or state.pid != os.getpid() or not state.thread.is_alive():
                state = _LoopState(f"rewardkit-{self.provider}", self.settings)
                self._state = state
                self._finalizer = weakref.finalize(self, state.close)
            return state

    def run(self, make: Callable[[], Awaitable[T]], deadline: float) -> T:
        """Run ``make()`` on the loop; wait until it ends (it honours ``deadline`` itself)."""
        state = self._state_now()
        future = asyncio.run_coroutine_threadsafe(_awaited(make), state.loop)
        # A cancelled request (timeout, client gone) cancels the call on the loop: its HTTP request
        # is closed instead of held until the judge answers. Cancelling the future is thread-safe.
        scope = current()
        remove = scope.add_callback(future.cancel)
        try:
            return future.result(timeout=max(0.0, deadline - time.monotonic()) + GRACE_S)
        except concurrent.futures.CancelledError:
            scope.raise_if_cancelled()
            raise
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ProviderError(
                f"the judge at {self.url} did not finish within the group's deadline "
                f"({self.settings.deadline_s:g} s) and {GRACE_S:g} s of grace"
            ) from None
        finally:
            remove()

    def close(self) -> None:
        """End the loop and its connections, and close the cache (a later call starts them again)."""
        with self._lock:
            if self._finalizer is not None:
                self._finalizer()
            self._state = None
            self._finalizer = None
        if self._cache is not None:
            self._cache.close()

    # -- asking ------------------------------------------------------------------------------------

    def redact(self, text: str) -> str:
        """``text`` without the API key's value (judges and servers may echo what they were sent)."""
        name = self.settings.api_key_env
        secret = os.environ.get(name) if name else None
        if secret and secret in text:
            text = text.replace(secret, f"<value of ${name}>")
        return text

    def excerpt(self, text: str) -> str:
        flat = " ".join(text.split())
        flat = flat if len(flat) <= EXCERPT else flat[: EXCERPT - 3] + "..."
        return self.redact(repr(flat))

    def _cache_key(self, messages: Sequence[Message]) -> str:
        document = self._cache_base + "\n" + json.dumps(list(messages), sort_keys=True)
        return hashlib.sha256(document.encode("utf-8")).hexdigest()

    @property
    def format(self) -> Format:
        """The format the next request asks for (the strongest this endpoint has not refused)."""
        with self._lock:
            return self._formats[self._format_at]

    def _refused(self, format: Format) -> Format | None:
        """The server refused ``format``: the next format to ask with, or None when none is left.

        Thread-safe and idempotent per format: every request in flight that carried ``format``
        gets the same next format, and none moves the endpoint back up.
        """
        with self._lock:
            index = self._formats.index(format) + 1
            if index >= len(self._formats):
                return None
            self._format_at = max(self._format_at, index)
            return self._formats[self._format_at]

    async def ask(
        self,
        messages: Sequence[Message],
        parse: Callable[..., Verdict],
        deadline: float,
        *,
        use_cache: bool = True,
    ) -> Exchange:
        """One verdict for ``messages``: from the cache, or from the judge (asked again while it
        cannot be read or is off the scale, ``parse_retries`` times).

        ``parse(text, envelope=token)`` reads the reply; ``token`` is the verdict lines' token the
        system message states (``prompts.envelope_token``).
        """
        parse = partial(parse, envelope=prompts.envelope_token(messages))
        cache = self._cache if use_cache else None
        key = self._cache_key(messages) if cache is not None else None
        if cache is not None and key is not None:
            reply = _cached(cache.get, key)
            if reply is not None:
                try:
                    return Exchange(parse(reply), 0, 0, True)
                except (Unreadable, OffScale):
                    pass  # a reply this parser cannot read is not a hit
        conversation = list(messages)
        asks = 0
        waited = _Waited()
        while True:
            try:
                content, finish, format, refusal = await self._send(conversation, deadline, asks, waited)
            except JudgeFailure as failure:
                failure.rate_wait_s = waited.seconds
                raise
            asks += 1
            if refusal is not None:
                # A refusal is an answer about the content, not a reply that failed to parse: asking
                # again in the same conversation only repeats it (reproduction asks once more, alone).
                raise JudgeFailure(
                    f"the judge refused to give a verdict: {refusal}",
                    asks=asks,
                    reasks=asks - 1,
                    kind="refused",
                    format=format,
                    rate_wait_s=waited.seconds,
                )
            try:
                verdict = parse(content)
            except (OffScale, Unreadable) as error:
                off = isinstance(error, OffScale)
                cut = finish == "length" and not off
                why = str(error) + (" (the reply was cut at max_tokens)" if cut else "")
                if asks > self.settings.parse_retries:
                    what = "off-scale" if off else "unreadable"
                    raise JudgeFailure(
                        f"{what} verdict after {asks} ask{'s' if asks > 1 else ''}: {why}; "
                        f"the judge said {self.excerpt(content)}",
                        asks=asks,
                        reasks=asks - 1,
                        kind="off_scale" if off else "unreadable",
                        format=format,
                        rate_wait_s=waited.seconds,
                    ) from None
                conversation += [
                    {"role": "assistant", "content": content},
                    {"role": "user", "content": prompts.fill(prompts.REASK, {"why": why})},
                ]
                continue
            if cache is not None and key is not None:
                _cached(cache.put, key, content)
            if verdict.rationale is not None:
                verdict = Verdict(verdict.value, self.redact(verdict.rationale))
            return Exchange(verdict, asks, asks - 1, False, format, waited.seconds)

    async def _send(
        self, messages: Sequence[Message], deadline: float, asks: int, waited: _Waited
    ) -> tuple[str, str | None, Format, str | None]:
        """One request for ``messages`` over the provider's API: the reply's text, its finish
        reason, the format it was asked with, and why the judge refused to answer (None when it
        did not: see ``_refusal``)."""
        settings = self.settings
        state = self._state_now()
        body: dict[str, Any] = {"model": settings.model}
        if settings.api == "chat":
            body["messages"] = list(messages)
        else:
            body["prompt"] = prompts.completion_prompt(messages)
        body.update(temperature=settings.temperature, max_tokens=settings.max_tokens)
        format: Format = self.format
        async with _Slot(state, settings, deadline, self.url, asks):
            while True:
                if format == "json_schema":
                    body["response_format"] = self._schema
                elif format == "json_object":
                    body["response_format"] = {"type": "json_object"}
                else:
                    body.pop("response_format", None)
                try:
                    response = await self._post(state, body, deadline, waited)
                except HttpError as error:
                    if format != "envelope" and _refuses_structured_output(error):
                        # this server cannot: this request (and every later one) asks the next way
                        following = self._refused(format)
                        if following is not None:
                            format = following
                            continue
                        raise JudgeFailure(
                            self.redact(
                                f"{error} (json_mode {settings.json_mode}: the server refused {format}, the "
                                "last structured-output format this mode allows; json_mode auto asks without)"
                            ),
                            asks=asks,
                            reasks=max(0, asks - 1),
                        ) from None
                    raise JudgeFailure(
                        self.redact(str(error)),
                        asks=asks,
                        reasks=max(0, asks - 1),
                        kind=_failure_kind(error),
                    ) from None
                except (aiohttp.ClientError, OSError) as error:
                    raise JudgeFailure(
                        self.redact(f"POST {self.url}: {type(error).__name__}: {error}"),
                        asks=asks,
                        reasks=max(0, asks - 1),
                        kind="request_failed",
                    ) from None
                break
        try:
            choice = response.json()["choices"][0]
            content = choice["message"]["content"] if settings.api == "chat" else choice["text"]
            finish = choice.get("finish_reason")
            refusal = _refusal(choice, finish)
        except (HttpError, KeyError, IndexError, TypeError, AttributeError):
            raise JudgeFailure(
                f"{self.url} answered {response.status} without {READS[settings.api]}: "
                f"{self.excerpt(response.text)}",
                asks=asks + 1,
                reasks=asks,
                kind="request_failed",
            ) from None
        return _text(content), finish, format, None if refusal is None else self.excerpt(refusal)

    async def _post(
        self, state: _LoopState, body: dict[str, Any], deadline: float, waited: _Waited
    ) -> HttpResponse:
        """POST ``body`` within the endpoint's budgets: each attempt waits for room in its minute
        (``budgets``); a 429 pauses the endpoint for its ``Retry-After`` (or the backoff) and is
        sent again once the pause is over, never counted as a retry; 408, 5xx, timeouts and dropped
        connections are retried ``retries`` times while the endpoint's retry budget and the
        deadline allow. Every failure is an ``HttpError``."""
        settings = self.settings
        texts = [body["prompt"]] if "prompt" in body else [message["content"] for message in body["messages"]]
        tokens = estimated_tokens(texts, settings.max_tokens)
        retried = limited = 0
        while True:
            try:
                waited.seconds += await state.budgets.admit(tokens, deadline)
            except NoRoom as full:
                raise _NotDecided(
                    f"POST {self.url}: the group's deadline ({settings.deadline_s:g} s) passes before the "
                    f"request can start: held by {full.why} (waited {waited.seconds:.3g} s already)",
                    url=self.url,
                    status=429 if limited else None,
                ) from None
            retry_after: float | None = None
            # An attempt given less than timeout_s is cut by the group's deadline, not by the judge.
            clipped = deadline - time.monotonic() < settings.timeout_s
            try:
                response = await state.client.request(
                    "POST",
                    self._path,
                    json_body=body,
                    deadline=deadline,
                    timeout_s=settings.timeout_s,
                    retry=False,
                    expect=(200, 429, *RETRIED_STATUSES),  # their Retry-After is read here
                )
                if response.status in RETRIED_STATUSES:
                    retry_after = retry_after_seconds(response.headers)
                    raise _answer_error(response)
            except HttpError as error:
                if clipped and isinstance(error, HttpTimeout) and error.status is None:
                    raise _NotDecided(
                        f"{error} (the group's deadline ({settings.deadline_s:g} s) cut it short)",
                        url=error.url,
                    ) from None
                if time.monotonic() >= deadline or not (
                    error.status is None or error.status in RETRIED_STATUSES
                ):
                    raise
                if retried >= settings.retries:
                    raise
                if not state.budgets.take_retry():
                    raise HttpError(
                        f"{error} (not retried: the endpoint's retries_per_minute "
                        f"({settings.retries_per_minute}) are spent)",
                        url=error.url,
                        status=error.status,
                        body=error.body,
                    ) from None
                pause = state.retry.delay(retried, retry_after)
                retried += 1
                if time.monotonic() + pause >= deadline:
                    raise HttpTimeout(
                        f"POST {self.url}: no retry can finish before the deadline (last error: {error})",
                        url=self.url,
                        status=error.status,
                        body=error.body,
                    ) from None
                await asyncio.sleep(pause)
                continue
            if response.status != 429:
                return response
            # Rate limited: the pace, not the request, was wrong. Every request to the endpoint
            # waits for the time the server asks (admit counts it), and this one is sent again.
            asked_for = retry_after_seconds(response.headers)
            state.budgets.pause(asked_for if asked_for is not None else state.retry.delay(limited, None))
            limited += 1


def _answer_error(response: HttpResponse) -> HttpError:
    """The error of an answer that is retried (408, 5xx), worded as the transport words it."""
    text = response.text
    body = text if len(text) <= ERROR_BODY else text[:ERROR_BODY] + "..."
    return HttpError(
        f"POST {response.url} answered {response.status}: {body}",
        url=response.url,
        status=response.status,
        body=body,
    )


def _refusal(choice: Any, finish: Any) -> str | None:
    """Why the reply is a refusal for its content, or None: the ``refusal`` an OpenAI structured
    output reply carries instead of content, or a reply stopped by the server's content filter."""
    message = choice.get("message") if isinstance(choice, dict) else None
    refusal = message.get("refusal") if isinstance(message, dict) else None
    if isinstance(refusal, str) and refusal.strip():
        return refusal
    if finish == "content_filter":
        return "the server stopped the reply for its content filter (finish_reason content_filter)"
    return None


def _text(content: Any) -> str:
    """The reply's text: a string, or the ``text`` parts of a list of content parts (some servers
    answer ``[{"type": "thinking", ...}, {"type": "text", "text": "..."}]``); reasoning parts and
    anything else are never read, like ``reasoning_content``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
        )
    return ""


def _cached(call: Callable[..., T], *args: str) -> T:
    try:
        return call(*args)
    except CacheError as error:
        raise JudgeFailure(str(error)) from None


def _failure_kind(error: HttpError) -> FailureKind:
    """What a failed request says: nothing (the budgets or the deadline stopped it), too long,
    refused for its content, or that it failed (the judge or its server broke on it)."""
    if isinstance(error, _NotDecided):
        return "infra"
    if _too_long(error):
        return "too_long"
    if _content_refused(error):
        return "refused"
    return "request_failed"


def _content_refused(error: HttpError) -> bool:
    """A 400/422 whose body names a content filter or policy (never a timeout or a server fault)."""
    if isinstance(error, HttpTimeout) or error.status not in (400, 422):
        return False
    return _CONTENT_REFUSED.search(error.body or "") is not None


def _too_long(error: HttpError) -> bool:
    """A refusal for the request's length (never a timeout or a server fault)."""
    if isinstance(error, HttpTimeout):
        return False
    if error.status == 413:
        return True
    return error.status in (400, 422) and _TOO_LONG.search(error.body or "") is not None


def _refuses_structured_output(error: HttpError) -> bool:
    """A 400/422 that names a structured-output field: the server does not take that format."""
    if isinstance(error, HttpTimeout) or error.status not in (400, 422):
        return False
    body = (error.body or "").lower()
    return any(word in body for word in _STRUCTURED_FIELDS)


class _Slot:
    """One of ``max_concurrency`` request slots, waited for no longer than the deadline."""

    def __init__(
        self, state: _LoopState, settings: JudgeParams, deadline: float, url: str, asks: int
    ) -> None:
        if state.semaphore is None:
            state.semaphore = asyncio.Semaphore(settings.max_concurrency)
        self.semaphore = state.semaphore
        self.settings = settings
        self.deadline = deadline
        self.url = url
        self.asks = asks

    async def __aenter__(self) -> None:
        remaining = self.deadline - time.monotonic()
        if remaining > 0:
            acquire = asyncio.ensure_future(self.semaphore.acquire())
            try:
                done, _ = await asyncio.wait({acquire}, timeout=remaining)
            except asyncio.CancelledError:
                # The question was cancelled while it waited for a slot (the batch failed, Ctrl-C):
                # the wait for the slot ends with it, or it would hold a slot nobody releases and
                # be left pending when the loop closes.
                await self._give_up(acquire)
                raise
            if done:
                return
            await self._give_up(acquire)
        raise JudgeFailure(
            f"the group's deadline ({self.settings.deadline_s:g} s) passed before a request to {self.url} "
            f"could start (max_concurrency {self.settings.max_concurrency})",
            asks=self.asks,
            reasks=max(0, self.asks - 1),
        )

    async def __aexit__(self, *exc: object) -> None:
        self.semaphore.release()

    async def _give_up(self, acquire: asyncio.Future[Any]) -> None:
        """Stop waiting for a slot; a slot acquired meanwhile is given back."""
        acquire.cancel()
        try:
            await acquire
        except asyncio.CancelledError:
            pass
        else:
            self.semaphore.release()  # acquired while being cancelled: give it back


async def _awaited(make: Callable[[], Awaitable[T]]) -> T:
    return await make()
