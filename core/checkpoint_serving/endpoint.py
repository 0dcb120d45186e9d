"""The built-in ``endpoint`` strategy: a server someone else runs, checked before use."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from rewardkit.checkpoint_serving.contract import CheckpointRef, ServedModel, wait_for_model
from rewardkit.seam.extensions import ServingStrategySpec
from rewardkit.seam.hookspecs import hookimpl


class EndpointStrategy:
    """An existing OpenAI-compatible server: ``base_url`` serving ``model``, which ``serve`` checks
    that ``/v1/models`` lists. A checkpoint folder, when given and readable here, is hashed into the
    identity; the server is trusted to serve it (an endpoint cannot prove which weights it holds)."""

    name = "endpoint"

    def __init__(
        self, *, base_url: str, model: str, token_env: str | None = None, ready_timeout_s: float = 30.0
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.token_env = token_env
        self.ready_timeout_s = ready_timeout_s

    def settings(self) -> Mapping[str, Any]:
        # the credential's reference is identity; its value never is
        return {"base_url": self.base_url, "model": self.model, "token_env": self.token_env}

    @contextmanager
    def serve(self, checkpoint: str | None = None) -> Iterator[ServedModel]:
        wait_for_model(self.base_url, self.model, token_env=self.token_env, timeout_s=self.ready_timeout_s)
        yield ServedModel(
            base_url=self.base_url,
            model=self.model,
            strategy=self.name,
            checkpoint=CheckpointRef.of(checkpoint) if checkpoint else None,
            settings=self.settings(),
            token_env=self.token_env,
        )


@hookimpl
def register_serving_strategies(register: Callable[[ServingStrategySpec], None]) -> None:
    description = "an existing OpenAI-compatible server (base_url, model, token_env)"
    register(ServingStrategySpec(name="endpoint", factory=EndpointStrategy, description=description))
