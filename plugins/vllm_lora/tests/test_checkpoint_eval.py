"""Checkpoint evaluation end to end on real vLLM servers: vllm-serve and vllm-lora runs.

A tiny random Llama is "trained" here into three full checkpoints (perturbed weights, written
the way transformers' Trainer writes them, trainer_state.json last) and three LoRA adapter
checkpoints (peft). The watcher serves each, generates, scores with a real provider, compares
with the base and draws the curve; no server process is left afterwards.
"""

from __future__ import annotations

import json
import struct

import pytest
from conftest import vllm_processes

from rewardkit.config import load_config
from rewardkit.scoring.reward import load
from rewardkit_checkpoints.curve import curve_rows, plot_curve
from rewardkit_checkpoints.watcher import Watcher
from rewardkit_vllm.testing import WORDS, build_lora_adapter, build_tiny_llama


def _perturbed_checkpoint(base, folder, step):
    import torch
    from transformers import AutoTokenizer, LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(base, torch_dtype=torch.float32)
    torch.manual_seed(step)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.02)
    model.save_pretrained(folder, safe_serialization=True)
    AutoTokenizer.from_pretrained(base).save_pretrained(folder)
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": step}))


def _prompts(path):
    with open(path, "w", encoding="utf-8") as out:
        for index in range(8):
            row = {
                "id": f"p{index}",
                "prompt": " ".join(WORDS[index : index + 3]),
                "cluster": f"c{index % 4}",
            }
            out.write(json.dumps(row) + "\n")
    return path


def _run(tmp_path, run_dir, strategy, params, base):
    config = load_config(
        {
            "rl": {"group_size": 2, "reward": {"provider": "nonempty"}},
            "checkpoints": {
                "dir": str(run_dir),
                "log_dir": str(tmp_path / f"logs-{strategy}"),
                "base": base,
                "prompts": {
                    "path": str(_prompts(tmp_path / "prompts.jsonl")),
                    "id_column": "id",
                    "cluster_column": "cluster",
                },
                "generation": {"n": 2, "temperature": 1.0, "max_tokens": 4, "seed": 1},
                "serving": {"strategy": strategy, "params": params},
                "settle_s": 0.0,
            },
        }
    )
    said: list[str] = []
    watcher = Watcher(config, load(config), say=said.append)
    try:
        assert watcher.run(once=True) == 0, said
    finally:
        watcher.close()
    return tmp_path / f"logs-{strategy}", said


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("training")
    base = build_tiny_llama(root / "base")
    full, lora = root / "full-run", root / "lora-run"
    for step in (100, 200, 300):
        _perturbed_checkpoint(base, full / f"checkpoint-{step}", step)
        adapter = build_lora_adapter(base, lora / f"checkpoint-{step}", seed=step)
        (adapter / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    return base, full, lora


def _check(logs, said, strategy, before):
    rows = curve_rows(logs)
    assert [row["step"] for row in rows] == ["base", 100, 200, 300], said
    hashes = set()
    for name in ("base", "step-100", "step-200", "step-300"):
        summary = json.loads((logs / f"{name}.summary.json").read_text())
        assert summary["records"] == 8 and summary["served"]["strategy"] == strategy
        assert summary["providers"][0]["provider"] == "nonempty"
        hashes.add(summary["served"]["checkpoint_sha256"])
        lines = (logs / f"{name}.jsonl").read_text().splitlines()
        assert len(lines) == 8 and all(len(json.loads(line)["completions"]) == 2 for line in lines)
    assert len(hashes) == 4, "each checkpoint must be identified by its own content"
    png = plot_curve(rows, logs / "curve.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == (800, 450)
    assert vllm_processes() <= before, "a server process was left behind"


def test_full_checkpoints_through_vllm_serve(trained, tmp_path):
    base, full, _ = trained
    before = vllm_processes()
    params = {
        "dtype": "float32",
        "max_model_len": 256,
        "log_dir": str(tmp_path / "server-logs"),
        "grace_s": 5,
        "start_timeout_s": 900,  # a loaded 2-core machine has taken 300 s to start one
    }
    logs, said = _run(tmp_path, full, "vllm-serve", params, str(base))
    _check(logs, said, "vllm-serve", before)


def test_lora_checkpoints_through_vllm_lora(trained, tmp_path):
    base, _, lora = trained
    before = vllm_processes()
    params = {
        "base_model": str(base),
        "dtype": "float32",
        "max_model_len": 256,
        "log_dir": str(tmp_path / "server-logs"),
        "grace_s": 5,
        "start_timeout_s": 900,
    }
    logs, said = _run(tmp_path, lora, "vllm-lora", params, None)
    _check(logs, said, "vllm-lora", before)
