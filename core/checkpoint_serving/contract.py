"""What a serving strategy yields (``docs/serving.md``), and the readiness check every strategy shares.

``ServedModel.identity()`` is what a run records: two runs with equal identities evaluated the same
bytes (the checkpoint folder's streamed SHA-256; its path is recorded, not hashed) served the same way."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from rewardkit.artifacts import folder_identity
from rewardkit.contracts.errors import RewardkitError
from rewardkit.contracts.identity import canonical_json


@dataclass(frozen=True)
class CheckpointRef:
    """A checkpoint folder by content: ``sha256`` of its files, ``path`` where it was read."""

    path: str
    sha256: str

    @classmethod
    def of(cls, folder: str) -> CheckpointRef:
        found = folder_identity(folder)
        return cls(found.path, found.sha256)


@dataclass(frozen=True)
class ServedModel:
    base_url: str
    model: str
    strategy: str
    checkpoint: CheckpointRef | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    token_env: str | None = None

    def identity(self) -> dict[str, Any]:
        """JSON-ready identity: the strategy, its settings and the checkpoint (hash and path)."""
        return {
            "strategy": self.strategy,
            "settings": dict(self.settings),
            "checkpoint_sha256": self.checkpoint.sha256 if self.checkpoint else None,
            "checkpoint_path": self.checkpoint.path if self.checkpoint else None,
        }

    def identity_hash(self) -> str:
        """SHA-256 of the identity without the path (the same bytes elsewhere hash the same)."""
        body = {key: value for key, value in self.identity().items() if key != "checkpoint_path"}
        return hashlib.sha256(canonical_json(body).encode()).hexdigest()


class ServingStrategy(Protocol):
    """What a serving strategy's factory returns."""

    name: str

    def settings(self) -> Mapping[str, Any]:
        """The strategy's own settings (server args...): part of every served model's identity."""

    def serve(self, checkpoint: str | None) -> AbstractContextManager[ServedModel]:
        """Serve ``checkpoint`` (a folder, or None for the strategy's base model) for the block."""


def list_models(base_url: str, token_env: str | None = None, timeout_s: float = 10.0) -> list[str]:
    """The model ids ``GET /v1/models`` lists (one try, ``timeout_s``)."""
    # imported here: plugin loading imports this module, and aiohttp costs start-up time
    from rewardkit.transport import HttpClient, run_sync

    async def ask() -> list[str]:
        async with HttpClient(base_url, token_env=token_env, timeout_s=timeout_s) as client:
            answer = await client.get_json("/v1/models", retry=False)
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list):
            raise RewardkitError(f"{base_url}/v1/models did not answer an OpenAI model list: {answer!r:.200}")
        return [str(item.get("id")) for item in data if isinstance(item, dict)]

    return run_sync(ask)


def wait_for_model(
    base_url: str, model: str, *, token_env: str | None = None, timeout_s: float = 30.0
) -> None:
    """Wait until ``/v1/models`` at ``base_url`` lists ``model``; raise naming what it lists instead."""
    deadline = time.monotonic() + timeout_s
    last: str = "no answer"
    while True:
        try:
            listed = list_models(
                base_url, token_env, timeout_s=min(10.0, max(0.5, deadline - time.monotonic()))
            )
        except RewardkitError as error:  # HttpError is one
            last = str(error)
        else:
            if model in listed:
                return
            last = f"it lists {listed}"
        if time.monotonic() > deadline:
            raise RewardkitError(f"model {model!r} is not served at {base_url} after {timeout_s:g} s: {last}")
        time.sleep(0.5)
