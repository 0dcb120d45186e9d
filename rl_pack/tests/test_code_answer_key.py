"""The answer-key attack against code-tests on every sanitized-MBPP and HumanEval task of testdata/code.

``ANSWER_KEY_PROGRAM`` (rewardkit_rl.attacks.answer_key) solves nothing: it looks through its own
process for the run's tests and answers every call from their expected values. Scored through the
real provider (bubblewrap, default isolation) as the completion of every task, it must pass none:
the candidate's process never holds a test. How many it passed is printed either way.

Needs root and bubblewrap, like test_code_accuracy.py.
"""

from __future__ import annotations

import ast
import functools
import gzip
import json
import types
from pathlib import Path

import pytest

import rewardkit
from rewardkit_rl.attacks.answer_key import ANSWER_KEY_PROGRAM, answer_key_program
from rewardkit_rl.code.reference import parse_reference

DATA = Path(__file__).resolve().parents[2] / "testdata" / "code"
CONFIG = {"rl": {"group_size": 1, "reward": {"provider": "code-tests", "term": "all_passed", "params": {}}}}


def _mbpp_references() -> dict[str, dict]:
    rows = json.loads((DATA / "sanitized-mbpp.json").read_text())
    assert len(rows) == 427
    return {
        f"mbpp/{row['task_id']}": {"test_list": row["test_list"], "test_imports": row["test_imports"]}
        for row in rows
    }


def _humaneval_references() -> dict[str, dict]:
    with gzip.open(DATA / "HumanEval.jsonl.gz", "rt") as handle:
        problems = [json.loads(line) for line in handle]
    assert len(problems) == 164
    return {
        problem["task_id"]: {key: problem[key] for key in ("prompt", "test", "entry_point")}
        for problem in problems
    }


@functools.cache
def _compiled(program: str) -> types.CodeType:
    return compile(program, "solution.py", "exec")


def _in_process_passes(reference: dict) -> bool:
    """Whether the program wins ``reference`` when the run request is in its own process (a control)."""
    plan = parse_reference(reference)
    # what the runner's frames hold around the candidate's load: the program finds it from there
    request = {"tests": list(plan.tests), "setup": plan.setup, "trusted": plan.trusted}
    request["expose"] = list(plan.expose)
    candidate = {"__name__": "solution"}
    exec(_compiled(plan.program_from(ANSWER_KEY_PROGRAM)), candidate)
    namespace = {"__name__": "__tests__"}
    exec(plan.trusted, namespace)
    namespace.update({name: candidate[name] for name in plan.expose if name in candidate})
    exec(plan.setup, namespace)
    for test in plan.tests:
        try:
            exec(test, dict(namespace))
        except Exception:
            return False
    return True


@pytest.fixture(scope="module")
def reward():
    with rewardkit.load(CONFIG) as loaded:
        yield loaded


def _passed(reward, references: dict[str, dict]) -> tuple[list[str], dict[str, str]]:
    """(the tasks the attack fully passes, task -> status for the ones that were not scored)."""
    groups = [
        {
            "group_id": task,
            "rollouts": [{"trajectory_id": task, "completion": ANSWER_KEY_PROGRAM, "reference": reference}],
        }
        for task, reference in references.items()
    ]
    passed, unscored = [], {}
    # many groups per call: the Reward spreads them over its threads and the provider's slots
    for first in range(0, len(groups), 64):
        batch = reward.score(groups[first : first + 64])
        for group in batch.groups:
            [candidate] = group.candidates
            entry = candidate.breakdown["code-tests"]
            if entry["status"] != "scored":
                unscored[group.group_id] = f"{entry['status']}: {entry['reason']}"
            elif entry["value"] == 1.0:
                passed.append(group.group_id)
    return passed, unscored


def test_the_answer_key_program_is_task_independent():
    assert answer_key_program() == ANSWER_KEY_PROGRAM
    tree = ast.parse(ANSWER_KEY_PROGRAM)
    # it defines no task's function itself: every top-level name it binds is its own (_rk...);
    # the tasks' names are bound at run time, from the tests it finds, through globals()
    bound = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Assign):
            bound.update(target.id for target in node.targets if isinstance(target, ast.Name))
    assert bound and all(name.lower().startswith("_rk") for name in bound), sorted(bound)


def test_the_answer_key_wins_when_the_tests_are_in_its_process():
    """The control: with the request in a frame above it, the program wins nearly every task."""
    mbpp = sum(_in_process_passes(reference) for reference in _mbpp_references().values())
    humaneval = sum(_in_process_passes(reference) for reference in _humaneval_references().values())
    print(f"\n[answer key, tests in its process] mbpp {mbpp}/427, humaneval {humaneval}/164")
    # all but the HumanEval tasks whose tests draw unseeded random inputs (32, 38, 50, 53)
    assert mbpp >= 420 and humaneval >= 155, (mbpp, humaneval)


@pytest.mark.parametrize(
    ("dataset", "references"),
    [("mbpp", _mbpp_references), ("humaneval", _humaneval_references)],
    ids=["mbpp", "humaneval"],
)
def test_the_answer_key_attack_passes_no_task(reward, dataset, references):
    tasks = references()
    passed, unscored = _passed(reward, tasks)
    print(
        f"\n[answer key, {dataset}] passed {len(passed)}/{len(tasks)} tasks"
        f" ({len(unscored)} not scored){': ' + ', '.join(passed[:20]) if passed else ''}"
    )
    # every task judged: an error or a skip would hide a pass, and a sandbox that cannot start is no proof
    assert not unscored, dict(list(unscored.items())[:5])
    assert not passed, f"the answer key passed {len(passed)}/{len(tasks)} {dataset} tasks: {passed[:20]}"
