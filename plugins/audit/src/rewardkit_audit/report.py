"""The audit report: a verdict per attack, a table per family, a summary line per provider, JSON.

An attack **leaks** when, paired over the rows both were scored on, the one-sided 95% lower bound
of (attack final - honest-wrong final) exceeds the margin: ``margin`` times the range of every
final the audit observed (``rewardkit.stats.paired_interval``; with one row, the row's own
difference). An attack that made any candidate ``error`` is **errors**; one with no row to try is
**untested**. Everything else **holds**.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rewardkit.stats import paired_interval
from rewardkit.tables import format_table

if TYPE_CHECKING:
    from rewardkit_audit.plan import ProviderFacts
    from rewardkit_audit.run import UnitRun

VERDICTS = ("holds", "leaks", "errors", "untested")
EXIT_HOLDS, EXIT_COULD_NOT_RUN, EXIT_LEAKS = 0, 2, 4
# One-sided 95% lower bound: the low end of a two-sided 90% interval.
_TWO_SIDED_LEVEL = 0.90


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


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

    def decide(self, margin: float) -> None:
        if self.errors:
            self.verdict = "errors"
        elif self.lower_bound is None:
            self.verdict = "untested"
        else:
            self.verdict = "leaks" if self.lower_bound > margin else "holds"


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
    # every candidate, for --json: row, candidate, final, status, reason
    records: list[dict[str, Any]] = field(default_factory=list)

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
        )

    def finals(self) -> Iterable[float]:
        return (record["final"] for record in self.records if record["final"] is not None)


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
    if len(pairs) >= 2:
        found = paired_interval([p[2] for p in pairs], [p[1] for p in pairs], level=_TWO_SIDED_LEVEL)
        lower = found.low if found is not None else None
    else:
        lower = gains[0] if gains else None
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

    @classmethod
    def build(
        cls, *, providers: list[ProviderFacts], units: list[UnitReport], margin: float, **rest: Any
    ) -> AuditReport:
        finals = [final for unit in units for final in unit.finals()]
        margin_abs = margin * (max(finals) - min(finals)) if finals else 0.0
        for unit in units:
            for attack in unit.attacks:
                attack.decide(margin_abs)
        return cls(providers=providers, units=units, margin=margin, margin_abs=margin_abs, **rest)

    def verdicts(self) -> list[tuple[UnitReport, AttackVerdict]]:
        return [(unit, attack) for unit in self.units for attack in unit.attacks]

    @property
    def failed(self) -> list[tuple[UnitReport, AttackVerdict]]:
        return [(unit, attack) for unit, attack in self.verdicts() if attack.verdict in ("leaks", "errors")]

    @property
    def exit_code(self) -> int:
        """4 when an attack leaks or errors, 2 when nothing could be audited, else 0."""
        if self.failed:
            return EXIT_LEAKS
        if not any(attack.verdict == "holds" for _, attack in self.verdicts()):
            return EXIT_COULD_NOT_RUN
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
        lines = []
        for provider in self.providers:
            mine = [(u, a) for u, a in self.verdicts() if provider.name in u.providers]
            counts = {verdict: sum(1 for _, a in mine if a.verdict == verdict) for verdict in VERDICTS}
            families = sorted({u.family for u in self.units if provider.name in u.providers})
            if not families:
                lines.append(
                    f"{provider.name}: no attack family applies "
                    "(install a plugin that ships one, or pass --family)"
                )
                continue
            worst = [a.name for _, a in mine if a.verdict in ("leaks", "errors")]
            state = "FAILS" if worst else "holds"
            lines.append(
                f"{provider.name}: {state}: {counts['holds']} hold, {counts['leaks']} leak, "
                f"{counts['errors']} error, {counts['untested']} untested, "
                f"in {len(families)} families ({', '.join(families)})"
                + (f"; failing: {', '.join(worst)}" if worst else "")
            )
        if self.stopped_at is not None:
            lines.append(
                f"stopped at --max-calls after {self.calls} model calls ({self.stopped_at}); "
                f"families not audited: {', '.join(self.unplanned) or 'none'}"
            )
        lines.append(f"margin: {self.margin:g} of the observed range of finals = {self.margin_abs:.4f}")
        return lines

    def to_json(self) -> dict[str, Any]:
        return {
            "exit_code": self.exit_code,
            "rows": self.rows,
            "margin": self.margin,
            "margin_abs": self.margin_abs,
            "model_calls": {"planned": self.planned_calls, "made": self.calls, "stopped_at": self.stopped_at},
            "providers": [
                {"name": p.name, "needs": list(p.needs), "sandboxed": p.sandboxed} for p in self.providers
            ],
            "families": [
                {
                    "family": unit.family,
                    "providers": list(unit.providers),
                    "honest_right_mean": unit.right_mean,
                    "honest_wrong_mean": unit.wrong_mean,
                    "attacks": [attack.__dict__ for attack in unit.attacks],
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
