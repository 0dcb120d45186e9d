"""Asking a served checkpoint for completions: OpenAI-compatible, bounded, inside a deadline."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.config import GenerationConfig
from rewardkit.errors import RewardkitError
from rewardkit.serving import ServedModel
from rewardkit.transport import HttpClient, run_sync


@dataclass(frozen=True)
class Record:
    record_id: str
    prompt: Any
    reference: Any
    cluster: str | None


@dataclass(frozen=True)
class Generated:
    record: Record
    texts: tuple[str, ...]
    finish_reasons: tuple[str | None, ...]


def _request(settings: GenerationConfig, model: str, prompt: Any) -> tuple[str, dict[str, Any]]:
    body: dict[str, Any] = {
        "model": model,
        "n": settings.n,
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "max_tokens": settings.max_tokens,
    }
    if settings.seed is not None:
        body["seed"] = settings.seed
    if settings.mode == "chat":
        messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": str(prompt)}]
        return "/v1/chat/completions", {**body, "messages": messages}
    if not isinstance(prompt, str):
        raise RewardkitError(
            f"completions mode needs a text prompt, got {type(prompt).__name__}; use mode: chat"
        )
    return "/v1/completions", {**body, "prompt": prompt}


def _choices(answer: Any, settings: GenerationConfig, record: Record) -> Generated:
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if not isinstance(choices, list) or len(choices) != settings.n:
        raise RewardkitError(f"record {record.record_id}: expected {settings.n} choices, got {answer!r:.200}")
    texts, reasons = [], []
    for choice in sorted(choices, key=lambda item: item.get("index", 0)):
        text = choice["message"]["content"] if settings.mode == "chat" else choice.get("text")
        if not isinstance(text, str):
            raise RewardkitError(f"record {record.record_id}: a choice without text: {choice!r:.200}")
        texts.append(text)
        reasons.append(choice.get("finish_reason"))
    return Generated(record, tuple(texts), tuple(reasons))


def generate(
    served: ServedModel,
    records: Sequence[Record],
    settings: GenerationConfig,
    progress: Callable[[int], None] | None = None,
) -> list[Generated]:
    """``settings.n`` completions per record, at most ``settings.concurrency`` requests in flight."""
    deadline = time.monotonic() + settings.deadline_s

    async def run() -> list[Generated]:
        limit = asyncio.Semaphore(settings.concurrency)
        async with HttpClient(
            served.base_url,
            token_env=served.token_env,
            timeout_s=settings.timeout_s,
            max_connections=settings.concurrency,
        ) as client:

            async def one(record: Record) -> Generated:
                path, body = _request(settings, served.model, record.prompt)
                async with limit:
                    answer = (await client.request("POST", path, json_body=body, deadline=deadline)).json()
                if progress is not None:
                    progress(1)
                return _choices(answer, settings, record)

            return list(await asyncio.gather(*(one(record) for record in records)))

    return run_sync(run)
