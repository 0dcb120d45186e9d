"""A scripted OpenAI-compatible judge server for tests and benchmarks (real HTTP on 127.0.0.1).

``ScriptedJudge(answer)`` serves ``POST /v1/chat/completions``, ``POST /v1/completions`` (a
request's ``prompt`` instead of ``messages``; the text answered as ``choices[0].text``) and
``GET /v1/models`` from a thread of its own; ``answer(body)`` decides each reply: a string (the
verdict text), a mapping (sent as the verdict's JSON text) or a ``Reply`` (status, headers,
delay, finish reason, a raw body, or a connection dropped without an answer). It records every
request body and header and counts requests in flight, server-side. ``announced``/``fenced``
find a request's fences the way a careful judge would: by the markers its system message
announces; ``graded``, ``pair`` and ``listed`` read the answers from them;
``enveloped(body, verdict)`` writes a verdict between the question's verdict lines. Each reads a
completions request's prompt as well.

``python -m rewardkit_nih_judge.testing --latency-s 0.2`` runs one in its own process (the
benchmark's judge): it prints ``READY <base_url>`` and serves until stdin closes or SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from rewardkit_nih_judge.prompts import COMPLETION_SEPARATOR, ENVELOPE_RULES, envelope_token, fill_envelope


@dataclass
class Reply:
    """One scripted answer. ``body`` (if given) is sent as the whole JSON response instead;
    ``drop``: the connection is closed (after the delay) without an answer, as a crashed server does."""

    content: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    finish_reason: str = "stop"
    body: Any = None
    drop: bool = False


Answer = Callable[[dict[str, Any]], "Reply | str | Mapping[str, Any]"]


def constant_score(score: float = 7, rationale: str = "scripted") -> Answer:
    return lambda body: {"score": score, "rationale": rationale}


def user_text(body: Mapping[str, Any]) -> str:
    """The first user message (the question; later ones are re-asks). Of a completions request:
    the prompt after the system text (a re-ask's conversation follows the question there)."""
    if "messages" not in body:
        return _prompt_parts(body)[1]
    return next(message["content"] for message in body["messages"] if message["role"] == "user")


def system_text(body: Mapping[str, Any]) -> str:
    """The system message; of a completions request, the prompt up to the verdict lines' paragraph
    that ends the system text."""
    if "messages" not in body:
        return _prompt_parts(body)[0]
    return next(message["content"] for message in body["messages"] if message["role"] == "system")


def _prompt_parts(body: Mapping[str, Any]) -> tuple[str, str]:
    """A completions prompt split after its system text. The split is found by the token the
    prompt states first: the system text comes first, so a token a candidate wrote comes later."""
    prompt: str = body["prompt"]
    token = envelope_token([{"role": "system", "content": prompt}])
    if token is None:
        raise ValueError("the prompt states no verdict lines")
    end = prompt.index(fill_envelope(ENVELOPE_RULES, token)) + len(fill_envelope(ENVELOPE_RULES, token))
    rest = prompt[end:].removeprefix(COMPLETION_SEPARATOR).removesuffix(COMPLETION_SEPARATOR)
    return prompt[:end], rest


_ANNOUNCED = re.compile(r"The markers of this message: (?P<list>.*?)\. Text inside a fence")


def announced(body: Mapping[str, Any]) -> dict[str, str]:
    """Fence name -> marker, as the system message announces them (empty: no fences)."""
    match = _ANNOUNCED.search(system_text(body))
    if match is None:
        return {}
    found = {}
    for item in match.group("list").split("; "):
        name, _, marker = item.rpartition(" ")
        found[name] = marker
    return found


def fenced(body: Mapping[str, Any], name: str) -> str | None:
    """What the fence ``name`` (``task``, ``answer``, ``answer A``, ...) holds, found only by the
    marker the system message announces; None when there is no such fence."""
    marker = announced(body).get(name)
    if marker is None:
        return None
    pattern = rf"^<data-{re.escape(marker)}>\n(?P<text>.*?)\n</data-{re.escape(marker)}>$"
    match = re.search(pattern, user_text(body), re.DOTALL | re.MULTILINE)
    return None if match is None else match.group("text")


def verdict_token(body: Mapping[str, Any]) -> str:
    """The token of the question's verdict lines, as its system message (of a completions request:
    the system text at the head of its prompt) states it."""
    if "messages" not in body:
        body = {"messages": [{"role": "system", "content": system_text(body)}]}
    token = envelope_token(body["messages"])
    if token is None:
        raise ValueError("the system message states no verdict lines")
    return token


def enveloped(body: Mapping[str, Any], verdict: Mapping[str, Any] | str) -> str:
    """``verdict`` (an object, or its JSON text) between the question's verdict lines."""
    token = verdict_token(body)
    text = verdict if isinstance(verdict, str) else json.dumps(dict(verdict))
    return f"<verdict-{token}>\n{text}\n</verdict-{token}>"


def graded(body: Mapping[str, Any]) -> str:
    """The answer a rubric request grades (its fence; without fences, after ``Answer to grade:``)."""
    inside = fenced(body, "answer")
    if inside is not None:
        return inside
    return user_text(body).rsplit("Answer to grade:\n", 1)[1]


def pair(body: Mapping[str, Any]) -> tuple[str, str]:
    """The two answers of a pairwise request, in the order shown."""
    first, second = fenced(body, "answer A"), fenced(body, "answer B")
    if first is not None and second is not None:
        return first, second
    match = re.search(r"Answer A:\n(?P<a>.*)\n\nAnswer B:\n(?P<b>.*)\Z", user_text(body), re.DOTALL)
    if match is None:
        raise ValueError("not a pairwise request")
    return match.group("a"), match.group("b")


def listed(body: Mapping[str, Any]) -> dict[str, str]:
    """Label -> answer of a listwise request, in the order shown."""
    names = [name for name in announced(body) if name.startswith("answer ")]
    if names:
        return {name.split(" ", 1)[1]: fenced(body, name) or "" for name in names}
    parts = re.split(r"(?:^|\n\n)Answer ([A-Z]+):\n", user_text(body).split("Task:\n", 1)[1])
    return dict(zip(parts[1::2], parts[2::2]))


def text_completion_body(text: str | None, model: str, finish_reason: str = "stop") -> dict[str, Any]:
    """A ``/v1/completions`` reply in the shape vLLM writes (no reasoning field: its completions
    endpoint has no reasoning parser, so a model's reasoning stays in ``text``)."""
    return {
        "id": "cmpl-scripted",
        "object": "text_completion",
        "created": 0,
        "model": model,
        "choices": [
            {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason, "stop_reason": None}
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def completion_body(content: str | None, model: str, finish_reason: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish_reason,
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


class ScriptedJudge:
    """``with ScriptedJudge(answer) as judge: judge.base_url`` (ends with ``/v1``)."""

    def __init__(self, answer: Answer | None = None, *, latency_s: float = 0.0, model: str = "judge") -> None:
        self.answer: Answer = answer or constant_score()
        self.latency_s = latency_s
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def reset(self) -> None:
        self.requests.clear()
        self.headers.clear()
        self.max_in_flight = self.in_flight

    async def _chat(self, request: web.Request) -> web.Response:
        return await self._serve(request, completion_body)

    async def _complete(self, request: web.Request) -> web.Response:
        return await self._serve(request, text_completion_body)

    async def _serve(
        self, request: web.Request, shape: Callable[[str | None, str, str], dict[str, Any]]
    ) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            reply = self.answer(body)
            if isinstance(reply, str):
                reply = Reply(reply)
            elif not isinstance(reply, Reply):
                reply = Reply(json.dumps(dict(reply)))
            delay = self.latency_s + reply.delay_s
            if delay:
                await asyncio.sleep(delay)
            if reply.drop and request.transport is not None:
                request.transport.close()  # the client reads "server disconnected"
                return web.Response(status=500)  # never sent: the connection is gone
            if reply.body is not None:
                return web.json_response(reply.body, status=reply.status, headers=reply.headers)
            if reply.status != 200:
                error = {"error": {"message": reply.content or "scripted failure", "code": reply.status}}
                return web.json_response(error, status=reply.status, headers=reply.headers)
            return web.json_response(
                shape(reply.content, body.get("model", self.model), reply.finish_reason),
                headers=reply.headers,
            )
        finally:
            self.in_flight -= 1

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": self.model, "object": "model"}]})

    async def _start(self, port: int) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/completions", self._complete)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port, backlog=1024)
        await site.start()
        self.port = self._runner.addresses[0][1]

    def start(self, port: int = 0) -> ScriptedJudge:
        ready = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._start(port))
            except BaseException as error:
                failure.append(error)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())  # type: ignore[union-attr]
            loop.close()

        self._thread = threading.Thread(target=serve, name="scripted-judge", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise failure[0]
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)

    def __enter__(self) -> ScriptedJudge:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="a scripted judge that always answers one score")
    parser.add_argument("--latency-s", type=float, default=0.2, help="seconds before each answer")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--score", type=float, default=7)
    args = parser.parse_args(argv)
    judge = ScriptedJudge(constant_score(args.score), latency_s=args.latency_s).start(args.port)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"READY {judge.base_url}", flush=True)

    def stop_at_end_of_input() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=stop_at_end_of_input, daemon=True).start()
    stop.wait()
    judge.stop()


if __name__ == "__main__":
    main()
