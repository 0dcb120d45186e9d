"""``vllm-serve`` end to end on a real vLLM, and its faults. Runs inside a private network namespace."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import assert_gone, complete, vllm_processes

from rewardkit.contracts.errors import RewardkitError
from rewardkit.seam.catalog import serving_strategies
from rewardkit_supervise import StartError, session_pids
from rewardkit_vllm import VllmLoraStrategy, VllmServeStrategy
from rewardkit_vllm.testing import greedy

PROMPT = "the cat is"


def test_serves_a_checkpoint_generates_and_leaves_nothing(models, tmp_path):
    before = vllm_processes()
    strategy = (
        serving_strategies()
        .get("vllm-serve")
        .value.factory(
            dtype="float32", max_model_len=256, log_dir=str(tmp_path), grace_s=5, start_timeout_s=900
        )
    )
    assert isinstance(strategy, VllmServeStrategy)
    with strategy.serve(str(models["base"])) as served:
        server_pids = session_pids(_session_of(served.base_url))
        assert len(server_pids) >= 2, "expected the API server and its engine"
        text = complete(served.base_url, served.model, PROMPT)
        assert text.split() == greedy(models["base"], PROMPT, 8).split()
        identity = served.identity()
        # a server without runtime LoRA updating: vllm-lora says so instead of failing obscurely
        lora = VllmLoraStrategy(base_url=served.base_url, served_name=served.model)
        with pytest.raises(RewardkitError, match="no runtime LoRA updating"):
            lora.load(models["a1"], "a1")
    assert identity["checkpoint_sha256"] and identity["settings"]["dtype"] == "float32"
    assert identity["settings"]["vllm"].startswith("vllm")
    for pid in server_pids:
        assert not os.path.exists(f"/proc/{pid}") or _zombie(pid), f"pid {pid} survived teardown"
    assert vllm_processes() <= before, "a server process was left behind"


def test_a_missing_weight_file_is_named_before_anything_starts(models, tmp_path):
    strategy = VllmServeStrategy(log_dir=str(tmp_path))
    named = pytest.raises(RewardkitError, match=r"missing: \['model-00002-of-00002.safetensors'\]")
    with named, strategy.serve(str(models["missing-shard"])):
        pass
    assert not list(tmp_path.glob("*.log")), "a server was started for a broken folder"


def test_a_server_that_dies_while_starting_reports_its_log(models, tmp_path):
    before = vllm_processes()
    strategy = VllmServeStrategy(dtype="float32", max_model_len=256, log_dir=str(tmp_path), grace_s=3)
    with pytest.raises(StartError) as caught, strategy.serve(str(models["broken-config"])):
        pass
    message = str(caught.value)
    assert "exited with code" in message and "last lines" in message
    assert "Error" in message.split("last lines", 1)[1], message[-2000:]
    assert vllm_processes() <= before, "a server process was left behind"


def test_a_start_timeout_kills_everything(models, tmp_path):
    before = vllm_processes()
    strategy = VllmServeStrategy(
        dtype="float32", max_model_len=256, log_dir=str(tmp_path), start_timeout_s=8, grace_s=2
    )
    with pytest.raises(StartError, match="not ready after 8 s"), strategy.serve(str(models["base"])):
        pass
    assert vllm_processes() <= before, "a server process was left behind"


def test_sigint_mid_serve_leaves_no_vllm_process(models, tmp_path):
    before = vllm_processes()
    script = textwrap.dedent(
        f"""
        import signal, time
        # Ctrl-C as in a terminal: a shell that started this test run in the background may
        # have left SIGINT ignored, and the ignored disposition would be inherited here.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from rewardkit_vllm import VllmServeStrategy
        strategy = VllmServeStrategy(
            dtype="float32", max_model_len=256, log_dir={str(tmp_path)!r}, grace_s=5, start_timeout_s=900
        )
        with strategy.serve({str(models["base"])!r}) as served:
            print("serving", served.base_url, flush=True)
            time.sleep(600)
        """
    )
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("serving"), line
        session = _session_of(line.split()[1])
        assert session_pids(session)
        process.send_signal(signal.SIGINT)
        process.wait(240)  # teardown: SIGTERM, grace, SIGKILL; slow on a loaded machine
    finally:
        if process.poll() is None:  # a failed test still leaves nothing: the watchdog ends the server
            process.kill()
            process.wait(30)
    end = time.monotonic() + 30
    while session_pids(session) and time.monotonic() < end:
        time.sleep(0.2)
    assert_gone(session)
    assert vllm_processes() <= before, "a server process was left behind"


def _session_of(base_url: str) -> int:
    """The session of the process listening on the URL's port (the launcher started it)."""
    port = base_url.rsplit(":", 1)[1]
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
                stat = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if b"rewardkit_vllm.launch" in cmdline and port.encode() in cmdline:
                return int(stat[3])
    raise AssertionError(f"no launcher process serves {base_url}")


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] == b"Z"
    except OSError:
        return True
