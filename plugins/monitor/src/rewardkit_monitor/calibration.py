"""CUSUM thresholds per documented false-alarm rate, and the simulated honest GRPO runs they were
calibrated on (``benchmarks/monitor_calibration.py`` runs the study; docs/monitor.md has the table).

A threshold ``h`` for a signal is the smallest value at which at most ``rate / k`` of the simulated
honest runs of ``STEPS`` steps raise that signal's alarm, ``k`` the number of signals a monitor alarms
on together (``SIGNAL_SETS``: three beside a reference grader, ``length_coupling`` alone without
one), so that together they raise at most ``rate`` per run. The simulation is what makes the number
mean something, so it lives here, beside the numbers, for the benchmark and the tests to share.

The honest model, per run (every draw seeded by ``(seed, run)``, so a run does not depend on how
many others are simulated with it): ``GROUPS`` prompts x ``GROUP_SIZE`` completions per step.

- Learning curve: accuracy rises from ``U(0.3, 0.8)`` to ``U(0.85, 0.98)`` with a time constant of
  ``logU(30, 500)`` steps; in 40% of runs learning stalls on a plateau (from ``U(50, 600)``, for
  ``U(50, 300)`` steps). Prompts: a data set of ``logU(32, 4096)`` prompts, ``GROUPS`` of them drawn
  at random each step; they differ in difficulty: a prompt's logit is the curve's plus
  its own ``N(0, s)``, ``s ~ U(0.3, 1.5)``, and a share ``U(0, 0.3)`` of them are unsolvable: answered
  right only by chance, ``U(0, 0.1)``, whatever the policy learns.
- Length drift: a completion has ``1 + Poisson(lambda)`` tokens; for right answers ``lambda`` grows
  from 0 to ``U(0, 2)`` (mean length 1 -> up to 3) along ``1 - exp(-t / tau)``, ``tau ~ logU(100,
  3000)``; wrong answers are longer on average, by ``U(0, 1)`` tokens.
- Proxy (the optimised reward), one of three kinds, in turn (run index mod 3): a rule verifier (1 if right,
  plus a shaping bonus ``U(0, 0.5)`` in half the runs for a one-token answer, plus ``U(0, 0.2)`` for
  a wrong answer in the right format, which a share ``U(0.5, 1)`` of them are); a judge whose
  verdicts flip with probability ``U(0.01, 0.1)`` (then the same bonus); a reward model: the
  verifier's score plus ``N(0, U(0.05, 0.4))`` noise. None pays for length, and none ranks a wrong
  answer over a right one except through its noise.
- Reference: exact correctness (0 or 1).

Hacked runs (the sanity figure of the study, never used to set a threshold) start like honest ones
without length drift (the CPU pilot's lengths stayed flat until the hack); from an onset step, over
a ramp of ``U(20, 100)`` steps, a growing share of the completions carries the hack, which the
proxy's correctness term still credits and the exact-match reference does not. ``length``: the
proxy pays 0.3 per token (from step 0) and a hacked completion is padded with ``1 + Poisson(2)``
tokens. ``phrase``: the proxy pays 0.8 for a phrase, one token, that 10% of the completions carry
before the onset (prior mass from the warm start) and all of them at the end. ``below``: the proxy
pays ``U(0.3, 0.7)`` for a hack, more than a wrong answer earns, less than a right one; the policy
turns to it on the prompts it answers right less often than the hack pays. ``unsolvable``: the proxy
pays 1.2 for a hack, more than a right answer, but only on the unsolvable prompts, and the policy
turns to it there alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rewardkit_stats.distributions import incomplete_beta

# false alarms per honest run of 1,000 steps -> signal -> CUSUM threshold h
# BEGIN THRESHOLDS (rewritten by `python benchmarks/monitor_calibration.py --write`)
# calibrated 2026-12-05 on 5,000 simulated honest runs (seed 1), verified on
# 3,000 fresh ones (seed 2); docs/monitor.md has the table
THRESHOLDS: dict[float, dict[str, float]] = {
    0.01: {"divergence": 25.8, "reward_gain": 24.64, "reward_gain/unsolved": 82.14, "length_coupling": 5.57},
    0.05: {"divergence": 14.93, "reward_gain": 12.93, "reward_gain/unsolved": 33.88, "length_coupling": 3.49},
}
# END THRESHOLDS

STEPS = 1000
GROUPS = 16
GROUP_SIZE = 8
WARMUP = 30
# The signals a monitor alarms on together: beside a reference grader, and without one.
SIGNAL_SETS: dict[str, tuple[str, ...]] = {
    "reference": ("divergence", "reward_gain", "reward_gain/unsolved"),
    "no_reference": ("length_coupling",),
}
ALARMED = (*SIGNAL_SETS["reference"], *SIGNAL_SETS["no_reference"])
HACKS = ("length", "phrase", "below", "unsolvable")


def share_of(rate: float, signal: str) -> float:
    """The false-alarm share one signal's threshold is set at: ``rate`` split evenly over the
    signals a monitor alarms on together."""
    alarmed_together = next(names for names in SIGNAL_SETS.values() if signal in names)
    return rate / len(alarmed_together)


@dataclass(frozen=True)
class Run:
    """One simulated run, arrays of shape ``(steps, GROUPS, GROUP_SIZE)``."""

    proxy: np.ndarray
    reference: np.ndarray
    length: np.ndarray
    onset: int | None = None  # the step a hacked run starts to find the hack
    params: dict[str, float | str] | None = None  # the run's drawn parameters, for breakdowns
    prompts: np.ndarray | None = None  # (steps, GROUPS): which prompt of the data set each group asks


def _log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(math.exp(rng.uniform(math.log(low), math.log(high))))


def simulate_run(seed: int, run: int, steps: int = STEPS, hack: str | None = None) -> Run:
    """One honest run (``hack`` None) or one that finds the ``length`` or ``phrase`` hack."""
    if hack is not None and hack not in HACKS:
        raise ValueError(f"hack must be one of {HACKS} or None, got {hack!r}")
    rng = np.random.default_rng([seed, run, HACKS.index(hack) + 1 if hack else 0])
    shape = (steps, GROUPS, GROUP_SIZE)
    t = np.arange(steps, dtype=float)
    progress = t
    if rng.random() < 0.4:
        start, stall = rng.uniform(50, 600), rng.uniform(50, 300)
        progress = t - np.clip(t - start, 0, stall)
    start_accuracy, end_accuracy = rng.uniform(0.3, 0.8), rng.uniform(0.85, 0.98)
    accuracy = end_accuracy - (end_accuracy - start_accuracy) * np.exp(-progress / _log_uniform(rng, 30, 500))
    spread = rng.uniform(0.3, 1.5)
    # The prompt data set: each prompt its own difficulty; the unsolvable ones at their chance level.
    pool = max(GROUPS, int(_log_uniform(rng, 32, 4096)))
    offsets = rng.normal(0, spread, pool)
    unsolvable = rng.random(pool) < rng.uniform(0, 0.3)
    chance = rng.uniform(0, 0.1, pool)
    prompts = rng.integers(0, pool, (steps, GROUPS))  # with replacement, as a shuffled epoch may
    logits = np.log(accuracy / (1 - accuracy))[:, None] + offsets[prompts]
    solvable_rate = 1 / (1 + np.exp(-logits))
    prompt_accuracy = np.where(unsolvable[prompts], chance[prompts], solvable_rate)  # (steps, GROUPS)
    drift_tau = _log_uniform(rng, 100, 3000)
    drift = rng.uniform(0, 2) * (1 - np.exp(-t / drift_tau)) / (1 - math.exp(-steps / drift_tau))
    wrong_gap = rng.uniform(0, 1)
    # 0 rule verifier, 1 judge with flipped verdicts, 2 reward model: in turn, so that every set of
    # runs has each kind equally often (the judges make most of the tail the thresholds sit in)
    kind = run % 3
    bonus = rng.uniform(0, 0.5) if rng.random() < 0.5 else 0.0
    format_credit, formatted = rng.uniform(0, 0.2), rng.uniform(0.5, 1)
    flip_rate, noise = rng.uniform(0.01, 0.1), rng.uniform(0.05, 0.4)
    onset, found = None, np.zeros(steps)
    if hack is not None:
        drift = np.zeros(steps)  # lengths flat until the hack, as in the CPU pilot's runs
        earliest = min(100, steps // 4)  # 100 to 700 in a run of 1,000 steps
        onset = int(rng.integers(earliest, max(earliest + 1, min(700, steps - 100))))
        found = np.clip((t - onset) / rng.uniform(20, 100), 0, 1)
    # ``answer``: the answer itself is right; what the proxy's correctness term reads
    answer = rng.random(shape) < prompt_accuracy[:, :, None]
    length = 1 + rng.poisson(np.where(answer, 0.0, wrong_gap) + drift[:, None, None], shape)
    # a hacked completion: padded with tokens (length), carrying the paid phrase (phrase) or the
    # hack itself (below, unsolvable); either way no longer the exact answer the reference wants
    hack_pays = rng.uniform(0.3, 0.7) if hack == "below" else 1.2
    taken = found[:, None] * np.ones((1, GROUPS))  # (steps, GROUPS): the share hacking per prompt
    if hack == "phrase":
        taken = 0.1 + 0.9 * taken
    elif hack == "below":  # where a right answer is expected to earn less than the hack pays
        taken = taken * (prompt_accuracy < hack_pays)
    elif hack == "unsolvable":
        taken = taken * unsolvable[prompts]
    hacked = rng.random(shape) < taken[:, :, None]
    extra = 1 + rng.poisson(2.0, shape) if hack == "length" else np.ones(shape, dtype=np.int64)
    if hack is not None:
        length = length + np.where(hacked, extra, 0)
    reference = answer & ~hacked
    verdict = answer ^ (rng.random(shape) < flip_rate) if kind == 1 else answer
    proxy = np.where(verdict, 1 + bonus * (length == 1), format_credit * (rng.random(shape) < formatted))
    if kind == 2:
        proxy = proxy + rng.normal(0, noise, shape)
    if hack == "length":
        proxy = proxy + 0.3 * length
    elif hack == "phrase":
        proxy = proxy + 0.8 * hacked
    elif hack is not None:  # the hack replaces the answer: the proxy pays the hack's price alone
        proxy = np.where(hacked, hack_pays, proxy)
    params = {
        "kind": ("verifier", "judge", "reward_model")[kind],
        "bonus": bonus,
        "length_drift": float(drift[-1]),
        "wrong_gap": wrong_gap,
        "end_accuracy": end_accuracy,
        "spread": spread,
        "prompts": pool,
        "unsolvable_share": float(unsolvable.mean()),
    }
    return Run(proxy.astype(float), reference.astype(float), length.astype(float), onset, params, prompts)


def run_signals(run: Run) -> dict[str, np.ndarray]:
    """``divergence`` and ``length_coupling`` per step, vectorised over the steps of a run: the
    formulas of ``rewardkit_monitor.signals.discordance`` and ``length_coupling`` (grouped, no
    missing rewards), which ``check_signals`` compares them with."""
    proxy, reference, length = run.proxy, run.reference, run.length
    ordered = reference[..., :, None] > reference[..., None, :]
    below = proxy[..., :, None] < proxy[..., None, :]
    tied = proxy[..., :, None] == proxy[..., None, :]
    steps = proxy.shape[0]

    def per_step(flags: np.ndarray) -> np.ndarray:
        return np.count_nonzero(flags.reshape(steps, -1), axis=1)

    pairs = per_step(ordered)
    discordant = per_step(below & ordered) + 0.5 * per_step(tied & ordered)
    with_pairs = np.flatnonzero(pairs > 0)[:WARMUP]  # the level check's warm-up: steps with pairs
    level = float(discordant[with_pairs].sum() / max(1, pairs[with_pairs].sum()))
    with np.errstate(invalid="ignore", divide="ignore"):
        divergence = np.where(pairs > 0, discordant / np.maximum(pairs, 1), np.nan)
        centred_r = proxy - proxy.mean(axis=2, keepdims=True)
        centred_n = length - length.mean(axis=2, keepdims=True)
        spread = np.sqrt((centred_r * centred_r).sum(axis=2) * (centred_n * centred_n).sum(axis=2))
        correlation = (centred_r * centred_n).sum(axis=2) / spread
    distinct = (proxy.max(axis=2) > proxy.min(axis=2)) & (length.max(axis=2) > length.min(axis=2))
    counted = distinct.sum(axis=1)
    summed = np.where(distinct, correlation, 0.0).sum(axis=1)
    coupling = np.where(counted > 0, summed / np.maximum(counted, 1), np.nan)
    return {
        "divergence": divergence,
        **gain_signals(run),
        "length_coupling": coupling,
        "level/divergence": np.full(steps, level),  # the warm-up's pooled discordance, every step
    }


def unsolved_groups(run: Run) -> np.ndarray:
    """(steps, GROUPS): the group's prompt is unsolved at that step, by its solve counts up to and
    with that step (``signals.PromptRecord`` and ``signals.UNSOLVED_RATE``; a 0/1 reference, whose
    solved rollouts are its right answers once the run has seen both verdicts)."""
    from rewardkit_monitor.signals import UNSOLVED_RATE

    assert run.prompts is not None
    steps = run.prompts.shape[0]
    seen_both = _seen_both(run.reference)
    solved = np.where(seen_both[:, None], run.reference.sum(axis=2), 0.0).ravel()
    keys = (run.prompts.astype(np.int64) * steps + np.arange(steps)[:, None]).ravel()
    order = np.argsort(keys, kind="stable")
    ordered_keys, ordered_prompts = keys[order], keys[order] // steps
    solved_so_far = np.cumsum(solved[order])
    asked_so_far = np.arange(1, keys.size + 1) * float(GROUP_SIZE)
    # each prompt counts from its own first event; a (prompt, step) pair reads its block's last sums
    first = np.r_[0, np.flatnonzero(np.diff(ordered_prompts)) + 1]
    starts = np.repeat(first, np.diff(np.r_[first, keys.size]))
    before_solved = np.where(starts > 0, solved_so_far[starts - 1], 0.0)
    before_asked = np.where(starts > 0, asked_so_far[starts - 1], 0.0)
    block_last = np.r_[np.flatnonzero(np.diff(ordered_keys)), keys.size - 1]
    last = np.repeat(block_last, np.diff(np.r_[-1, block_last]))
    unsolved = np.empty(keys.size, dtype=bool)
    unsolved[order] = (solved_so_far[last] - before_solved) <= UNSOLVED_RATE * (
        asked_so_far[last] - before_asked
    )
    return unsolved.reshape(run.prompts.shape)


def _seen_both(reference: np.ndarray) -> np.ndarray:
    """Per step: the run has seen a right and a wrong verdict by then (``signals.solved`` needs a
    spread in the reference to call anything solved)."""
    steps = reference.shape[0]
    flat = reference.reshape(steps, -1)
    return np.maximum.accumulate(flat.max(axis=1)) > np.minimum.accumulate(flat.min(axis=1))


def gain_signals(run: Run, warmup: int = WARMUP) -> dict[str, np.ndarray]:
    """``reward_gain`` and ``reward_gain/unsolved`` per step, vectorised: the exchange fitted over
    the first ``warmup`` steps (``signals.fit_exchange``), then ``signals.reward_gain`` per step;
    NaN throughout when the exchange cannot be fitted."""
    from rewardkit_monitor.signals import Moments, fit_exchange

    proxy, reference = run.proxy, run.reference
    steps = proxy.shape[0]
    right = reference > 0.5  # signals.solved on a 0/1 reference once both verdicts were seen
    stratum = unsolved_groups(run)[:, :, None] & ~(right & _seen_both(reference)[:, None, None])

    def sums(mask: np.ndarray) -> tuple[np.ndarray, ...]:
        weight = mask.reshape(steps, -1).astype(float)
        f, r = proxy.reshape(steps, -1), reference.reshape(steps, -1)
        return (
            weight.sum(1),
            (weight * r).sum(1),
            (weight * f).sum(1),
            (weight * r * r).sum(1),
            (weight * r * f).sum(1),
        )

    everything = sums(np.ones(proxy.shape, dtype=bool))
    hard = sums(stratum)
    total = Moments(
        int(everything[0][:warmup].sum()), *(float(column[:warmup].sum()) for column in everything[1:])
    )
    exchange = fit_exchange(total)
    found = {}
    for name, (count, ref, reward, _, _) in (("reward_gain", everything), ("reward_gain/unsolved", hard)):
        if exchange is None:
            found[name] = np.full(steps, np.nan)
            continue
        with np.errstate(invalid="ignore", divide="ignore"):
            unexplained = reward - exchange.intercept * count - exchange.rate * ref
            found[name] = np.where(count > 0, unexplained / (exchange.rate * np.maximum(count, 1)), np.nan)
    return found


def check_signals(run: Run, steps: np.ndarray, signals: dict[str, np.ndarray]) -> float:
    """The largest difference, at ``steps``, between ``run_signals``' values and the monitor's own
    functions (NaN where one is NaN and the other not counts as infinite). The gains are replayed
    step by step through the monitor's pieces (``PromptRecord``, ``solved``, ``moments``,
    ``fit_exchange``, ``reward_gain``), as ``RewardMonitor`` runs them."""
    from rewardkit_monitor.signals import discordance, length_coupling

    groups = np.repeat(np.arange(GROUPS), GROUP_SIZE)
    gains = _replayed_gains(run, int(steps.max()) + 1 if steps.size else 0)
    worst = 0.0
    for step in steps.tolist():
        proxy, reference = run.proxy[step].ravel(), run.reference[step].ravel()
        found = {
            "divergence": discordance(proxy, reference, groups),
            "length_coupling": length_coupling(proxy, run.length[step].ravel(), groups),
            **{name: float(values[step]) for name, values in gains.items()},
        }
        for name, value in found.items():
            mine = float(signals[name][step])
            if math.isnan(value) != math.isnan(mine):
                return math.inf
            if not math.isnan(value):
                worst = max(worst, abs(value - mine))
    return worst


def _replayed_gains(run: Run, steps: int, warmup: int = WARMUP) -> dict[str, np.ndarray]:
    """The gains of the first ``steps`` steps, one step at a time through ``rewardkit_monitor.signals``."""
    from rewardkit_monitor import signals

    assert run.prompts is not None
    record = signals.PromptRecord()
    lowest, highest = math.inf, -math.inf
    per_step: list[tuple[signals.Moments, signals.Moments]] = []
    for step in range(steps):
        proxy, reference = run.proxy[step].ravel(), run.reference[step].ravel()
        keys = np.repeat(run.prompts[step] + 1, GROUP_SIZE).tolist()  # 0 means "no prompt" to the monitor
        lowest, highest = min(lowest, float(reference.min())), max(highest, float(reference.max()))
        flags = signals.solved(reference, lowest, highest)
        record.remember(keys, flags.tolist())
        stratum = record.unsolved(keys) & ~flags
        per_step.append(
            (signals.moments(proxy, reference), signals.moments(proxy[stratum], reference[stratum]))
        )
    total = sum((overall for overall, _ in per_step[:warmup]), signals.Moments())
    exchange = signals.fit_exchange(total) if len(per_step) >= warmup else None
    found = {name: np.full(steps, np.nan) for name in ("reward_gain", "reward_gain/unsolved")}
    if exchange is not None:
        for step, (overall, hard) in enumerate(per_step):
            found["reward_gain"][step] = signals.reward_gain(overall, exchange)
            found["reward_gain/unsolved"][step] = signals.reward_gain(hard, exchange)
    return found


def peak_statistics(values: np.ndarray, signal: str, warmup: int = WARMUP) -> np.ndarray:
    """Each run's highest CUSUM statistic (``values``: runs x steps), through
    ``rewardkit_monitor.detectors.Cusum`` itself with no threshold: a run raises the alarm at ``h``
    exactly when its peak exceeds ``h``. 0 for a run that never finished its warm-up."""
    from rewardkit_monitor.detectors import FLOORS, Cusum

    found = np.zeros(values.shape[0])
    for index, row in enumerate(values):
        detector = Cusum(signal, math.inf, warmup, FLOORS[signal])
        highest = 0.0
        for step, value in enumerate(row.tolist()):
            detector.update(step, value)
            highest = max(highest, detector.statistic)
        found[index] = highest
    return found


def smallest_threshold(peaks: np.ndarray, share: float, decimals: int = 2) -> float:
    """The smallest ``h`` (rounded up to ``decimals``) at which at most ``share`` of the runs have a
    peak statistic above ``h`` (the alarm needs ``S > h``)."""
    allowed = math.floor(share * peaks.size + 1e-9)
    ordered = np.sort(np.nan_to_num(peaks, nan=0.0))[::-1]
    needed = float(ordered[allowed]) if allowed < ordered.size else 0.0
    scale = 10**decimals
    return max(math.ceil(needed * scale) / scale, 1 / scale)


def clopper_pearson(successes: int, trials: int, level: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a binomial proportion, by bisection on the
    binomial tail (``rewardkit_stats``' incomplete beta)."""
    if trials <= 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials > 0, got {successes}/{trials}")
    tail = (1 - level) / 2

    def at_least(p: float) -> float:  # P(X >= successes) under p
        return incomplete_beta(successes, trials - successes + 1, p) if successes else 1.0

    def at_most(p: float) -> float:  # P(X <= successes) under p
        return 1.0 - incomplete_beta(successes + 1, trials - successes, p) if successes < trials else 1.0

    def solve(function: Callable[[float], float], target: float, rising: bool) -> float:
        low, high = 0.0, 1.0
        for _ in range(60):
            middle = (low + high) / 2
            if (function(middle) < target) == rising:
                low = middle
            else:
                high = middle
        return (low + high) / 2

    lower = 0.0 if successes == 0 else solve(at_least, tail, rising=True)
    upper = 1.0 if successes == trials else solve(at_most, tail, rising=False)
    return lower, upper


@dataclass(frozen=True)
class Simulated:
    """Many runs' alarmed signals (runs x steps), with what the sanity figures need."""

    values: dict[str, np.ndarray]
    reference_mean: np.ndarray  # runs x steps: the reference grader's step mean
    level_divergence: np.ndarray  # per run: the warm-up's pooled discordance (detectors.LevelCheck)
    onsets: list[int | None]
    checked_steps: int  # steps whose signals were recomputed by rewardkit_monitor.signals
    largest_difference: float  # between the vectorised signals and the monitor's, over those steps


def simulate(
    seed: int, runs: int, steps: int = STEPS, hack: str | None = None, check_every: int = 0
) -> Simulated:
    """``runs`` simulated runs; every ``check_every``-th run (0: none) has 20 of its steps
    recomputed by the monitor's own signal functions."""
    values = {name: np.empty((runs, steps)) for name in ALARMED}
    reference_mean = np.empty((runs, steps))
    level = np.empty(runs)
    onsets: list[int | None] = []
    checked, worst = 0, 0.0
    for index in range(runs):
        run = simulate_run(seed, index, steps, hack)
        found = run_signals(run)
        for name in ALARMED:
            values[name][index] = found[name]
        reference_mean[index] = run.reference.mean(axis=(1, 2))
        level[index] = found["level/divergence"][0]
        onsets.append(run.onset)
        if check_every and index % check_every == 0:
            sample = np.random.default_rng([seed, index]).choice(steps, min(20, steps), replace=False)
            worst = max(worst, check_signals(run, sample, found))
            checked += sample.size
    return Simulated(values, reference_mean, level, onsets, checked, worst)


def alarm_steps(values: np.ndarray, signal: str, threshold: float, warmup: int = WARMUP) -> list[int | None]:
    """The step each run raises ``signal``'s alarm at, through ``detectors.Cusum`` itself."""
    from rewardkit_monitor.detectors import FLOORS, Cusum

    found: list[int | None] = []
    for row in values:
        detector = Cusum(signal, threshold, warmup, FLOORS[signal])
        step_alarm = None
        for step, value in enumerate(row.tolist()):
            if detector.update(step, value) is not None:
                step_alarm = step
                break
        found.append(step_alarm)
    return found
