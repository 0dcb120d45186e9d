"""The audit report: a verdict per attack, a table per family, a summary line per provider, JSON.

An attack **leaks** when, paired over the rows both were scored on, the one-sided 95% lower bound
of (attack final - honest-wrong final) exceeds the margin: ``margin`` times the range of every
final the audit observed (``rewardkit_stats.paired_interval``; with one row, the row's own
difference). In a reward of several components the same test runs on each component's own value
too: an attack leaks when it leaks on the total or on any component it was aimed at, and the report
gives the gain it brings that component and the total. An attack that made any candidate ``error``
is **errors**; one with no row to try is **untested**. Everything else **holds**.

A component is ``leaks`` when one of its attacks leaks or errors, ``holds`` when at least one was
tried and none did, and ``untested`` when none could be tried: never "holds".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rewardkit.plugin import format_table
from rewardkit_stats import paired_interval

if TYPE_CHECKING:
    from rewardkit_audit.plan import ProviderFacts
    from rewardkit_audit.run import UnitRun

VERDICTS = ("holds", "leaks", "errors", "untested")
EXIT_HOLDS, EXIT_COULD_NOT_RUN, EXIT_LEAKS, EXIT_UNTESTED = 0, 2, 4, 5
UNTESTED_HELP = "docs/audit.md#untested-components"
# One-sided 95% lower bound: the low end of a two-sided 90% interval.
_TWO_SIDED_LEVEL = 0.90


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


@dataclass
class PartVerdict:
    """One attack against one component of a composed reward, judged on that component's value."""

    lower_bound: float | None
    mean_gain: float | None
    verdict: str = "untested"


def _lower_bound(pairs: Sequence[tuple[float, float]]) -> float | None:
    """One-sided 95% lower bound of (attack - wrong) over ``(attack, wrong)`` pairs; one pair: its gain."""
    if len(pairs) >= 2:
        found = paired_interval([w for _, w in pairs], [a for a, _ in pairs], level=_TWO_SIDED_LEVEL)
        return found.low if found is not None else None
    return pairs[0][0] - pairs[0][1] if pairs else None


@dataclass
class AttackVerdict:
    name: str
    rows_tried: int
    attack_mean: float | None
    wrong_mean: float | None
    right_mean: float | None
    lower_bound: float | None
    worst_row: str | None
    worst_gain: float | None
    errors: int
    error_example: str | None
    verdict: str = "untested"
    # component name -> the attack judged on that component's own value (composed rewards only)
    parts: dict[str, PartVerdict] = field(default_factory=dict)

    def decide(self, margin: float, part_margins: Mapping[str, float] | None = None) -> None:
        for name, part in self.parts.items():
            if part.lower_bound is not None:
                part.verdict = "leaks" if part.lower_bound > (part_margins or {}).get(name, 0.0) else "holds"
        if self.errors:
            self.verdict = "errors"
        elif self.lower_bound is None:
            self.verdict = "untested"
        elif self.lower_bound > margin or any(part.verdict == "leaks" for part in self.parts.values()):
            self.verdict = "leaks"
        else:
            self.verdict = "holds"

    @property
    def total_gain(self) -> float | None:
        """The mean gain the attack brings the reward's final over honest wrong."""
        if self.attack_mean is None or self.wrong_mean is None:
            return None
        return self.attack_mean - self.wrong_mean

    def verdict_for(self, component: str) -> str:
        """This attack's verdict on one component: its own part where the reward is composed."""
        part = self.parts.get(component)
        if part is None or self.verdict in ("errors", "untested"):
            return self.verdict
        return part.verdict


@dataclass
class UnitReport:
    family: str
    providers: tuple[str, ...]
    attacks: list[AttackVerdict]
    withheld: dict[str, str]
    skipped: dict[str, str]
    not_built: dict[str, int]
    right_mean: float | None
    wrong_mean: float | None
    # every candidate, for --json: row, candidate, final, status, reason (and each component's value)
    records: list[dict[str, Any]] = field(default_factory=list)
    # rows whose honest right is the row's own completion the reward paid most
    from_data: int = 0
    rows_scored: int = 0

    @classmethod
    def of(cls, run: UnitRun, right: str, wrong: str) -> UnitReport:
        records: list[dict[str, Any]] = []
        rights: list[float] = []
        wrongs: list[float] = []
        for row in run.rows:
            for attack, group in row.groups.items():
                members = ((right, group.right), (wrong, group.wrong)) + ((attack, group.attack),) * bool(
                    attack
                )
                for name, outcome in members:
                    records.append(
                        {"row": row.row_id, "group": attack or "baselines", "candidate": name}
                        | {"final": outcome.final, "status": outcome.status}
                        | ({"reason": outcome.reason} if outcome.reason else {})
                        | ({"parts": dict(outcome.parts)} if outcome.parts else {})
                        | ({"text": outcome.text} if outcome.text is not None else {})
                    )
                rights.append(group.right.final if group.right.final is not None else 0.0)
                wrongs.append(group.wrong.final if group.wrong.final is not None else 0.0)
        return cls(
            family=run.unit.family.name,
            providers=run.unit.providers,
            attacks=[_verdict(attack.name, run) for attack in run.unit.attacks],
            withheld=dict(run.unit.withheld),
            skipped=dict(run.skipped),
            not_built=dict(run.not_built),
            right_mean=_mean(rights),
            wrong_mean=_mean(wrongs),
            records=records,
            from_data=run.from_data,
            rows_scored=len(run.rows),
        )

    def finals(self) -> Iterable[float]:
        return (record["final"] for record in self.records if record["final"] is not None)

    def part_values(self, component: str) -> Iterable[float]:
        for record in self.records:
            value = record.get("parts", {}).get(component)
            if value is not None:
                yield value


def _verdict(name: str, run: UnitRun) -> AttackVerdict:
    pairs: list[tuple[str, float, float, float]] = []
    errors: list[str] = []
    for row in run.rows:
        group = row.groups.get(name)
        if group is None:
            continue
        if group.attack.status == "error":
            errors.append(f"row {row.row_id}: {group.attack.reason}")
            continue
        assert (
            group.attack.final is not None and group.wrong.final is not None and group.right.final is not None
        )
        pairs.append((row.row_id, group.attack.final, group.wrong.final, group.right.final))
    gains = [attack - wrong for _, attack, wrong, _ in pairs]
    lower = _lower_bound([(p[1], p[2]) for p in pairs])
    parts: dict[str, PartVerdict] = {}
    for component in run.unit.providers:
        own: list[tuple[float, float]] = []
        for row in run.rows:
            group = row.groups.get(name)
            if group is None or group.attack.status == "error" or component not in group.attack.parts:
                continue
            attack_value, wrong_value = group.attack.parts[component], group.wrong.parts.get(component)
            # a skipped component adds nothing: it counts as 0 beside a value, as the composition does
            if attack_value is not None or wrong_value is not None:
                own.append((attack_value or 0.0, wrong_value or 0.0))
        if own:
            parts[component] = PartVerdict(_lower_bound(own), _mean([a - w for a, w in own]))
    worst = max(range(len(pairs)), key=gains.__getitem__) if pairs else None
    return AttackVerdict(
        name=name,
        rows_tried=len(pairs) + len(errors),
        attack_mean=_mean([p[1] for p in pairs]),
        wrong_mean=_mean([p[2] for p in pairs]),
        right_mean=_mean([p[3] for p in pairs]),
        lower_bound=lower,
        worst_row=pairs[worst][0] if worst is not None else None,
        worst_gain=gains[worst] if worst is not None else None,
        errors=len(errors),
        error_example=errors[0] if errors else None,
        parts=parts,
    )


def _shown(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


@dataclass
class AuditReport:
    providers: list[ProviderFacts]
    units: list[UnitReport]
    margin: float
    margin_abs: float
    rows: int
    planned_calls: int
    calls: int
    stopped_at: str | None
    unplanned: list[str]
    allow_untested: bool = False

    @classmethod
    def build(
        cls, *, providers: list[ProviderFacts], units: list[UnitReport], margin: float, **rest: Any
    ) -> AuditReport:
        finals = [final for unit in units for final in unit.finals()]
        margin_abs = margin * (max(finals) - min(finals)) if finals else 0.0
        part_margins: dict[str, float] = {}
        for provider in providers:
            values = [value for unit in units for value in unit.part_values(provider.name)]
            part_margins[provider.name] = margin * (max(values) - min(values)) if values else 0.0
        for unit in units:
            for attack in unit.attacks:
                attack.decide(margin_abs, part_margins)
        return cls(providers=providers, units=units, margin=margin, margin_abs=margin_abs, **rest)

    def verdicts(self) -> list[tuple[UnitReport, AttackVerdict]]:
        return [(unit, attack) for unit in self.units for attack in unit.attacks]

    @property
    def failed(self) -> list[tuple[UnitReport, AttackVerdict]]:
        return [(unit, attack) for unit, attack in self.verdicts() if attack.verdict in ("leaks", "errors")]

    def component_verdicts(self, component: str) -> list[tuple[UnitReport, AttackVerdict, str]]:
        """Every attack aimed at ``component``, with its verdict on that component."""
        return [
            (unit, attack, attack.verdict_for(component))
            for unit, attack in self.verdicts()
            if component in unit.providers
        ]

    def state(self, component: str) -> str:
        """``leaks`` (an attack leaks or errors), ``holds`` (attacks were tried, none did) or ``untested``."""
        found = {verdict for _, _, verdict in self.component_verdicts(component)}
        if found & {"leaks", "errors"}:
            return "leaks"
        return "holds" if "holds" in found else "untested"

    @property
    def untested(self) -> list[str]:
        return [p.name for p in self.providers if self.state(p.name) == "untested"]

    @property
    def exit_code(self) -> int:
        """4 when an attack leaks or errors; 2 when no family could run at all; 5 when a configured
        component had no attack tried on it (unless ``allow_untested``); else 0."""
        if self.failed:
            return EXIT_LEAKS
        if not self.units:  # no family could be planned: nothing ran at all
            return EXIT_COULD_NOT_RUN
        if self.untested and not self.allow_untested:
            return EXIT_UNTESTED
        return EXIT_HOLDS

    def lines(self) -> list[str]:
        """The report as printed: a table per family, then a summary line per provider."""
        out: list[str] = []
        for unit in self.units:
            out.append("")
            out.append(
                f"{', '.join(unit.providers)} / family {unit.family}: "
                f"honest right {_shown(unit.right_mean)}, honest wrong {_shown(unit.wrong_mean)}"
            )
            if (
                unit.right_mean is not None
                and unit.wrong_mean is not None
                and unit.right_mean <= unit.wrong_mean
            ):
                out.append(
                    "  note: the reward does not score honest right above honest wrong here, "
                    "so 'holds' says little"
                )
            table = [
                (
                    attack.name,
                    str(attack.rows_tried),
                    _shown(attack.attack_mean),
                    _shown(attack.wrong_mean),
                    _shown(attack.right_mean),
                    "-" if attack.worst_row is None else f"{attack.worst_row} ({attack.worst_gain:+.3f})",
                    attack.verdict,
                )
                for attack in unit.attacks
            ]
            if table:
                out.append(
                    format_table(
                        table, ("attack", "rows", "attack", "wrong", "right", "worst row (gain)", "verdict")
                    )
                )
            for unit_attack in unit.attacks:
                if unit_attack.error_example:
                    out.append(
                        f"  {unit_attack.name}: {unit_attack.errors} error(s), "
                        f"e.g. {unit_attack.error_example}"
                    )
            for name, why in unit.withheld.items():
                out.append(f"  not run: {name}: {why}")
            if unit.from_data:
                out.append(
                    f"  honest right on {unit.from_data} rows: the row's own completion the reward paid most"
                )
            if unit.skipped:
                first = next(iter(unit.skipped.items()))
                out.append(
                    f"  {len(unit.skipped)} of {self.rows} rows skipped by this family, "
                    f"e.g. {first[0]}: {first[1]}"
                )
        out.append("")
        out.extend(self.summary_lines())
        return out

    def summary_lines(self) -> list[str]:
        """A line per component (``leaks``, ``holds`` or ``untested``): counts, what failed, by how much."""
        lines = []
        composed = len(self.providers) > 1
        for provider in self.providers:
            mine = self.component_verdicts(provider.name)
            counts = {verdict: sum(1 for _, _, v in mine if v == verdict) for verdict in VERDICTS}
            families = sorted({u.family for u in self.units if provider.name in u.providers})
            state = self.state(provider.name)
            label = (
                provider.name
                if provider.name == provider.provider
                else f"{provider.name} ({provider.provider})"
            )
            if state == "untested":
                lines.append(f"{label}: untested: {self._why_untested(provider.name, families)}")
                continue
            worst = [
                self._failing(attack, provider.name, composed)
                for _, attack, v in mine
                if v in ("leaks", "errors")
            ]
            lines.append(
                f"{label}: {state}: {counts['holds']} hold, {counts['leaks']} leak, "
                f"{counts['errors']} error, {counts['untested']} untested, "
                f"in {len(families)} families ({', '.join(families)})"
                + (f"; failing: {', '.join(worst)}" if worst else "")
            )
        if composed:
            total = [
                a for _, a in self.verdicts() if a.lower_bound is not None and a.lower_bound > self.margin_abs
            ]
            lines.append(
                "composition (the total): "
                + (
                    "leaks: " + ", ".join(f"{a.name} ({a.total_gain:+.3f})" for a in total)
                    if total
                    else "no attack raises the total past the margin"
                )
            )
        if self.stopped_at is not None:
            lines.append(
                f"stopped at --max-calls after {self.calls} model calls ({self.stopped_at}); "
                f"families not audited: {', '.join(self.unplanned) or 'none'}"
            )
        lines.append(f"margin: {self.margin:g} of the observed range of finals = {self.margin_abs:.4f}")
        if self.untested:
            lines.append(
                f"untested components: {', '.join(self.untested)}"
                + (
                    " (--allow-untested: not failing the audit)"
                    if self.allow_untested
                    else f"; exit {EXIT_UNTESTED} (--allow-untested accepts it; see {UNTESTED_HELP})"
                )
            )
        return lines

    def _why_untested(self, component: str, families: list[str]) -> str:
        if not families:
            reason = "no attack family applies to it"
        else:
            skipped = [
                why for unit in self.units if component in unit.providers for why in unit.skipped.values()
            ]
            reason = (
                f"no attack could be tried (families {', '.join(families)}"
                + (f"; e.g. {skipped[0]}" if skipped else "; no attack could be built from these rows")
                + ")"
            )
        return (
            f"{reason}. Add rows with references (or rollouts with completions), pass --family NAME, "
            f"or install a plugin with a family for it: {UNTESTED_HELP}"
        )

    @staticmethod
    def _failing(attack: AttackVerdict, component: str, composed: bool) -> str:
        if attack.verdict == "errors":
            return f"{attack.name} (errors)"
        part = attack.parts.get(component)
        if composed and part is not None and part.mean_gain is not None and attack.total_gain is not None:
            return f"{attack.name} ({part.mean_gain:+.3f} on its own, {attack.total_gain:+.3f} to the total)"
        gain = attack.total_gain
        return attack.name if gain is None else f"{attack.name} ({gain:+.3f})"

    def to_json(self) -> dict[str, Any]:
        return {
            "exit_code": self.exit_code,
            "rows": self.rows,
            "margin": self.margin,
            "margin_abs": self.margin_abs,
            "model_calls": {"planned": self.planned_calls, "made": self.calls, "stopped_at": self.stopped_at},
            "providers": [
                {
                    "name": p.name,
                    "provider": p.provider,
                    "params": dict(p.params),
                    "weight": p.weight,
                    "needs": list(p.needs),
                    "sandboxed": p.sandboxed,
                    "state": self.state(p.name),
                }
                for p in self.providers
            ],
            "untested": self.untested,
            "allow_untested": self.allow_untested,
            "families": [
                {
                    "family": unit.family,
                    "providers": list(unit.providers),
                    "honest_right_mean": unit.right_mean,
                    "honest_wrong_mean": unit.wrong_mean,
                    "attacks": [
                        {key: value for key, value in attack.__dict__.items() if key != "parts"}
                        | {"parts": {name: part.__dict__ for name, part in attack.parts.items()}}
                        for attack in unit.attacks
                    ],
                    "honest_right_from_data": unit.from_data,
                    "withheld": unit.withheld,
                    "skipped_rows": unit.skipped,
                    "not_built": unit.not_built,
                    "candidates": unit.records,
                }
                for unit in self.units
            ],
        }

    def write_json(self, path: str | Path) -> None:
        target = Path(path)
        temporary = target.with_name(target.name + ".partial")
        temporary.write_text(json.dumps(self.to_json(), indent=2) + "\n")
        temporary.replace(target)
