"""A scripted OpenAI-compatible server (real HTTP on 127.0.0.1) and a checkpoint folder writer."""

from __future__ import annotations

import asyncio
import json
import random
import threading
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web


def chat_reply(question: str, index: int) -> str:
    """What the scripted chat endpoint answers as choice ``index`` to a last message ``question``."""
    return f"answer {index} to {question}"


@dataclass
class ScriptedModels:
    """Answers "a+b" prompts: right with probability ``accuracy``; 500s while ``failing``.

    The chat endpoint answers ``chat_reply(last message content, index)`` and keeps the messages of
    every request in ``chat_messages``.
    """

    accuracy: float = 0.7
    failing: bool = False
    requests: int = 0
    models: tuple[str, ...] = ("tiny",)
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    chat_messages: list[list[dict]] = field(default_factory=list)

    async def list_models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": name} for name in self.models]})

    async def completions(self, request: web.Request) -> web.Response:
        self.requests += 1
        if self.failing:
            return web.json_response({"error": "engine died"}, status=500)
        body = await request.json()
        a, b = (int(part) for part in body["prompt"].split("+"))
        choices = []
        for index in range(body.get("n", 1)):
            right = self.rng.random() < self.accuracy
            choices.append(
                {"index": index, "text": str(a + b if right else a + b + 1), "finish_reason": "stop"}
            )
        return web.json_response({"choices": choices})

    async def chat(self, request: web.Request) -> web.Response:
        self.requests += 1
        if self.failing:
            return web.json_response({"error": "engine died"}, status=500)
        body = await request.json()
        self.chat_messages.append(body["messages"])
        question = body["messages"][-1]["content"]
        choices = [
            {
                "index": index,
                "message": {"role": "assistant", "content": chat_reply(question, index)},
                "finish_reason": "stop",
            }
            for index in range(body.get("n", 1))
        ]
        return web.json_response({"choices": choices})


class ServerThread:
    def __init__(self, script: ScriptedModels) -> None:
        self.script = script
        self.ready = threading.Event()
        self.url = ""
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        self.loop = asyncio.new_event_loop()
        app = web.Application()
        app.router.add_get("/v1/models", self.script.list_models)
        app.router.add_post("/v1/completions", self.script.completions)
        app.router.add_post("/v1/chat/completions", self.script.chat)
        runner = web.AppRunner(app)
        self.loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        self.ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(runner.cleanup())

    def __enter__(self) -> ServerThread:
        self.thread.start()
        self.ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def write_prompts(path: Path, count: int = 60, clusters: int = 6) -> Path:
    with open(path, "w", encoding="utf-8") as out:
        for index in range(count):
            a, b = index, 2 * index + 1
            row = {
                "id": f"r{index}",
                "prompt": f"{a}+{b}",
                "answer": str(a + b),
                "topic": f"c{index % clusters}",
            }
            out.write(json.dumps(row) + "\n")
    return path


def write_checkpoint(root: Path, step: int, *, marker: bool = True, prefix: str = "checkpoint-") -> Path:
    """A Hugging Face-format folder written the way Trainer does: weights first, trainer_state last."""
    folder = root / f"{prefix}{step}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"step": step}))
    (folder / "model.safetensors").write_bytes(step.to_bytes(8, "little") * 64)
    if marker:
        (folder / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    return folder
