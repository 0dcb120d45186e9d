"""The HTTP backends against scripted servers on loopback that score with the real tiny model.

The server here speaks vLLM's ``/classify`` and ``/pooling`` and OpenRLHF's ``/get_reward``,
scoring each sequence alone with ``transformers`` (the model the in-process backend loads), and
can be told to fail: 503 with ``Retry-After``, a 400, answers of the wrong shape, latency, or
no server at all. The real vLLM server is tested in test_reward_model_vllm.py (env vllm).
Needs torch and transformers: runs in tox env ``rm`` (env ``rl`` leaves it out).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# Runs in tox env rm (CPU torch, transformers); env rl leaves this module out, so a missing torch
# here is an import error, never a skip.
import torch
import transformers
from aiohttp import web

from rewardkit.contracts.errors import ProviderError
from rewardkit.seam.catalog import resolve_catalog
from rewardkit_vllm.testing import build_tiny_reward_model

PROMPT = "is the cat good"
COMPLETIONS = [
    "yes",
    "no the cat is bad",
    "maybe the dog is good and the cat is very bad",
    "yes yes yes the cat is the best cat and the dog is the worst dog of all the dogs",
    "one two three",
    "the sun is hot and the moon is cold",
]

Fault = Callable[[str, dict[str, Any]], web.Response | None]


class ScriptedRewardServer:
    """A reward-model server on 127.0.0.1: vLLM's /classify and /pooling, OpenRLHF's /get_reward."""

    def __init__(self, folder: Path) -> None:
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
        self.model = transformers.AutoModelForSequenceClassification.from_pretrained(
            folder, dtype=torch.float32
        ).eval()
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.headers: list[dict[str, str]] = []
        self.faults: list[Fault] = []
        self.latency_s = 0.0
        self.outputs = 1
        # "transformers": read as transformers reads a text alone; "last": as vLLM reads /classify
        self.pooling = "transformers"
        self.in_flight = 0
        self.max_in_flight = 0
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def reset(self) -> None:
        self.requests.clear()
        self.headers.clear()
        self.faults.clear()
        self.latency_s = 0.0
        self.outputs = 1
        self.pooling = "transformers"
        self.max_in_flight = 0

    def score(self, ids: list[int]) -> float:
        with torch.no_grad():
            return float(self.model(torch.tensor([ids])).logits[0, 0])

    def score_last_token(self, ids: list[int]) -> float:
        """vLLM's pooler for a decoder classifier: the head at the last token of the input as sent."""
        with torch.no_grad():
            hidden = self.model.model(torch.tensor([ids])).last_hidden_state
            return float(self.model.score(hidden[:, -1])[0, 0])

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        path = request.path
        self.requests.append((path, body))
        self.headers.append(dict(request.headers))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.latency_s:
                await asyncio.sleep(self.latency_s)
            if self.faults:
                reply = self.faults.pop(0)(path, body)
                if reply is not None:
                    return reply
            if path == "/get_reward":
                texts = body["query"]
                rewards = [
                    self.score(self.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts
                ]
                return web.json_response({"rewards": rewards, "scores": rewards, "extra_logs": {}})
            assert body["use_activation"] is False and body["add_special_tokens"] is False
            data = []
            for index, ids in enumerate(body["input"]):
                read = self.score_last_token if self.pooling == "last" else self.score
                values = [read(ids)] * self.outputs
                if path == "/classify":
                    data.append({"index": index, "label": "LABEL_0", "probs": values, "num_classes": 1})
                else:
                    assert body["task"] == "classify"
                    data.append({"index": index, "object": "pooling", "data": values})
            data.reverse()  # answers are matched by index, not by position
            return web.json_response({"model": body.get("model", "rm"), "data": data, "usage": {}})
        finally:
            self.in_flight -= 1

    async def _start(self) -> None:
        app = web.Application()
        for path in ("/classify", "/pooling", "/get_reward"):
            app.router.add_post(path, self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    def start(self) -> ScriptedRewardServer:
        ready = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            loop.run_until_complete(self._start())
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())  # type: ignore[union-attr]
            loop.close()

        self._thread = threading.Thread(target=serve, name="scripted-rm", daemon=True)
        self._thread.start()
        ready.wait(60)
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rm-remote")
    os.environ.setdefault("REWARDKIT_CACHE_DIR", str(root / "hash-cache"))
    return build_tiny_reward_model(root / "a", seed=0)


@pytest.fixture(scope="module")
def server(folder: Path):
    scripted = ScriptedRewardServer(folder).start()
    yield scripted
    scripted.stop()


@pytest.fixture
def fresh(server: ScriptedRewardServer) -> ScriptedRewardServer:
    server.reset()
    return server


def rollouts(completions: list[str]) -> list[dict[str, Any]]:
    return [
        {"trajectory_id": f"t{i}", "completion": text, "prompt": PROMPT} for i, text in enumerate(completions)
    ]


def bind(folder: Path, **params: Any) -> Any:
    return resolve_catalog().bind("reward-model", {"model": str(folder), **params})


def scores(bound: Any, completions: list[str] = COMPLETIONS) -> list[float]:
    result = bound.score_group("g", rollouts(completions))
    assert all(item.result.status == "scored" for item in result.items), result
    return [item.result.terms["score"] for item in result.items]


def remote(folder: Path, server: ScriptedRewardServer, backend: str, **params: Any) -> Any:
    return bind(folder, backend=backend, base_url=server.base_url, **params)


@pytest.mark.parametrize("backend", ["vllm-classify", "vllm-pooling", "openrlhf"])
@pytest.mark.parametrize("truncation", [None, "left", "right"])
def test_every_backend_agrees_with_the_local_model(folder, fresh, backend, truncation):
    cut = {"max_tokens": 12, "truncation": truncation} if truncation else {}
    local = scores(bind(folder, **cut))
    got = scores(remote(folder, fresh, backend, **cut))
    assert got == pytest.approx(local, abs=1e-4)
    assert fresh.requests, "the server was asked"


def test_requests_hold_at_most_the_token_budget_and_respect_concurrency(folder, fresh):
    fresh.latency_s = 0.05
    bound = remote(folder, fresh, "vllm-classify", batch_tokens=64, concurrency=2)
    texts = COMPLETIONS * 3
    assert scores(bound, texts) == pytest.approx(scores(bind(folder), texts), abs=1e-4)
    assert len(fresh.requests) > 1, "split into micro-batches"
    for _, body in fresh.requests:
        longest = max(len(ids) for ids in body["input"])
        assert len(body["input"]) * longest <= 64 or len(body["input"]) == 1
    # each distinct completion is asked once: reward-model declares cacheable (equal answers share)
    assert sum(len(body["input"]) for _, body in fresh.requests) == len(set(texts))
    assert fresh.max_in_flight <= 2


def test_served_model_name_and_bearer_token_are_sent_and_the_token_never_shown(folder, fresh, monkeypatch):
    monkeypatch.setenv("RM_TOKEN", "s3cret-value")
    bound = remote(folder, fresh, "vllm-classify", served_model="rm", api_key_env="RM_TOKEN")
    scores(bound, ["yes"])
    assert fresh.requests[-1][1]["model"] == "rm"
    assert fresh.headers[-1]["Authorization"] == "Bearer s3cret-value"
    fresh.faults.append(lambda path, body: web.json_response({"error": "bad"}, status=400))
    with pytest.raises(ProviderError) as failed:
        scores(bound, ["yes"])
    assert "s3cret-value" not in str(failed.value)


def test_a_503_with_retry_after_is_retried(folder, fresh):
    busy = web.json_response({"error": "busy"}, status=503, headers={"Retry-After": "0"})
    fresh.faults.extend([lambda path, body: busy, lambda path, body: busy])
    got = scores(remote(folder, fresh, "vllm-classify"), ["yes"])
    assert got == pytest.approx(scores(bind(folder), ["yes"]), abs=1e-4)
    assert len(fresh.requests) == 3


def test_a_400_is_not_retried_and_the_error_carries_what_the_server_said(folder, fresh):
    refusal = web.json_response(
        {"error": {"message": "This model's maximum context length is 8"}}, status=400
    )
    fresh.faults.append(lambda path, body: refusal)
    with pytest.raises(ProviderError, match=r"answered 400.*maximum context length is 8"):
        scores(remote(folder, fresh, "vllm-classify"), ["yes"])
    assert len(fresh.requests) == 1


def test_a_model_with_more_than_one_output_is_refused(folder, fresh):
    fresh.outputs = 2
    with pytest.raises(ProviderError, match="gives 2 outputs per sequence"):
        scores(remote(folder, fresh, "vllm-classify"), ["yes"])


def test_a_wrong_number_of_rewards_is_refused(folder, fresh):
    fresh.faults.append(lambda path, body: web.json_response({"rewards": [0.5]}))
    with pytest.raises(ProviderError, match="without a list of 2 rewards"):
        scores(remote(folder, fresh, "openrlhf"), ["yes", "no"])


def test_a_slow_server_fails_at_the_request_timeout(folder, fresh):
    fresh.latency_s = 30.0
    bound = remote(folder, fresh, "vllm-classify", timeout_s=0.5, retries=0)
    with pytest.raises(ProviderError, match=r"no answer within 0\.5 s"):
        scores(bound, ["yes"])


def test_no_server_is_an_error_naming_the_url(folder):
    closed = ScriptedRewardServer.__new__(ScriptedRewardServer)
    closed.port = _unused_port()
    bound = remote(folder, closed, "vllm-classify", retries=1)
    with pytest.raises(ProviderError, match=rf"127\.0\.0\.1:{closed.port}/classify.*(Connect|connect)"):
        scores(bound, ["yes"])


def _unused_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_vllm_reading_the_last_token_sent_gets_transformers_score_when_pad_is_eos(tmp_path):
    # TRL saves pad == eos for tokenizers without a pad token, and the chat template ends the text
    # with eos. transformers reads such a classifier before the trailing eos; vLLM reads the last
    # token it is sent, so rewardkit sends the ids up to transformers' position
    eos_folder = build_tiny_reward_model(tmp_path / "eos", seed=3, pad="eos")
    scripted = ScriptedRewardServer(eos_folder).start()
    try:
        scripted.pooling = "last"
        eos = scripted.tokenizer.eos_token_id
        assert scripted.model.config.pad_token_id == eos
        local = scores(bind(eos_folder))
        for backend in ("vllm-classify", "vllm-pooling"):
            scripted.requests.clear()
            assert scores(remote(eos_folder, scripted, backend)) == pytest.approx(local, abs=1e-4), backend
            sent = [ids for _, body in scripted.requests for ids in body["input"]]
            assert len(sent) == len(COMPLETIONS) and all(ids[-1] != eos for ids in sent)
        # what the model reads is unchanged: the chat text ends with eos, and only that run is not sent
        full = scripted.tokenizer.apply_chat_template(
            [{"role": "user", "content": PROMPT}, {"role": "assistant", "content": "yes"}], tokenize=False
        )
        ids = scripted.tokenizer(full, add_special_tokens=False)["input_ids"]
        assert ids[-1] == eos and sorted(sent, key=len)[0] == ids[:-1]
        assert scripted.score(ids) == pytest.approx(scripted.score_last_token(ids[:-1]), abs=1e-5)
        assert abs(scripted.score(ids) - scripted.score_last_token(ids)) > 1e-3, "the eos position differs"
    finally:
        scripted.stop()


@pytest.mark.parametrize(
    ("architecture", "model_type", "backend", "cut"),
    [
        ("LlamaForSequenceClassification", "llama", "vllm-classify", 3),
        ("LlamaForSequenceClassification", "llama", "vllm-pooling", 3),
        # OpenRLHF tokenizes and reads by itself; an encoder reads every token it is sent
        ("LlamaForSequenceClassification", "llama", "openrlhf", None),
        ("BertForSequenceClassification", "bert", "vllm-classify", None),
        ("DebertaV2ForSequenceClassification", "deberta-v2", "vllm-classify", None),
    ],
)
def test_only_a_decoder_classifier_has_its_trailing_pad_run_left_unsent(
    tmp_path, architecture, model_type, backend, cut
):
    from types import SimpleNamespace

    from rewardkit_rl.reward_models.remote import decoder_classifier_pad

    config = {"architectures": [architecture], "model_type": model_type, "pad_token_id": 3, "num_labels": 1}
    (tmp_path / "config.json").write_text(json.dumps(config))
    settings = SimpleNamespace(
        backend=backend, model=str(tmp_path), facts=SimpleNamespace(kind="sequence-classification")
    )
    assert decoder_classifier_pad(settings) == cut  # type: ignore[arg-type]
