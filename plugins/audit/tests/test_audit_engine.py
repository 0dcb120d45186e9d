"""``rewardkit audit`` end to end: deliberately weak providers leak in the right family (exit 4),
sound ones hold (exit 0), custom providers are audited unchanged, errors are caught per attack,
destructive payloads are withheld from unsandboxed providers, judge calls are bounded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import rewardkit
from rewardkit.cli import main
from rewardkit.seam.attacks import reward_attacks
from rewardkit_audit import audit
from rewardkit_audit.plan import ProviderFacts, Unit, plan_units
from rewardkit_audit.report import EXIT_COULD_NOT_RUN, EXIT_HOLDS, EXIT_LEAKS
from rewardkit_audit.testing import assert_attacks_hold

ROOT = Path(__file__).resolve().parents[3]
ROWS = ROOT / "testdata" / "audit"
WEAK = "weak_providers:catalog"


def write_config(
    tmp_path: Path, provider: str, rows: str, reference_column: str = "reference", **reward: Any
) -> Path:
    config = {
        "rl": {
            "data": {"path": str(ROWS / rows), "reference_column": reference_column},
            "reward": {"provider": provider, **reward},
        }
    }
    path = tmp_path / "audit.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def run_cli(tmp_path: Path, config: Path, *args: str) -> tuple[int, dict[str, Any]]:
    out = tmp_path / "audit.json"
    code = main(["audit", str(config), "--quiet", "--json", str(out), *args])
    return code, json.loads(out.read_text())


def verdicts(report: dict[str, Any], family: str) -> dict[str, str]:
    (found,) = [unit for unit in report["families"] if unit["family"] == family]
    return {attack["name"]: attack["verdict"] for attack in found["attacks"]}


@pytest.mark.parametrize(
    ("provider", "rows", "column", "family"),
    [
        ("weak-contains", "math.jsonl", "reference", "math"),
        ("weak-exec", "mbpp.jsonl", "reference", "code"),
        ("weak-judge", "gsm8k.jsonl", "gold", "judge"),
        ("weak-length", "gsm8k.jsonl", "gold", "reward-model"),
    ],
)
def test_a_weak_provider_leaks_in_its_family(
    tmp_path: Path, provider: str, rows: str, column: str, family: str
):
    config = write_config(tmp_path, provider, rows, column, catalog=WEAK)
    code, report = run_cli(
        tmp_path,
        config,
        "--family",
        family,
        *(["--rows=2"] if family == "code" else []),
    )
    found = verdicts(report, family)
    assert code == EXIT_LEAKS, found
    assert "leaks" in found.values(), found
    unit = report["families"][0]
    if family != "reward-model":  # a length-paying stub cannot tell answers one digit apart
        assert unit["honest_right_mean"] > unit["honest_wrong_mean"], "the baselines must separate"
    # the JSON holds every candidate's score, baselines included
    candidates = {record["candidate"] for record in unit["candidates"]}
    assert {"honest-right", "honest-wrong"} <= candidates and len(candidates) > 2


def test_a_weak_judge_is_caught_without_naming_a_family(tmp_path: Path):
    """The judge family applies to any provider that reads the prompt: a customer's own judge."""
    config = write_config(tmp_path, "weak-judge", "gsm8k.jsonl", "gold", catalog=WEAK)
    code, report = run_cli(tmp_path, config, "--rows", "4")
    assert report["model_calls"]["stopped_at"] is None
    assert code == EXIT_LEAKS
    assert "leaks" in verdicts(report, "judge").values()


def test_the_tutorial_provider_from_examples_is_audited_unchanged_and_holds(tmp_path: Path):
    """``final-answer`` comes from examples/tutorial_provider, installed through its entry point."""
    config = {
        "rl": {
            "data": {"rollouts_path": str(ROOT / "examples" / "tutorial_provider" / "rollouts.jsonl")},
            "reward": {"provider": "final-answer"},
        }
    }
    report = audit(config)
    assert report.exit_code == EXIT_HOLDS, "\n".join(report.lines())
    (unit,) = [unit for unit in report.units if unit.family == "answer-text"]
    assert unit.providers == ("final-answer",)
    assert all(attack.rows_tried == 2 for attack in unit.attacks)
    assert unit.right_mean == 1.0 and unit.wrong_mean == 0.0


def test_the_testing_helper_passes_a_sound_reward_and_names_what_leaks(tmp_path: Path):
    sound = {
        "rl": {
            "data": {"path": str(ROWS / "gsm8k.jsonl"), "reference_column": "gold"},
            "reward": {"provider": "arithmetic"},
        }
    }
    assert assert_attacks_hold(sound, rows=4).exit_code == EXIT_HOLDS
    weak = {
        "rl": {
            "data": {"path": str(ROWS / "gsm8k.jsonl"), "reference_column": "gold"},
            "reward": {"provider": "weak-contains", "catalog": WEAK},
        }
    }
    with pytest.raises(AssertionError, match=r"answer-text/text-hedge-or: leaks"):
        assert_attacks_hold(weak, rows=4, family="answer-text")


def test_the_old_paths_of_the_audit_still_work_with_a_warning_until_0_3() -> None:
    """``rewardkit.audit`` and ``rewardkit.testing.assert_attacks_hold`` moved here: the core's moved-paths
    table hands out the very same functions, each with a DeprecationWarning naming its new path."""
    moved_audit = (
        r"^rewardkit\.audit moved to rewardkit_audit\.audit; the old path is removed in rewardkit 0\.3$"
    )
    with pytest.warns(DeprecationWarning, match=moved_audit):
        assert rewardkit.audit is audit
    moved_helper = (
        r"^rewardkit\.testing\.assert_attacks_hold moved to rewardkit_audit\.testing\.assert_attacks_hold; "
    )
    with pytest.warns(DeprecationWarning, match=moved_helper):
        from rewardkit.testing import assert_attacks_hold as old_helper
    assert old_helper is assert_attacks_hold
    with pytest.raises(AttributeError, match="module 'rewardkit' has no attribute 'audits'"):
        rewardkit.audits  # noqa: B018 - the attribute access is the test


def test_an_attack_that_errors_is_caught_alone_and_the_audit_goes_on(tmp_path: Path):
    """A provider that raises on a list answer: under onError raise the whole group fails, so each
    candidate is scored alone; only the attack that caused it is 'errors'."""
    config = write_config(tmp_path, "fragile", "gsm8k.jsonl", "gold", catalog="fragile_provider:catalog")
    code, report = run_cli(tmp_path, config, "--family", "answer-text")
    found = verdicts(report, "answer-text")
    assert code == EXIT_LEAKS
    assert found["text-list"] == "errors"
    assert {verdict for name, verdict in found.items() if name != "text-list"} == {"holds"}
    (unit,) = report["families"]
    (attack,) = [a for a in unit["attacks"] if a["name"] == "text-list"]
    assert "a list answer" in attack["error_example"]


def test_destructive_payloads_go_only_to_a_sandboxed_provider_unless_allowed(tmp_path: Path):
    """code-tests declares its sandbox: it gets the destructive code attacks; weak-exec does not,
    unless --allow-unsandboxed says so; the report names what it withheld and why."""
    attacks = reward_attacks()
    destructive = {attack.name for attack in attacks.of_family("code") if attack.destructive}
    assert destructive, "the code family ships destructive payloads"

    def planned(provider: ProviderFacts, allow: bool) -> Unit:
        (unit,) = plan_units([provider], attacks, family="code", allow_unsandboxed=allow)
        return unit

    sandboxed = ProviderFacts("code-tests", ("reference",), sandboxed=True, calls_a_model=False)
    bare = ProviderFacts("weak-exec", ("reference",), sandboxed=False, calls_a_model=False)
    assert destructive <= {attack.name for attack in planned(sandboxed, False).attacks}
    withheld = planned(bare, False)
    assert set(withheld.withheld) == destructive
    assert not destructive & {attack.name for attack in withheld.attacks}
    assert all("does not declare a sandbox" in why for why in withheld.withheld.values())
    assert destructive <= {attack.name for attack in planned(bare, True).attacks}
    # and the report says so
    config = write_config(tmp_path, "weak-exec", "mbpp.jsonl", catalog=WEAK)
    _, report = run_cli(tmp_path, config, "--family", "code", "--rows", "1")
    assert set(report["families"][0]["withheld"]) == destructive


def test_judge_calls_are_announced_and_bounded(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    config = write_config(tmp_path, "weak-length", "gsm8k.jsonl", "gold", catalog=WEAK)
    code = main(["audit", str(config), "--family", "reward-model", "--rows", "6", "--max-calls", "20"])
    captured = capsys.readouterr()
    assert "model calls, stopping at --max-calls 20" in captured.err
    assert "stopped at --max-calls" in captured.out
    made = int(captured.out.split("stopped at --max-calls after ")[1].split()[0])
    assert 0 < made <= 20
    assert code in (EXIT_LEAKS, EXIT_HOLDS)


def test_an_unknown_family_cannot_run_and_a_provider_no_named_family_fits_is_audited_generically(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    config = write_config(tmp_path, "arithmetic", "gsm8k.jsonl", "gold")
    assert main(["audit", str(config), "--family", "nope"]) == EXIT_COULD_NOT_RUN
    assert "unknown attack family 'nope'" in capsys.readouterr().err
    # A provider no named family fits is audited by the generic families that apply to every reward.
    blind = write_config(tmp_path, "blind", "gsm8k.jsonl", "gold", catalog="fragile_provider:catalog")
    assert main(["audit", str(blind), "--quiet"]) == EXIT_HOLDS
    assert "blind: holds:" in capsys.readouterr().out


def test_rows_come_from_rollouts_one_per_group(tmp_path: Path):
    config = {
        "rl": {
            "data": {
                "rollouts_path": str(ROOT / "examples" / "gsm8k" / "rollouts.jsonl"),
                "prompt_column": "question",
                "reference_column": "answer",
            },
            "reward": {"provider": "gsm8k"},
        }
    }
    report = audit(config, rows=5, seed=3)
    assert report.rows == 5
    assert report.exit_code == EXIT_HOLDS, "\n".join(report.lines())
    again = audit(config, rows=5, seed=3)
    assert [r["row"] for r in report.units[0].records] == [r["row"] for r in again.units[0].records]


def test_a_reward_behind_a_reward_service_is_audited_as_it_is_in_process(tmp_path: Path):
    from rewardkit_service.testing import ServerProcess

    serve = tmp_path / "serve.yaml"
    serve.write_text("rl:\n  reward:\n    provider: arithmetic\n")
    local = {
        "rl": {
            "data": {"path": str(ROWS / "gsm8k.jsonl"), "reference_column": "gold"},
            "reward": {"provider": "arithmetic"},
        }
    }
    here = audit(local, rows=4)
    with ServerProcess(serve) as server:
        remote = {"rl": {**local["rl"], "reward": {"provider": "arithmetic", "service": server.url}}}
        there = audit(remote, rows=4)
    assert there.exit_code == here.exit_code == EXIT_HOLDS, "\n".join(there.lines())
    assert [unit.records for unit in there.units] == [unit.records for unit in here.units]
    assert [p.name for p in there.providers] == ["arithmetic"]
