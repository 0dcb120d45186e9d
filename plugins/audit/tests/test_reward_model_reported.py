"""The real ``reward-model`` provider, on a tiny random model the test builds, audited with the
reward-model family and reported, not gated: a random model's preferences say nothing about
rewardkit, so what must hold is that the audit runs it end to end. Needs torch and transformers:
runs in tox env ``rm`` (env ``audit`` leaves this module out)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# A missing torch here is an import error, never a skip: this module runs only where it is installed.
import torch  # noqa: F401

from rewardkit_audit import audit
from rewardkit_audit.report import EXIT_HOLDS, EXIT_LEAKS
from rewardkit_vllm.testing import build_tiny_reward_model

ROWS = Path(__file__).resolve().parents[3] / "testdata" / "audit" / "gsm8k.jsonl"


def test_a_reward_model_is_audited_end_to_end_and_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    os.environ.setdefault("REWARDKIT_CACHE_DIR", str(tmp_path / "hash-cache"))
    model = build_tiny_reward_model(tmp_path / "rm", seed=0)
    config = {
        "rl": {
            "data": {"path": str(ROWS), "reference_column": "solution"},
            "reward": {"provider": "reward-model", "params": {"model": str(model)}},
        }
    }
    report = audit(config, rows=3)
    print("\n".join(report.lines()))
    assert report.exit_code in (EXIT_HOLDS, EXIT_LEAKS)
    # The generic families run on every reward too (issue 43); the reward model's own family is
    # the one this test is about.
    assert sorted(unit.family for unit in report.units) == ["generic", "generic-reference", "reward-model"]
    (unit,) = [unit for unit in report.units if unit.family == "reward-model"]
    assert unit.providers == ("reward-model",)
    assert unit.attacks and all(attack.rows_tried == 3 and attack.errors == 0 for attack in unit.attacks)
    assert report.calls == report.planned_calls > 0
