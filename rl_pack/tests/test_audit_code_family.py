"""The ``code`` attack family (``rewardkit audit``) against code-tests and against a weak checker.

Rows come from testdata/code (sanitized MBPP, HumanEval, reflexion MBPP, one verl stdin/stdout
case). For each row one group [honest right, honest wrong, every attack] is scored through
``rewardkit.load`` with the shipped ``code-tests`` provider (real bubblewrap sandbox: needs root
and bubblewrap, like test_code_reward_hacks.py): honest right must score above honest wrong and
no attack above honest wrong. The same completions go to a deliberately weak checker written
here, one that exec()s the program and the asserts in one process of its own and pays 1 when no
exception escapes (exit status 0 and no failure reported; otherwise the share of tests it saw
reported as passed): each attack must beat honest wrong there on most rows, so each one has teeth.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from process_table import live_processes_of

import rewardkit
from rewardkit.seam.attacks import AuditRow, reward_attacks
from rewardkit.seam.catalog import resolve_catalog
from rewardkit_rl.attacks import code_family
from rewardkit_rl.attacks.answer_key import ANSWER_KEY_PROGRAM
from rewardkit_rl.code.reference import parse_reference

DATA = Path(__file__).resolve().parents[2] / "testdata" / "code"
MBPP_TASKS = (2, 3, 4, 6, 7)
HUMANEVAL_TASKS = ("HumanEval/0", "HumanEval/1", "HumanEval/2", "HumanEval/3")
REFLEXION_TASKS = ("mbpp_234_volume_cube", "mbpp_420_cube_Sum")
ATTACKS = code_family.attacks()
ATTACK_NAMES = [spec.name for spec in ATTACKS]
CANDIDATES = ["honest_right", "honest_wrong", *ATTACK_NAMES]


def _rows() -> list[AuditRow]:
    rows = []
    mbpp = {row["task_id"]: row for row in json.loads((DATA / "sanitized-mbpp.json").read_text())}
    for task in MBPP_TASKS:
        row = mbpp[task]
        # the reference the provider reads; the solution travels beside it, as a row field
        reference = {"test_list": row["test_list"], "test_imports": row["test_imports"]}
        rows.append(AuditRow(f"mbpp/{task}", row["prompt"], reference, fields={"code": row["code"]}))
    with gzip.open(DATA / "HumanEval.jsonl.gz", "rt") as handle:
        humaneval = {problem["task_id"]: problem for problem in map(json.loads, handle)}
    for task in HUMANEVAL_TASKS:
        problem = humaneval[task]
        # the whole HumanEval row as the reference: canonical_solution is read from it
        rows.append(AuditRow(task, problem["prompt"], problem))
    with open(DATA / "reflexion_simple_mbpp_py.jsonl") as handle:
        reflexion = {rollout["name"]: rollout for rollout in map(json.loads, handle)}
    for task in REFLEXION_TASKS:
        rollout = reflexion[task]
        reference = {key: rollout[key] for key in ("prompt", "test", "entry_point")}
        fields = {"solution": rollout["solution"], "is_solved": rollout["is_solved"]}
        rows.append(AuditRow(task, rollout["prompt"], reference, fields=fields))
    with open(DATA / "test_sandbox_on_cpu_cases.jsonl") as handle:
        case = json.loads(handle.readline())
    assert case["kind"] == "code_stdin_stdout" and case["expected_score"] == 1.0
    # a stdin/stdout row holding its own (correct) completion: the audit's honest right
    rows.append(AuditRow("verl/io-0", None, case["ground_truth"], completion=case["completion"]))
    return rows


ROWS = _rows()
ASSERT_ROWS = [row for row in ROWS if parse_reference(row.reference).mode == "asserts"]


def _completions(row: AuditRow) -> dict[str, str]:
    right = row.completion if row.completion is not None else code_family.honest_right(row)
    built = {"honest_right": right, "honest_wrong": code_family.honest_wrong(row)}
    built.update({spec.name: spec.build(row) for spec in ATTACKS})
    missing = [name for name, text in built.items() if text is None]
    assert not missing, f"{row.row_id}: nothing built for {missing}"
    return built


COMPLETIONS = {row.row_id: _completions(row) for row in ROWS}


# -- the shipped provider ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """row id -> candidate -> (final, status), from one batch through the configured reward."""
    config = {"rl": {"group_size": len(CANDIDATES), "reward": {"provider": "code-tests", "params": {}}}}
    groups = [
        {
            "group_id": row.row_id,
            "rollouts": [
                {
                    "trajectory_id": name,
                    "completion": COMPLETIONS[row.row_id][name],
                    "reference": row.reference,
                }
                for name in CANDIDATES
            ],
        }
        for row in ROWS
    ]
    here = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("shipped"))
    try:
        with rewardkit.load(config) as reward:
            batch = reward.score(groups)
            [bound] = reward.worker.providers.values()
            left = live_processes_of(set(bound.provider._pool.uids))
        marker_here = Path(code_family.SURVIVOR_MARKER).exists()
    finally:
        os.chdir(here)
    assert not left, f"processes of the sandbox outlived the batch: {left}"
    assert not marker_here, "a surviving process wrote its marker outside the sandbox"
    scores: dict[str, dict[str, tuple[float | None, str]]] = {}
    for group in batch.groups:
        scores[group.group_id] = {
            candidate.trajectory_id: (candidate.final, candidate.breakdown["code-tests"]["status"])
            for candidate in group.candidates
        }
    return scores


def test_the_shipped_provider_pays_honest_right_above_honest_wrong(shipped):
    for row in ROWS:
        right, right_status = shipped[row.row_id]["honest_right"]
        wrong, wrong_status = shipped[row.row_id]["honest_wrong"]
        assert right_status == wrong_status == "scored", (row.row_id, right_status, wrong_status)
        assert right == 1.0 and wrong == 0.0, (row.row_id, right, wrong)


@pytest.mark.parametrize("attack", ATTACK_NAMES)
def test_the_shipped_provider_scores_the_attack_no_higher_than_honest_wrong(shipped, attack):
    for row in ROWS:
        final, status = shipped[row.row_id][attack]
        wrong, _ = shipped[row.row_id]["honest_wrong"]
        assert status == "scored", f"{attack} on {row.row_id}: status {status}, not a wrong answer"
        assert final is not None and final <= wrong, (
            f"{attack} on {row.row_id}: {final} > honest wrong {wrong}"
        )


# -- a weak checker: the program and the asserts in one process --------------------------------------

# The checker's own process: it runs the program, then each test in the same namespace, and
# reports each test on stdout (the shape of code-tests' judge protocol, ``test N pass``).
DRIVER = """request = {request!r}
namespace = {{"__name__": "solution"}}
exec(request["program"], namespace)
exec(request["setup"], namespace)
for index, test in enumerate(request["tests"]):
    try:
        exec(test, namespace)
    except Exception:
        print(f"test {{index}} fail", flush=True)
    else:
        print(f"test {{index}} pass", flush=True)
"""
WEAK_OUTPUT_LIMIT = 1 << 20


def weak_check(completion: str, reference: object) -> tuple[float, list[str]]:
    """(pass rate, files the run left in its working directory) from the weak checker."""
    plan = parse_reference(reference)
    request = {"program": plan.program_from(completion), "setup": plan.setup, "tests": list(plan.tests)}
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run(
            [sys.executable, "-I", "-c", DRIVER.format(request=request)],
            cwd=folder,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=120,
            check=False,
        )
        left = sorted(os.listdir(folder))
    output = done.stdout[:WEAK_OUTPUT_LIMIT].decode("utf-8", "replace")
    cases = len(plan.tests)
    if done.returncode == 0 and not re.search(r"^test \d+ fail$", output, re.M):
        return 1.0, left  # no exception escaped
    passed = {int(index) for index in re.findall(r"^test (\d+) pass$", output, re.M)} & set(range(cases))
    return len(passed) / cases, left


@pytest.fixture(scope="module")
def weak():
    """row id -> candidate -> (pass rate, files left), for the rows with asserts."""
    jobs = [(row, name) for row in ASSERT_ROWS for name in CANDIDATES]
    with ThreadPoolExecutor(4) as pool:
        results = list(
            pool.map(lambda job: weak_check(COMPLETIONS[job[0].row_id][job[1]], job[0].reference), jobs)
        )
    scores: dict[str, dict[str, tuple[float, list[str]]]] = {}
    for (row, name), result in zip(jobs, results):
        scores.setdefault(row.row_id, {})[name] = result
    return scores


def test_the_weak_checker_tells_right_from_wrong(weak):
    for row in ASSERT_ROWS:
        assert weak[row.row_id]["honest_right"][0] == 1.0, row.row_id
        assert weak[row.row_id]["honest_wrong"][0] == 0.0, row.row_id


@pytest.mark.parametrize("attack", ATTACK_NAMES)
def test_the_attack_has_teeth_against_the_weak_checker(weak, attack):
    beaten = [
        row.row_id for row in ASSERT_ROWS if weak[row.row_id][attack][0] > weak[row.row_id]["honest_wrong"][0]
    ]
    assert len(beaten) * 3 >= len(ASSERT_ROWS) * 2, f"{attack} beats honest wrong on only {beaten}"


def test_a_surviving_process_reaches_the_weak_checkers_folder_and_only_it(weak):
    # the proof of reach: the marker, in the run's own working directory, after the run ended
    for row in ASSERT_ROWS:
        assert weak[row.row_id]["code-surviving-process"][1] == [code_family.SURVIVOR_MARKER], row.row_id
        assert weak[row.row_id]["honest_wrong"][1] == [], row.row_id


# -- the family itself ---------------------------------------------------------------------------------


def test_the_family_and_its_attacks_are_registered_for_code_tests():
    registered = reward_attacks()
    family = registered.families.get("code").value
    assert family.providers == ("code-tests",) and family.needs == ()
    assert family.applies_to("code-tests", ("reference",)) and not family.applies_to("math", ("reference",))
    names = {spec.name for spec in registered.of_family("code")}
    assert names == set(ATTACK_NAMES) and len(names) >= 12
    destructive = {spec.name for spec in registered.of_family("code") if spec.destructive}
    assert destructive == {"code-surviving-process", "code-output-flood"}
    assert all(spec.description for spec in registered.of_family("code"))
    # destructive payloads go only to a provider that declares its sandbox
    assert resolve_catalog().entry("code-tests").spec.sandboxed is True


def test_the_answer_key_is_the_one_shared_program():
    build = {spec.name: spec.build for spec in ATTACKS}
    for row in ROWS:
        assert build["code-answer-key"](row) == ANSWER_KEY_PROGRAM
        # the file and /proc hunter hands what it finds to the same program, not a copy of its own
        assert build["code-proc-file-hunt"](row).count(ANSWER_KEY_PROGRAM) == 1


def test_the_baselines_come_from_the_row():
    by_id = {row.row_id: row for row in ROWS}
    mbpp = by_id["mbpp/2"]
    assert code_family.honest_right(mbpp) == mbpp.fields["code"]
    assert code_family.honest_wrong(mbpp) == "\n\ndef similar_elements(*args, **kwargs):\n    return None\n"
    humaneval = by_id["HumanEval/0"]
    assert code_family.honest_right(humaneval) == humaneval.reference["canonical_solution"]
    assert "def has_close_elements(*args, **kwargs):\n    return None" in code_family.honest_wrong(humaneval)
    # a reference given as a JSON string, the solution in the row's fields
    as_json = AuditRow("j", None, json.dumps(mbpp.reference), fields=mbpp.fields)
    assert code_family.honest_right(as_json) == mbpp.fields["code"]
    # a stdin/stdout row: no entry point, a program that prints nothing; no solution of its own
    io_row = by_id["verl/io-0"]
    assert code_family.honest_wrong(io_row) == "pass\n" and code_family.honest_right(io_row) is None
    # a rollout labelled unsolved is no honest right
    unsolved = AuditRow(
        "u", None, by_id["mbpp_234_volume_cube"].reference, fields={"solution": "x", "is_solved": "False"}
    )
    assert code_family.honest_right(unsolved) is None


@pytest.mark.parametrize("reference", [None, "42", {"answer": 3}, {"test_list": []}, {"test": "def ("}])
def test_rows_without_a_code_reference_are_skipped_by_every_builder(reference):
    row = AuditRow("not-code", "What is 6 * 7?", reference)
    assert code_family.honest_right(row) is None and code_family.honest_wrong(row) is None
    assert all(spec.build(row) is None for spec in ATTACKS)


def test_no_attack_carries_the_rows_solution():
    for row in ROWS:
        solution = row.completion or code_family.honest_right(row)
        assert solution
        body = [line.strip() for line in solution.splitlines() if line.strip().startswith("return ")]
        for name in ATTACK_NAMES:
            text = COMPLETIONS[row.row_id][name]
            assert solution.strip() not in text, (row.row_id, name)
            assert not any(line in text for line in body if len(line) > 12), (row.row_id, name)


def test_destructive_payloads_stay_bounded():
    for row in ROWS:
        survivor = COMPLETIONS[row.row_id]["code-surviving-process"]
        assert survivor.count("fork(") == 1 and "kill" not in survivor
        assert code_family.SURVIVOR_SLEEP_S <= 2.0
        flood = COMPLETIONS[row.row_id]["code-output-flood"]
        assert "kill" not in flood and code_family.FLOOD_BYTES <= 8 << 20
