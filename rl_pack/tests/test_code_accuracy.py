"""Accuracy of code-tests on real labelled data in testdata/code (HumanEval, MBPP, reflexion MBPP).

Sources and licences: testdata/SOURCES.md.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from rewardkit.seam.catalog import resolve_catalog

DATA = Path(__file__).resolve().parents[2] / "testdata" / "code"
REFLEXION = "reflexion_{run}.jsonl"
# The one canonical MBPP solution that may not pass: a naive amicable-number sum that needs about
# 6 s for limit 9999 here, so it times out on a busy machine (before the two-process runner too).
MBPP_TOO_SLOW = {123}


# Every disagreement with is_solved, traced in docs/code_rewards.md: these solutions call the
# built-in sum(), which mbpp_126_sum (row 63, run earlier in the same namespace) had redefined.
LABEL_FAULTS = {
    "simple_mbpp_py": {
        "mbpp_170_sum_range_list",
        "mbpp_798__sum",
        "mbpp_724_power_base_sum",
        "mbpp_598_armstrong_number",
    },
    "simple_mbpp_py2": {"mbpp_170_sum_range_list", "mbpp_724_power_base_sum", "mbpp_598_armstrong_number"},
}


@pytest.fixture(scope="module")
def bound():
    provider = resolve_catalog().bind("code-tests", {"cgroup": "required", "timeout_s": 6.0})
    yield provider
    provider.provider.close()


def _all_passed(bound, group: str, rollouts: list[dict]) -> list[bool]:
    results = [item.result for item in bound.score_group(group, rollouts).items]
    for result in results:
        assert result.status == "scored", result.reason
    return [result.terms["all_passed"] == 1.0 for result in results]


def test_humaneval_canonical_solutions_all_pass(bound):
    with gzip.open(DATA / "HumanEval.jsonl.gz", "rt") as handle:
        problems = [json.loads(line) for line in handle]
    assert len(problems) == 164
    failed = []
    for problem in problems:
        reference = {key: problem[key] for key in ("prompt", "test", "entry_point")}
        rollout = {"trajectory_id": "c", "completion": problem["canonical_solution"], "reference": reference}
        if not _all_passed(bound, problem["task_id"], [rollout])[0]:
            failed.append(problem["task_id"])
    assert not failed


def test_mbpp_canonical_solutions_pass_in_test_list_form(bound):
    """Every sanitized-MBPP reference solution against its asserts, none skipped."""
    rows = json.loads((DATA / "sanitized-mbpp.json").read_text())
    assert len(rows) == 427
    outcomes = {}
    for row in rows:
        reference = {"test_list": row["test_list"], "test_imports": row["test_imports"]}
        rollout = {"trajectory_id": "c", "completion": row["code"], "reference": reference}
        result = bound.score_group(str(row["task_id"]), [rollout]).items[0].result
        outcomes[row["task_id"]] = result.status if result.status != "scored" else result.terms["all_passed"]
    skipped = [task for task, outcome in outcomes.items() if outcome == "skipped"]
    failed = {task for task, outcome in outcomes.items() if outcome == 0.0}
    assert not skipped
    # task 123 passes or times out depending on the machine's speed; nothing else may fail
    assert failed <= MBPP_TOO_SLOW


def test_humaneval_example_samples_pass_at_1_is_half(bound):
    problem = json.loads((DATA / "example_problem.jsonl").read_text())
    samples = [json.loads(line) for line in (DATA / "example_samples.jsonl").open()]
    reference = {key: problem[key] for key in ("prompt", "test", "entry_point")}
    rollouts = [
        {"trajectory_id": str(i), "completion": sample["completion"], "reference": reference}
        for i, sample in enumerate(samples)
    ]
    verdicts = _all_passed(bound, "example", rollouts)
    # rm -rf, sleep(10) and input() fail; the three `return 1` variants pass
    assert verdicts == [False, False, False, True, True, True]
    assert sum(verdicts) / len(verdicts) == 0.5


@pytest.mark.parametrize("run", sorted(LABEL_FAULTS))
def test_reflexion_mbpp_agreement(bound, run):
    rows = [json.loads(line) for line in (DATA / REFLEXION.format(run=run)).open()]
    disagreements = set()
    for row in rows:
        reference = {key: row[key] for key in ("prompt", "test", "entry_point")}
        rollout = {"trajectory_id": "c", "completion": row["solution"], "reference": reference}
        if _all_passed(bound, row["name"], [rollout])[0] != row["is_solved"]:
            disagreements.add(row["name"])
    assert 1 - len(disagreements) / len(rows) >= 0.98
    assert disagreements == LABEL_FAULTS[run]


@pytest.mark.parametrize("run", sorted(LABEL_FAULTS))
def test_reflexion_label_faults_come_from_the_shared_namespace(bound, run):
    """Replaying the reflexion fault: with mbpp_126_sum's `sum` defined first, each one fails."""
    rows = {row["name"]: row for row in map(json.loads, (DATA / REFLEXION.format(run=run)).open())}
    shadow = rows["mbpp_126_sum"]["solution"]
    assert "def sum(" in shadow
    for name in LABEL_FAULTS[run]:
        row = rows[name]
        reference = {key: row[key] for key in ("prompt", "test", "entry_point")}
        alone = {"trajectory_id": "alone", "completion": row["solution"], "reference": reference}
        shared = {
            "trajectory_id": "shared",
            "completion": shadow + "\n" + row["solution"],
            "reference": reference,
        }
        assert _all_passed(bound, name, [alone, shared]) == [True, False]


def test_verl_stdin_stdout_cases(bound):
    rows = [json.loads(line) for line in (DATA / "test_sandbox_on_cpu_cases.jsonl").open()]
    for index, row in enumerate(r for r in rows if r["kind"] == "code_stdin_stdout"):
        truth = row["ground_truth"]
        reference = {"inputs": truth["inputs"], "outputs": truth["outputs"]}
        rollout = {"trajectory_id": "c", "completion": row["completion"], "reference": reference}
        result = bound.score_group(f"verl{index}", [rollout]).items[0].result
        assert result.status == "scored", result.reason
        # verl's 0.9 is not a pass fraction (see the data note): read it as pass / not pass
        assert result.terms["all_passed"] == float(float(row["expected_score"]) == 1.0)
        assert 0.5 < result.terms["pass_rate"] <= 1.0
