"""``math`` and ``multiple-choice`` show the text they read as the answer (the ``extracted_answer``
note) beside their breakdown entry; display only: scores and diagnostics are unchanged."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rewardkit

NOTE = "extracted_answer"
MATH = {"provider": "math", "params": {"workers": 1}}


@pytest.fixture(scope="module")
def math_reward() -> Iterator[Any]:
    with rewardkit.load({"rl": {"group_size": 1, "reward": MATH}}) as reward:
        yield reward


def one(reward: Any, reference: object, completion: str) -> Any:
    rollout = {"trajectory_id": "t", "completion": completion, "reference": reference}
    ((_, candidate),) = reward.score([("g", [rollout])]).candidates()
    return candidate


@pytest.mark.parametrize(
    ("reference", "completion", "shown", "final"),
    [
        # the exact path, in this process
        ("\\frac{1}{2}", "So the answer is $\\boxed{\\frac{1}{2}}$.", "\\frac{1}{2}", 1.0),
        ("4", "I think it is \\boxed{3}, no wait, it is \\boxed{3}", "3", 0.0),  # rejected: still shown
        ("42", "<think>6*7</think><answer>42</answer>", "42", 1.0),
        # two different boxes state a list, shown as the list it read
        ("\\{4, 5\\}", "either \\boxed{5} or \\boxed{4}", "5, 4", 1.0),
        ("3", "Final Answer: The final answer is $3$. I hope it is correct.", "3", 1.0),
        # decided by math-verify in a worker process: the note still comes back with the verdict
        ("\\frac{\\sqrt{2}}{2}", "Hence $\\boxed{\\dfrac{1}{\\sqrt{2}}}$", "\\dfrac{1}{\\sqrt{2}}", 1.0),
        ("\\frac{\\sqrt{2}}{2}", "Hence $\\boxed{\\sqrt{3}}$", "\\sqrt{3}", 0.0),
    ],
)
def test_math_shows_the_answer_it_read(
    math_reward: Any, reference: str, completion: str, shown: str, final: float
):
    candidate = one(math_reward, reference, completion)
    entry = candidate.breakdown["math"]
    assert entry[NOTE] == shown
    assert entry["status"] == "scored" and candidate.final == final
    assert candidate.diagnostics["math"]["extracted"] == 1.0


def test_math_shows_no_note_without_an_answer(math_reward: Any):
    candidate = one(math_reward, "7", "I am not sure what the answer is.")
    assert NOTE not in candidate.breakdown["math"]
    assert candidate.final == 0.0 and candidate.diagnostics["math"]["extracted"] == 0.0


def test_math_notes_stay_per_candidate_and_out_of_the_metrics(math_reward: Any):
    # Candidates of one group read different answers; one reads none. Notes never become metrics.
    rollouts = [
        {"trajectory_id": f"t{n}", "completion": text, "reference": "\\sqrt{4}"}
        for n, text in enumerate(("\\boxed{2}", "no answer here", "\\boxed{3}", "\\boxed{\\sqrt{4}}"))
    ]
    with rewardkit.load({"rl": {"group_size": 4, "reward": MATH}}) as reward:
        batch = reward.score([("g", rollouts)])
    candidates = [candidate for _, candidate in batch.candidates()]
    assert [c.breakdown["math"].get(NOTE) for c in candidates] == ["2", None, "3", "\\sqrt{4}"]
    assert [c.final for c in candidates] == [1.0, 0.0, 0.0, 1.0]
    assert not any(NOTE in name for name in batch.metrics)
    assert all(isinstance(value, float) for c in candidates for value in c.diagnostics["math"].values())


@pytest.mark.parametrize(
    ("reference", "completion", "shown", "final"),
    [
        ("B", "The answer is (B).", "B", 1.0),
        ("A", "\\boxed{\\text{(E)}}", "E", 0.0),  # rejected: still shown
        ("C", "<answer>c</answer>", "C", 1.0),
        ("B", "Answer: C. Checking again, the answer is B.", "B", 1.0),
        # nothing extracted: no note
        ("B", "The answer is (B) or (C).", None, 0.0),  # a hedge states no answer
        ("A", "A train leaves at noon.", None, 0.0),
    ],
)
def test_multiple_choice_shows_the_letter_it_read(
    reference: str, completion: str, shown: str | None, final: float
):
    reward = rewardkit.load({"rl": {"group_size": 1, "reward": {"provider": "multiple-choice"}}})
    candidate = one(reward, reference, completion)
    assert candidate.breakdown["multiple-choice"].get(NOTE) == shown
    assert candidate.final == final
    assert candidate.diagnostics["multiple-choice"] == {"extracted": float(shown is not None)}


def score_cli(config: Path, out: Path) -> list[dict[str, Any]]:
    """``rewardkit score CONFIG --out OUT`` as a program; returns the lines it wrote."""
    completed = subprocess.run(
        [sys.executable, "-m", "rewardkit.cli", "score", str(config), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(
    ("reward", "rows", "shown"),
    [
        (
            "provider: math, params: {workers: 1}",
            [
                {"reference": "\\frac{\\sqrt{2}}{2}", "completion": "So $\\boxed{\\dfrac{1}{\\sqrt{2}}}$."},
                {"reference": "\\frac{\\sqrt{2}}{2}", "completion": "So $\\boxed{2}$."},
                {"reference": "\\frac{\\sqrt{2}}{2}", "completion": "I give up."},
            ],
            ["\\dfrac{1}{\\sqrt{2}}", "2", None],
        ),
        (
            "provider: multiple-choice",
            [
                {"reference": "D", "completion": "After checking, the correct option is D"},
                {"reference": "D", "completion": "\\boxed{A}"},
                {"reference": "D", "completion": "Answer: B, C"},
            ],
            ["D", "A", None],
        ),
    ],
)
def test_rewardkit_score_lines_carry_the_extracted_answer(
    tmp_path: Path, reward: str, rows: list[dict[str, Any]], shown: list[str | None]
):
    (tmp_path / "rollouts.jsonl").write_text(
        "".join(json.dumps({"group_id": "g", **row}) + "\n" for row in rows), encoding="utf-8"
    )
    config = tmp_path / "config.yaml"
    data = "{rollouts_path: rollouts.jsonl}"
    text = f"rl:\n  group_size: {len(rows)}\n  data: {data}\n  reward: {{{reward}}}\n"
    config.write_text(text, encoding="utf-8")
    lines = score_cli(config, tmp_path / "results.jsonl")
    component = reward.split(",")[0].removeprefix("provider: ")
    assert [line["breakdown"][component].get(NOTE) for line in lines] == shown
    assert [line["final"] for line in lines] == [1.0, 0.0, 0.0]
    assert [line["diagnostics"][component]["extracted"] for line in lines] == [1.0, 1.0, 0.0]
    assert [line["completion"] for line in lines] == [row["completion"] for row in rows]


def test_math_shows_the_answer_of_a_group_skipped_for_its_reference(math_reward: Any):
    # A reference stating a false equation skips the group; the answer read is still shown.
    candidate = one(math_reward, "\\log_6(216)=4", "so \\boxed{\\log_6(216)=4}")
    assert candidate.breakdown["math"]["status"] == "skipped"
    assert candidate.breakdown["math"][NOTE] == "\\log_6(216)=4"
