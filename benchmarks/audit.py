"""What `rewardkit audit` costs: each shipped rule provider audited on 12 rows of testdata/audit.

For every provider it times the whole audit (loading the reward, sampling rows, building every
attack, scoring, the verdicts) and, as the baseline measured in the same run, scoring the very
same candidates in one plain ``reward.score`` call. ``overhead`` is their ratio: what the audit's
per-attack groups, error capture and bookkeeping cost over scoring alone. Run from the root:

    python benchmarks/audit.py            # needs rewardkit-audit and rewardkit-rl installed
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import report

import rewardkit
from rewardkit_audit import audit

ROOT = Path(__file__).resolve().parents[1]
ROWS = ROOT / "testdata" / "audit"
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


def main() -> None:
    rows = []
    for provider, (data, column, params) in SHIPPED.items():
        config = {
            "rl": {
                "data": {"path": str(ROWS / data), "reference_column": column},
                "reward": {"provider": provider, "params": params},
            }
        }
        started = time.perf_counter()
        result = audit(config, rows=12)
        audit_s = time.perf_counter() - started
        # The baseline: the groups the audit scored, in one call of the same reward.
        groups = _groups(config, result)
        with rewardkit.load(config) as reward:
            started = time.perf_counter()
            reward.score(groups)
            plain_s = time.perf_counter() - started
        candidates = sum(len(rollouts) for _, rollouts in groups)
        rows.append(
            {
                "provider": provider,
                "families": ",".join(unit.family for unit in result.units),
                "attacks": sum(len(unit.attacks) for unit in result.units),
                "candidates": candidates,
                "audit_s": round(audit_s, 2),
                "plain_score_s": round(plain_s, 2),
                "overhead": round(audit_s / plain_s, 1) if plain_s else None,
                "verdict": "holds" if result.exit_code == 0 else f"exit {result.exit_code}",
            }
        )
    report("audit", rows, {"rows_per_provider": 12})


def _groups(config: dict[str, Any], result: Any) -> list[tuple[str, list[dict[str, Any]]]]:
    """Every group the audit scored, rebuilt from its rows and the registered builders."""
    from rewardkit.config import load_config
    from rewardkit.seam.attacks import reward_attacks
    from rewardkit_audit.rows import audit_rows

    found = reward_attacks()
    by_id = {row.row_id: row for row in audit_rows(load_config(config), ("prompt", "reference"), 12)}
    groups: dict[str, list[dict[str, Any]]] = {}
    for unit in result.units:
        family = found.families.get(unit.family).value
        builders = {"honest-right": family.honest_right, "honest-wrong": family.honest_wrong}
        builders |= {attack.name: attack.build for attack in found.of_family(unit.family)}
        for record in unit.records:
            row = by_id[record["row"]]
            text = builders[record["candidate"]](row) or ""
            rollout = {"trajectory_id": record["candidate"], "completion": text, "reference": row.reference}
            rollout["completion_token_count"] = len(text.split())
            groups.setdefault(f"{unit.family}/{row.row_id}/{record['group']}", []).append(rollout)
    return list(groups.items())


if __name__ == "__main__":
    main()
