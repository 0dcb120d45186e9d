"""The built-in exact-answer rewards: gsm8k, arithmetic, countdown (core only, no math-verify)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from rewardkit import PreflightError, RewardContractError, resolve_catalog
from rewardkit.builtin.answers import find_answer, gsm8k_gold, score_arithmetic, score_gsm8k
from rewardkit.builtin.countdown import judge_countdown, score_countdown
from rewardkit.builtin.expressions import ExpressionError, evaluate
from rewardkit.contracts import RewardCandidate, RewardContext


def shared_data() -> Path:
    root = os.environ.get("REWARDKIT_SHARED_DATA")
    path = Path(root) if root else Path(__file__).resolve().parents[1] / "testdata" / "shared"
    if not path.is_dir():
        pytest.fail(f"shared data not found at {path}; set REWARDKIT_SHARED_DATA")
    return path


def gsm8k(completion: str, reference: object = "18", **params: object) -> float:
    result = score_gsm8k(RewardCandidate("t", completion), RewardContext(reference=reference), **params)
    assert result.status == "scored", result
    return result.terms["task"]


@pytest.mark.parametrize(
    "completion",
    [
        "She makes 9 * 2 = $18\nA: 18",
        "so the total is 18.\n#### 18",
        "Therefore the answer is $\\boxed{18}$.",
        "The answer is 18 dollars.",
        "The final answer is: **$18.00**",
        "Answer: $18",
        "**Final Answer:** 18",
        "<answer>18</answer>",
        "18",
        "\\boxed{\\$18}",
    ],
)
def test_gsm8k_accepts_common_answer_forms(completion: str) -> None:
    assert gsm8k(completion) == 1.0


@pytest.mark.parametrize(
    "completion",
    [
        "#### 18 or 19",
        "#### 18 (or 19)",
        "#### 18 \\pm 1",
        "#### 18 + 1",
        "#### 18/1 + 1",
        "#### 18-19",
        "#### 18e5",
        "#### 18^{10^{10}}",
        "#### 18!!",
        "#### 18,5",
        "#### 18:30",
        "#### \\phantom{18}19",
        "#### \\text{18}19",
        "\\boxed{18 \\text{ or } 19}",
        "The answer is 18 or 19.",
        "Answer: 18, 19, 20",
        "####\n\nThough I got 18 along the way, I am not sure.",
    ],
)
def test_a_final_answer_that_hedges_lists_or_computes_states_no_answer(completion: str) -> None:
    """Revision 1 read the first number of the final span, so the right number first paid
    (``rewardkit audit`` found these); each of these states no single number."""
    assert gsm8k(completion) == 0.0
    arithmetic = score_arithmetic(RewardCandidate("t", completion), RewardContext(reference="18"))
    assert arithmetic.terms["task"] == 0.0


def test_gsm8k_and_arithmetic_are_at_revision_3() -> None:
    catalog = resolve_catalog()
    assert catalog.entry("gsm8k").spec.revision == catalog.entry("arithmetic").spec.revision == "3"
    assert catalog.entry("countdown").spec.revision == "2"


def test_gsm8k_reads_thousands_separators_and_latex_groups() -> None:
    assert gsm8k("A: 90,000", "#### 90000") == 1.0
    assert gsm8k("\\boxed{1{,}450{,}000}", "1,450,000") == 1.0
    assert gsm8k("A: 90,000", "#### 70000") == 0.0


def test_gsm8k_prefers_the_stated_answer_over_later_numbers() -> None:
    # "####" outranks the A: line; the stated answer outranks numbers after it.
    assert gsm8k("#### 18\nA: 20") == 1.0
    assert gsm8k("The answer is 18. I used 3 steps and 4 eggs.") == 1.0
    assert gsm8k("A: 5 + 13 = 18") == 1.0


def test_gsm8k_without_a_stated_answer_scores_zero_unless_fallback_is_asked_for() -> None:
    text = "She sells 9 eggs for 2 dollars each, 9 * 2 = 18"
    result = score_gsm8k(RewardCandidate("t", text), RewardContext(reference="18"))
    assert result.terms["task"] == 0.0
    assert [(d.name, d.value) for d in result.diagnostics] == [("extracted", 0.0)]
    assert gsm8k(text, fallback_last_number=True) == 1.0


def test_gsm8k_decimals_compare_exactly() -> None:
    assert gsm8k("A: 10.5", "#### 10.50") == 1.0
    assert gsm8k("A: 10.833333333333332", "#### 10.833333333333333") == 0.0
    assert gsm8k("A: -3", "-3") == 1.0


@pytest.mark.parametrize(
    ("reference", "gold"),
    [("Janet sells 9 eggs.\n#### 1,800", 1800), ("A: 64", 64), (" 7 ", 7), (12, 12), (2.5, 2.5)],
)
def test_gsm8k_gold_forms(reference: object, gold: float) -> None:
    assert gsm8k_gold(reference) == gold


def test_gsm8k_bad_references() -> None:
    skipped = score_gsm8k(RewardCandidate("t", "A: 1"), RewardContext(reference="no number here"))
    assert skipped.status == "skipped" and "no number" in (skipped.reason or "")
    with pytest.raises(RewardContractError, match="number or a string reference, got tuple"):
        score_gsm8k(RewardCandidate("t", "A: 1"), RewardContext(reference=(1, 2)))
    with pytest.raises(RewardContractError, match="not finite"):
        score_gsm8k(RewardCandidate("t", "A: 1"), RewardContext(reference=float("nan")))
    with pytest.raises(RewardContractError, match="got bool"):
        score_gsm8k(RewardCandidate("t", "A: 1"), RewardContext(reference=True))


def test_arithmetic_reference_may_be_an_expression() -> None:
    def score(completion: str, reference: object) -> float:
        return score_arithmetic(RewardCandidate("t", completion), RewardContext(reference=reference)).terms[
            "task"
        ]

    assert score("The answer is 27", "3*(4+5)") == 1.0
    assert score("\\boxed{\\frac{3}{4}}", "3/4") == 1.0
    assert score("0.75", "6/8") == 1.0
    assert score("A: 1/3", "0.333") == 0.0
    assert score("-4", "-(2+2)") == 1.0
    skipped = score_arithmetic(RewardCandidate("t", "1"), RewardContext(reference="2 +"))
    assert skipped.status == "skipped"


def test_expression_evaluator_is_exact_and_bounded() -> None:
    assert evaluate("6*34/11-1").value == pytest.approx(193 / 11)
    assert str(evaluate("6*34/11-1").value) == "193/11"
    assert evaluate("(1+2)*3").literals == (1, 2, 3)
    with pytest.raises(ExpressionError, match="never closed"):
        evaluate("(1+2")
    with pytest.raises(ExpressionError, match="nested deeper"):
        evaluate("(" * 100 + "1" + ")" * 100)
    with pytest.raises(ExpressionError, match="cap"):
        evaluate("1+" * 5000 + "1")
    with pytest.raises(ExpressionError, match="unexpected character"):
        evaluate("__import__('os')")
    with pytest.raises(ZeroDivisionError):
        evaluate("1/(2-2)")


COUNTDOWN = {"numbers": [79, 17, 60], "target": 36}
EVAL_DIR = "countdown_post_train/post_train/data/eval"


def countdown(completion: str, policy: str, reference: object = COUNTDOWN) -> float:
    result = score_countdown(
        RewardCandidate("t", completion), RewardContext(reference=reference), policy=policy
    )
    return result.terms["task"]


@pytest.mark.parametrize(
    ("completion", "strict", "lenient"),
    [
        ("<answer>79 - 60 + 17</answer>", True, True),
        ("<answer>(79 - 60) + 17</answer>", True, True),
        ("<answer>79 − 60 + 17</answer>", False, True),
        ("<answer>79 - 60 + 17 = 36</answer>", False, True),
        ("<answer>79 - 60 + 17 = 35</answer>", False, False),
        ("<answer>79 - 60 = 19, 19 + 17 = 36</answer>", False, False),
        ("<answer>79 - 60</answer>", False, False),  # 17 unused
        ("<answer>79 - 60 + 17 + 0</answer>", False, False),  # 0 is not given
        ("<answer>-17 + 79 - 60 + 34</answer>", False, False),
        ("<answer>1</answer> then <answer>79 - 60 + 17</answer>", True, True),
        ("<answer>79 - 60 + 17</answer> <answer>oops</answer>", False, False),
        ("79 - 60 + 17", False, False),
        ("<answer>79 - 60 + 17", False, False),
    ],
)
def test_countdown_policies(completion: str, strict: bool, lenient: bool) -> None:
    for policy, expected in (("strict", strict), ("lenient", lenient)):
        result = score_countdown(
            RewardCandidate("t", completion), RewardContext(reference=COUNTDOWN), policy=policy
        )
        assert result.terms["task"] == float(expected), (policy, completion)


def test_countdown_reasoning_gym_cases() -> None:
    """The scoring cases of reasoning-gym's countdown tests, as data (none may score 1)."""
    rows = [json.loads(line) for line in (shared_data() / "reasoning-gym/test_countdown_cases.jsonl").open()]
    assert len(rows) == 7
    for row in rows:
        if row["numbers"] is None:
            completion = "" if row["answer"] is None else f"<answer>{row['answer']}</answer>"
            correct, _ = judge_countdown(completion, [1, 2], 3, "strict")
        else:
            completion = f"<answer>{row['answer']}</answer>"
            correct, _ = judge_countdown(completion, row["numbers"], row["target"], "strict")
        assert correct is row["expected_correct"], row["why"]


def test_countdown_bad_reference_names_the_key() -> None:
    candidate = RewardCandidate("t", "<answer>1</answer>")
    with pytest.raises(RewardContractError, match="'target' must be an integer"):
        score_countdown(candidate, RewardContext(reference={"numbers": [1], "target": "1"}))
    with pytest.raises(RewardContractError, match=r"numbers\[1\] must be an integer"):
        score_countdown(candidate, RewardContext(reference={"numbers": [1, 2.5], "target": 1}))
    with pytest.raises(RewardContractError, match="reference mapping"):
        score_countdown(candidate, RewardContext(reference="1 2 3"))
    # TinyZero rows call the numbers "nums".
    ok = score_countdown(
        RewardCandidate("t", "<answer>2*3</answer>"), RewardContext(reference={"nums": [3, 2], "target": 6})
    )
    assert ok.terms["task"] == 1.0


JUNK = {
    "empty": "",
    "binary": "\x00\x01\xff\ufffd binary \x7f",
    "unclosed-boxes": "\\boxed{" * 50_000,
    "answer-tags": "<answer>" * 100_000,
    "huge-number": "A: " + "9" * 200_000,
    "one-megabyte": "x" * 1_000_000,
    "many-numbers": "1 " * 300_000,
    "unbalanced-braces": "}{" * 100_000 + "\\boxed{18",
}


@pytest.mark.parametrize("completion", list(JUNK.values()), ids=list(JUNK))
def test_junk_completions_get_a_defined_verdict(completion: str) -> None:
    assert gsm8k(completion) in (0.0, 1.0)
    assert (
        score_arithmetic(RewardCandidate("t", completion), RewardContext(reference="18")).status == "scored"
    )
    for policy in ("strict", "lenient"):
        result = score_countdown(
            RewardCandidate("t", completion), RewardContext(reference=COUNTDOWN), policy=policy
        )
        assert result.terms["task"] == 0.0


def test_find_answer_ignores_unbalanced_last_box() -> None:
    found = find_answer("\\boxed{12} and later \\boxed{13")
    assert found is not None and (found.form, found.span) == ("boxed", "12")


def test_providers_resolve_through_the_catalog_and_check_params_in_preflight() -> None:
    catalog = resolve_catalog()
    for name in ("gsm8k", "arithmetic", "countdown", "exact-match", "nonempty", "constant"):
        assert name in catalog
    bound = catalog.bind("countdown", {"policy": "lenient"})
    problem = {"numbers": [79, 60, 60, 43], "target": 36}
    result = bound.score_group(
        "g1",
        [
            {
                "trajectory_id": "a",
                "completion": "<answer>79 × 60 ÷ 60 - 43 = 36</answer>",
                "reference": problem,
            },
            {
                "trajectory_id": "b",
                "completion": "nothing",
                "reference": problem,
            },
        ],
    )
    assert [item.result.terms["task"] for item in result.items] == [1.0, 0.0]
    with pytest.raises(PreflightError, match="policy must be one of"):
        catalog.bind("countdown", {"policy": "lax"})
    with pytest.raises(PreflightError, match="fallback_last_numbr"):
        catalog.bind("gsm8k", {"fallback_last_numbr": True})
    with pytest.raises(RewardContractError, match="needs 'reference' but this candidate has none"):
        catalog.bind("gsm8k").score_group("g2", [{"trajectory_id": "a", "completion": "A: 1"}])


def test_gsm8k_agrees_with_every_label_of_the_example_solutions() -> None:
    """2,640 GPT-3 solutions; the label is an exact match of the final number."""
    path = shared_data() / "grade-school-math/grade_school_math/data/example_model_solutions.jsonl"
    disagreements = []
    total = 0
    for line in path.open():
        row = json.loads(line)
        for key, value in row.items():
            if isinstance(value, dict):
                total += 1
                score = gsm8k(value["solution"], row["ground_truth"])
                if score != float(value["is_correct"]):
                    disagreements.append((key, value["solution"][-80:]))
    assert total == 2640
    assert disagreements == []


def test_countdown_strict_agrees_with_the_strict_labels() -> None:
    pattern = re.compile(r"numbers \[([\d, ]+)\], create an equation that equals (\d+)")
    rows = []
    for path in sorted(
        (shared_data() / "countdown_post_train/post_train/data/eval").glob("*/eval_samples.jsonl")
    ):
        rows.extend(json.loads(line) for line in path.open())
    assert len(rows) == 1750
    disagreements = []
    for row in rows:
        match = pattern.search(row["prompt"])
        assert match is not None, row["id"]
        numbers = [int(part) for part in match.group(1).split(",")]
        correct, _ = judge_countdown(row["raw_generation"], numbers, int(match.group(2)), "strict")
        if correct is not row["correct"]:
            disagreements.append(row["id"])
    assert disagreements == []
