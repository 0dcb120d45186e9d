"""A reference implementation of the media reward service protocol, with fault injection.

For tests and benchmarks: an aiohttp server on loopback, run in a background thread, that speaks
the protocol ``rewardkit_media.service`` is written against (as the Cosmos-RL reward service
0.4.7 does) and can misbehave on demand. It counts every enqueue it receives (so a test can
show a sample is enqueued exactly once whatever goes wrong), records the ``Authorization``
headers, and scores a sample with ``brightness``: the mean pixel value / 255, plus the key's
position in its reward type's key list (so every key has its own, predictable value).

Pull faults are scripted per task: ``pull_script`` is consumed one entry per pull, then the task
answers pending ``pending_polls`` times (legacy 400 or 202, as ``pending_style`` says), then its
scores. Entries: an int status (500, 503, 429, 401...) answered with a JSON error, ``"drop"``
(close the connection), ``"pending"`` (the legacy 400), ``"pending202"``, ``"wrong202"`` (a 202
for another uuid), ``"running202"`` (a 202 whose status is not pending), ``"bad400"`` (a 400
with another message) and ``"slow"`` (wait ``slow_s``, then pending). ``never_ready`` keeps
every task pending forever, as a task that failed remotely does.

``python -m rewardkit_media.testing --port 0`` serves it alone and prints its URL (benchmarks
run it in another process so that its memory is not counted as the client's).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import threading
import uuid as uuid_module
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from aiohttp import web

ENQUEUE_PATH = "/api/reward/enqueue"
PULL_PATH = "/api/reward/pull"


def brightness(sample: np.ndarray) -> float:
    """The reference score: mean pixel value / 255 (float64)."""
    return float(np.asarray(sample, dtype=np.float64).mean() / 255.0)


@dataclass
class Faults:
    """How the server misbehaves; change fields between requests (tests run one at a time)."""

    pending_polls: int = 0
    pending_style: str = "legacy400"  # or "202"
    pull_script: list[Any] = field(default_factory=list)
    never_ready: bool = False
    slow_s: float = 0.0
    enqueue_delay_s: float = 0.0
    drop_after_enqueue: bool = False
    enqueue_status: int = 200
    enqueue_answer: Any = None  # replaces {"uuid": ...} when set
    score_answer: Callable[[str, str, dict[str, Any]], Any] | None = None  # (uuid, type, normal) -> body


@dataclass
class Task:
    uuid: str
    metadata: dict[str, Any]
    scores: dict[str, dict[str, float]]
    script: list[Any]
    pending_left: int
    body_bytes: int


class ReferenceMediaService:
    """``with ReferenceMediaService(keys={"dance_grpo": ["overall_reward"]}) as service: ...``.

    ``keep_payload=False`` only counts the body's bytes (for large benchmark uploads) and scores 0.
    """

    def __init__(
        self,
        keys: Mapping[str, Sequence[str]],
        *,
        faults: Faults | None = None,
        keep_payload: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.keys = {name: list(values) for name, values in keys.items()}
        self.faults = faults or Faults()
        self.keep_payload = keep_payload
        self.host = host
        self.port = port
        self.enqueue_count = 0
        self.pulls: list[tuple[str, str]] = []
        self.authorizations: list[str | None] = []
        self.tasks: dict[str, Task] = {}
        self.samples: list[np.ndarray] = []
        self.headers: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None

    # -- URLs ------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def enqueue_url(self) -> str:
        return self.url + ENQUEUE_PATH

    @property
    def pull_url(self) -> str:
        return self.url + PULL_PATH

    # -- handlers --------------------------------------------------------------------------------

    async def _enqueue(self, request: web.Request) -> web.StreamResponse:
        faults = self.faults
        self.authorizations.append(request.headers.get("Authorization"))
        with self._lock:
            self.enqueue_count += 1
        header, sample, size = await self._read_body(request)
        task_id = str(uuid_module.uuid4())
        scores = self._score(header, sample)
        with self._lock:
            self.tasks[task_id] = Task(
                task_id, header, scores, list(faults.pull_script), faults.pending_polls, size
            )
            self.headers.append(header)
            if sample is not None:
                self.samples.append(sample)
        if faults.enqueue_delay_s:
            await asyncio.sleep(faults.enqueue_delay_s)
        if faults.drop_after_enqueue:  # the task is queued, the caller never learns its uuid
            assert request.transport is not None
            request.transport.close()
            return web.Response(status=200)
        if faults.enqueue_status != 200:
            return web.json_response({"detail": "injected failure"}, status=faults.enqueue_status)
        answer = faults.enqueue_answer if faults.enqueue_answer is not None else {"uuid": task_id}
        return web.json_response(answer)

    async def _read_body(self, request: web.Request) -> tuple[dict[str, Any], np.ndarray | None, int]:
        if not self.keep_payload:
            first = await request.content.readline()
            size = len(first)
            while chunk := await request.content.read(1 << 20):
                size += len(chunk)
            return _header(first), None, size
        body = await request.read()
        line, _, payload = body.partition(b"\n")
        sample = np.load(io.BytesIO(payload), allow_pickle=False)
        return _header(line), sample, len(body)

    def _score(self, header: dict[str, Any], sample: np.ndarray | None) -> dict[str, dict[str, float]]:
        value = brightness(sample) if sample is not None else 0.0
        wanted = header.get("reward_fn") or {}
        return {
            reward_type: {key: value + index for index, key in enumerate(self.keys.get(reward_type, []))}
            for reward_type in wanted
            if reward_type in self.keys
        }

    async def _pull(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        task_id = str(form.get("uuid", ""))
        reward_type = str(form.get("type", "dance_grpo"))
        self.authorizations.append(request.headers.get("Authorization"))
        with self._lock:
            self.pulls.append((task_id, reward_type))
            task = self.tasks.get(task_id)
        faults = self.faults
        legacy = web.json_response({"message": f"Not found scores for {task_id}"}, status=400)
        if task is None or reward_type not in task.scores:
            return legacy
        if task.script:
            action = task.script.pop(0)
            if isinstance(action, int):
                return web.json_response({"message": f"injected {action}"}, status=action)
            if action == "drop":
                assert request.transport is not None
                request.transport.close()
                return web.Response(status=200)
            if action == "pending":
                return legacy
            if action == "pending202":
                return web.json_response({"uuid": task_id, "status": "pending"}, status=202)
            if action == "running202":
                return web.json_response({"uuid": task_id, "status": "running"}, status=202)
            if action == "wrong202":
                return web.json_response({"uuid": str(uuid_module.uuid4()), "status": "pending"}, status=202)
            if action == "bad400":
                return web.json_response({"message": "Bad request: reward_fn missing"}, status=400)
            if action == "slow":
                await asyncio.sleep(faults.slow_s)
                return legacy
            raise ValueError(f"unknown pull_script entry {action!r}")
        if faults.never_ready or task.pending_left > 0:
            task.pending_left -= 1
            if faults.pending_style == "202":
                return web.json_response({"uuid": task_id, "status": "pending"}, status=202)
            return legacy
        normal = {
            "scores": {key: [value] for key, value in task.scores[reward_type].items()},
            "input_info": {"shape": list(task.metadata.get("shape", []))},
            "duration": "0.00",
            "type": reward_type,
        }
        if faults.score_answer is not None:
            return web.Response(
                text=json.dumps(faults.score_answer(task_id, reward_type, normal)),
                content_type="application/json",
            )
        return web.json_response(normal)

    # -- lifecycle -------------------------------------------------------------------------------

    def _app(self) -> web.Application:
        app = web.Application(client_max_size=1 << 40)
        app.router.add_post(ENQUEUE_PATH, self._enqueue)
        app.router.add_post(PULL_PATH, self._pull)
        return app

    async def _start(self) -> None:
        # a handler injecting a slow answer must not hold up the server's stop
        self._runner = web.AppRunner(self._app(), access_log=None, shutdown_timeout=0.2)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        try:
            loop.run_until_complete(self._start())
        except BaseException as error:
            self._failure = error
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            assert self._runner is not None
            loop.run_until_complete(self._runner.cleanup())
            pending = asyncio.all_tasks(loop)  # handlers still sleeping on an injected delay
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

    def start(self) -> ReferenceMediaService:
        self._thread = threading.Thread(target=self._serve, name="reference-media-service", daemon=True)
        self._thread.start()
        self._ready.wait(30)
        if self._failure is not None:
            raise self._failure
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(30)
            self._thread = None

    def __enter__(self) -> ReferenceMediaService:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _header(line: bytes) -> dict[str, Any]:
    document = json.loads(line)
    if not isinstance(document, dict):
        raise ValueError("the first line of an enqueue body must be a JSON object")
    return document


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="serve the reference media reward service on loopback")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--keys", default='{"dance_grpo": ["overall_reward"]}', help="JSON: type -> keys")
    parser.add_argument("--count-only", action="store_true", help="count body bytes, keep nothing")
    args = parser.parse_args(argv)
    service = ReferenceMediaService(json.loads(args.keys), keep_payload=not args.count_only, port=args.port)
    service.start()
    print(service.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        service.stop()


if __name__ == "__main__":
    main()
