"""Tiny checkpoints built here (nothing from a hub), shared by every test of this distribution."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from rewardkit_supervise import session_pids
from rewardkit_vllm.testing import build_lora_adapter, build_tiny_llama


@pytest.fixture(scope="session")
def models(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("models")
    os.environ.setdefault("REWARDKIT_CACHE_DIR", str(root / "hash-cache"))
    base = build_tiny_llama(root / "base")
    found = {
        "base": base,
        "a1": build_lora_adapter(base, root / "a1", seed=1),
        "a2": build_lora_adapter(base, root / "a2", seed=2),
        "big": build_lora_adapter(base, root / "big", seed=3, rank=16),
    }
    missing = root / "missing-shard"
    shutil.copytree(base, missing)
    (missing / "model.safetensors").rename(missing / "model-00001-of-00002.safetensors")
    weight_map = {
        "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
        "lm_head.weight": "model-00002-of-00002.safetensors",
    }
    (missing / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    found["missing-shard"] = missing
    broken = root / "broken-config"
    shutil.copytree(base, broken)
    config = json.loads((broken / "config.json").read_text())
    config["num_attention_heads"] = 7  # does not divide hidden_size: vLLM fails while loading
    (broken / "config.json").write_text(json.dumps(config))
    found["broken-config"] = broken
    return found


def vllm_processes() -> set[str]:
    """``pid: command line`` of every vLLM-looking process on the machine.

    Tests compare the set after with the set before they started, so servers that other work
    on the machine runs meanwhile do not count.
    """
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                raw = Path(f"/proc/{entry}/cmdline").read_bytes()
                state = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
            except OSError:
                continue
            text = raw.replace(b"\0", b" ").decode("utf-8", "replace")
            if state != b"Z" and ("rewardkit_vllm.launch" in text or text.startswith("VLLM::")):
                found.add(f"{entry}: {text[:120]}")
    return found


def assert_gone(session: int) -> None:
    assert session_pids(session) == [], f"processes of the server's session survived: {session_pids(session)}"


def complete(base_url: str, model: str, prompt: str, max_tokens: int = 8) -> str:
    """Greedy completion through the core transport."""
    from rewardkit.transport import HttpClient, run_sync

    async def ask() -> str:
        async with HttpClient(base_url, timeout_s=60) as client:
            body = {
                "model": model,
                "prompt": prompt,
                "max_tokens": max_tokens,
                "temperature": 0,
                "min_tokens": max_tokens,
            }
            answer = await client.post_json("/v1/completions", body)
        return answer["choices"][0]["text"]

    return run_sync(ask)
