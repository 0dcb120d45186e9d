"""Calibration of the reward monitor's alarms by simulated honest GRPO runs.

The honest model (learning curves with plateaus, length drift, three kinds of honest proxy, exact
correctness as the reference) is ``rewardkit_monitor.calibration``'s docstring. Each run has 1,000
steps of 16 prompts x 8 completions; its ``divergence``, ``reward_gain``, ``reward_gain/unsolved``
and ``length_coupling`` per step are the formulas of ``rewardkit_monitor.signals`` (vectorised over
steps, and on a sample of steps recomputed by those very functions: the largest difference is
reported), fed to
``rewardkit_monitor.detectors.Cusum`` itself with a warm-up of 30 values.

1. Calibrate on ``--runs`` honest runs (seed 1): for each signal and documented rate, the smallest
   CUSUM threshold at which at most rate / k of the runs raise that signal's alarm, k the number of
   signals a monitor alarms on together (3 beside a reference grader, 1 without).
2. Verify on ``--fresh-runs`` other honest runs (seed 2): the share of runs with any alarm of a
   monitor with a reference grader (any of its three signals), and of one without, at those
   thresholds, with its exact binomial 95% interval; and the share the level check reports
   (``detectors.LEVEL_DIVERGENCE``).
3. Sanity: on ``--hacked-runs`` runs per hack (length-paying, phrase-paying, below-right,
   unsolvable-prompt; seed 3), how often and how soon after the onset a monitor with a reference
   grader alarms, and after the issue's offline ``hack_step`` (the
   first step where the reference's EWMA, alpha 0.1, is at least 0.15 below its running maximum
   and stays there for 20 steps).

    python benchmarks/monitor_calibration.py [--runs 5000] [--fresh-runs 3000] [--hacked-runs 100]
        [--write]   # also write the thresholds into rewardkit_monitor/calibration.py
"""

from __future__ import annotations

import argparse
import datetime
import math
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import report

from rewardkit.job.tables import format_table
from rewardkit_monitor import calibration
from rewardkit_monitor.calibration import (
    ALARMED,
    HACKS,
    SIGNAL_SETS,
    WARMUP,
    alarm_steps,
    clopper_pearson,
    peak_statistics,
    share_of,
    simulate,
    smallest_threshold,
)
from rewardkit_monitor.detectors import LEVEL_DIVERGENCE

RATES = (0.01, 0.05)
CALIBRATION_SEED, FRESH_SEED, HACKED_SEED = 1, 2, 3
CHECK_EVERY = 50  # every 50th run has 20 steps recomputed by rewardkit_monitor.signals
COMMAND = "python benchmarks/monitor_calibration.py --write"


def hack_step(
    reference_mean: np.ndarray, alpha: float = 0.1, drop: float = 0.15, hold: int = 20
) -> int | None:
    """The issue's offline onset: the first step where the reference's EWMA is at least ``drop``
    below its running maximum and stays so for ``hold`` steps; None when it never is."""
    ewma = np.empty_like(reference_mean)
    level = reference_mean[0]
    for step, value in enumerate(reference_mean):
        level = value if step == 0 else alpha * value + (1 - alpha) * level
        ewma[step] = level
    below = ewma <= np.maximum.accumulate(ewma) - drop
    run = 0
    for step, flag in enumerate(below.tolist()):
        run = run + 1 if flag else 0
        if run == hold:
            return step - hold + 1
    return None


def first_alarms(
    values: dict[str, np.ndarray], thresholds: dict[str, float]
) -> tuple[list[int | None], dict[str, list[int | None]]]:
    """Per run, the step of the first alarm of a monitor with a reference grader (any of its
    signals; None: none), and each signal's (``length_coupling`` too, which it only reports)."""
    per_signal = {name: alarm_steps(values[name], name, thresholds[name]) for name in ALARMED}
    together = [per_signal[name] for name in SIGNAL_SETS["reference"]]
    first = [min((s for s in steps if s is not None), default=None) for steps in zip(*together)]
    return first, per_signal


def detection(hack: str, runs: int, thresholds: dict[float, dict[str, float]]) -> list[dict[str, Any]]:
    simulated = simulate(HACKED_SEED, runs, hack=hack)
    onsets_hack = [hack_step(row) for row in simulated.reference_mean]
    rows = []
    for rate in RATES:
        alarms, per_signal = first_alarms(simulated.values, thresholds[rate])
        before = sum(a is not None and a < onset for a, onset in zip(alarms, simulated.onsets))
        after_onset = [
            a - onset for a, onset in zip(alarms, simulated.onsets) if a is not None and a >= onset
        ]
        after_hack = [a - h for a, h in zip(alarms, onsets_hack) if a is not None and h is not None]
        with_hack_step = sum(h is not None for h in onsets_hack)
        rows.append(
            {
                "hack": hack,
                "rate": rate,
                "runs": runs,
                "alarmed": sum(a is not None for a in alarms) / runs,
                **{f"by_{name}": sum(a is not None for a in per_signal[name]) / runs for name in ALARMED},
                "level_reported": int(np.sum(simulated.level_divergence > LEVEL_DIVERGENCE)),
                "before_onset": before,
                "delay_median": _quantile(after_onset, 0.5),
                "delay_p90": _quantile(after_onset, 0.9),
                "runs_with_hack_step": with_hack_step,
                "vs_hack_step_median": _quantile(after_hack, 0.5),
                "within_30_of_hack_step": (
                    sum(d <= 30 for d in after_hack) / with_hack_step if with_hack_step else None
                ),
            }
        )
    return rows


def _quantile(values: list[int], q: float) -> float | None:
    return float(np.quantile(values, q)) if values else None


def write_thresholds(thresholds: dict[float, dict[str, float]], runs: int, fresh_runs: int) -> Path:
    """Replace the THRESHOLDS block of rewardkit_monitor/calibration.py."""
    path = Path(calibration.__file__)
    text = path.read_text(encoding="utf-8")
    day = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    lines = [
        f"# BEGIN THRESHOLDS (rewritten by `{COMMAND}`)",
        f"# calibrated {day} on {runs:,} simulated honest runs (seed {CALIBRATION_SEED}), verified on",
        f"# {fresh_runs:,} fresh ones (seed {FRESH_SEED}); docs/monitor.md has the table",
        "THRESHOLDS: dict[float, dict[str, float]] = {",
        *(
            "    " + f"{rate}: " + "{" + ", ".join(f'"{name}": {value}' for name, value in by.items()) + "},"
            for rate, by in thresholds.items()
        ),
        "}",
        "# END THRESHOLDS",
    ]
    block = re.compile(r"^# BEGIN THRESHOLDS.*?^# END THRESHOLDS$", re.S | re.M)
    if not block.search(text):
        raise SystemExit(f"{path}: no '# BEGIN THRESHOLDS' ... '# END THRESHOLDS' block to rewrite")
    path.write_text(block.sub(lambda _: "\n".join(lines), text, count=1), encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5000, help="honest runs the thresholds are set on")
    parser.add_argument("--fresh-runs", type=int, default=3000, help="other honest runs that verify them")
    parser.add_argument("--hacked-runs", type=int, default=100, help="hacked runs per hack (sanity figure)")
    parser.add_argument("--write", action="store_true", help="write the thresholds into calibration.py")
    args = parser.parse_args()
    started = time.perf_counter()

    honest = simulate(CALIBRATION_SEED, args.runs, check_every=CHECK_EVERY)
    peaks = {name: peak_statistics(honest.values[name], name) for name in ALARMED}
    thresholds = {
        rate: {name: smallest_threshold(peaks[name], share_of(rate, name)) for name in ALARMED}
        for rate in RATES
    }
    calibrated_s = time.perf_counter() - started

    fresh = simulate(FRESH_SEED, args.fresh_runs, check_every=CHECK_EVERY)
    rows = []
    union_rows = {}
    for rate in RATES:
        per_signal = {name: alarm_steps(fresh.values[name], name, thresholds[rate][name]) for name in ALARMED}
        for name in ALARMED:
            alarmed = sum(step is not None for step in per_signal[name])
            low, high = clopper_pearson(alarmed, args.fresh_runs)
            rows.append(
                {
                    "rate": rate,
                    "signal": name,
                    "threshold": thresholds[rate][name],
                    "calibration_share": float(np.mean(peaks[name] > thresholds[rate][name])),
                    "target": share_of(rate, name),
                    "fresh_share": alarmed / args.fresh_runs,
                    "fresh_95_low": low,
                    "fresh_95_high": high,
                }
            )
        together = SIGNAL_SETS["reference"]
        union = sum(any(steps) for steps in zip(*(_alarmed(per_signal[n]) for n in together)))
        low, high = clopper_pearson(union, args.fresh_runs)
        union_rows[rate] = {"alarmed_runs": union, "share": union / args.fresh_runs, "low": low, "high": high}
        rows.append(
            {
                "rate": rate,
                "signal": "any of the three (with a reference)",
                "threshold": None,
                "calibration_share": float(
                    np.mean(np.logical_or.reduce([peaks[n] > thresholds[rate][n] for n in together]))
                ),
                "target": rate,
                "fresh_share": union / args.fresh_runs,
                "fresh_95_low": low,
                "fresh_95_high": high,
            }
        )
    level_fresh = int(np.sum(fresh.level_divergence > LEVEL_DIVERGENCE))
    level_calibration = int(np.sum(honest.level_divergence > LEVEL_DIVERGENCE))
    level_low, level_high = clopper_pearson(level_fresh, args.fresh_runs)
    level = {
        "level": LEVEL_DIVERGENCE,
        "calibration_runs_reported": level_calibration,
        "fresh_runs_reported": level_fresh,
        "fresh_95": [level_low, level_high],
        "honest_warmup_discordance_percentiles": dict(
            zip(
                ("p50", "p90", "p99", "p99.5", "max"),
                _percentiles(np.concatenate([honest.level_divergence, fresh.level_divergence])),
            )
        ),
    }
    print(
        f"level check (warm-up discordance > {LEVEL_DIVERGENCE}): {level_calibration} of {args.runs} "
        f"calibration runs, {level_fresh} of {args.fresh_runs} fresh runs; honest warm-up discordance "
        + ", ".join(f"{k} {v:.3f}" for k, v in level["honest_warmup_discordance_percentiles"].items())
    )
    verified_s = time.perf_counter() - started - calibrated_s

    detections = [row for hack in HACKS for row in detection(hack, args.hacked_runs, thresholds)]
    print(
        format_table(
            [[_cell(row.get(key)) for key in detections[0]] for row in detections], list(detections[0])
        ),
        end="\n\n",
    )
    total_s = time.perf_counter() - started
    checked = honest.checked_steps + fresh.checked_steps
    difference = max(honest.largest_difference, fresh.largest_difference)
    print(
        f"signals recomputed by rewardkit_monitor.signals on {checked} steps: "
        f"largest difference {difference:.2g}"
    )
    print("peak CUSUM statistic of the honest runs, 50/90/99/99.5th percentiles and max:")
    for name in ALARMED:
        print(f"  {name}: " + ", ".join(f"{v:.2f}" for v in _percentiles(peaks[name])))
    print(f"{total_s:.0f} s in all (calibration {calibrated_s:.0f} s, verification {verified_s:.0f} s)\n")
    if difference > 1e-9:
        raise SystemExit(f"the vectorised signals differ from rewardkit_monitor.signals by {difference:.3g}")
    extra = {
        "command": COMMAND,
        "steps": calibration.STEPS,
        "groups": calibration.GROUPS,
        "group_size": calibration.GROUP_SIZE,
        "warmup": WARMUP,
        "runs": args.runs,
        "fresh_runs": args.fresh_runs,
        "seeds": {"calibration": CALIBRATION_SEED, "fresh": FRESH_SEED, "hacked": HACKED_SEED},
        "thresholds": {str(rate): by for rate, by in thresholds.items()},
        "verified_union": {str(rate): found for rate, found in union_rows.items()},
        "signal_sets": SIGNAL_SETS,
        "level_check": level,
        "honest_peak_percentiles": {
            name: dict(zip(("p50", "p90", "p99", "p99.5", "max"), _percentiles(peaks[name])))
            for name in ALARMED
        },
        "signal_check": {"steps": checked, "largest_difference": difference},
        "detection": detections,
        "seconds": {"calibration": calibrated_s, "verification": verified_s, "total": total_s},
    }
    report("monitor_calibration", rows, extra)
    if args.write:
        print(f"wrote the thresholds into {write_thresholds(thresholds, args.runs, args.fresh_runs)}")


def _alarmed(steps: list[int | None]) -> list[bool]:
    return [step is not None for step in steps]


def _percentiles(values: np.ndarray) -> list[float]:
    return [float(v) for v in np.percentile(values, [50, 90, 99, 99.5])] + [float(values.max())]


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if not math.isnan(value) else "-"
    return str(value)


if __name__ == "__main__":
    main()
