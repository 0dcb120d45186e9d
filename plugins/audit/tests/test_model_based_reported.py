"""Model-based providers are audited against scripted stubs and reported, not gated: with a tiny or
scripted model, "holds" would say nothing about rewardkit. What must hold is that the audit runs
them end to end (every family that applies, every row scored) and that the report says what a
scripted judge that grades by the answer alone paid."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from rewardkit_audit import audit
from rewardkit_audit.report import EXIT_HOLDS, EXIT_LEAKS

ROOT = Path(__file__).resolve().parents[3]
ROWS = ROOT / "testdata" / "audit" / "gsm8k.jsonl"
_STATED = re.compile(r"(?:####|answer is|Answer:)\s*\$?(-?[\d,]+(?:\.\d+)?)")


def _golds() -> dict[str, str]:
    rows = [json.loads(line) for line in ROWS.read_text().splitlines()]
    return {row["prompt"].strip(): row["gold"] for row in rows}


def _stated(answer: str) -> str | None:
    found = _STATED.findall(answer)
    return found[-1].replace(",", "") if found else None


@pytest.mark.parametrize("provider", ["nih-rubric", "nih-compare"])
def test_a_judge_is_audited_against_a_scripted_judge_and_reported(
    provider: str, capsys: pytest.CaptureFixture[str]
):
    from rewardkit_nih_judge.testing import ScriptedJudge, fenced, graded, pair

    golds = _golds()

    def grade(body: Mapping[str, Any]) -> dict[str, Any]:
        gold = golds[(fenced(body, "task") or "").strip()]
        if provider == "nih-rubric":
            return {"score": 10 if _stated(graded(body)) == gold else 1, "rationale": "scripted"}
        first, second = (_stated(text) == gold for text in pair(body))
        return {
            "winner": "A" if first and not second else "B" if second and not first else "tie",
            "rationale": "-",
        }

    with ScriptedJudge(grade) as judge:
        params: dict[str, Any] = {"base_url": judge.base_url, "model": "judge", "backoff_s": 0.01}
        if provider == "nih-rubric":
            params["rubric"] = "Grade the final answer only."
        config = {
            "rl": {
                "data": {"path": str(ROWS), "reference_column": "gold"},
                "reward": {"provider": provider, "params": params},
            }
        }
        report = audit(config, rows=3, max_calls=5000)
        asked = len(judge.requests)
    print("\n".join(report.lines()))
    assert report.exit_code in (EXIT_HOLDS, EXIT_LEAKS)
    (unit,) = [unit for unit in report.units if unit.family == "judge"]
    assert all(attack.rows_tried == 3 and attack.errors == 0 for attack in unit.attacks)
    assert unit.right_mean is not None and unit.wrong_mean is not None and unit.right_mean > unit.wrong_mean
    # against a judge that reads only the answer, no attack gains: the report shows it
    assert all(attack.verdict == "holds" for attack in unit.attacks), "\n".join(report.lines())
    assert asked > 0 and report.calls > 0
