"""The one-sided CUSUM the alarms run on."""

from __future__ import annotations

import dataclasses
import math

import pytest

from rewardkit_monitor.calibration import THRESHOLDS
from rewardkit_monitor.detectors import FLOORS, LEVEL_DIVERGENCE, LEVEL_PAIRS, SLACK, Alarm, Cusum, LevelCheck


def test_constants_and_calibrated_signals_agree() -> None:
    assert SLACK == 0.5
    assert FLOORS == {
        "divergence": 0.05,
        "reward_gain": 0.02,
        "reward_gain/unsolved": 0.02,
        "length_coupling": 0.1,
    }
    for thresholds in THRESHOLDS.values():
        assert set(thresholds) == set(FLOORS)


def test_warmup_sets_the_baseline_and_the_floor_bounds_its_spread() -> None:
    detector = Cusum("divergence", threshold=4.0, warmup=5, floor=0.05)
    for step in range(5):
        assert detector.update(step, 0.2) is None
    assert detector.baseline == (pytest.approx(0.2), 0.05)  # a flat warm-up: the floor
    assert detector.statistic == 0.0
    detector.update(5, 0.25)  # z = 1: S = 1 - SLACK
    assert detector.statistic == pytest.approx(0.5)
    detector.update(6, 0.1)  # z = -2: back to 0
    assert detector.statistic == 0.0


def test_alarm_once_with_the_step_the_climb_began_and_evidence() -> None:
    detector = Cusum("length_coupling", threshold=3.0, warmup=5, floor=0.1)
    values = [0.5, 0.6, 0.4, 0.5, 0.5]  # sd 0.0707 < floor: sigma0 = 0.1
    for step, value in enumerate(values):
        detector.update(step, value)
    assert detector.update(5, 0.54) is None  # z = 0.4: S stays 0
    assert detector.update(6, math.nan) is None  # skipped
    alarms = [detector.update(step, 0.7) for step in range(7, 12)]  # z = 2: S grows 1.5 a step
    raised = [alarm for alarm in alarms if alarm is not None]
    assert len(raised) == 1
    alarm = raised[0]
    assert isinstance(alarm, Alarm)
    assert (alarm.signal, alarm.step, alarm.began) == ("length_coupling", 9, 7)
    assert "baseline 0.5" in alarm.evidence and "threshold 3" in alarm.evidence and "step 9" in alarm.evidence
    assert detector.alarm is alarm
    assert detector.update(12, 5.0) is None  # alarmed for good
    assert alarm.to_json() == {"signal": "length_coupling", "step": 9, "began": 7, "evidence": alarm.evidence}
    with pytest.raises(dataclasses.FrozenInstanceError):
        alarm.step = 3  # type: ignore[misc]


def test_nan_values_neither_warm_up_nor_move_the_statistic() -> None:
    detector = Cusum("divergence", threshold=1.0, warmup=3, floor=0.05)
    for step in range(10):
        detector.update(step, math.nan)
    assert detector.baseline is None
    for step, value in enumerate([0.1, 0.2, 0.3]):
        detector.update(10 + step, value)
    assert detector.baseline == (pytest.approx(0.2), pytest.approx(0.1))


def test_a_decrease_never_alarms() -> None:
    detector = Cusum("divergence", threshold=1.0, warmup=3, floor=0.05)
    for step in range(3):
        detector.update(step, 0.5)
    assert all(detector.update(step, 0.0) is None for step in range(3, 100))
    assert detector.statistic == 0.0


def test_invalid_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="warmup"):
        Cusum("divergence", threshold=1.0, warmup=1, floor=0.05)
    with pytest.raises(ValueError, match="positive"):
        Cusum("divergence", threshold=0.0, warmup=5, floor=0.05)


def test_a_negative_coupling_fading_toward_zero_is_no_alarm_but_a_positive_one_is() -> None:
    # Honest: right answers are the short ones, and the coupling fades as accuracy saturates.
    detector = Cusum("length_coupling", threshold=3.0, warmup=5, floor=0.1)
    for step, value in enumerate([-0.5, -0.4, -0.6, -0.5, -0.5]):
        detector.update(step, value)
    assert detector.baseline == (0.0, 0.1)  # the in-control level is max(mean, LEAST_BASELINE)
    assert all(detector.update(step, -0.05) is None for step in range(5, 200))
    assert detector.statistic == 0.0
    # The reward starts paying for length: the coupling turns positive.
    raised = [detector.update(step, 0.3) for step in range(200, 205)]
    assert [alarm.step for alarm in raised if alarm is not None] == [201]
    # divergence has no such level: its baseline is the warm-up mean.
    other = Cusum("divergence", threshold=3.0, warmup=5, floor=0.05)
    for step in range(5):
        other.update(step, -0.2)
    assert other.baseline == (-0.2, 0.05)


def test_the_level_check_reports_a_reward_disagreeing_from_the_start_once_at_warmup_end() -> None:
    check = LevelCheck(warmup=3)
    # step 0 has no pair and no group: it does not count towards either warm-up
    assert check.update(0, 0.0, 0, 0, 0) == []
    assert check.update(1, 30.0, 60, 0, 4) == []
    assert check.update(2, 30.0, 60, 0, 4) == []
    (finding,) = check.update(3, 30.0, 60, 0, 4)  # 90 of 180 pairs against the reference: blind
    assert (finding.signal, finding.step, finding.began) == ("level/divergence", 3, 1)
    assert "0.5 of the reference's 180 pairs" in finding.evidence
    assert check.update(4, 60.0, 60, 4, 4) == []  # once, at the end of the warm-up only


def test_the_level_check_passes_an_agreeing_reward_and_needs_enough_pairs() -> None:
    agreeing = LevelCheck(warmup=2)
    share = LEVEL_DIVERGENCE - 0.01
    assert agreeing.update(0, share * 100, 100, 1, 4) == []
    assert agreeing.update(1, share * 100, 100, 1, 4) == []
    few = LevelCheck(warmup=2)  # blind, but on too few pairs to say so
    pairs = (LEVEL_PAIRS - 1) // 2
    assert few.update(0, pairs / 2, pairs, 1, 4) == []
    assert few.update(1, pairs / 2, pairs, 1, 4) == []


def test_the_level_check_reports_groups_that_never_varied() -> None:
    check = LevelCheck(warmup=2)
    assert check.update(0, 0.0, 0, 4, 4) == []
    (finding,) = check.update(1, 0.0, 0, 4, 4)
    assert (finding.signal, finding.step, finding.began) == ("level/zero_variance", 1, 0)
    varied = LevelCheck(warmup=2)
    assert varied.update(0, 0.0, 0, 4, 4) == [] and varied.update(1, 0.0, 0, 3, 4) == []
