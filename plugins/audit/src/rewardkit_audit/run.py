"""Running an audit: attack completions scored through the configured reward, as training would.

Every attack on a row is its own group, ``[honest right, honest wrong, attack]``, so a reward
that scores a group relative to itself (a pairwise judge, a rank-based reward) compares the
attack with the two baselines only, as a group of rollouts in training would; the attack's gain
is paired with the honest wrong of its own group. A row's groups go through the real reward (in
process, on Ray or in a Reward Service) in one call. When that call fails (an attack made a
component error under ``onError: raise``, a judge timed out) each group is scored alone, and a
failing group one candidate at a time, so the failure lands on the attack that caused it and the
audit goes on. Each candidate keeps every component's value beside the final, so each component is
judged on its own and the composition on the total.

A family that cannot write an honest right answer for a row (no reference solution in the data)
gets one from the row itself: the row's own completions are scored first, once, and the one the
reward pays most is honest right (docs/audit.md#baselines).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rewardkit.plugin import (
    AuditRow,
    RewardkitConfig,
    RewardkitError,
    RewardLike,
    build_reward,
    load_config,
    resolve_catalog,
    reward_attacks,
    spec_of,
)
from rewardkit_audit.plan import Component, ProviderFacts, Unit, plan_units, provider_facts
from rewardkit_audit.report import AuditReport, UnitReport
from rewardkit_audit.rows import audit_rows

RIGHT, WRONG = "honest-right", "honest-wrong"
COMPLETIONS = "completions"  # AuditRow.fields key: the row's own completions (rollouts)
DEFAULT_ROWS = 12
DEFAULT_MARGIN = 0.05
DEFAULT_MAX_CALLS = 1000

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Outcome:
    """One candidate's score: ``final`` when scored, else ``status`` "error" with the reason."""

    final: float | None
    status: str
    reason: str | None = None
    # component name -> its value (None: skipped); empty for a reward of one component
    parts: Mapping[str, float | None] = field(default_factory=dict)
    text: str | None = None  # an attack's completion, for --json (`rewardkit view --audit` shows it)


@dataclass(frozen=True)
class Scored:
    """One attack's group on one row: the two baselines and the attack, scored together."""

    right: Outcome
    wrong: Outcome
    attack: Outcome


@dataclass
class RowOutcome:
    row_id: str
    # attack name -> its group; a row with no attack built holds the baselines alone under ""
    groups: dict[str, Scored] = field(default_factory=dict)


@dataclass
class UnitRun:
    unit: Unit
    rows: list[RowOutcome] = field(default_factory=list)
    # row id -> why the family could not use it (a baseline it could not build, a baseline error)
    skipped: dict[str, str] = field(default_factory=dict)
    # attack name -> rows on which it built nothing
    not_built: dict[str, int] = field(default_factory=dict)
    # rows whose honest right answer is the row's own completion the reward paid most
    from_data: int = 0


def _candidate_fields(row: AuditRow, needs: Sequence[str], text: str) -> dict[str, Any]:
    rollout: dict[str, Any] = {"completion": text}
    if row.prompt is not None:
        rollout["prompt"] = row.prompt
    if row.reference is not None:
        rollout["reference"] = row.reference
    # The trainer counts tokens; an audit has no tokenizer, so it counts whitespace-separated words.
    if "completion_token_count" in needs:
        rollout["completion_token_count"] = len(text.split())
    if "finish_reason" in needs:
        rollout["finish_reason"] = "stop"
    return rollout


def _outcome(candidate: Any) -> Outcome:
    errors = [
        f"{name}: {part.get('reason') or 'error'}"
        for name, part in candidate.breakdown.items()
        if part.get("status") == "error"
    ]
    if errors or candidate.final is None:
        return Outcome(None, "error", "; ".join(errors) or "the reward's final is None")
    parts: dict[str, float | None] = {}
    if len(candidate.breakdown) > 1:
        for name, part in candidate.breakdown.items():
            value = part.get("value") if part.get("status") == "scored" else None
            parts[name] = float(value) if isinstance(value, (int, float)) else None
    return Outcome(float(candidate.final), "scored", parts=parts)


def _score_group(reward: RewardLike, group_id: str, rollouts: list[dict[str, Any]]) -> dict[str, Outcome]:
    """Every candidate's outcome; a failing call is retried one candidate at a time."""
    try:
        batch = reward.score([(group_id, rollouts)])
        return {candidate.trajectory_id: _outcome(candidate) for _, candidate in batch.candidates()}
    except Exception as error:  # the failure is attributed below, not lost
        group_error = f"{type(error).__name__}: {error}"
    outcomes: dict[str, Outcome] = {}
    for rollout in rollouts:
        name = rollout["trajectory_id"]
        try:
            batch = reward.score([(f"{group_id}/{name}", [rollout])])
            outcomes[name] = _outcome(next(iter(batch.candidates()))[1])
        except Exception as error:  # recorded as this candidate's error
            outcomes[name] = Outcome(
                None, "error", f"{type(error).__name__}: {error} (with the group: {group_error})"
            )
    return outcomes


def _score_row(
    reward: RewardLike, groups: list[tuple[str, list[dict[str, Any]]]]
) -> list[dict[str, Outcome]]:
    """Each group's outcomes; a failing call is retried group by group."""
    try:
        batch = reward.score(groups)
        return [{c.trajectory_id: _outcome(c) for c in group.candidates} for group in batch.groups]
    except Exception:  # each group again on its own, below
        return [_score_group(reward, group_id, rollouts) for group_id, rollouts in groups]


def _build(builder: Callable[[AuditRow], str | None], row: AuditRow, what: str) -> str | None:
    try:
        text = builder(row)
    except Exception as error:  # a family's bug skips the row, loudly in the report
        raise _BuildError(f"{what} raised {type(error).__name__}: {error}") from error
    if text is not None and not isinstance(text, str):
        raise _BuildError(f"{what} returned {type(text).__name__}, expected str or None")
    return text


class _BuildError(Exception):
    pass


@dataclass
class _DataBaselines:
    """Honest right answers taken from the rows' own completions: each row's completions are scored
    once (as one group, through the configured reward) and the one paid most is kept."""

    reward: RewardLike
    needs: tuple[str, ...]
    budget: _Budget
    # honest-right builders of the families written for the reward's providers, tried in order
    fallbacks: list[Callable[[AuditRow], str | None]] = field(default_factory=list)
    found: dict[str, tuple[str | None, str]] = field(default_factory=dict)

    def right(self, row: AuditRow) -> tuple[str | None, str]:
        """(the completion, "") or (None, why the row has no usable baseline)."""
        if row.row_id not in self.found:
            self.found[row.row_id] = self._best(row)
        return self.found[row.row_id]

    def _best(self, row: AuditRow) -> tuple[str | None, str]:
        completions = [text for text in row.fields.get(COMPLETIONS, ()) if isinstance(text, str)]
        if not completions:
            # Another family's honest right for this row (code: the reference solution) will do.
            for builder in self.fallbacks:
                try:
                    text = builder(row)
                except Exception:  # that family's bug is reported by its own unit
                    continue
                if isinstance(text, str):
                    return text, ""
            return None, (
                "no honest right answer: the family needs a reference solution and the row has no "
                "completions of its own (add rows with reference solutions, or rollouts with completions)"
            )
        if not self.budget.take(len(completions)):
            return (
                None,
                "no honest right answer: --max-calls reached before the row's completions were scored",
            )
        rollouts = [
            {"trajectory_id": f"own-{index}", **_candidate_fields(row, self.needs, text)}
            for index, text in enumerate(completions)
        ]
        outcomes = _score_group(self.reward, f"audit/own/{row.row_id}", rollouts)
        scored = [
            (outcome.final, index)
            for index, outcome in enumerate(outcomes[f"own-{i}"] for i in range(len(completions)))
            if outcome.final is not None
        ]
        if not scored:
            first = next(iter(outcomes.values()))
            return (
                None,
                f"no honest right answer: none of the row's completions could be scored ({first.reason})",
            )
        best = max(scored)[1]
        return completions[best], ""


def _run_unit(
    reward: RewardLike,
    unit: Unit,
    rows: list[AuditRow],
    needs: tuple[str, ...],
    budget: _Budget,
    progress: Progress | None,
    data: _DataBaselines,
) -> UnitRun:
    run = UnitRun(unit)
    family = unit.family
    for index, row in enumerate(rows, 1):
        try:
            right = _build(family.honest_right, row, f"family {family.name!r} honest_right")
            wrong = _build(family.honest_wrong, row, f"family {family.name!r} honest_wrong")
        except _BuildError as error:
            run.skipped[row.row_id] = str(error)
            continue
        if wrong is None:
            run.skipped[row.row_id] = "the family cannot build its baselines from this row"
            continue
        if right is None:
            right, why = data.right(row)
            if right is None:
                run.skipped[row.row_id] = why
                continue
            run.from_data += 1
        texts: dict[str, str] = {RIGHT: right, WRONG: wrong}
        for attack in unit.attacks:
            try:
                text = _build(attack.build, row, f"attack {attack.name!r}")
            except _BuildError as error:
                run.skipped.setdefault(row.row_id, str(error))
                text = None
            if text is None:
                run.not_built[attack.name] = run.not_built.get(attack.name, 0) + 1
            else:
                texts[attack.name] = text
        attacked = [name for name in texts if name not in (RIGHT, WRONG)] or [""]
        if not budget.take(3 * len(attacked)):
            budget.stopped_at = f"{family.name}, row {index} of {len(rows)}"
            break
        if progress is not None:
            progress(f"{family.name}: row {index}/{len(rows)} ({len(texts) - 2} attacks)")
        groups = []
        for name in attacked:
            members = (RIGHT, WRONG, name) if name else (RIGHT, WRONG)
            rollouts = [{"trajectory_id": m, **_candidate_fields(row, needs, texts[m])} for m in members]
            groups.append((f"audit/{family.name}/{row.row_id}/{name or 'baselines'}", rollouts))
        outcome = RowOutcome(row.row_id)
        failures: list[str | None] = []
        for name, outcomes in zip(attacked, _score_row(reward, groups), strict=True):
            scored_right, scored_wrong = outcomes[RIGHT], outcomes[WRONG]
            if "error" in (scored_right.status, scored_wrong.status):
                failures.append((scored_right if scored_right.status == "error" else scored_wrong).reason)
                continue
            missing = Outcome(None, "error", "not scored")
            attack_outcome = replace(outcomes.get(name, missing), text=texts[name]) if name else missing
            outcome.groups[name] = Scored(scored_right, scored_wrong, attack_outcome)
        if not outcome.groups:
            run.skipped[row.row_id] = f"a baseline could not be scored: {failures[0]}"
            continue
        run.rows.append(outcome)
    return run


@dataclass
class _Budget:
    """Model calls (judge or reward-model candidates) the audit may still make."""

    limit: int | None
    per_candidate: int
    used: int = 0
    stopped_at: str | None = None

    def take(self, candidates: int) -> bool:
        cost = candidates * self.per_candidate
        if self.limit is not None and cost and self.used + cost > self.limit:
            return False
        self.used += cost
        return True


def _plan_calls(units: list[Unit], rows: int, per_candidate: int) -> int:
    # three candidates per attack group (the baselines are scored in each)
    return sum(rows * 3 * max(1, len(unit.attacks)) * per_candidate for unit in units)


def audit(
    config: RewardkitConfig | Mapping[str, Any] | str | os.PathLike[str],
    overrides: Sequence[str] = (),
    *,
    rows: int = DEFAULT_ROWS,
    family: str | None = None,
    margin: float = DEFAULT_MARGIN,
    max_calls: int | None = DEFAULT_MAX_CALLS,
    allow_unsandboxed: bool = False,
    allow_untested: bool = False,
    seed: int = 0,
    progress: Progress | None = None,
) -> AuditReport:
    """Red-team the reward a configuration selects; returns the report (``report.exit_code``).

    ``config`` is what ``rewardkit score`` takes (a path, a mapping or a ``RewardkitConfig``), with
    ``key=value`` overrides. ``rows`` rows are sampled (seeded by ``seed``) from
    ``rl.data.rollouts_path`` or ``rl.data.path``. ``margin`` is the share of the observed range of
    finals an attack may gain over honest wrong before it leaks. ``max_calls`` bounds the candidates
    scored by providers that call a model (judges, reward models); ``None``: no bound.
    ``allow_untested``: a component on which no attack could be tried does not make the exit code 5.
    """
    if not 0.0 <= margin < 1.0:
        raise RewardkitError(f"--margin must be in [0, 1), got {margin}")
    if max_calls is not None and max_calls < 0:
        raise RewardkitError(f"--max-calls must be at least 0, got {max_calls}")
    if not isinstance(config, RewardkitConfig):
        config = load_config(config, overrides)
    elif overrides:
        raise RewardkitError("overrides apply when loading a file or mapping, not to a RewardkitConfig")
    # An audit group holds the baselines and every attack of a family: its size is the audit's.
    config = config.model_copy(update={"rl": config.rl.model_copy(update={"group_size": None})})
    reward = build_reward(config)
    try:
        catalog = reward.catalog or _local_catalog(config)
        facts = provider_facts(_components(config), tuple(reward.needs), catalog)
        sampled = audit_rows(config, reward.needs, rows, seed)
        units = plan_units(
            facts, reward_attacks(), family=family, allow_unsandboxed=allow_unsandboxed, rows=sampled
        )
        per_candidate = sum(1 for fact in facts if fact.calls_a_model)
        planned = _plan_calls(units, len(sampled), per_candidate)
        if progress is not None:
            progress(_plan_line(facts, units, len(sampled), planned, max_calls))
        budget = _Budget(max_calls, per_candidate)
        runs = []
        # The candidate fields the providers read (``reward.needs`` lists only the row's inputs).
        needs = tuple(dict.fromkeys([*reward.needs, *(need for fact in facts for need in fact.needs)]))
        data = _DataBaselines(
            reward, needs, budget, [u.family.honest_right for u in units if not u.family.every_provider]
        )
        for unit in units:
            runs.append(_run_unit(reward, unit, sampled, needs, budget, progress, data))
            if budget.stopped_at is not None:
                break
    finally:
        reward.close()
    return AuditReport.build(
        providers=facts,
        units=[UnitReport.of(run, RIGHT, WRONG) for run in runs],
        margin=margin,
        rows=len(sampled),
        planned_calls=planned,
        calls=budget.used,
        stopped_at=budget.stopped_at,
        unplanned=[unit.family.name for unit in units[len(runs) :]],
        allow_untested=allow_untested,
    )


def _components(config: RewardkitConfig) -> list[Component]:
    """The configured spec's components (one for a single provider), each attacked on its own."""
    spec = spec_of(config.rl.reward)
    return [
        Component(name=part.name, provider=part.provider, params=dict(part.params), weight=part.weight)
        for part in spec.components
    ]


def _local_catalog(config: RewardkitConfig) -> Any:
    """The catalog as this process resolves it, for a reward scored elsewhere: ``None`` when it
    cannot be resolved here (the service knows providers this process lacks)."""
    try:
        return resolve_catalog(config.rl.reward.catalog)
    except RewardkitError:
        return None


def _plan_line(
    facts: list[ProviderFacts], units: list[Unit], rows: int, planned: int, limit: int | None
) -> str:
    families = ", ".join(f"{u.family.name} ({len(u.attacks)} attacks)" for u in units) or "none"
    line = f"auditing {', '.join(f.name for f in facts)} on {rows} rows; families: {families}"
    if planned:
        bound = f", stopping at --max-calls {limit}" if limit is not None and planned > limit else ""
        line += f"; this makes {planned} model calls{bound}"
    return line
