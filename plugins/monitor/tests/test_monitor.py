"""The monitor end to end: real rewards score real groups, the monitor observes the scored batches."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rewardkit
from rewardkit.config import RewardkitConfig, load_config
from rewardkit.contracts.errors import ConfigError, RewardkitError
from rewardkit.scoring.observers import ObservedBatch, observer_for
from rewardkit.seam.protocols import RewardLike
from rewardkit_monitor import MonitorSettings, RewardMonitor, RunMonitors, build_monitor, parse_settings
from rewardkit_monitor.calibration import THRESHOLDS
from rewardkit_monitor.monitor import EXAMINED_ROLLOUTS

HONEST = {"provider": "exact-match"}
# Pays for wrong answers: the opposite of the exact-match reference on every pair it orders.
CONTRARY = {"spec": {"components": [{"provider": "exact-match", "weight": -1.0}]}}
COMPOSED = {
    "spec": {
        "components": [
            {"provider": "gsm8k", "weight": 1.0},
            {"provider": "nonempty", "weight": 0.0, "gate": True},
        ]
    }
}


def config(
    reward: dict[str, Any], monitor: dict[str, Any] | None, group_size: int | None = 4
) -> RewardkitConfig:
    return load_config({"rl": {"group_size": group_size, "reward": reward, "monitor": monitor}})


@pytest.fixture
def rewards() -> Iterator[dict[str, RewardLike]]:
    made = {
        "honest": rewardkit.load(config(HONEST, None)),
        "contrary": rewardkit.load(config(CONTRARY, None)),
        "composed": rewardkit.load(config(COMPOSED, None)),
        "single": rewardkit.load(config(HONEST, None, group_size=1)),
    }
    yield made
    for reward in made.values():
        reward.close()


def groups(tag: str, completions: Sequence[Sequence[str]], reference: str = "3") -> list[dict[str, Any]]:
    return [
        {
            "group_id": f"{tag}-g{g}",
            "rollouts": [
                {
                    "trajectory_id": f"{tag}-g{g}/{k}",
                    "prompt": "what is 1 + 2",
                    "reference": reference,
                    "completion": text,
                }
                for k, text in enumerate(group)
            ],
        }
        for g, group in enumerate(completions)
    ]


MIXED = [["3", "4", "5", "3"], ["3", "3", "x", "y"]]


def observed(
    reward: RewardLike, batch: list[dict[str, Any]], step: int | None, **options: Any
) -> ObservedBatch:
    return ObservedBatch(batch, reward.score(batch), "trl", step=step, **options)


def signals_of(metrics: dict[str, float]) -> dict[str, float]:
    prefix = "train/reward_monitor/"
    return {name[len(prefix) :]: value for name, value in metrics.items() if name.startswith(prefix)}


def log_lines(logdir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (logdir / "monitor.jsonl").read_text().splitlines()]


# -- settings -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ({"reference_rate": 0}, "rl.monitor.reference_rate"),
        ({"reference_rate": 1.5}, "rl.monitor.reference_rate"),
        ({"warmup_steps": 4}, "rl.monitor.warmup_steps"),
        ({"false_alarm_rate": 0.2}, "rl.monitor.false_alarm_rate"),
        ({"refrence": "exact-match"}, "rl.monitor.refrence"),
        ({"reference": {"provider": "exact-match", "spec": {"components": []}}}, "rl.monitor.reference"),
        ({"reference": 3}, "rl.monitor.reference"),
        ({"seed": "x"}, "rl.monitor.seed"),
    ],
)
def test_settings_errors_name_the_field(raw: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_settings(raw)
    assert caught.value.key == key
    assert str(caught.value).startswith(f"{key}: ")


def test_settings_defaults_and_reference_forms() -> None:
    settings = parse_settings({})
    assert (settings.reference, settings.reference_rate, settings.logdir, settings.stop_file) == (
        None,
        1.0,
        None,
        None,
    )
    assert (settings.false_alarm_rate, settings.warmup_steps, settings.seed) == (0.01, 30, 0)
    assert set(THRESHOLDS) >= {0.01, 0.05}
    by_name = parse_settings({"reference": "exact-match"}).reference
    assert by_name is not None and by_name.provider == "exact-match"
    bare_spec = parse_settings({"reference": {"components": [{"provider": "exact-match"}]}}).reference
    assert bare_spec is not None and bare_spec.spec == {"components": [{"provider": "exact-match"}]}
    selection = parse_settings({"reference": {"provider": "exact-match", "params": {"case_sensitive": True}}})
    assert selection.reference is not None and selection.reference.params == {"case_sensitive": True}


@pytest.mark.parametrize(
    ("raw", "key", "said"),
    [
        (
            {"refrence": "exact-match"},
            "rl.monitor.refrence",
            "unknown key; did you mean rl.monitor.reference?",
        ),
        (
            {"false_alarm_rate": 0.2},
            "rl.monitor.false_alarm_rate",
            "0.2 is not a calibrated rate; choose one of",
        ),
        ({"warmup_steps": 4}, "rl.monitor.warmup_steps", "greater than or equal to 5"),
    ],
)
def test_rl_monitor_is_a_section_validated_with_the_configuration(
    raw: dict[str, Any], key: str, said: str
) -> None:
    """The distribution registers ``rl.monitor``: a wrong key or value fails ``rewardkit.load`` itself, with
    the core's did-you-mean, before a trainer starts."""
    with pytest.raises(ConfigError) as caught:
        rewardkit.load({"rl": {"reward": HONEST, "monitor": raw}})
    assert caught.value.key == key
    assert said in str(caught.value)


def test_the_section_brings_the_monitor_as_the_observer(tmp_path: Path) -> None:
    """A file's bare composed reference keeps its keys as written (dotted overrides reach into it); the
    observer the bindings get from the section is the reward monitor with that reference."""
    path = tmp_path / "run.yaml"
    path.write_text(
        "rl: {group_size: 2, reward: {provider: exact-match}}\n"
        f"rl.monitor: {{logdir: '{tmp_path}', reference: {{components: [{{provider: exact-match}}]}}}}\n"
    )
    loaded = load_config(path, ["rl.monitor.reference.components.0.weight=2.0"])
    settings = loaded.section("rl.monitor", MonitorSettings)
    assert isinstance(settings, MonitorSettings) and settings.reference is not None
    assert settings.reference.spec == {"components": [{"provider": "exact-match", "weight": 2.0}]}
    observer = observer_for(loaded)
    try:
        assert isinstance(observer, RewardMonitor)
        assert observer.settings.reference == settings.reference
    finally:
        assert observer is not None
        observer.close()


def test_an_unknown_reference_fails_when_the_monitor_is_built() -> None:
    with pytest.raises(RewardkitError, match="no-such-grader"):
        build_monitor(config(HONEST, {"reference": "no-such-grader"}))
    with pytest.raises(ConfigError, match=r"rl\.monitor\.reference\.catalog"):
        build_monitor(config(HONEST, {"reference": {"provider": "exact-match", "catalog": "elsewhere"}}))


def test_observer_for_builds_the_monitor_only_when_configured() -> None:
    assert observer_for(config(HONEST, None)) is None
    monitor = observer_for(config(HONEST, {}))
    assert isinstance(monitor, RewardMonitor)
    monitor.close()


# -- signals end to end --------------------------------------------------------------------------


def test_reference_scoring_and_divergence_of_a_proxy_that_disagrees(rewards: dict[str, RewardLike]) -> None:
    batch = groups("s0", MIXED)
    monitor = build_monitor(config(CONTRARY, {"reference": "exact-match"}))
    out = signals_of(monitor.observe(observed(rewards["contrary"], batch, step=None)))
    # exact-match on MIXED: group 0 -> 1 0 0 1, group 1 -> 1 1 0 0
    assert out["reference_mean"] == 0.5
    assert out["divergence"] == 1.0  # every ordered pair reversed
    # the component's own value (before its weight -1) agrees with the reference: the weight reverses it
    assert out["divergence/exact-match"] == 0.0
    assert out["component/exact-match"] == 0.5
    monitor.close()

    honest = build_monitor(config(HONEST, {"reference": "exact-match"}))
    out = signals_of(honest.observe(observed(rewards["honest"], batch, step=None)))
    assert out["divergence"] == 0.0 and out["reference_mean"] == 0.5
    honest.close()


def test_components_diagnostics_and_scalars(rewards: dict[str, RewardLike]) -> None:
    batch = groups("s0", [["#### 3", "", "the answer is 3", "4"]], reference="#### 3")
    monitor = build_monitor(config(COMPOSED, {"reference": "gsm8k"}))
    out = signals_of(monitor.observe(observed(rewards["composed"], batch, step=None, scalars={"kl": 0.25})))
    assert out["component/gsm8k"] == 0.5 and out["component/nonempty"] == 0.75
    assert out["divergence/gsm8k"] == 0.0  # the reference is the same grader
    assert out["diagnostic/gsm8k/extracted"] == pytest.approx(0.75)
    assert out["kl"] == 0.25 and "entropy" not in out
    assert "diagnostic/gsm8k/sample_count" not in out
    monitor.close()


def test_length_coupling_saturation_and_duplicates(rewards: dict[str, RewardLike]) -> None:
    monitor = build_monitor(config(HONEST, {}))
    batch = groups("s0", [["3", "3 and more words", "3", "4 5"], ["3", "3", "3", "3"]])
    out = signals_of(monitor.observe(observed(rewards["honest"], batch, step=None)))
    # group 0: rewards 1 0 1 0, lengths 1 4 1 2; group 1: no spread
    assert out["length_coupling"] == pytest.approx(np.corrcoef([1, 0, 1, 0], [1, 4, 1, 2])[0, 1])
    assert out["length_mean"] == pytest.approx(12 / 8)
    assert out["saturation_zero_variance"] == 0.5
    assert out["saturation_at_max"] == 0.75
    assert out["duplicates_within"] == pytest.approx(4 / 8)  # "3" again in group 0; three repeats in group 1
    assert out["duplicates_across"] == 0.0
    again = signals_of(
        monitor.observe(observed(rewards["honest"], groups("s1", [["3 ", " 3", "x", "y"]]), step=None))
    )
    assert again["duplicates_across"] == 0.5  # whitespace-normalised "3" was seen at the step before
    assert "reference_mean" not in again and "divergence" not in again  # no reference grader
    monitor.close()


def test_token_counts_are_the_length_when_the_trainer_gives_them(rewards: dict[str, RewardLike]) -> None:
    batch = groups("s0", [["3", "4", "3", "4"]])
    for index, rollout in enumerate(batch[0]["rollouts"]):
        rollout["completion_token_count"] = 10 + index
    monitor = build_monitor(config(HONEST, {}))
    out = signals_of(monitor.observe(observed(rewards["honest"], batch, step=None)))
    assert out["length_mean"] == 11.5
    monitor.close()


def test_candidates_shape_of_inputs_is_read_too(rewards: dict[str, RewardLike]) -> None:
    batch = groups("s0", MIXED)
    scored = rewards["contrary"].score(batch)
    inputs = [
        {
            "prompt": "what is 1 + 2",
            "reference": "3",
            "candidates": [{"completion": r["completion"]} for r in g["rollouts"]],
        }
        for g in batch
    ]
    monitor = build_monitor(config(CONTRARY, {"reference": "exact-match"}))
    out = signals_of(monitor.observe(ObservedBatch(inputs, scored, "verl", step=None)))
    assert out["divergence"] == 1.0 and out["errors"] == 0.0
    monitor.close()


# -- steps ------------------------------------------------------------------------------------------


def test_batches_of_one_step_accumulate_until_a_new_step(
    rewards: dict[str, RewardLike], tmp_path: Path
) -> None:
    monitor = build_monitor(config(HONEST, {"logdir": str(tmp_path)}))
    honest = rewards["honest"]
    first = monitor.observe(observed(honest, groups("a", [["3", "3", "3", "3"]]), step=7))
    assert first == {"train/reward_monitor/alarm": 0.0, "train/reward_monitor/errors": 0.0}
    second = monitor.observe(
        observed(honest, groups("b", [["4", "4", "4", "4"], ["3", "4", "4", "4"]]), step=7)
    )
    assert "train/reward_monitor/reward_mean" not in second
    assert log_lines(tmp_path) == []
    finished = signals_of(monitor.observe(observed(honest, groups("c", [["4", "4", "4", "4"]]), step=8)))
    assert finished["reward_mean"] == pytest.approx(5 / 12)  # both calls of step 7: 12 rollouts
    assert finished["saturation_zero_variance"] == pytest.approx(2 / 3)
    [line] = log_lines(tmp_path)
    assert (line["step"], line["rollouts"], line["groups"], line["source"]) == (7, 12, 3, "trl")
    monitor.close()  # finishes step 8
    assert [line["step"] for line in log_lines(tmp_path)] == [7, 8]
    assert log_lines(tmp_path)[1]["signals"]["reward_mean"] == 0.0


def test_step_none_finishes_every_call(rewards: dict[str, RewardLike], tmp_path: Path) -> None:
    monitor = build_monitor(config(HONEST, {"logdir": str(tmp_path)}))
    for tag in ("a", "b", "c"):
        out = signals_of(monitor.observe(observed(rewards["honest"], groups(tag, MIXED), step=None)))
        assert out["reward_mean"] == 0.5
    monitor.close()
    assert [line["step"] for line in log_lines(tmp_path)] == [0, 1, 2]


def test_log_lines_hold_every_signal_with_null_for_undefined(
    rewards: dict[str, RewardLike], tmp_path: Path
) -> None:
    monitor = build_monitor(
        config(HONEST, {"logdir": str(tmp_path / "deep" / "er"), "reference": "exact-match"})
    )
    monitor.observe(observed(rewards["honest"], groups("a", [["3", "4", "3", "4"]]), step=3))
    monitor.close()
    monitor.close()  # idempotent
    [line] = log_lines(tmp_path / "deep" / "er")
    assert set(line) == {"step", "source", "rollouts", "groups", "signals", "alarms"}
    assert line["alarms"] == []
    assert line["signals"]["length_coupling"] is None  # every length is 1: no spread
    assert line["signals"]["trend/reward"] is None  # one step: no slope yet
    assert line["signals"]["divergence"] == 0.0
    after = monitor.observe(observed(rewards["honest"], groups("b", MIXED), step=4))
    assert after["train/reward_monitor/errors"] == 1.0  # closed: counted, not raised


def test_ungrouped_batches_leave_within_group_signals_undefined(
    rewards: dict[str, RewardLike], tmp_path: Path
) -> None:
    single = rewards["single"]
    batch = [group for g, text in enumerate(["3", "4", "3", "3 3"]) for group in groups(f"u{g}", [[text]])]
    monitor = build_monitor(
        config(HONEST, {"reference": "exact-match", "logdir": str(tmp_path)}, group_size=1)
    )
    out = signals_of(monitor.observe(ObservedBatch(batch, single.score(batch), "openrlhf", grouped=False)))
    for within in ("length_coupling", "saturation_zero_variance", "duplicates_within"):
        assert within not in out
    assert out["divergence"] == 0.0  # across the step's rollouts instead
    assert out["reward_mean"] == 0.5 and out["length_mean"] == 1.25
    monitor.close()
    [line] = log_lines(tmp_path)
    assert line["signals"]["length_coupling"] is None and line["signals"]["duplicates_within"] is None


def test_a_large_batch_examines_whole_groups_up_to_the_cap(
    rewards: dict[str, RewardLike], tmp_path: Path
) -> None:
    # "3" is right; every group is alike, so a sample of whole groups reads what the batch holds
    many = [["3", "4", "3 3", "4 4 4"]] * (EXAMINED_ROLLOUTS // 4 + 50)
    monitor = build_monitor(config(HONEST, {"reference": "exact-match", "logdir": str(tmp_path)}))
    out = signals_of(monitor.observe(observed(rewards["honest"], groups("big", many), step=None)))
    monitor.close()
    assert out["reward_mean"] == 0.25  # from the batch report: every rollout
    assert out["reference_mean"] == 0.25 and out["length_mean"] == 1.75 and out["divergence"] == 0.0
    assert out["length_coupling"] == pytest.approx(np.corrcoef([1, 0, 0, 0], [1, 1, 2, 3])[0, 1])
    [line] = log_lines(tmp_path)
    assert (line["rollouts"], line["groups"]) == (len(many) * 4, len(many))


# -- alarms --------------------------------------------------------------------------------------


def test_an_alarm_is_raised_once_with_began_evidence_and_the_stop_file(
    rewards: dict[str, RewardLike], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stop = tmp_path / "stop" / "STOP.json"
    settings = {
        "reference": "exact-match",
        "warmup_steps": 5,
        "logdir": str(tmp_path),
        "stop_file": str(stop),
    }
    monitor = build_monitor(config(HONEST, settings))
    step = 0
    for step in range(8):  # honest: the proxy agrees with the reference
        out = monitor.observe(observed(rewards["honest"], groups(f"h{step}", MIXED), step=step))
        assert out["train/reward_monitor/alarm"] == 0.0
    assert not stop.exists()
    hacked_from = step + 1
    alarm_metric = []
    with caplog.at_level(logging.WARNING, logger="rewardkit.monitor"):
        for step in range(hacked_from, hacked_from + 30):  # the proxy turns against the reference
            out = monitor.observe(observed(rewards["contrary"], groups(f"x{step}", MIXED), step=step))
            alarm_metric.append(out["train/reward_monitor/alarm"])
    monitor.close()
    assert len(monitor.alarms) == 1
    [alarm] = monitor.alarms
    assert alarm.signal == "divergence"
    assert alarm.began == hacked_from
    # a change of 1.0 against the floor 0.05 adds ~19.5 a step: the threshold is passed within a few
    assert hacked_from <= alarm.step <= hacked_from + math.ceil(THRESHOLDS[0.01]["divergence"] / 19.5)
    assert "divergence" in alarm.evidence and "baseline 0" in alarm.evidence
    assert "threshold" in alarm.evidence
    # the metric turns on one call after the step (step aggregation) and stays on
    assert alarm_metric[-1] == 1.0 and sorted(alarm_metric) == alarm_metric
    assert json.loads(stop.read_text()) == alarm.to_json()
    lines = log_lines(tmp_path)
    with_alarms = [line for line in lines if line["alarms"]]
    assert [line["step"] for line in with_alarms] == [alarm.step]
    assert with_alarms[0]["alarms"] == [alarm.to_json()]
    warnings = [record.getMessage() for record in caplog.records if "alarm" in record.getMessage()]
    assert len(warnings) == 1
    assert f"divergence at step {alarm.step}" in warnings[0] and f"began at step {alarm.began}" in warnings[0]


def test_honest_steps_raise_no_alarm(rewards: dict[str, RewardLike], tmp_path: Path) -> None:
    monitor = build_monitor(config(HONEST, {"reference": "exact-match", "warmup_steps": 5}))
    for step in range(60):
        monitor.observe(observed(rewards["honest"], groups(f"h{step}", MIXED), step=step))
    monitor.close()
    assert monitor.alarms == [] and monitor.errors == 0


# -- faults ----------------------------------------------------------------------------------------


def test_a_failing_reference_counts_an_error_and_never_raises(
    rewards: dict[str, RewardLike], caplog: pytest.LogCaptureFixture
) -> None:
    # nonempty needs no reference, so the rollouts carry none; the exact-match reference grader does
    proxy = rewardkit.load(config({"provider": "nonempty"}, None))
    batch = groups("a", MIXED)
    for group in batch:
        for rollout in group["rollouts"]:
            del rollout["reference"]
    monitor = build_monitor(config({"provider": "nonempty"}, {"reference": "exact-match"}))
    with caplog.at_level(logging.WARNING, logger="rewardkit.monitor"):
        out = signals_of(monitor.observe(ObservedBatch(batch, proxy.score(batch), "trl")))
        again = signals_of(monitor.observe(ObservedBatch(batch, proxy.score(batch), "trl")))
    assert out["errors"] == 1.0 and again["errors"] == 2.0
    assert out["reward_mean"] == 1.0  # the step still counts
    assert "reference_mean" not in out and "divergence" not in out
    assert any("reference grader failed" in record.getMessage() for record in caplog.records)
    monitor.close()
    proxy.close()


def test_a_batch_that_does_not_match_its_scores_is_an_error(rewards: dict[str, RewardLike]) -> None:
    monitor = build_monitor(config(HONEST, {}))
    batch = groups("a", MIXED)
    scored = rewards["honest"].score(batch)
    out = monitor.observe(ObservedBatch(batch[:1], scored, "trl", step=1))
    assert out["train/reward_monitor/errors"] == 1.0
    good = monitor.observe(ObservedBatch(batch, scored, "trl", step=1))
    assert good["train/reward_monitor/errors"] == 1.0
    monitor.close()
    assert monitor.last_signals["reward_mean"] == 0.5  # the bad batch left the step untouched


# -- runs (the Reward Service) -----------------------------------------------------------------


def test_run_monitors_keep_one_monitor_and_log_per_run(
    rewards: dict[str, RewardLike], tmp_path: Path
) -> None:
    settings = {"logdir": str(tmp_path), "stop_file": str(tmp_path / "STOP"), "reference": "exact-match"}
    runs = RunMonitors(config(HONEST, settings), max_runs=2, idle_s=0)  # every run between batches is idle
    honest = rewards["honest"]
    runs.observe("run-a", observed(honest, groups("a", MIXED), step=None))
    runs.observe("run-b", observed(honest, groups("b", MIXED), step=None))
    runs.observe("run-a", observed(honest, groups("c", MIXED), step=None))
    assert [line["step"] for line in log_lines(tmp_path / "run-a")] == [0, 1]
    assert runs.monitor("run-a").settings.stop_file == tmp_path / "run-a" / "STOP"
    runs.observe("run-c", observed(honest, groups("d", MIXED), step=None))  # run-b, least recent, goes
    assert len(runs) == 2 and "run-b" not in runs and "run-a" in runs
    with pytest.raises(RewardkitError, match="run id"):
        runs.monitor("../escape")
    reference = runs.reference
    assert reference is not None
    runs.close()
    assert len(runs) == 0 and runs.reference is None
    with pytest.raises(RewardkitError, match="closed"):
        runs.observe("run-a", observed(honest, groups("e", MIXED), step=None))


def test_a_trainer_step_given_as_a_numpy_integer_is_logged(
    rewards: dict[str, RewardLike], tmp_path: Path
) -> None:
    monitor = build_monitor(config(HONEST, {"logdir": str(tmp_path)}))
    monitor.observe(observed(rewards["honest"], groups("a", MIXED), step=np.int64(5)))  # type: ignore[arg-type]
    monitor.close()
    assert monitor.errors == 0 and [line["step"] for line in log_lines(tmp_path)] == [5]
