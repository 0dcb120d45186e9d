"""``rewardkit monitor LOGDIR [--plot FILE] [--gate]`` on logs written here: the report, the PNG and
the gate's exit codes (0 no alarm, 3 an alarm as the checkpoint gate, 2 a missing or unreadable log),
and on the log a real monitor writes."""

from __future__ import annotations

import argparse
import json
import struct
from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit.cli import main
from rewardkit.config import load_config
from rewardkit.contracts.errors import RewardkitError
from rewardkit.scoring.observers import ObservedBatch, observer_for
from rewardkit_monitor.cli import EXIT_ALARM, run_monitor
from rewardkit_monitor.report import MonitorLogError, find_logs, format_report, read_log

EVIDENCE = (
    "length_coupling rose from its baseline -0.4 ± 0.1 (first 30 values) to 0.6 (step 57); CUSUM 12 > 8"
)


def step_record(
    step: int, alarms: list[dict[str, Any]] | None = None, reference: bool = True
) -> dict[str, Any]:
    hacked = step >= 50
    signals = {
        "reward_mean": 1.0 + 0.02 * max(0, step - 50),
        "length_mean": 1.2 + (0.05 * (step - 50) if hacked else 0.0),
        "length_coupling": 0.6 if hacked else -0.4 + 0.01 * (step % 3),
        "saturation_zero_variance": 0.25,
    }
    if reference:
        signals["reference_mean"] = 0.3 if hacked else 0.8
        signals["divergence"] = 0.7 if hacked else 0.05 + 0.01 * (step % 2)
    else:
        signals["divergence"] = None
    return {
        "step": step,
        "source": "trl",
        "rollouts": 128,
        "groups": 16,
        "signals": signals,
        "alarms": alarms or [],
    }


def write_log(folder: Path, steps: int = 80, alarm_at: int | None = None, reference: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for step in range(steps):
        alarms = []
        if step == alarm_at:
            alarms = [{"signal": "length_coupling", "step": step, "began": 51, "evidence": EVIDENCE}]
        lines.append(json.dumps(step_record(step, alarms, reference)))
    (folder / "monitor.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def args(logdir: Path, plot: Path | None = None, gate: bool = False) -> argparse.Namespace:
    return argparse.Namespace(logdir=str(logdir), plot=str(plot) if plot else None, gate=gate)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_the_report_names_each_alarm_with_its_step_start_and_evidence(tmp_path, capsys):
    write_log(tmp_path / "run", alarm_at=57)
    assert run_monitor(args(tmp_path / "run")) == 0  # without --gate an alarm is reported, not an exit code
    out = capsys.readouterr().out
    assert "80 steps (0 to 79), source trl, 128 rollouts per step" in out
    assert "ALARM: 1 raised" in out
    assert "- length_coupling at step 57 (began about step 51)" in out
    assert EVIDENCE in out
    # the summary: alarmed signals first, every signal with its first, last and recent values
    table = out[out.index("signal ") :].splitlines()
    assert [line.split()[0] for line in table[2:5]] == ["divergence", "length_coupling", "reward_mean"]
    assert "saturation_zero_variance" in out
    coupling = next(line for line in table if line.startswith("length_coupling"))
    assert coupling.split()[1:4] == ["80", "-0.4", "0.6"]


def test_the_gate_exits_3_on_an_alarm_and_0_without(tmp_path, capsys):
    write_log(tmp_path / "hacked", alarm_at=57)
    write_log(tmp_path / "honest")
    assert run_monitor(args(tmp_path / "hacked", gate=True)) == EXIT_ALARM == 3
    assert "gate: the monitor raised an alarm: exit 3" in capsys.readouterr().err
    assert run_monitor(args(tmp_path / "honest", gate=True)) == 0
    assert "no alarm" in capsys.readouterr().out


def test_through_the_rewardkit_command_a_missing_or_broken_log_exits_2(tmp_path, capsys):
    write_log(tmp_path / "hacked", alarm_at=57)
    assert main(["monitor", str(tmp_path / "hacked"), "--gate"]) == 3
    assert main(["monitor", str(tmp_path / "hacked")]) == 0
    assert main(["monitor", str(tmp_path / "nowhere"), "--gate"]) == 2
    assert f"{tmp_path / 'nowhere'}: no such file or folder" in capsys.readouterr().err
    broken = write_log(tmp_path / "broken")
    lines = (broken / "monitor.jsonl").read_text().splitlines()
    lines[3] = '{"step": 3, "signals": {'
    (broken / "monitor.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["monitor", str(broken), "--gate"]) == 2
    assert f"{broken / 'monitor.jsonl'}:4: not a JSON line" in capsys.readouterr().err


def test_unreadable_logs_are_errors_that_say_where(tmp_path):
    with pytest.raises(MonitorLogError, match=r"no monitor\.jsonl here nor in a run folder"):
        find_logs(tmp_path)
    (tmp_path / "monitor.jsonl").write_text("")
    with pytest.raises(MonitorLogError, match="no finished step yet"):
        read_log(tmp_path / "monitor.jsonl")
    (tmp_path / "monitor.jsonl").write_text('{"signals": {}}\n')
    with pytest.raises(MonitorLogError, match=r"monitor\.jsonl:1: not a monitor step"):
        read_log(tmp_path / "monitor.jsonl")
    (tmp_path / "monitor.jsonl").write_text('{"step": 1, "alarms": [{"signal": "divergence"}]}\n')
    with pytest.raises(MonitorLogError, match="an alarm needs signal, step, began and evidence"):
        read_log(tmp_path / "monitor.jsonl")
    assert issubclass(MonitorLogError, RewardkitError)  # the core's CLI turns it into exit 2


def test_a_last_line_the_trainer_is_still_writing_is_left_out(tmp_path, capsys):
    folder = write_log(tmp_path / "live", steps=40)
    with (folder / "monitor.jsonl").open("a") as log:
        log.write('{"step": 40, "source": "trl", "sig')
    log = read_log(folder / "monitor.jsonl")
    assert len(log.steps) == 40 and log.partial_last_line
    assert "the last line is still being written" in format_report(log)
    # a complete last line that only lacks its newline counts
    (folder / "monitor.jsonl").write_text(json.dumps(step_record(0)))
    assert not read_log(folder / "monitor.jsonl").partial_last_line


def test_a_service_logdir_reports_every_run_and_gates_on_any(tmp_path, capsys):
    write_log(tmp_path / "service" / "run-a")
    write_log(tmp_path / "service" / "run-b", alarm_at=60)
    assert [label for label, _ in find_logs(tmp_path / "service")] == ["run-a", "run-b"]
    plot = tmp_path / "signals.png"
    assert run_monitor(args(tmp_path / "service", plot=plot, gate=True)) == EXIT_ALARM
    captured = capsys.readouterr()
    assert captured.out.count("steps (0 to 79)") == 2
    assert "alarm in 1 of 2 runs" in captured.err
    assert png_size(tmp_path / "signals-run-a.png") == png_size(tmp_path / "signals-run-b.png") == (900, 920)


def test_the_plot_is_a_png_with_a_panel_per_signal_even_when_some_are_missing(tmp_path, capsys):
    write_log(tmp_path / "run", alarm_at=57)
    plot = tmp_path / "out" / "monitor.png"
    plot.parent.mkdir()
    assert run_monitor(args(tmp_path / "run", plot=plot)) == 0
    assert png_size(plot) == (900, 920)
    assert f"wrote the monitor plot to {plot.resolve()}" in capsys.readouterr().err
    # no reference grader: the divergence panel says so instead of failing
    write_log(tmp_path / "no-reference", reference=False)
    assert run_monitor(args(tmp_path / "no-reference", plot=tmp_path / "bare.png")) == 0
    assert png_size(tmp_path / "bare.png") == (900, 920)


def test_the_report_reads_what_a_real_monitor_writes(tmp_path, capsys):
    config = load_config(
        {
            "rl": {
                "reward": {"provider": "nonempty"},
                "monitor": {"reference": "exact-match", "logdir": str(tmp_path / "run"), "warmup_steps": 5},
            }
        }
    )
    monitor = observer_for(config)
    assert monitor is not None
    answers = [["5", "6", "5", "7"], ["5", "5", "6", "six"], ["5", "5", "5", "5"]]
    with rewardkit.load(config) as reward:
        for step in range(12):
            rollouts = [
                {
                    "trajectory_id": f"{step}-{i}",
                    "completion": text,
                    "prompt": "two plus three",
                    "reference": "5",
                }
                for i, text in enumerate(answers[step % 3])
            ]
            groups = [{"group_id": f"g{step}", "rollouts": rollouts}]
            monitor.observe(ObservedBatch(groups, reward.score(groups), "trl", step=step))
    monitor.close()
    # nonempty pays every answer alike: every group of the 5-step warm-up has equal rewards, which the
    # level check reports at its last step (the gate's exit code 3)
    assert main(["monitor", str(tmp_path / "run"), "--gate"]) == 3
    out = capsys.readouterr().out
    assert "12 steps (0 to 11), source trl, 4 rollouts per step" in out
    assert "- level/zero_variance at step 4 (began about step 0)" in out
    log = read_log(tmp_path / "run" / "monitor.jsonl")
    assert {"divergence", "length_coupling", "reward_mean", "reference_mean"} <= set(log.signal_names())
    # the nonempty proxy pays every answer alike, the reference only the right ones: blind on every
    # pair; a step whose answers are all right has no pair
    assert log.series("divergence") == ([s for s in range(12) if s % 3 != 2], [0.5] * 8)
