"""``rewardkit checkpoints watch``: evaluate the base, then every checkpoint once, in step order.

Each scan discovers step folders, waits until each is complete (marker, then settled sizes),
and evaluates the base model first, then ready steps in increasing step order: a later step
never overtakes an earlier one that is still being written. A step whose serving or generation
fails is reported (with the server's log tail) and retried on a later scan, at most
``max_attempts`` times. Results already on disk (the base's included) are read, not recomputed,
after a restart, and only when they were made under the same generation settings, prompts and
reward: the same catalog, provider names, revisions and identity hashes, and the same spec
(otherwise the watcher refuses, naming each field that differs with both values). After each
step the regression gate compares it with the base, record by record; when it fires the watcher
writes the stop file (if configured) and returns exit code 3.

Progress goes to ``say`` (stderr by default), one line each: when a checkpoint starts being
evaluated, when it is done (its metric), and the gate's decision for it
(``step 200: pass (Δ -0.0120 [-0.0310, +0.0070] vs base, tolerance 0.02)``; the full statistics
are in ``<name>.gate.json``). ``interrupted`` is the line the command prints on Ctrl-C.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rewardkit.plugin import RewardkitConfig, RewardkitError, RewardLike, serving_strategies
from rewardkit_checkpoints.discovery import Found, Settling, discover
from rewardkit_checkpoints.evaluate import (
    check_same_reward,
    differing_keys,
    evaluate,
    generation_identity,
    load_records,
    read_values,
    spec_json,
)
from rewardkit_checkpoints.generation import prompt_problem
from rewardkit_checkpoints.section import CheckpointsConfig
from rewardkit_stats import RegressionGate

EXIT_GATE = 3
BASE = "base"


def _step_name(step: int) -> str:
    return f"step-{step}"


def gate_line(decision: dict[str, Any]) -> str:
    """The gate's decision for one step, in one line (``<name>.gate.json`` keeps the statistics)."""
    interval = decision["interval"]
    verdict = "FIRED" if decision["fired"] else "pass"
    low, high = interval.get("low"), interval.get("high")
    bounds = "" if low is None or high is None else f" [{low:+.4f}, {high:+.4f}]"
    line = (
        f"step {decision['step']}: {verdict} (Δ {decision['difference']:+.4f}{bounds} vs base, "
        f"tolerance {decision['tolerance']:g})"
    )
    if decision["fired"]:
        line += f": the drop is larger than the tolerance; statistics in step-{decision['step']}.gate.json"
    return line


class Watcher:
    def __init__(
        self, config: RewardkitConfig, reward: RewardLike, say: Callable[[str], None] | None = None
    ) -> None:
        spec = config.section("checkpoints", CheckpointsConfig)
        if spec is None:
            raise RewardkitError("the configuration has no 'checkpoints' section (the run spec)")
        self.config = config
        self.spec = spec
        self.reward = reward
        self.say = say or (lambda text: print(text, file=sys.stderr, flush=True))
        self.log_dir = Path(self.spec.log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.data = config.rl.data
        self.records = load_records(self.spec, reward.needs, self.data)
        for record in self.records:
            problem = prompt_problem(record.prompt, self.spec.generation.mode)
            if problem is not None:  # before any server is started for it
                raise RewardkitError(f"record {record.record_id}: {problem}")
        self.identity = json.loads(
            json.dumps(generation_identity(self.spec, self.records, self.data), default=str)
        )
        self.checked: set[str] = set()
        self.settling = Settling(self.spec.settle_s)
        self.attempts: dict[str, int] = {}
        self.gate = RegressionGate(
            tolerance=self.spec.gate.tolerance,
            alpha=self.spec.gate.alpha,
            horizon=self.spec.gate.horizon,
            method=self.spec.gate.method,
            level=self.spec.gate.level,
            base_samples=self.spec.generation.n,
            step_samples=self.spec.generation.n,
        )
        entry = serving_strategies().get(self.spec.serving.strategy)
        self.strategy = entry.value.factory(**self.spec.serving.params)
        self.decisions: dict[str, dict[str, Any] | None] = {}
        self.current: str | None = None  # the checkpoint being evaluated now
        self._midline = False  # a terminal progress line is open (no newline yet)

    # -- results on disk -----------------------------------------------------------------------

    def _done(self, name: str) -> bool:
        """Whether ``name`` has results on disk, made under this run spec and reward (else refused)."""
        if name in self.checked:
            return True
        path = self.log_dir / f"{name}.summary.json"
        if not path.is_file():
            return False
        summary = json.loads(path.read_text(encoding="utf-8"))
        changed = differing_keys(summary.get("generation"), self.identity, "generation.")
        if changed:
            raise RewardkitError(
                f"{path} was made under other generation settings or prompts ({'; '.join(changed)}); "
                "use another log_dir"
            )
        for note in check_same_reward(path, summary, self.reward.providers, spec_json(self.reward)):
            self.say(f"warning: {path}: {note}")
        self.checked.add(name)
        return True

    # -- one checkpoint ------------------------------------------------------------------------

    def _progress(self, name: str) -> Callable[[int], None] | None:
        if not sys.stderr.isatty():
            return None
        total = len(self.records)
        done = [0]

        def tick(count: int) -> None:
            done[0] += count
            self._midline = done[0] < total
            print(
                f"\r[{name}] {done[0]}/{total} prompts", end="" if done[0] < total else "\n", file=sys.stderr
            )

        return tick

    def _evaluate(self, name: str, checkpoint: str | None) -> bool:
        attempts = self.attempts.get(name, 0)
        if attempts >= self.spec.max_attempts:
            return False
        self.attempts[name] = attempts + 1
        self.say(f"evaluating {name} ({checkpoint or 'the base model'}), attempt {attempts + 1}")
        started = time.monotonic()
        self.current = name
        try:
            with self.strategy.serve(checkpoint) as served:
                summary = evaluate(
                    name, served, self.reward, self.records, self.spec, self._progress(name), data=self.data
                )
        except RewardkitError as error:
            left = self.spec.max_attempts - attempts - 1
            self.say(f"{name} failed ({'retried on a later scan' if left else 'no attempts left'}): {error}")
            return False
        finally:
            self.current = None
        self.say(
            f"{name} done: {self.spec.metric} = {summary['value']:.4f} over {summary['records']} prompts "
            f"in {time.monotonic() - started:.0f} s"
        )
        self.checked.add(name)
        return True

    def _gate(self, look: int, found: Found) -> dict[str, Any] | None:
        name = _step_name(found.step)
        if name in self.decisions:
            return self.decisions[name]
        base_ids, base_values, clusters = read_values(self.log_dir, BASE)
        step_ids, step_values, _ = read_values(self.log_dir, name)
        if base_ids != step_ids:
            raise RewardkitError(f"{name} and the base scored different records; cannot pair them")
        use_clusters = clusters if all(cluster is not None for cluster in clusters) else None
        decision = self.gate.decide(str(found.step), look, base_values, step_values, clusters=use_clusters)
        if decision is None:
            self.decisions[name] = None
            return None
        record = decision.as_dict()
        (self.log_dir / f"{name}.gate.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
        self.say(gate_line(record))
        self.decisions[name] = record
        return record

    # -- the loop ------------------------------------------------------------------------------

    def scan(self) -> int | None:
        """One pass: evaluate what is ready, in order. Returns EXIT_GATE when the gate fired."""
        if not self._done(BASE) and not self._evaluate(BASE, self.spec.base):
            return None
        look = 0
        for found in discover(self.spec.dir):
            name = _step_name(found.step)
            if found.kind in ("sharded",):
                if self.attempts.get(name) is None:
                    self.say(f"{name}: {found.why}")
                    self.attempts[name] = self.spec.max_attempts
                continue
            look += 1
            if not self._done(name):
                if found.serve_path is None or not self.settling.complete(found):
                    return None  # later steps wait for this one: steps are evaluated in order
                if not self._evaluate(name, str(found.serve_path)):
                    if self.attempts.get(name, 0) >= self.spec.max_attempts:
                        continue
                    return None
            decision = self._gate(look, found)
            if decision is not None and decision["fired"]:
                if self.spec.gate.stop_file:
                    Path(self.spec.gate.stop_file).write_text(
                        json.dumps(decision, indent=2), encoding="utf-8"
                    )
                return EXIT_GATE
        return None

    def run(self, *, once: bool = False, timeout_s: float | None = None) -> int:
        end = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            if self.scan() == EXIT_GATE:
                return EXIT_GATE
            if once or (end is not None and time.monotonic() > end):
                return 0
            time.sleep(self.spec.scan_interval_s)

    def interrupted(self, command: str) -> str:
        """The one line printed on Ctrl-C: what is evaluated (on disk), what was cut, how to go on."""
        names = sorted(
            (path.name.removesuffix(".summary.json") for path in self.log_dir.glob("*.summary.json")),
            key=lambda name: (name != BASE, int(name[5:]) if name.startswith("step-") else 0),
        )
        done = ", ".join(names) if names else "nothing yet"
        cut = f"; {self.current} was cut off and is evaluated again" if self.current else ""
        start = "\n" if self._midline else ""
        return (
            f"{start}interrupted: evaluated {done} (results in {self.log_dir}){cut}. "
            f"To continue, rerun the same command (it resumes from the log dir): {command}"
        )

    def close(self) -> None:
        close = getattr(self.strategy, "close", None)
        if callable(close):
            close()
