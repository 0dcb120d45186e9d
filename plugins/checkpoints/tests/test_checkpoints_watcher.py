"""The checkpoint watcher against a scripted OpenAI-compatible server (real HTTP on loopback).

The ``endpoint`` strategy serves every checkpoint from that server; the real vLLM strategies are
exercised end to end in plugins/vllm_lora/tests/test_checkpoint_eval.py (tox env ``vllm``).
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import time

import pytest
from checkpoint_fixtures import ScriptedModels, ServerThread, write_checkpoint, write_prompts

from rewardkit.config import load_config
from rewardkit.scoring.reward import load
from rewardkit_checkpoints.curve import curve_rows, plot_curve
from rewardkit_checkpoints.discovery import discover
from rewardkit_checkpoints.evaluate import record_value
from rewardkit_checkpoints.watcher import EXIT_GATE, Watcher


@pytest.fixture
def served():
    script = ScriptedModels()
    with ServerThread(script) as server:
        yield script, server.url


def _config(tmp_path, url, **extra):
    checkpoints = {
        "dir": str(tmp_path / "run"),
        "log_dir": str(tmp_path / "logs"),
        "prompts": {
            "path": str(write_prompts(tmp_path / "prompts.jsonl")),
            "response_column": "answer",
            "id_column": "id",
            "cluster_column": "topic",
        },
        "generation": {"n": 4, "temperature": 1.0, "max_tokens": 8, "deadline_s": 20},
        "serving": {"strategy": "endpoint", "params": {"base_url": url, "model": "tiny"}},
        "settle_s": 0.0,
        "scan_interval_s": 0.1,
        **extra,
    }
    (tmp_path / "run").mkdir(exist_ok=True)
    return load_config(
        {"rl": {"group_size": 4, "reward": {"provider": "exact-match"}}, "checkpoints": checkpoints}
    )


def _watcher(config, said):
    return Watcher(config, load(config), say=said.append)


def test_base_first_then_steps_in_order_and_a_restart_recomputes_nothing(tmp_path, served):
    script, url = served
    config = _config(tmp_path, url)
    write_checkpoint(tmp_path / "run", 200)
    write_checkpoint(tmp_path / "run", 100, marker=False)  # still being written
    said: list[str] = []
    watcher = _watcher(config, said)
    assert watcher.scan() is None
    evaluated = [line.split()[1] for line in said if line.startswith("evaluating")]
    assert evaluated == ["base"], "step 200 overtook step 100, which is still being written"
    (tmp_path / "run" / "checkpoint-100" / "trainer_state.json").write_text("{}")
    watcher.scan()
    evaluated = [line.split()[1] for line in said if line.startswith("evaluating")]
    assert evaluated == ["base", "step-100", "step-200"]
    logs = tmp_path / "logs"
    for name in ("base", "step-100", "step-200"):
        summary = json.loads((logs / f"{name}.summary.json").read_text())
        assert summary["records"] == 60 and summary["served"]["strategy"] == "endpoint"
        assert summary["served"]["checkpoint_sha256"] or name == "base"
        assert summary["providers"][0]["provider"] == "exact-match"
    requests = script.requests
    again: list[str] = []
    _watcher(config, again).scan()
    assert script.requests == requests, "a restart evaluated a checkpoint again"
    assert not [line for line in again if line.startswith("evaluating")]


def test_a_partial_checkpoint_waits_until_its_files_settle(tmp_path, served):
    _, url = served
    config = _config(tmp_path, url, settle_s=0.6)
    folder = write_checkpoint(tmp_path / "run", 100)
    said: list[str] = []
    watcher = _watcher(config, said)
    watcher.scan()  # base, then step 100 seen for the first time
    for _ in range(3):  # a slow writer keeps appending
        with open(folder / "model.safetensors", "ab") as handle:
            handle.write(b"x" * 1024)
        watcher.scan()
        time.sleep(0.2)
    assert "evaluating step-100" not in " ".join(said)
    time.sleep(0.7)
    watcher.scan()
    assert any(line.startswith("evaluating step-100") for line in said)


def test_a_failed_step_is_reported_and_retried_on_a_later_scan(tmp_path, served):
    script, url = served
    config = _config(tmp_path, url, generation={"n": 4, "max_tokens": 8, "deadline_s": 1.5, "timeout_s": 1.0})
    watcher = _watcher(config, said := [])
    watcher.scan()  # base
    write_checkpoint(tmp_path / "run", 100)
    script.failing = True
    assert watcher.scan() is None
    assert any("step-100 failed (retried on a later scan)" in line and "500" in line for line in said)
    assert not (tmp_path / "logs" / "step-100.summary.json").exists()
    script.failing = False
    watcher.scan()
    assert (tmp_path / "logs" / "step-100.summary.json").exists()


def test_the_gate_fires_on_a_real_drop_writes_the_stop_file_and_exits_3(tmp_path, served):
    script, url = served
    stop = tmp_path / "STOP"
    config = _config(tmp_path, url, gate={"tolerance": 0.01, "stop_file": str(stop)})
    watcher = _watcher(config, said := [])
    watcher.scan()
    write_checkpoint(tmp_path / "run", 100)
    assert watcher.scan() is None  # same accuracy: held
    script.accuracy = 0.1
    write_checkpoint(tmp_path / "run", 200)
    assert watcher.scan() == EXIT_GATE
    decision = json.loads(stop.read_text())
    assert decision["fired"] and decision["step"] == "200" and decision["upper_bound"] < -0.01
    assert any(line.startswith("step 200: FIRED (Δ ") for line in said)
    # the command line says the same with exit code 3 (results on disk are reused)
    config_path = tmp_path / "config.yaml"  # JSON is YAML
    config_path.write_text(json.dumps({"rl": {"group_size": 4, "reward": {"provider": "exact-match"}},
                                       "checkpoints": config.checkpoints.model_dump()}))  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "rewardkit.cli", "checkpoints", "watch", str(config_path), "--once"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 3, done.stderr[-2000:]
    rows = curve_rows(tmp_path / "logs")
    assert [row["step"] for row in rows] == ["base", 100, 200]
    assert rows[2]["gate"] == "FIRED" and rows[2]["high"] < 0
    png = plot_curve(rows, tmp_path / "curve.png")
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (800, 450)


def test_a_sharded_checkpoint_without_hf_weights_is_reported_not_served(tmp_path, served):
    _, url = served
    config = _config(tmp_path, url)
    shards = tmp_path / "run" / "global_step_50" / "actor"
    shards.mkdir(parents=True)
    (shards / "model_world_size_2_rank_0.pt").write_bytes(b"0")
    (tmp_path / "run" / "latest_checkpointed_iteration.txt").write_text("50")
    found = discover(tmp_path / "run")
    assert found[0].kind == "sharded" and found[0].serve_path is None
    watcher = _watcher(config, said := [])
    watcher.scan()
    assert any("global" not in line and "sharded weights" in line for line in said)
    assert not (tmp_path / "logs" / "step-50.summary.json").exists()


def test_verl_huggingface_folder_is_served(tmp_path):
    hf = tmp_path / "global_step_10" / "actor" / "huggingface"
    hf.mkdir(parents=True)
    (hf / "config.json").write_text("{}")
    (hf / "model.safetensors").write_bytes(b"w")
    [found] = discover(tmp_path)
    assert found.kind == "full" and found.serve_path == hf and found.step == 10


def test_pass_at_k_is_the_unbiased_estimator(tmp_path, served):
    _, url = served
    config = _config(tmp_path, url, metric="pass@k", k=2).checkpoints
    assert record_value([1.0, 0.0, 0.0, 0.0], config) == pytest.approx(1 - 3 / 6)
    assert record_value([0.0, 0.0, 0.0, 0.0], config) == 0.0
    assert record_value([1.0, 1.0, 1.0, 0.0], config) == 1.0
