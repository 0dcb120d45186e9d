"""What ``rewardkit checkpoints watch|curve`` tell the user while they run and when they are cut short.

One line per checkpoint when it starts and when it is done, a one-line gate decision (the
statistics stay in ``<name>.gate.json``), one line and exit code 130 on Ctrl-C, and a learning
curve drawn from what the summaries and gate files hold, with the path it was written to.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from checkpoint_fixtures import ScriptedModels, ServerThread, write_checkpoint, write_prompts

from rewardkit.config import load_config
from rewardkit.scoring.reward import load
from rewardkit_checkpoints.curve import curve_rows, curve_series, plot_curve
from rewardkit_checkpoints.watcher import EXIT_GATE, Watcher


@pytest.fixture
def served():
    script = ScriptedModels()
    with ServerThread(script) as server:
        yield script, server.url


def _spec(tmp_path: Path, url: str, **extra) -> dict:
    (tmp_path / "run").mkdir(exist_ok=True)
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
    return {"rl": {"group_size": 4, "reward": {"provider": "exact-match"}}, "checkpoints": checkpoints}


def _gated_run(tmp_path: Path, script: ScriptedModels, url: str) -> list[str]:
    """Base, a step that holds (step 100) and one that drops (step 200): what the watcher said."""
    config = load_config(_spec(tmp_path, url, gate={"tolerance": 0.02}))
    said: list[str] = []
    watcher = Watcher(config, load(config), say=said.append)
    watcher.scan()
    write_checkpoint(tmp_path / "run", 100)
    assert watcher.scan() is None
    script.accuracy = 0.1
    write_checkpoint(tmp_path / "run", 200)
    assert watcher.scan() == EXIT_GATE
    return said


def test_each_checkpoint_has_a_start_line_a_done_line_and_a_one_line_gate_decision(tmp_path, served):
    script, url = served
    said = _gated_run(tmp_path, script, url)
    starts = [line.split()[1] for line in said if line.startswith("evaluating ")]
    dones = [line.split()[0] for line in said if " done: mean = " in line and "over 60 prompts in" in line]
    assert starts == dones == ["base", "step-100", "step-200"]
    gates = [line for line in said if line.startswith("step ")]
    assert len(gates) == 2 and all("\n" not in line for line in gates)
    held = json.loads((tmp_path / "logs" / "step-100.gate.json").read_text())
    interval = held["interval"]
    assert gates[0] == (
        f"step 100: pass (Δ {held['difference']:+.4f} [{interval['low']:+.4f}, {interval['high']:+.4f}] "
        "vs base, tolerance 0.02)"
    )
    fired = json.loads((tmp_path / "logs" / "step-200.gate.json").read_text())
    assert (
        fired["fired"] and "upper_bound" in fired and "min_detectable_drop" in fired
    )  # the JSON keeps it all
    assert gates[1].startswith(f"step 200: FIRED (Δ {fired['difference']:+.4f} [")
    assert gates[1].endswith("statistics in step-200.gate.json")
    assert not any("detects drops of" in line for line in said), "the three-line sentence is back"


def test_the_curve_draws_the_base_at_step_0_per_checkpoint_intervals_tolerance_and_the_firing(
    tmp_path, served
):
    script, url = served
    _gated_run(tmp_path, script, url)
    rows = curve_rows(tmp_path / "logs")
    series = curve_series(rows)
    base = rows[0]["value"]
    assert series["x"] == [0, 100, 200] and series["y"] == [base, rows[1]["value"], rows[2]["value"]]
    assert series["intervals"] == [
        (100, base + rows[1]["low"], base + rows[1]["high"]),
        (200, base + rows[2]["low"], base + rows[2]["high"]),
    ]
    for (_, low, high), row in zip(series["intervals"], rows[1:]):
        assert low <= row["value"] <= high  # each bar is around its own checkpoint
    assert series["tolerance"] == 0.02 and series["tolerance_line"] == pytest.approx(base - 0.02)
    assert series["fired"] == [(200, rows[2]["value"])]
    assert series["title"].startswith("exact-match: mean") and "exact-match" in series["ylabel"]
    # the command draws it and says where
    plot = tmp_path / "curve.png"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rewardkit.cli",
            "checkpoints",
            "curve",
            str(tmp_path / "logs"),
            "--plot",
            str(plot),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"wrote the learning curve to {plot.resolve()}" in done.stderr
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plot_curve(rows, tmp_path / "again.png") == tmp_path / "again.png"


def test_a_curve_without_gate_files_draws_no_tolerance_line(tmp_path, served):
    _, url = served
    config = load_config(_spec(tmp_path, url))
    watcher = Watcher(config, load(config), say=lambda line: None)
    watcher.scan()
    write_checkpoint(tmp_path / "run", 50)
    watcher.scan()
    for gate in (tmp_path / "logs").glob("*.gate.json"):
        gate.unlink()
    series = curve_series(curve_rows(tmp_path / "logs"))
    assert series["x"] == [0, 50] and series["tolerance_line"] is None and series["fired"] == []


def test_ctrl_c_during_watch_ends_with_one_line_and_exit_130_and_a_rerun_resumes(tmp_path, served):
    _, url = served
    config_path = tmp_path / "config.yaml"  # JSON is YAML
    config_path.write_text(json.dumps(_spec(tmp_path, url)))
    write_checkpoint(tmp_path / "run", 100)
    command = [sys.executable, "-m", "rewardkit.cli", "checkpoints", "watch", str(config_path)]
    # SIGINT as a terminal delivers it, even where this test runs with SIGINT ignored (a runner
    # started in the background passes it down ignored, and Python then keeps ignoring it)
    watch = subprocess.Popen(
        command,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    done = tmp_path / "logs" / "step-100.summary.json"
    deadline = time.monotonic() + 120
    while not done.exists() and watch.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert done.exists(), "the watcher evaluated nothing"
    os.kill(watch.pid, signal.SIGINT)
    _, stderr = watch.communicate(timeout=60)
    assert watch.returncode == 130, stderr[-2000:]
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    lines = stderr.strip().splitlines()
    [said] = [line for line in lines if "interrupted" in line]
    assert said == lines[-1]
    assert said.startswith(f"interrupted: evaluated base, step-100 (results in {tmp_path / 'logs'})")
    assert said.endswith(
        f"To continue, rerun the same command (it resumes from the log dir): rewardkit checkpoints watch "
        f"{config_path}"
    )
    # the same command again evaluates nothing twice
    again = subprocess.run([*command, "--once"], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "evaluating" not in again.stderr


def test_the_interrupt_line_names_the_checkpoint_that_was_cut_off(tmp_path, served):
    _, url = served
    config = load_config(_spec(tmp_path, url))
    watcher = Watcher(config, load(config), say=lambda line: None)
    assert watcher.interrupted("rewardkit checkpoints watch x.yaml").startswith(
        "interrupted: evaluated nothing yet"
    )
    watcher.scan()
    watcher.current = "step-300"  # as while step 300 is being evaluated
    line = watcher.interrupted("rewardkit checkpoints watch x.yaml")
    assert "\n" not in line and "evaluated base (results in" in line
    assert "; step-300 was cut off and is evaluated again. To continue, rerun the same command" in line
