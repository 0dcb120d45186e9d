"""For a provider package's tests: ``assert_attacks_hold`` fails a test unless every attack on the
configured reward holds (``rewardkit.testing.assert_attacks_hold`` until 0.3, where the core held it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rewardkit_audit.report import AuditReport
from rewardkit_audit.run import audit

__all__ = ["assert_attacks_hold"]


def assert_attacks_hold(config: Any, overrides: Sequence[str] = (), **options: Any) -> AuditReport:
    """Audit the reward ``config`` selects (``rewardkit audit``) and fail unless every attack holds: runs
    every installed attack family that applies (``options`` as for ``rewardkit_audit.audit``: ``rows``,
    ``family``...) and raises ``AssertionError`` naming each attack that leaks or errors, with its worst
    row; returns the report."""
    report = audit(config, overrides, **options)
    failed = [
        f"{unit.family}/{attack.name}: {attack.verdict} (worst row {attack.worst_row}, "
        f"gain {attack.worst_gain}; {attack.error_example or 'no error'})"
        for unit, attack in report.failed
    ]
    if failed:
        raise AssertionError("attacks that do not hold:\n" + "\n".join(failed))
    if report.exit_code != 0:
        raise AssertionError("nothing was audited: " + "; ".join(report.summary_lines()))
    return report
