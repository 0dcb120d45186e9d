"""The real Cosmos-RL reward service (cosmos-rl 0.4.7), started once for the session, on loopback.

``COSMOS_RL_SOURCE`` names the unpacked sdist (the tox env's ``fetch.py`` puts it there). The
harness builds its run-time shim in a temporary folder: an empty ``cosmos_rl`` package holding
the few ``cosmos_rl/utils`` modules the service imports (copied from the sdist at run time, so the
trainer and its CUDA dependencies are never installed), plus this repository's own hooks
(``../hooks``: CPU shared memory instead of CUDA, loopback bind, the test handlers). It starts
``cosmos-rl-reward`` under ``ProcessTree`` with an in-process score store (``redis_port = 0``),
waits until a warm-up score comes back, and at the end stops every process of the session and
checks that none is left and that no shared-memory segment of the service remains.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cosmos_harness import IMAGE_TYPE, TOKEN_ENV, VIDEO_TYPE

from rewardkit.transport import run_sync
from rewardkit_media.service import MediaServiceClient
from rewardkit_supervise import ProcessTree, session_pids

HOOKS = Path(__file__).resolve().parent.parent / "hooks"
UTILS = (
    "__init__",
    "network_util",
    "redis_stream",
    "constant",
    "logging",
    "teacher_channel",
    "redis_publication",
)
SHARED_BYTES = 64 << 20  # the service's decoded-tensor buffer (its default is 1 GiB)


class CosmosService:
    def __init__(self, url: str, tree: ProcessTree, segments: set[str]) -> None:
        self.url = url
        self.tree = tree
        self.segments = segments

    @property
    def enqueue_url(self) -> str:
        return self.url + "/api/reward/enqueue"

    @property
    def pull_url(self) -> str:
        return self.url + "/api/reward/pull"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _shim(source: Path, folder: Path) -> Path:
    package = folder / "cosmos_rl"
    (package / "utils").mkdir(parents=True)
    (package / "__init__.py").write_text("")  # not the trainer: only the utils the service imports
    for name in UTILS:
        origin = source / "cosmos_rl" / "utils" / f"{name}.py"
        target = package / "utils" / f"{name}.py"
        if name == "__init__":
            target.write_text("")
        else:
            shutil.copyfile(origin, target)
    return folder


def _config(folder: Path, port: int) -> Path:
    path = folder / "rewards.toml"
    rewards = "".join(
        f'\n[[reward_args]]\nreward_type = "{name}"\nvenv_python = "{sys.executable}"\n'
        'device = "cpu"\ndtype = "float32"\nmodel_path = ""\ndownload_path = ""\nenable = true\n'
        for name in (VIDEO_TYPE, IMAGE_TYPE)
    )
    path.write_text(f'host = "127.0.0.1"\nport = {port}\nredis_port = 0\n{rewards}')
    return path


def _warm_up(url: str) -> bool:
    client = MediaServiceClient(
        enqueue_url=url + "/api/reward/enqueue",
        pull_url=url + "/api/reward/pull",
        token_env=TOKEN_ENV,
        reward_types={VIDEO_TYPE: ["overall_reward"]},
        poll_interval_s=0.05,
        max_poll_interval_s=0.5,
        enqueue_timeout_s=5.0,
        pull_timeout_s=5.0,
    )
    sample = np.full((1, 3, 2, 4, 4), 51, dtype=np.uint8)
    metadata = {"media_type": "video", "video_infos": [{"video_fps": 8.0}], "prompts": ["warm-up"]}
    scored = run_sync(lambda: client.score(sample, metadata, time.monotonic() + 20.0))
    return abs(scored.scores["overall_reward"] - 0.2) < 1e-9


@pytest.fixture(scope="session", autouse=True)
def token():
    os.environ[TOKEN_ENV] = "cosmos-test-token-never-checked-by-the-service"
    yield


@pytest.fixture(scope="session")
def cosmos(tmp_path_factory) -> CosmosService:
    source = os.environ.get("COSMOS_RL_SOURCE")
    if not source or not Path(source, "cosmos_rl", "utils", "network_util.py").exists():
        pytest.fail(
            "COSMOS_RL_SOURCE must name the unpacked cosmos-rl 0.4.7 sdist (run through tox -e cosmos)"
        )
    folder = tmp_path_factory.mktemp("cosmos")
    shim = _shim(Path(source), folder / "shim")
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HOOKS), str(shim)]),
        "RK_COSMOS_HOOKS": "1",
        "COSMOS_RL_REWARD_SHMEM_CUDA_MAXBYTES": str(SHARED_BYTES),
        "PYTHONUNBUFFERED": "1",
    }
    launcher = Path(sys.executable).parent / "cosmos-rl-reward"
    tree = ProcessTree(
        [str(launcher), "--config", str(_config(folder, port))],
        log_path=folder / "service.log",
        env=env,
        cwd=folder,
        name="cosmos-rl-reward",
        grace_s=10.0,
    )
    tree.start()
    url = f"http://127.0.0.1:{port}"
    try:
        tree.wait_ready(lambda: _bound_url(tree) is not None and _warm_up(_bound_url(tree)), timeout_s=180.0)
        url = _bound_url(tree) or url
        service = CosmosService(url, tree, set())
        yield service
    finally:
        log = tree.log_path.read_text(errors="replace") if tree.log_path.exists() else ""
        tree.stop()
        segments = set(re.findall(r"--shm (\S+)", log))
        segments |= {"rkcosmos_" + name.lstrip("/") for name in segments}
        left = session_pids(tree.pid)
        remaining = sorted(name for name in segments if Path("/dev/shm", name.lstrip("/")).exists())
        assert not left, f"service processes left after stop: {left}"
        assert segments, "the log names no shared-memory segment: the harness could not check /dev/shm"
        assert not remaining, f"shared memory left in /dev/shm: {remaining}"


def _bound_url(tree: ProcessTree) -> str | None:
    """The address uvicorn reports it bound (a configured port is only a preference)."""
    found = re.findall(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", tree.log_tail(400))
    return found[-1] if found else None
