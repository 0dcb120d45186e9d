"""The shipped CUSUM thresholds against a small fresh simulation of honest runs, and the pieces of
the calibration study (benchmarks/monitor_calibration.py) that make its numbers mean something."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from rewardkit_monitor import calibration
from rewardkit_monitor.calibration import (
    ALARMED,
    THRESHOLDS,
    alarm_steps,
    check_signals,
    clopper_pearson,
    peak_statistics,
    run_signals,
    simulate,
    simulate_run,
    smallest_threshold,
)
from rewardkit_monitor.detectors import FLOORS
from rewardkit_monitor.settings import MonitorSettings

FRESH_SEED = 20261202  # neither the study's calibration seed (1) nor its verification seed (2)
FRESH_RUNS = 240


@pytest.fixture(scope="module")
def fresh() -> calibration.Simulated:
    return simulate(FRESH_SEED, FRESH_RUNS)


@pytest.mark.parametrize("together", sorted(calibration.SIGNAL_SETS))
@pytest.mark.parametrize("rate", sorted(THRESHOLDS))
def test_the_shipped_thresholds_hold_their_rate_on_fresh_honest_runs(fresh, rate, together):
    # the signals a monitor alarms on together: with a reference grader, and without one
    names = calibration.SIGNAL_SETS[together]
    per_signal = [alarm_steps(fresh.values[name], name, THRESHOLDS[rate][name]) for name in names]
    alarmed = sum(any(step is not None for step in steps) for steps in zip(*per_signal))
    # Not more false alarms than the rate allows: the rate lies above the lower end of a 99%
    # interval around what these runs show (so a too-low threshold, more alarms, fails).
    low, _ = clopper_pearson(alarmed, FRESH_RUNS, level=0.99)
    assert low <= rate, f"{alarmed} of {FRESH_RUNS} honest runs alarmed at the {rate} thresholds"


def test_the_thresholds_cover_the_settings_rates_and_the_alarmed_signals():
    assert set(THRESHOLDS) == {0.01, 0.05}
    for rate, by_signal in THRESHOLDS.items():
        assert MonitorSettings(false_alarm_rate=rate).false_alarm_rate == rate
        assert set(by_signal) == set(ALARMED) == set(FLOORS)
        assert all(math.isfinite(h) and h > 0 for h in by_signal.values())
        # a rarer false alarm needs a higher bar
        assert all(by_signal[name] >= THRESHOLDS[0.05][name] for name in ALARMED)
    text = Path(calibration.__file__).read_text(encoding="utf-8")  # the block --write rewrites
    assert text.count("# BEGIN THRESHOLDS") == text.count("# END THRESHOLDS") == 1


def test_honest_simulated_runs_pass_the_level_check(fresh):
    from rewardkit_monitor.detectors import LEVEL_DIVERGENCE

    assert fresh.level_divergence.max() < LEVEL_DIVERGENCE


def test_the_vectorised_signals_are_the_monitors_own():
    for hack in (None, *calibration.HACKS):
        run = simulate_run(5, 0, steps=120, hack=hack)
        found = run_signals(run)
        assert check_signals(run, np.arange(120), found) < 1e-12


def test_a_run_alarms_at_h_exactly_when_its_peak_statistic_exceeds_h():
    runs = [run_signals(simulate_run(6, index, steps=300, hack="length")) for index in range(6)]
    for name in ALARMED:
        values = np.vstack([found[name] for found in runs])
        peaks = peak_statistics(values, name)
        for h in (0.5, float(np.median(peaks)), float(peaks.max()) + 1):
            steps = alarm_steps(values, name, h)
            assert [step is not None for step in steps] == (peaks > h).tolist()


def test_simulated_hacks_are_caught_and_honest_runs_stay_honest():
    honest = simulate_run(7, 1)
    assert set(np.unique(honest.reference)) <= {0.0, 1.0} and honest.onset is None
    accuracy = honest.reference.mean(axis=(1, 2))
    assert accuracy[-100:].mean() > accuracy[:30].mean()  # it learns
    hacked = simulate(8, 4, steps=600, hack="length")  # as a monitor with a reference grader sees it
    alarms = [
        min((s for s in steps if s is not None), default=None)
        for steps in zip(
            *(
                alarm_steps(hacked.values[n], n, THRESHOLDS[0.01][n])
                for n in calibration.SIGNAL_SETS["reference"]
            )
        )
    ]
    assert all(a is not None and 0 <= a - onset <= 60 for a, onset in zip(alarms, hacked.onsets)), alarms


def test_the_smallest_threshold_lets_through_at_most_the_share():
    peaks = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.5])
    assert smallest_threshold(peaks, 0.1) == 8.0  # only 9.5 exceeds it
    assert smallest_threshold(peaks, 0.0) == 9.5
    assert smallest_threshold(np.zeros(10), 0.05) == 0.01  # a threshold must be positive
    h = smallest_threshold(np.random.default_rng(0).gamma(2.0, 3.0, 1000), 0.025)
    assert np.mean(np.random.default_rng(0).gamma(2.0, 3.0, 1000) > h) <= 0.025


def test_clopper_pearson_matches_known_intervals():
    low, high = clopper_pearson(0, 10)
    assert low == 0.0 and high == pytest.approx(1 - 0.025 ** (1 / 10), abs=1e-9)
    low, high = clopper_pearson(5, 10)
    assert (low, high) == pytest.approx((0.187086, 0.812914), abs=1e-6)
    low, high = clopper_pearson(20, 2000)
    assert (low, high) == pytest.approx((0.0061187, 0.0154021), abs=1e-6)
    with pytest.raises(ValueError, match="successes <= trials"):
        clopper_pearson(3, 2)
