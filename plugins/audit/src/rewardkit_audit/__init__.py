"""rewardkit audit: red-team a configured reward with every registered attack family before the
policy does (``rewardkit audit CONFIG``, ``rewardkit_audit.audit(config)``; docs/audit.md)."""

from rewardkit_audit.report import AttackVerdict, AuditReport, UnitReport
from rewardkit_audit.run import audit

__all__ = ["AttackVerdict", "AuditReport", "UnitReport", "audit"]
