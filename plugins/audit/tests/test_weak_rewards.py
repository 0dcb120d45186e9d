"""Issue 43's acceptance, through the real command line (``rewardkit audit`` in a subprocess): the weak
rewards kept in ``weak_rewards/`` leak by default (no ``--family``) on data without reference
solutions, a component on which nothing could be tried is ``untested`` and exits 5 unless
``--allow-untested``, and the tutorial's custom provider is audited by the generic families."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from weak_rewards import EXPECTED

from rewardkit_audit.report import EXIT_HOLDS, EXIT_LEAKS, EXIT_UNTESTED

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "weak_rewards"
ROOT = HERE.parents[2]


def audit_cli(config: Path, tmp_path: Path, *args: str) -> tuple[int, str, dict[str, Any]]:
    """``rewardkit audit CONFIG --json OUT`` in its own process, the fixtures' catalog importable."""
    out = tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "rewardkit.cli", "audit", str(config), "--quiet", "--json", str(out), *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=600,
    )
    report = json.loads(out.read_text()) if out.exists() else {}
    return done.returncode, done.stdout + done.stderr, report


def leaking(report: dict[str, Any]) -> set[str]:
    return {a["name"] for unit in report["families"] for a in unit["attacks"] if a["verdict"] == "leaks"}


@pytest.mark.parametrize("config", sorted(EXPECTED))
def test_a_weak_reward_leaks_by_default_and_the_leak_line_names_the_attack(tmp_path: Path, config: str):
    code, output, report = audit_cli(FIXTURES / config, tmp_path)
    assert code == EXIT_LEAKS, output
    assert EXPECTED[config] in leaking(report), output
    failing = [line for line in output.splitlines() if "failing:" in line]
    assert any(EXPECTED[config] in line for line in failing), output


def test_a_leak_in_a_bonus_component_is_reported_with_its_gain_to_the_total(tmp_path: Path):
    code, output, report = audit_cli(FIXTURES / "gsm8k_length_bonus.yaml", tmp_path)
    assert code == EXIT_LEAKS
    states = {p["name"]: p["state"] for p in report["providers"]}
    assert states == {"gsm8k": "holds", "length-bonus": "leaks"}, output
    (line,) = [line for line in output.splitlines() if line.startswith("length-bonus: leaks")]
    assert "generic-length-padding (+" in line and "to the total)" in line


def test_the_last_number_fallback_param_brings_its_own_attack(tmp_path: Path):
    """``answer-unmarked-list-right-last`` declares the param that makes it possible: it runs only there."""
    _, _, weak = audit_cli(FIXTURES / "gsm8k_last_number.yaml", tmp_path)
    assert "answer-unmarked-list-right-last" in leaking(weak)
    code, output, sound = audit_cli(FIXTURES / "gsm8k_last_number.yaml", tmp_path, "rl.reward.params={}")
    assert code == EXIT_HOLDS, output
    ran = {a["name"] for unit in sound["families"] for a in unit["attacks"]}
    assert "answer-unmarked-list-right-last" not in ran and "generic-list-unmarked" in ran


def test_nothing_tested_is_untested_and_exits_5_unless_allowed(tmp_path: Path):
    code, output, report = audit_cli(FIXTURES / "untested.yaml", tmp_path)
    assert code == EXIT_UNTESTED, output
    assert report["untested"] == ["pays-length"]
    assert "pays-length: untested:" in output and "docs/audit.md#untested-components" in output
    assert "holds" not in [p["state"] for p in report["providers"]]
    code, output, report = audit_cli(FIXTURES / "untested.yaml", tmp_path, "--allow-untested")
    assert code == EXIT_HOLDS, output
    assert "pays-length: untested:" in output


def test_the_tutorial_provider_is_audited_by_default_and_says_which_attacks_ran(tmp_path: Path):
    config = tmp_path / "tutorial.yaml"
    config.write_text(
        "rl:\n  data:\n    rollouts_path: "
        + str(ROOT / "examples" / "tutorial_provider" / "rollouts.jsonl")
        + "\n  reward:\n    provider: final-answer\n"
    )
    code, output, report = audit_cli(config, tmp_path)
    assert code == EXIT_HOLDS, output
    families = {unit["family"] for unit in report["families"]}
    assert {"generic", "generic-reference", "answer-text"} <= families
    assert "generic-length-padding" in output and "generic-not-a-number-infinity" in output
    assert [p["state"] for p in report["providers"]] == ["holds"]


def test_the_readme_example_exits_0_with_every_component_tested(tmp_path: Path):
    code, output, report = audit_cli(ROOT / "examples" / "gsm8k" / "config.yaml", tmp_path)
    assert code == EXIT_HOLDS, output
    assert [p["state"] for p in report["providers"]] == ["holds"] and report["untested"] == []


def test_math_on_approximation_references_pays_no_value_that_is_not_a_number(tmp_path: Path):
    code, output, report = audit_cli(FIXTURES / "math_approx.yaml", tmp_path)
    assert "generic-not-a-number-infinity" not in leaking(report), output
    assert code == EXIT_HOLDS, output
