"""Asking a served checkpoint for completions: OpenAI-compatible, bounded, inside a deadline."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.plugin import HttpClient, RewardkitError, ServedModel, run_sync
from rewardkit_checkpoints.section import GenerationConfig


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


def prompt_problem(prompt: Any, mode: str) -> str | None:
    """Why ``prompt`` cannot be sent in ``mode`` (``None`` when it can).

    Chat mode sends a list of messages as it is (the form TRL hands a conversational prompt to the
    reward) and wraps a text prompt in one user message; completions mode sends text only.
    """
    if mode == "completions":
        if isinstance(prompt, str):
            return None
        shape = "chat messages" if isinstance(prompt, list) else type(prompt).__name__
        return (
            f"the prompt is {shape}, but checkpoints.generation.mode is completions, which sends text; "
            "set checkpoints.generation.mode=chat"
        )
    if isinstance(prompt, str):
        return None
    if not isinstance(prompt, list) or not prompt:
        return f"a chat prompt is text or a non-empty list of messages, not {type(prompt).__name__}"
    for position, message in enumerate(prompt):
        if (
            not isinstance(message, dict)
            or not isinstance(message.get("role"), str)
            or "content" not in message
        ):
            return f"message {position} of the prompt is not a {{'role': ..., 'content': ...}} mapping"
    return None


def _request(settings: GenerationConfig, model: str, record: Record) -> tuple[str, dict[str, Any]]:
    problem = prompt_problem(record.prompt, settings.mode)
    if problem is not None:
        raise RewardkitError(f"record {record.record_id}: {problem}")
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
        prompt = record.prompt
        messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
        return "/v1/chat/completions", {**body, "messages": messages}
    return "/v1/completions", {**body, "prompt": record.prompt}


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
                path, body = _request(settings, served.model, record)
                async with limit:
                    answer = (await client.request("POST", path, json_body=body, deadline=deadline)).json()
                if progress is not None:
                    progress(1)
                return _choices(answer, settings, record)

            return list(await asyncio.gather(*(one(record) for record in records)))

    return run_sync(run)
