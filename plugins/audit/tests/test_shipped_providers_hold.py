"""Every shipped rule provider, audited on 12 rows of ``testdata/audit`` with every family that
applies to it, holds: no attack scores above honest wrong, none makes a candidate error.

A failure here is a real hole in a shipped reward (or an attack that puts the right answer where
the provider documents that it reads it): the printed report names the attack and its worst row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rewardkit_audit import audit
from rewardkit_audit.report import EXIT_HOLDS

ROOT = Path(__file__).resolve().parents[3]
ROWS = ROOT / "testdata" / "audit"

# provider -> (rows file, reference column, params)
SHIPPED: dict[str, tuple[str, str, dict[str, Any]]] = {
    "gsm8k": ("gsm8k.jsonl", "solution", {}),
    "arithmetic": ("gsm8k.jsonl", "gold", {}),
    "exact-match": ("gsm8k.jsonl", "gold", {}),
    "countdown": ("countdown.jsonl", "reference", {}),
    "constant": ("gsm8k.jsonl", "gold", {}),
    "nonempty": ("gsm8k.jsonl", "gold", {}),
    "math": ("math.jsonl", "reference", {}),
    "format": ("gsm8k.jsonl", "gold", {}),
    "repetition": ("gsm8k.jsonl", "gold", {}),
    "overlong": ("gsm8k.jsonl", "gold", {"max_tokens": 4096, "buffer_tokens": 1024}),
    "code-tests": ("mbpp.jsonl", "reference", {}),
    "multiple-choice": ("choice.jsonl", "reference", {}),
}
# Where the honest answers score alike by design (a constant reward pays everything), "holds" is
# all an audit can say; everywhere else the baselines must separate, or the audit proves nothing.
NOT_SEPARATING = {"constant", "nonempty"}
GENERIC_FAMILIES = {"generic", "generic-reference"}


@pytest.mark.parametrize("provider", sorted(SHIPPED))
def test_a_shipped_rule_provider_holds(provider: str):
    rows, column, params = SHIPPED[provider]
    config = {
        "rl": {
            "data": {"path": str(ROWS / rows), "reference_column": column},
            "reward": {"provider": provider, "params": params},
        }
    }
    report = audit(config, rows=12)
    shown = "\n".join(report.lines())
    # every component tested: no attack family left it untested
    assert report.untested == [], shown
    print(shown)
    assert report.exit_code == EXIT_HOLDS, shown
    assert report.units, f"no family audits {provider}"
    for unit in report.units:
        assert provider in unit.providers
        tried = [attack for attack in unit.attacks if attack.rows_tried]
        assert tried, f"{unit.family}: no attack was tried on any row\n{shown}"
        assert all(attack.verdict == "holds" for attack in tried), shown
        # The generic families write answers in common forms, which a format or length reward does
        # not grade: separating baselines are asked of the families written for the provider.
        if provider not in NOT_SEPARATING and unit.family not in GENERIC_FAMILIES:
            assert unit.right_mean is not None and unit.wrong_mean is not None
            assert unit.right_mean > unit.wrong_mean, f"{unit.family}: the baselines do not separate\n{shown}"
