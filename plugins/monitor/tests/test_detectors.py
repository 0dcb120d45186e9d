"""The one-sided CUSUM the alarms run on."""

from __future__ import annotations

import dataclasses
import math

import pytest

from rewardkit_monitor.calibration import THRESHOLDS
from rewardkit_monitor.detectors import FLOORS, SLACK, Alarm, Cusum


def test_constants_and_calibrated_signals_agree() -> None:
    assert SLACK == 0.5
    assert FLOORS == {"divergence": 0.05, "length_coupling": 0.1}
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
