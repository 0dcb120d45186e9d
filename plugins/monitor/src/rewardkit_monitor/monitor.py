"""The reward monitor: gathers every scored batch of a training step, computes the signals when the
step is finished, runs the change detectors, and logs.

Steps: batches with the same ``step`` accumulate; a batch with another step finishes the buffered
one first (a trainer that calls once per step therefore sees a step's figures one call later);
``step`` None finishes each call at once, unless ``rollouts_per_step`` gathers that many rollouts
over calls into one step; ``close()`` finishes the buffered step. ``observe``
returns the figures of the step it finished (none when it only buffered), with the alarm flag and
the error count always. Inside a trainer the monitor never raises: a failure (the reference grader
failing, an unreadable batch) is logged as a warning and counted in ``train/reward_monitor/errors``.

Cost: ``reward_mean``, ``component/*`` and ``diagnostic/*`` come from the batch report and cover
every rollout; the signals that read each rollout (lengths, coupling, saturation, duplicates and,
with ``reference_rate``, the reference grader) read at most ``EXAMINED_ROLLOUTS`` per batch, whole
groups drawn with ``seed``: a batch of 10,000 costs what one of 512 does.

A rollout's length is its ``completion_token_count`` when the binding gives it, else the number of
whitespace-separated words of its completion. The reference grader scores a share
``reference_rate`` of the examined groups (of the examined rollouts when ungrouped), each drawn
independently with ``seed``, the step and the call; what it did not score is left out of
``reference_mean``, ``divergence`` and the gains. Trends are ``signals.trend`` over each series' last
50 steps.

The gains over the reference need what the reward paid for the reference's verdicts: the warm-up's
steps keep their sums until the warm-up ends, when the exchange is fitted and their gains become
the gain detectors' own warm-up. The level check (``detectors.LevelCheck``) sees every step's
discordance counts and zero-variance groups and reports a reward broken from step 0 then.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, pairwise
from operator import attrgetter, methodcaller
from pathlib import Path
from typing import IO, Any

import numpy as np

from rewardkit.plugin import (
    ConfigError,
    ObservedBatch,
    RewardkitConfig,
    RewardkitError,
    RewardLike,
    WeightedMean,
    build_reward,
    metric_name,
    zero_variance_groups,
)
from rewardkit_monitor import signals
from rewardkit_monitor.calibration import THRESHOLDS
from rewardkit_monitor.detectors import FLOORS, Alarm, Cusum, LevelCheck
from rewardkit_monitor.settings import PREFIX, MonitorSettings, parse_settings

logger = logging.getLogger("rewardkit.monitor")

LOG_NAME = "monitor.jsonl"
# The signals that stay stationary under honest training: the only ones an alarm may watch. With a
# reference grader the three that compare the reward with it; without one, the length coupling.
WITH_REFERENCE = ("divergence", "reward_gain", "reward_gain/unsolved")
WITHOUT_REFERENCE = ("length_coupling",)
ALARMED = (*WITH_REFERENCE, *WITHOUT_REFERENCE)
# The gains over the reference, defined once the warm-up has fitted what the reward pays for it.
GAINS = ("reward_gain", "reward_gain/unsolved")
# Rollouts per batch the per-rollout signals read (whole groups; all of a smaller batch).
EXAMINED_ROLLOUTS = 512

_get_completion = methodcaller("get", "completion")
_get_token_count = methodcaller("get", "completion_token_count")
_get_final = attrgetter("final")
_get_candidates = attrgetter("candidates")


def _signal_of(metric: str) -> str | None:
    """The signal a batch metric feeds: ``<ns>/reward/mean`` -> ``reward_mean``,
    ``<ns>/reward_component/<name>/mean`` -> ``component/<name>``,
    ``<ns>/reward_provider/<provider>/<diag>`` -> ``diagnostic/<provider>/<diag>``."""
    parts = metric.split("/")
    if len(parts) >= 4 and parts[1] == "reward_provider" and not metric.endswith("_count"):
        return "/".join(("diagnostic", *parts[2:]))
    if len(parts) == 4 and parts[1] == "reward_component" and parts[3] == "mean":
        return f"component/{parts[2]}"
    if len(parts) == 3 and parts[1:] == ["reward", "mean"]:
        return "reward_mean"
    return None


@dataclass
class _Step:
    """What the batches of one step said: totals, the batch means, and the examined rollouts
    column by column (group ids unique within the step)."""

    step: int | None
    source: str
    grouped: bool = True
    groups: int = 0
    rollouts: int = 0
    calls: int = 0
    examined_groups: int = 0
    zero_variance: int = (
        0  # examined groups with all rewards equal (rewardkit.scoring.metrics.zero_variance_groups)
    )
    within_repeats: int = 0  # examined rollouts repeating an earlier completion of their group
    discordant: float = 0.0  # the divergence's numerator and pairs, for the level check
    pairs: int = 0
    rewards: list[float | None] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    group_ids: list[int] = field(default_factory=list)
    hashes: list[int] = field(default_factory=list)
    references: list[float] = field(default_factory=list)
    prompts: list[int] = field(default_factory=list)  # a hash of each rollout's prompt (with a reference)
    components: list[dict[str, float]] = field(default_factory=list)  # only with a reference grader
    means: dict[str, WeightedMean] = field(default_factory=dict)
    scalars: dict[str, WeightedMean] = field(default_factory=dict)


def _rollouts(group: Any) -> list[Mapping[str, Any]]:
    """The rollouts of a scored group in any shape the bindings hand over:
    ``{"prompt", "reference", "candidates": [...]}`` (group fields merged into each candidate),
    ``{"group_id", "rollouts"}``, ``(group_id, rollouts)`` or an object with both attributes."""
    if isinstance(group, dict) and "rollouts" in group:
        return group["rollouts"]  # type: ignore[no-any-return]
    if isinstance(group, Mapping):
        if "candidates" in group:
            shared = {key: value for key, value in group.items() if key != "candidates"}
            return [{**shared, **candidate} for candidate in group["candidates"]]
        return list(group["rollouts"])
    if isinstance(group, tuple) and len(group) == 2:
        return list(group[1])
    return list(group.rollouts)


def _text(completion: Any) -> str:
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and all(isinstance(m, Mapping) for m in completion):
        return "\n".join(str(message.get("content", "")) for message in completion)  # chat messages
    return "" if completion is None else str(completion)


def _nan(value: Any) -> float:
    return math.nan if value is None else float(value)


def _metric(signal: str) -> str | None:
    try:
        return metric_name("train", "reward_monitor", *signal.split("/"))
    except RewardkitError:
        return None  # a name that is no metric segment (a trainer's scalar): logged, not reported


def _rng(*keys: int) -> np.random.Generator:
    return np.random.default_rng([key & 0xFFFFFFFFFFFFFFFF for key in keys])


def build_reference(config: RewardkitConfig, settings: MonitorSettings) -> RewardLike | None:
    """The reference grader ``rl.monitor.reference`` selects, from ``rl.reward``'s catalog, built
    with no group size (it also scores single rollouts of ungrouped batches); None when unset."""
    selection = settings.reference
    if selection is None:
        return None
    catalog = config.rl.reward.catalog
    if selection.catalog is None:
        selection = selection.model_copy(update={"catalog": catalog})
    elif selection.catalog != catalog:
        raise ConfigError(
            f"the reference must come from the training catalog {catalog!r}, not {selection.catalog!r}",
            key="rl.monitor.reference.catalog",
        )
    ungrouped = config.model_copy(update={"rl": config.rl.model_copy(update={"group_size": None})})
    return build_reward(ungrouped, selection, group_size=None)


def build_monitor(config: RewardkitConfig) -> RewardMonitor:
    """The monitor ``rl.monitor`` configures (what ``rewardkit.scoring.observers.observer_for`` calls)."""
    settings = config.section(PREFIX, MonitorSettings) or MonitorSettings()
    return RewardMonitor(settings, build_reference(config, settings))


class RewardMonitor:
    """Watches one run. ``observe(batch)`` after each scored batch, ``close()`` at the end.
    ``resume``: continue the run that ``logdir``'s log records (see ``_resume``) instead of
    starting it afresh."""

    def __init__(
        self,
        settings: MonitorSettings | Mapping[str, Any],
        reference: RewardLike | None = None,
        *,
        owns_reference: bool = True,
        resume: bool = False,
    ) -> None:
        self.settings = parse_settings(settings)
        self.reference = reference
        # What the reference grader reads, so a binding passes those columns even when the optimised
        # reward needs none of them (a reward model beside a rule verifier needs no reference).
        self.needs: frozenset[str] = frozenset(reference.needs) if reference is not None else frozenset()
        self._owns_reference = owns_reference
        thresholds = THRESHOLDS[self.settings.false_alarm_rate]
        # With a reference grader, divergence measures a hack that outranks a right answer, and the
        # gains one the reward pays below a right answer or only where the policy never answers
        # right; the reward-length coupling is then only reported: an honest proxy may pay a long
        # answer with the right start more than a short wrong one (seen on real GRPO runs), which
        # is coupling but no hack.
        alarmed = WITH_REFERENCE if reference is not None else WITHOUT_REFERENCE
        self.detectors = {
            name: Cusum(name, thresholds[name], self.settings.warmup_steps, FLOORS[name]) for name in alarmed
        }
        self.level = LevelCheck(self.settings.warmup_steps)
        # What the reward pays for the reference's verdict, fitted over the warm-up's rollouts; until
        # then each step's sums wait in the backlog, to be the gains' own warm-up values.
        self.exchange: signals.Exchange | None = None
        self._exchange_settled = False  # fitted, or found impossible (no unit for the gains)
        self._gain_backlog: list[tuple[int, signals.Moments, signals.Moments]] = []
        self._reference_range = (math.inf, -math.inf)  # the lowest and highest reference so far
        self._prompts = signals.PromptRecord()
        self.alarms: list[Alarm] = []
        self.errors = 0
        self.last_signals: dict[str, float] = {}
        self._buffer: _Step | None = None
        self._last_step = -1
        self._best = -math.inf
        self._seen = signals.SeenHashes()
        self._history: dict[str, tuple[deque[int], deque[float]]] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._log: IO[str] | None = None
        if self.settings.logdir is not None:
            self.settings.logdir.mkdir(parents=True, exist_ok=True)
            path = self.settings.logdir / LOG_NAME
            if resume and path.exists():
                self._log = self._resume(path)
            else:
                # One log per monitor: its detectors start afresh, so a restarted run starts a new log.
                self._log = path.open("w", encoding="utf-8")

    def _resume(self, path: Path) -> IO[str]:
        """Continue the run that ``path`` logs (``resume``: the Reward Service's run that comes back
        after its monitor was closed); the log, opened to append, never re-created.

        The logged alarms stand (``alarm`` stays 1.0; the stop file, written at the first one, is
        not written again) and unnumbered steps continue after the last logged step. The detectors
        and every other memory start afresh, with a new warm-up: the log holds each step's figures,
        not the state that made them. A line that is no whole record (a write cut short) is
        skipped and counted as an error.
        """
        text = path.read_text(encoding="utf-8")
        for line in text.splitlines():
            try:
                record = json.loads(line)
                number = int(record["step"])
                alarms = [Alarm(**alarm) for alarm in record["alarms"]]
            except (ValueError, KeyError, TypeError, AttributeError) as error:
                self._fault(f"skipped an unreadable line of {path}", error)
                continue
            self.alarms.extend(alarms)
            self._last_step = max(self._last_step, number)
        log = path.open("a", encoding="utf-8")
        if text and not text.endswith("\n"):
            log.write("\n")  # the next record starts a line of its own after a cut-short one
        return log

    # -- feeding ---------------------------------------------------------------------------------

    def observe(self, batch: ObservedBatch) -> dict[str, float]:
        """Take one scored batch; the metrics to log now. Never raises."""
        with self._lock:
            finished: dict[str, float] | None = None
            try:
                if self._closed:
                    raise RewardkitError("the monitor is closed")
                # Without a step, rollouts_per_step (when set) counts a step's rollouts over calls.
                per_step = self.settings.rollouts_per_step if batch.step is None else None
                buffered = self._buffer
                if buffered is not None and (
                    batch.step != buffered.step or (batch.step is None and per_step is None)
                ):
                    finished = self._finish()
                self._take(batch)
                if batch.step is None and (per_step is None or self._rollouts_buffered() >= per_step):
                    finished = self._finish()
            except Exception as error:  # the trainer must never stop for its monitor
                self._fault("could not take a batch", error)
            return self._outputs(finished)

    def close(self) -> None:
        """Finish the buffered step, close the log and the reference grader it built. Idempotent."""
        with self._lock:
            if self._closed:
                return
            try:
                if self._buffer is not None:
                    self._finish()
            except Exception as error:
                self._fault("could not finish the last step", error)
            self._closed = True
            if self._log is not None:
                self._log.close()
            if self.reference is not None and self._owns_reference:
                self.reference.close()

    def _rollouts_buffered(self) -> int:
        return self._buffer.rollouts if self._buffer is not None else 0

    def _fault(self, what: str, error: BaseException) -> None:
        self.errors += 1
        logger.warning("reward monitor: %s (%s: %s)", what, type(error).__name__, error, exc_info=error)

    def _outputs(self, finished: Mapping[str, float] | None) -> dict[str, float]:
        out: dict[str, float] = {}
        for signal, value in (finished or {}).items():
            name = _metric(signal)
            if name is not None and not math.isnan(value):
                out[name] = value
        out[metric_name("train", "reward_monitor", "alarm")] = 1.0 if self.alarms else 0.0
        out[metric_name("train", "reward_monitor", "errors")] = float(self.errors)
        return out

    def _examined(self, sizes: list[int], total: int, step: _Step) -> list[int]:
        """The groups of the batch whose rollouts are read: all, or a draw of whole groups holding at
        most ``EXAMINED_ROLLOUTS`` (at least one group), in batch order."""
        if total <= EXAMINED_ROLLOUTS:
            return list(range(len(sizes)))
        order = _rng(self.settings.seed, self._number(step), step.calls, 0).permutation(len(sizes))
        taken = np.cumsum(np.asarray(sizes)[order])
        count = max(1, int(np.searchsorted(taken, EXAMINED_ROLLOUTS, side="right")))
        return sorted(order[:count].tolist())

    def _number(self, step: _Step) -> int:
        return int(step.step) if step.step is not None else self._last_step + 1

    def _take(self, batch: ObservedBatch) -> None:
        # Column by column, with no Python call per rollout where it can be helped: with the
        # reference off the monitor must cost a few percent of scoring a cheap rule reward.
        inputs, scored = batch.inputs, batch.scored.groups
        if len(inputs) != len(scored):
            raise RewardkitError(f"{len(inputs)} input groups for {len(scored)} scored groups")
        step = self._buffer or _Step(batch.step, batch.source)
        all_sizes = list(map(len, map(_get_candidates, scored)))
        total = sum(all_sizes)
        chosen = self._examined(all_sizes, total, step)
        parts = [(scored[i].group_id, _rollouts(inputs[i])) for i in chosen]
        results = [scored[i] for i in chosen]
        sizes = [len(rollouts) for _, rollouts in parts]
        for (group_id, rollouts), result in zip(parts, results):
            if len(rollouts) != len(result.candidates):
                raise RewardkitError(
                    f"group {group_id!r} has {len(rollouts)} rollouts but {len(result.candidates)} scores"
                )
        rows = list(chain.from_iterable(rollouts for _, rollouts in parts))
        candidates = list(chain.from_iterable(result.candidates for result in results))
        completions = list(map(_get_completion, rows))
        if set(map(type, completions)) != {str}:
            completions = list(map(_text, completions))
        words = list(map(str.split, completions))
        texts = list(map(" ".join, words))  # signals.normalised
        tokens = list(map(_get_token_count, rows))
        if None in tokens:
            tokens = [len(w) if count is None else count for count, w in zip(tokens, words)]
        del words
        # Python's hash: stable within the process, which is all one run's memory needs.
        hashes = list(map(hash, texts))
        rewards = list(map(_get_final, candidates))
        bounds = np.cumsum([0, *sizes]).tolist()
        zero_variance = zero_variance_groups(rewards[a:b] for a, b in pairwise(bounds))
        within = sum(b - a - len(set(hashes[a:b])) for a, b in pairwise(bounds))
        components: list[dict[str, float]] = []
        if self.reference is not None:  # per-rollout component values: only divergence/<component> needs them
            components = [
                {
                    name: _nan(part.get("value"))
                    for name, part in candidate.breakdown.items()
                    if part.get("status") == "scored"
                }
                for candidate in candidates
            ]
        references = self._reference_values(parts, batch.grouped, step)
        # The unsolved stratum groups rollouts by their prompt's text (a group's prompt is merged
        # into its rollouts by _rollouts); no prompt, no stratum.
        prompts = (
            [hash(_text(row.get("prompt"))) if row.get("prompt") is not None else 0 for row in rows]
            if self.reference is not None
            else []
        )
        # Everything read: only now does the step change, so a bad batch leaves it as it was.
        self._buffer = step
        step.grouped = step.grouped and batch.grouped
        first = step.groups
        step.group_ids += np.repeat(np.asarray(chosen) + first, sizes).tolist() if chosen else []
        step.groups += len(scored)
        step.rollouts += total
        step.examined_groups += len(chosen)
        step.rewards += rewards
        step.lengths += tokens
        step.hashes += hashes
        step.zero_variance += zero_variance
        step.within_repeats += within
        step.components += components
        step.references += references
        step.prompts += prompts
        step.calls += 1
        weights = batch.scored.metric_weights
        for name, value in batch.scored.metrics.items():
            signal = _signal_of(name)
            if signal is not None:
                step.means.setdefault(signal, WeightedMean()).add(value, weights.get(name, total))
        for name, value in batch.scalars.items():
            if value is not None and not math.isnan(value):
                step.scalars.setdefault(name, WeightedMean()).add(float(value))

    def _reference_values(
        self, parts: Sequence[tuple[str, Sequence[Mapping[str, Any]]]], grouped: bool, step: _Step
    ) -> list[float]:
        """The reference grader's reward for each examined rollout; NaN where it was not asked
        (``reference_rate``: a share of the groups, or of the rollouts when ungrouped) or failed."""
        count = sum(len(rollouts) for _, rollouts in parts)
        values = [math.nan] * count
        if self.reference is None or not count:
            return values
        rate = self.settings.reference_rate
        draw = _rng(self.settings.seed, self._number(step), step.calls, 1).random
        sent: list[tuple[str, list[Mapping[str, Any]]]] = []
        where: list[int] = []  # the position of each rollout sent among the examined ones
        offset = 0
        for group_id, rollouts in parts:
            named = [
                rollout if "trajectory_id" in rollout else {**rollout, "trajectory_id": f"{group_id}/{j}"}
                for j, rollout in enumerate(rollouts)
            ]
            if grouped:
                if rate >= 1 or draw() < rate:
                    sent.append((group_id, named))
                    where.extend(range(offset, offset + len(named)))
            else:
                for j, rollout in enumerate(named):
                    if rate >= 1 or draw() < rate:
                        # A rollout names its group: one scored alone names its own.
                        alone = group_id if len(named) == 1 else f"{group_id}/{j}"
                        if "group_id" in rollout and rollout["group_id"] != alone:
                            rollout = {**rollout, "group_id": alone}
                        sent.append((alone, [rollout]))
                        where.append(offset + j)
            offset += len(rollouts)
        if not sent:
            return values
        try:
            graded = self.reference.score(sent)
            finals = [candidate.final for group in graded.groups for candidate in group.candidates]
            if len(finals) != len(where):
                raise RewardkitError(f"{len(finals)} scores for {len(where)} rollouts")
        except Exception as error:
            self._fault("the reference grader failed; this batch has no reference", error)
            return values
        for position, final in zip(where, finals):
            values[position] = _nan(final)
        return values

    # -- a finished step -------------------------------------------------------------------------

    def _finish(self) -> dict[str, float]:
        step, self._buffer = self._buffer, None
        assert step is not None
        number = self._number(step)
        self._last_step = number
        values, backlog = self._signals(step, number)
        raised = []
        for earlier, gains in backlog:  # the warm-up's gains, known only now that the exchange is fitted
            for name, value in gains.items():
                if name in self.detectors:
                    self.detectors[name].update(earlier, value)
        for name, detector in self.detectors.items():
            alarm = detector.update(number, values.get(name, math.nan))
            if alarm is not None:
                raised.append(alarm)
        raised += self.level.update(
            number,
            step.discordant,
            step.pairs,
            step.zero_variance,
            step.examined_groups if step.grouped else 0,
        )
        for alarm in raised:
            self._raise(alarm)
        self.last_signals = values
        self._write(step, number, values, raised)
        return values

    def _signals(
        self, step: _Step, number: int
    ) -> tuple[dict[str, float], list[tuple[int, dict[str, float]]]]:
        """The step's signals, and the gains of the warm-up's steps when this step ends it."""
        rewards = np.asarray(step.rewards, dtype=float)
        lengths = np.asarray(step.lengths, dtype=float)
        groups = np.asarray(step.group_ids) if step.grouped else None
        grouped = groups is not None and step.examined_groups > 0
        seed = (self.settings.seed * 1_000_003 + number) & 0xFFFFFFFFFFFFFFFF
        if rewards.size and not np.isnan(rewards).all():
            self._best = max(self._best, float(np.nanmax(rewards)))
        mean = step.means.get("reward_mean")
        out: dict[str, float] = {
            "reward_mean": mean.value if mean is not None else math.nan,
            "length_mean": signals.mean(lengths),
        }
        names = sorted(
            name.removeprefix("component/") for name in step.means if name.startswith("component/")
        )
        backlog: list[tuple[int, dict[str, float]]] = []
        if self.reference is not None:
            references = np.asarray(step.references, dtype=float)
            out["reference_mean"] = signals.mean(references)
            step.discordant, step.pairs = signals.discordance_counts(rewards, references, groups, seed=seed)
            out["divergence"] = step.discordant / step.pairs if step.pairs else math.nan
            gains, backlog = self._gains(number, rewards, references, step.prompts)
            out.update(gains)
            for name in names:
                column = np.asarray([parts.get(name, math.nan) for parts in step.components], dtype=float)
                out[f"divergence/{name}"] = signals.discordance(column, references, groups, seed=seed)
        out["length_coupling"] = signals.length_coupling(rewards, lengths, groups)
        out["length_coupling_trend"] = self._trend("length_coupling", number, out["length_coupling"])
        # Counted batch by batch (a group never spans batches): signals.zero_variance_share and
        # signals.duplicates_within, without building the padded matrices.
        out["saturation_zero_variance"] = step.zero_variance / step.examined_groups if grouped else math.nan
        out["saturation_at_max"] = signals.at_max_share(rewards, self._best)
        out["duplicates_within"] = (
            step.within_repeats / rewards.size if grouped and rewards.size else math.nan
        )
        out["duplicates_across"] = self._seen.share_seen(step.hashes)
        self._seen.remember(step.hashes)
        out["trend/reward"] = self._trend("reward", number, out["reward_mean"])
        if self.reference is not None:
            out["trend/reference"] = self._trend("reference", number, out["reference_mean"])
        for name in names:
            out[f"component/{name}"] = component = step.means[f"component/{name}"].value
            out[f"trend/{name}"] = self._trend(f"component/{name}", number, component)
        for name, weighted in sorted(step.means.items()):
            if name.startswith("diagnostic/"):
                out[name] = weighted.value
        for name, weighted in sorted(step.scalars.items()):
            out[name] = weighted.value
        return out, backlog

    def _gains(
        self, number: int, rewards: np.ndarray, references: np.ndarray, prompts: Sequence[int]
    ) -> tuple[dict[str, float], list[tuple[int, dict[str, float]]]]:
        """``reward_gain`` and ``reward_gain/unsolved`` of this step (NaN until the exchange is
        fitted at the end of the warm-up, and for good when it cannot be), ``unsolved_share``, and,
        at the step that fits the exchange, the gains of the warm-up's earlier steps."""
        defined = ~np.isnan(references)
        if defined.any():
            lowest, highest = self._reference_range
            self._reference_range = (
                min(lowest, float(references[defined].min())),
                max(highest, float(references[defined].max())),
            )
        flags = signals.solved(references, *self._reference_range)
        hashes = np.asarray(prompts, dtype=np.int64)
        keyed = defined & (hashes != 0)  # 0: a rollout with no prompt
        keys = hashes[keyed].tolist()
        self._prompts.remember(keys, flags[keyed].tolist())
        unsolved = np.zeros(references.shape, dtype=bool)
        if keys:
            unsolved[keyed] = self._prompts.unsolved(keys)
        # The stratum's gain reads the rollouts of unsolved prompts the reference did not call solved
        # themselves: what the reward pays where the policy does not find the answer.
        stratum = unsolved & ~flags
        overall = signals.moments(rewards, references)
        hard = signals.moments(rewards[stratum], references[stratum])
        out = {
            "unsolved_share": float(unsolved[keyed].mean()) if keyed.any() else math.nan,
            "reward_gain": math.nan,
            "reward_gain/unsolved": math.nan,
        }
        backlog: list[tuple[int, dict[str, float]]] = []
        if self.exchange is None and not self._exchange_settled and overall.count:
            self._gain_backlog.append((number, overall, hard))
            if len(self._gain_backlog) >= self.settings.warmup_steps:
                total = sum((sums for _, sums, _ in self._gain_backlog), signals.Moments())
                self.exchange = signals.fit_exchange(total)
                self._exchange_settled = True
                if self.exchange is not None:
                    backlog = [
                        (earlier, self._gain_values(sums, hard_sums))
                        for earlier, sums, hard_sums in self._gain_backlog[:-1]
                    ]
                self._gain_backlog = []
        if self.exchange is not None:
            out.update(self._gain_values(overall, hard))
        return out, backlog

    def _gain_values(self, overall: signals.Moments, hard: signals.Moments) -> dict[str, float]:
        assert self.exchange is not None
        return {
            "reward_gain": signals.reward_gain(overall, self.exchange),
            "reward_gain/unsolved": signals.reward_gain(hard, self.exchange),
        }

    def _trend(self, series: str, number: int, value: float) -> float:
        steps, values = self._history.setdefault(
            series, (deque(maxlen=signals.TREND_WINDOW), deque(maxlen=signals.TREND_WINDOW))
        )
        steps.append(number)
        values.append(value)
        return signals.trend(list(steps), list(values))

    def _raise(self, alarm: Alarm) -> None:
        first = not self.alarms
        self.alarms.append(alarm)
        logger.warning(
            "reward monitor alarm: %s at step %d (change began at step %d): %s",
            alarm.signal,
            alarm.step,
            alarm.began,
            alarm.evidence,
        )
        if first and self.settings.stop_file is not None:
            try:
                _write_atomically(self.settings.stop_file, json.dumps(alarm.to_json()) + "\n")
            except OSError as error:
                self._fault(f"could not write the stop file {self.settings.stop_file}", error)

    def _write(self, step: _Step, number: int, values: Mapping[str, float], raised: list[Alarm]) -> None:
        if self._log is None:
            return
        line = {
            "step": number,
            "source": step.source,
            "rollouts": step.rollouts,
            "groups": step.groups,
            "signals": {name: None if math.isnan(value) else value for name, value in values.items()},
            "alarms": [alarm.to_json() for alarm in raised],
        }
        try:
            self._log.write(json.dumps(line, allow_nan=False) + "\n")
            self._log.flush()
        except (OSError, ValueError) as error:
            self._fault("could not write the monitor log", error)


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
