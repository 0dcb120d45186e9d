"""The Reward Service's run registry, without HTTP: a run belongs to the client that opened it, each
client's runs are capped alone, only an idle run is closed, and a closed run that comes back
continues its log and keeps its alarm. Time is a clock the tests move."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit.config import RewardkitConfig, load_config
from rewardkit.scoring.observers import ObservedBatch
from rewardkit.seam.protocols import RewardLike
from rewardkit_monitor import RunMonitors, RunOwnedElsewhere, TooManyRuns

HONEST = {"provider": "exact-match"}
# Pays for wrong answers: the opposite of the exact-match reference on every pair it orders.
CONTRARY = {"spec": {"components": [{"provider": "exact-match", "weight": -1.0}]}}
MIXED = [["3", "4", "5", "3"], ["3", "3", "x", "y"]]


def config(reward: dict[str, Any], monitor: dict[str, Any] | None) -> RewardkitConfig:
    return load_config({"rl": {"group_size": 4, "reward": reward, "monitor": monitor}})


@pytest.fixture
def rewards() -> Iterator[dict[str, RewardLike]]:
    made = {
        "honest": rewardkit.load(config(HONEST, None)),
        "contrary": rewardkit.load(config(CONTRARY, None)),
    }
    yield made
    for reward in made.values():
        reward.close()


def batch(reward: RewardLike, tag: str, step: int | None) -> ObservedBatch:
    groups = [
        {
            "group_id": f"{tag}-g{g}",
            "rollouts": [
                {
                    "trajectory_id": f"{tag}-g{g}/{k}",
                    "prompt": "what is 1 + 2",
                    "reference": "3",
                    "completion": text,
                }
                for k, text in enumerate(group)
            ],
        }
        for g, group in enumerate(MIXED)
    ]
    return ObservedBatch(groups, reward.score(groups), "service", step=step)


def log_lines(logdir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (logdir / "monitor.jsonl").read_text().splitlines()]


def monitor_settings(folder: Path) -> dict[str, Any]:
    return {"logdir": str(folder / "runs"), "stop_file": str(folder / "STOP"), "reference": "exact-match",
            "warmup_steps": 5}  # fmt: skip


def test_a_run_belongs_to_the_client_that_opened_it_also_after_a_restart(
    rewards: dict[str, RewardLike], tmp_path: Path
) -> None:
    settings = monitor_settings(tmp_path)
    runs = RunMonitors(config(HONEST, settings))
    runs.observe("run-a", batch(rewards["honest"], "s0", 0), client="alice")
    runs.observe("run-a", batch(rewards["honest"], "s1", 1), client="alice")
    with pytest.raises(RunOwnedElsewhere, match="'run-a' belongs to another client"):
        runs.observe("run-a", batch(rewards["contrary"], "x", 2), client="mallory")
    with pytest.raises(RunOwnedElsewhere):
        runs.monitor("run-a", "mallory")
    runs.close()
    assert [line["step"] for line in log_lines(tmp_path / "runs" / "run-a")] == [0, 1]
    # A new registry on the same logdir (the service restarted) still knows whose run it is.
    again = RunMonitors(config(HONEST, settings))
    with pytest.raises(RunOwnedElsewhere):
        again.observe("run-a", batch(rewards["contrary"], "x", 2), client="mallory")
    again.observe("run-a", batch(rewards["honest"], "s2", 2), client="alice")
    again.close()
    assert [line["step"] for line in log_lines(tmp_path / "runs" / "run-a")] == [0, 1, 2]
    assert "alice" not in (tmp_path / "runs" / "run-a" / ".owner.json").read_text()


class Clock:
    """Seconds that pass only when the test says so."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_each_client_is_capped_alone_and_only_an_idle_run_is_closed(
    rewards: dict[str, RewardLike], tmp_path: Path
) -> None:
    clock = Clock()
    runs = RunMonitors(config(HONEST, monitor_settings(tmp_path)), max_runs=2, idle_s=100, clock=clock)
    honest = rewards["honest"]
    for run_id in ("a-1", "a-2"):
        runs.observe(run_id, batch(honest, run_id, None), client="alice")
    for run_id in ("b-1", "b-2"):
        runs.observe(run_id, batch(honest, run_id, None), client="bob")
    with pytest.raises(TooManyRuns, match=r"'b-3'.* already watches 2 runs"):
        runs.observe("b-3", batch(honest, "b-3", None), client="bob")
    assert all(run_id in runs for run_id in ("a-1", "a-2", "b-1", "b-2"))  # bob's third closed none
    clock.now = 99.0
    with pytest.raises(TooManyRuns):  # both of alice's runs are active
        runs.monitor("a-3", "alice")
    clock.now = 200.0
    runs.observe("a-2", batch(honest, "a-2 again", None), client="alice")
    runs.observe("a-3", batch(honest, "a-3", None), client="alice")  # a-1, idle for 200 s, is closed
    assert "a-1" not in runs and "a-2" in runs and "a-3" in runs and "b-1" in runs
    runs.close()


def test_a_closed_run_that_comes_back_continues_its_log_and_keeps_its_alarm(
    rewards: dict[str, RewardLike], tmp_path: Path
) -> None:
    clock = Clock()
    runs = RunMonitors(config(HONEST, monitor_settings(tmp_path)), max_runs=1, idle_s=100, clock=clock)
    # Five steps agree with the reference (the warm-up), then the reward pays every wrong answer.
    for step, name in enumerate(["honest"] * 5 + ["contrary"] * 3):
        out = runs.observe("run", batch(rewards[name], f"s{step}", None), client="alice")
    assert out["train/reward_monitor/alarm"] == 1.0
    stop_file = tmp_path / "run" / "STOP"
    alarm = json.loads(stop_file.read_text())
    stop_file.unlink()  # the trainer read it and chose to go on
    raised = [line["alarms"] for line in log_lines(tmp_path / "runs" / "run") if line["alarms"]]
    assert alarm in raised[0]
    clock.now = 100.0
    runs.observe("other", batch(rewards["honest"], "o", None), client="alice")  # closes the idle run
    assert "run" not in runs
    clock.now = 200.0
    back = runs.observe("run", batch(rewards["honest"], "back", None), client="alice")  # closes "other"
    assert back["train/reward_monitor/alarm"] == 1.0 and not stop_file.exists()
    runs.close()
    lines = log_lines(tmp_path / "runs" / "run")
    assert [line["step"] for line in lines] == list(range(9))  # whole, and numbered on
    assert [line["alarms"] for line in lines if line["alarms"]] == raised  # none raised twice


def test_a_log_cut_short_is_continued_on_a_line_of_its_own(
    rewards: dict[str, RewardLike], tmp_path: Path
) -> None:
    clock = Clock()
    runs = RunMonitors(config(HONEST, monitor_settings(tmp_path)), max_runs=1, idle_s=0, clock=clock)
    runs.observe("run", batch(rewards["honest"], "s0", 0), client=None)
    runs.observe("other", batch(rewards["honest"], "o", None), client=None)  # closes "run"
    log = tmp_path / "runs" / "run" / "monitor.jsonl"
    with log.open("a") as file:
        file.write('{"step": 1, "sig')  # the service died in the middle of a write
    out = runs.observe("run", batch(rewards["honest"], "s2", 2), client=None)
    assert out["train/reward_monitor/errors"] == 1.0  # the cut line, skipped and counted
    runs.close()
    lines = log.read_text().splitlines()
    assert [json.loads(line)["step"] for line in (lines[0], lines[2])] == [0, 2]
