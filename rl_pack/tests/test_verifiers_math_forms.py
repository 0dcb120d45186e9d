"""The ``math`` verifier on answer forms: relations, systems, matrices, multisets, intervals,
piecewise functions and approximations (issue 20), percents and units, the compound college-level
forms of issue 28 (chained equalities, ``=``-chain systems, piecewise arrays, ``relation :
interval``, approximate unions, vector solutions with free constants, ``\\neq`` exclusions), and
the labelled dev set built from them."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rewardkit.contracts import RewardCandidate, RewardContext, RewardGroupRequest, RewardProviderResult
from rewardkit_rl.verifiers.math_forms import compare, reference_problem
from rewardkit_rl.verifiers.math_verifier import MathVerifier

ROOT = Path(__file__).resolve().parents[2]
DEVSET = ROOT / "testdata" / "math_forms" / "devset.jsonl"
FAMILIES = (
    "relations",
    "equation answers",
    "systems",
    "matrices",
    "multisets",
    "intervals",
    "piecewise",
    "approximations",
    "chained equalities",
    "equation chain systems",
    "piecewise arrays",
    "relation : interval",
    "approximate unions",
    "vector solutions",
    "exclusions",
)


@pytest.fixture(scope="module")
def verifier() -> Iterator[MathVerifier]:
    provider = MathVerifier(timeout_s=5.0, workers=2)
    yield provider
    provider.close()


def request(reference: str, *answers: str, group: str = "g") -> RewardGroupRequest:
    candidates = tuple(
        RewardCandidate(f"c{i}", f"The answer is \\boxed{{{a}}}.") for i, a in enumerate(answers)
    )
    return RewardGroupRequest(group, candidates, RewardContext(reference=reference))


def score(verifier: MathVerifier, reference: str, *answers: str) -> list[RewardProviderResult]:
    return [item.result for item in verifier.evaluate(request(reference, *answers)).items]


def passed(result: RewardProviderResult) -> bool:
    return result.status == "scored" and result.terms["task"] == 1.0


# -- the examples of the issue -----------------------------------------------------------------

ISSUE_EXAMPLES = [
    ("\\log_{6}(216)=3", "\\log_{6}(216)=4"),
    ("x^{2}-2x+10=0", "x^{2}-2x+10=7"),
    ("\\cos(\\pi)=-1, \\sin(\\pi)=0", "\\cos(\\pi)=-1, \\sin(\\pi)=7"),
    ("1,1,2,3", "2,1,2,3"),
    (
        "\\mathbf{y}=\\left[\\begin{array}{r}-1\\\\1\\\\0\\end{array}\\right]",
        "\\mathbf{y}=\\left[\\begin{array}{r}-2\\\\1\\\\0\\end{array}\\right]",
    ),
    ("\\cos(e)\\approx-0.912", "\\cos(e)\\approx-7.912"),
]


@pytest.mark.parametrize(("gold", "wrong"), ISSUE_EXAMPLES)
def test_issue_examples_reject_the_wrong_answer(verifier: MathVerifier, gold: str, wrong: str) -> None:
    right, with_dfrac, changed = score(verifier, gold, gold, gold.replace("\\frac", "\\dfrac"), wrong)
    assert passed(right) and passed(with_dfrac)
    assert changed.status == "scored" and changed.terms["task"] == 0.0


def test_math_verify_accepts_the_issue_examples() -> None:
    """The baseline the issue measured: math-verify 0.9 passes these wrong answers (so the checks
    above, and the dev-set test below, can fail)."""
    from math_verify import parse, verify

    accepted = [verify(parse(f"${gold}$"), parse(f"${wrong}$")) for gold, wrong in ISSUE_EXAMPLES]
    assert sum(accepted) >= 4


# -- each form, in-process (the comparison the workers run) -----------------------------------

FORM_CASES = [
    # relations
    ("\\log_{6}(216)=3", "3", True),
    ("\\log_{6}(216)=3", "3 = \\log_6 216", True),
    ("x^{2}-2x+10=0", "2x^2-4x+20=0", True),
    ("x^{2}-2x+10=0", "x^2-2x+10", False),
    ("2x+3y<6", "6 > 2x + 3y", True),
    ("2x+3y<6", "-2x-3y<-6", False),
    ("2x+3y<6", "2x+3y\\le 6", False),
    ("5!=120", "120", True),
    ("5!=120", "5!=24", False),
    # equation answers
    ("x=5", "5", True),
    ("x=5", "2x=10", True),
    ("x=5", "y=5", False),
    ("y=2x+3", "2x - y + 3 = 0", True),
    ("f(x)=x^{2}+1", "g(x)=x^2+1", False),
    ("f'(x)=6x-5", "f(x)=6x-5", False),
    ("AB=4", "4", True),
    ("AB=4", "CD=4", False),
    # systems
    ("x=1, y=2", "y=2, x=1", True),
    ("x=1, y=2", "1, 2", True),
    ("x=1, y=2", "2, 1", False),
    ("x=1, x=-3", "-3, 1", True),
    ("x=1, y=2", "x = 1", False),
    # matrices
    ("\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}", "\\begin{bmatrix}1&2\\\\3&4\\end{bmatrix}", True),
    (
        "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
        "\\begin{pmatrix} 1 & 3 \\\\ 2 & 4 \\end{pmatrix}",
        False,
    ),
    ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\begin{pmatrix} 1 & 2 \\end{pmatrix}", False),
    # multisets, sets, tuples
    ("1,1,2,3", "3,1,2,1", True),
    ("1,1,2,3", "1,2,3", False),
    ("\\{1,2,3\\}", "\\{3,2,2,1\\}", True),
    ("(1,2,3)", "(3,2,1)", False),
    ("(1,2)", "(1,2)", True),
    ("(1,2)", "1<x<2", False),
    ("(1,2)", "1, 2", False),
    # intervals
    ("[0,\\infty)", "x \\ge 0", True),
    ("[0,\\infty)", "(0,\\infty)", False),
    ("x<3", "(-\\infty, 3)", True),
    ("(-\\infty,-8)\\cup(8,\\infty)", "x<-8 \\text{ or } x>8", True),
    ("(-\\infty,-8)\\cup(8,\\infty)", "(-\\infty,-8]\\cup[8,\\infty)", False),
    # piecewise
    (
        "\\begin{cases} x^2 & x<0 \\\\ 2x & x \\ge 0 \\end{cases}",
        "\\begin{cases} 2x & x \\geq 0 \\\\ x^2 & \\text{otherwise} \\end{cases}",
        True,
    ),
    (
        "\\begin{cases} x^2 & x<0 \\\\ 2x & x \\ge 0 \\end{cases}",
        "\\begin{cases} x^2 & x \\le 0 \\\\ 2x & x > 0 \\end{cases}",
        False,
    ),
    # approximations
    ("\\cos(e)\\approx-0.912", "-0.9117", True),
    ("\\cos(e)\\approx-0.912", "\\cos(e)", True),
    ("\\cos(e)\\approx-0.912", "-0.91", False),
    ("\\cos(e)\\approx-0.912", "\\cos(2)\\approx-0.912", False),
    ("x\\approx 1.414", "\\sqrt{2}", True),
    ("x\\approx 1.414", "1.4149", False),
    ("0.33 \\text{ (to two significant figures)}", "0.34", False),
    # guards on math-verify's leaf comparison
    ("\\frac{1}{2004!}", "\\frac{1}{1004!}", False),
    ("1101_4", "1101_3", False),
    ("45 \\text{ units}^2", "45 \\text{ units}^0", False),
    ("14", "5 + 9t", False),
    ("\\frac{1}{3}", "0.333333", True),
    # a percent answer is that number, never one 100 times smaller or larger (unless the reference
    # is itself a percent); \text{} comes off only when it holds a unit
    ("50", "50\\%", True),
    ("0.5", "50\\%", False),
    ("5000", "50\\%", False),
    ("50\\%", "0.5", True),
    ("50\\%", "50", True),
    ("50\\%", "5000\\%", False),
    ("3", "3\\text{ or 4}", False),
    ("3", "3\\text{ (or maybe 4)}", False),
    ("3", "3\\text{ cm}", True),
    ("3", "3\\text{ square units}", True),
]


@pytest.mark.parametrize(("gold", "answer", "expected"), FORM_CASES)
def test_forms(gold: str, answer: str, expected: bool) -> None:
    assert reference_problem(gold) is None
    assert compare(gold, answer).equal is expected


@pytest.mark.parametrize(
    ("gold", "reason"),
    [
        ("\\log_6(216)=4", "false equation"),
        ("\\cos(e)\\approx-7.912", "off by more than its last digit"),
        ("\\begin{vmatrix} 1 & 2 \\\\ 3 & 4 \\end{vmatrix}", "not supported"),
        ("1, 2, \\dots", "not supported"),
        ("x \\equiv 3 \\pmod{7}", "not supported"),
    ],
)
def test_unusable_references_skip_the_group(verifier: MathVerifier, gold: str, reason: str) -> None:
    results = score(verifier, gold, "4", "x")
    assert [result.status for result in results] == ["skipped", "skipped"]
    assert reason in (results[0].reason or "")


def test_percent_and_text_through_the_provider(verifier: MathVerifier) -> None:
    """One answer may not cover two values 100 apart, nor slip a second answer in as a "unit"."""
    by_reference = {
        "50": ("50\\%", "50\\text{ or 60}"),
        "0.5": ("50\\%", "\\frac{1}{2}"),
        "50\\%": ("0.5", "50"),
        "3": ("3\\text{ or 4}", "3\\text{ (or maybe 4)}", "3\\text{ cm}"),
    }
    expected = {"50": [1.0, 0.0], "0.5": [0.0, 1.0], "50\\%": [1.0, 1.0], "3": [0.0, 0.0, 1.0]}
    groups = verifier.evaluate_many(
        [request(gold, *answers, group=gold) for gold, answers in by_reference.items()]
    )
    for gold, group in zip(by_reference, groups):
        assert [item.result.terms["task"] for item in group.items] == expected[gold], gold


def test_an_unreadable_answer_scores_zero_with_the_reason(verifier: MathVerifier) -> None:
    unreadable, unparsed, wrong_form = score(verifier, "x=1, y=2", "x = 1, \\dots", "1 +* 2", "(1, 2)")
    for result in (unreadable, unparsed):
        assert result.status == "scored" and result.terms["task"] == 0.0
        assert result.reason and "could not be" in result.reason
        assert {d.name: d.value for d in result.diagnostics}["unparsed"] == 1.0
    assert wrong_form.terms["task"] == 0.0
    assert {d.name: d.value for d in wrong_form.diagnostics}["unparsed"] == 0.0


# -- the labelled dev set ------------------------------------------------------------------------


def load_devset() -> list[dict[str, Any]]:
    return [json.loads(line) for line in DEVSET.read_text().splitlines() if line.strip()]


def errors(rows: list[dict[str, Any]], verdicts: list[bool]) -> tuple[list[dict], list[dict]]:
    """(false positives, misses among identities and rewrites)."""
    false_positives = [row for row, verdict in zip(rows, verdicts) if verdict and not row["label"]]
    misses = [row for row, verdict in zip(rows, verdicts) if row["label"] and not verdict]
    return false_positives, misses


def test_devset_is_what_the_generator_builds() -> None:
    script = ROOT / "benchmarks" / "verifier_forms_devset.py"
    completed = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    rows = load_devset()
    references = Counter(row["family"] for row in rows if row["kind"] == "identity")
    assert references["MATH"] == 5000
    assert all(references[family] >= 50 for family in FAMILIES), references
    assert references["percents and units"] >= 16, references


def test_devset_no_false_positive_and_recall(verifier: MathVerifier) -> None:
    rows = load_devset()
    requests = [request(row["gold"], row["answer"], group=str(row["id"])) for row in rows]
    verdicts = [passed(group.items[0].result) for group in verifier.evaluate_many(requests)]
    false_positives, misses = errors(rows, verdicts)
    assert false_positives == []
    assert [row for row in misses if row["kind"] == "identity"] == []  # every reference is usable
    positives = sum(row["label"] for row in rows)
    assert 1 - len(misses) / positives >= 0.995, misses[:20]
    rewrites = [row for row in rows if row["kind"] == "rewrite"]
    missed_rewrites = [row for row in misses if row["kind"] == "rewrite"]
    assert 1 - len(missed_rewrites) / len(rewrites) >= 0.995, missed_rewrites[:20]


# -- compound college-level references (issue 28) ------------------------------------------------

VECTOR = (
    "\\mathbf{y}=c_{1}\\left[\\begin{array}{r}-1 \\\\ 1 \\\\ 1\\end{array}\\right] e^{t}"
    "+c_{2}\\left[\\begin{array}{r}1 \\\\ 0 \\\\ 1\\end{array}\\right] e^{2t}"
)
PIECEWISE_ARRAY = (
    "f(x)=\\left\\{\\begin{array}{rll} x^2 & \\text{if} & x<0 \\\\ 2x & \\text{if} & x \\geq 0"
    " \\end{array}\\right."
)
APPROXIMATE_UNION = "\\approx(-\\infty,-12.1414) \\cup(12.1414, \\infty)"

# The references the issue quotes, each answered verbatim (spelled as the reference).
ISSUE_28_REFERENCES = [
    "\\bar{x}=\\bar{y}=1/5",
    "\\bar{x}=\\bar{y}=28 /(9 \\pi)",
    "x=y=4, z=2",
    PIECEWISE_ARRAY,
    "-1<x \\leqslant 1:(-1,1]",
    "x<-7:(-\\infty,-7)",
    APPROXIMATE_UNION,
    VECTOR,
    "x \\neq -1,4",
]


@pytest.mark.parametrize("gold", ISSUE_28_REFERENCES)
def test_issue_28_references_are_read_and_answered_verbatim(verifier: MathVerifier, gold: str) -> None:
    assert reference_problem(gold) is None
    verbatim, with_dfrac = score(verifier, gold, gold, gold.replace("\\frac", "\\dfrac"))
    assert passed(verbatim) and passed(with_dfrac)


COMPOUND_CASES = [
    # chained equalities: every link holds, every name is stated
    ("\\bar{x}=\\bar{y}=1/5", "\\bar{x}=\\bar{y}=\\frac{1}{5}", True),
    ("\\bar{x}=\\bar{y}=1/5", "\\bar{y}=0.2, \\bar{x}=0.2", True),
    ("\\bar{x}=\\bar{y}=1/5", "\\bar{x}=\\bar{y}=\\frac{2}{10}=\\frac15", True),
    ("\\bar{x}=\\bar{y}=1/5", "\\bar{x}=\\bar{y}=\\frac{1}{4}=\\frac15", False),  # a false link
    ("\\bar{x}=\\bar{y}=1/5", "\\bar{x}=\\frac{1}{4}=\\bar{y}=\\frac15", False),
    ("\\bar{x}=\\bar{y}=1/5", "\\frac15", False),  # one value for two names
    ("\\bar{x}=\\bar{y}=1/5", "\\bar{x}=\\frac15, \\bar{y}=\\frac14", False),
    ("\\bar{x}=\\bar{y}=1/5", "\\bar{x}=\\bar{z}=1/5", False),
    ("\\bar{x}=\\bar{y}=28 /(9 \\pi)", "\\bar{x}=\\bar{y}=\\frac{28}{9\\pi}", True),
    ("\\bar{x}=\\bar{y}=28 /(9 \\pi)", "\\bar{x}=\\bar{y}=\\frac{28}{9}", False),
    # systems as = chains and commas
    ("x=y=4, z=2", "x=4, y=4, z=2", True),
    ("x=y=4, z=2", "z=2, y=x=4", True),
    ("x=y=4, z=2", "4, 4, 2", True),
    ("x=y=4, z=2", "\\left\\{\\begin{array}{l} x=4 \\\\ y=4 \\\\ z=2 \\end{array}\\right.", True),
    ("x=y=4, z=2", "x=y=4, z=3", False),  # the forgery of the issue
    ("x=y=4, z=2", "x=y=z=4", False),
    ("x=y=4, z=2", "x=y=4", False),
    ("x=y=4, z=2", "x=y=4, z=2, w=1", False),
    ("x=y=4, z=2", "2, 4, 4", False),
    ("x=y=4, z=2", "x=y=4 \\text{ or } z=2", False),
    # piecewise written as a brace over an array
    (PIECEWISE_ARRAY, "f(x)=\\begin{cases} x^2 & x<0 \\\\ 2x & x\\ge 0\\end{cases}", True),
    (PIECEWISE_ARRAY, "\\begin{cases} 2x & x\\ge 0 \\\\ x^2 & \\text{otherwise}\\end{cases}", True),
    (
        PIECEWISE_ARRAY,
        "\\left\\{\\begin{array}{ll} x^2, & x<0 \\\\ 2x, & x \\geq 0 \\end{array}\\right.",
        True,
    ),
    (PIECEWISE_ARRAY, PIECEWISE_ARRAY.replace("x<0", "x\\le 0").replace("x \\geq 0", "x>0"), False),
    (PIECEWISE_ARRAY, PIECEWISE_ARRAY.replace("x^2", "x^3"), False),
    (PIECEWISE_ARRAY, "f(x)=\\left\\{\\begin{array}{rll} x^2 & \\text{if} & x<0 \\end{array}\\right.", False),
    # relation : interval, either form; an answer stating both must have both right
    ("-1<x \\leqslant 1:(-1,1]", "(-1,1]", True),
    ("-1<x \\leqslant 1:(-1,1]", "-1<x\\le 1", True),
    ("-1<x \\leqslant 1:(-1,1]", "x \\in (-1, 1]", True),
    ("-1<x \\leqslant 1:(-1,1]", "1 \\ge x > -1 : \\left(-1,1\\right]", True),
    ("-1<x \\leqslant 1:(-1,1]", "-1<x\\le 1 : (-1,2]", False),
    ("-1<x \\leqslant 1:(-1,1]", "-1<x\\le 2 : (-1,1]", False),
    ("-1<x \\leqslant 1:(-1,1]", "(-1,1)", False),
    ("-1<x \\leqslant 1:(-1,1]", "-1<y\\le 1", False),
    ("x<-7:(-\\infty,-7)", "(-\\infty,-7)", True),
    ("x<-7:(-\\infty,-7)", "-7>x", True),
    ("x<-7:(-\\infty,-7)", "x\\le -7", False),
    ("x<-7:(-\\infty,-7)", "x<-7:(-\\infty,-8)", False),
    # approximate unions: the reference's precision, open and closed ends, every piece
    (APPROXIMATE_UNION, "(-\\infty,-12.1414)\\cup(12.1414,\\infty)", True),
    (APPROXIMATE_UNION, "\\approx(-\\infty,-12.14142)\\cup(12.14142,\\infty)", True),
    (APPROXIMATE_UNION, "x<-12.1414 \\text{ or } x>12.1414", True),
    (APPROXIMATE_UNION, "(-\\infty,-\\sqrt{147.414})\\cup(\\sqrt{147.414},\\infty)", True),
    (APPROXIMATE_UNION, "(-\\infty,-12.14)\\cup(12.14,\\infty)", False),  # less precise
    (APPROXIMATE_UNION, "(-\\infty,-12.1415)\\cup(12.1414,\\infty)", False),
    (APPROXIMATE_UNION, "(-\\infty,-12.1414]\\cup[12.1414,\\infty)", False),
    (APPROXIMATE_UNION, "(-12.1414,12.1414)", False),
    (APPROXIMATE_UNION, "(-\\infty,-12.1414)", False),
    # vector solutions: constants renamed or reordered, eigenvectors rescaled, or one vector
    (VECTOR, VECTOR.replace("c_{1}", "C_{9}"), True),
    (
        VECTOR,
        "\\mathbf{y}=c_{2}\\begin{bmatrix}1\\\\0\\\\1\\end{bmatrix}e^{2t}+c_{1}\\begin{bmatrix}-1\\\\1\\\\1\\end{bmatrix}e^{t}",
        True,
    ),
    (
        VECTOR,
        "\\mathbf{y}=k_{1}\\begin{pmatrix}1\\\\-1\\\\-1\\end{pmatrix}e^{t}+k_{2}\\begin{pmatrix}2\\\\0\\\\2\\end{pmatrix}e^{2t}",
        True,
    ),
    (VECTOR, "\\begin{pmatrix}-c_1e^{t}+c_2e^{2t}\\\\c_1e^{t}\\\\c_1e^{t}+c_2e^{2t}\\end{pmatrix}", True),
    (VECTOR, VECTOR.replace("c_{2}", "c_{1}"), False),  # one constant: a smaller set
    (VECTOR, VECTOR.replace("e^{2t}", "e^{3t}"), False),
    (VECTOR, VECTOR.replace("1 \\\\ 0 \\\\ 1", "1 \\\\ 0 \\\\ 2"), False),
    (VECTOR, VECTOR.replace("c_{2}", "c_{1} c_{2}"), False),  # not linear in its constants
    (VECTOR, VECTOR + "+\\begin{bmatrix}1\\\\0\\\\0\\end{bmatrix}", False),
    (VECTOR, VECTOR.replace("c_{2}", "0 c_{2}"), False),
    (VECTOR, VECTOR.replace("e^{2t}", "t e^{2t}"), False),
    (VECTOR, VECTOR.replace("\\mathbf{y}", "\\mathbf{x}"), False),
    (VECTOR, "\\mathbf{y}=c_{1}\\begin{bmatrix}-1\\\\1\\\\1\\end{bmatrix}e^{t}", False),
    # without a variable, subscripted letters are given values: entry by entry
    (
        "\\begin{pmatrix} a_1+b_1 \\\\ a_2+b_2\\end{pmatrix}",
        "\\begin{pmatrix} 2a_1+b_1 \\\\ 2a_2+b_2\\end{pmatrix}",
        False,
    ),
    ("\\begin{pmatrix} c_1 \\\\ c_2\\end{pmatrix}", "\\begin{pmatrix} 2c_1 \\\\ c_2\\end{pmatrix}", False),
    # \\neq exclusions: every point, no other, joined by "and"
    ("x \\neq -1,4", "x \\ne 4, -1", True),
    ("x \\neq -1,4", "x \\ne -1 \\text{ and } x\\ne 4", True),
    ("x \\neq -1,4", "(-\\infty,-1)\\cup(-1,4)\\cup(4,\\infty)", True),
    ("x \\neq -1,4", "x \\ne -1", False),
    ("x \\neq -1,4", "x \\ne -1, 5", False),
    ("x \\neq -1,4", "x \\ne -1, 4, 5", False),
    ("x \\neq -1,4", "x \\ne -1 \\text{ or } x\\ne 4", False),  # every real number
    ("x \\neq -1,4", "y \\ne -1, 4", False),
    ("x \\neq -1,4", "x = -1, 4", False),
    ("x \\neq -1,4", "(-\\infty,-1)\\cup(4,\\infty)", False),
]


@pytest.mark.parametrize(("gold", "answer", "expected"), COMPOUND_CASES)
def test_compound_forms(gold: str, answer: str, expected: bool) -> None:
    assert reference_problem(gold) is None
    assert compare(gold, answer).equal is expected


@pytest.mark.parametrize(
    ("gold", "reason"),
    [
        ("-1<x \\leqslant 2:(-1,1]", "different sets"),  # the halves disagree: which one is meant?
        ("x=2+3=6", "links do not all hold"),
        ("x=y=2+3=6", "links do not all hold"),
        ("5<3", "false (or unevaluable) inequality"),
    ],
)
def test_unusable_compound_references_skip_even_a_verbatim_answer(
    verifier: MathVerifier, gold: str, reason: str
) -> None:
    results = score(verifier, gold, gold, "(-1,1]")
    assert [result.status for result in results] == ["skipped", "skipped"]
    assert reason in (results[0].reason or "")


def test_a_verbatim_answer_scores_only_once_the_reference_is_verified(verifier: MathVerifier) -> None:
    """An answer spelled as the reference is settled in the calling process, but the group is
    skipped when the reference turns out unusable (no group is half-scored); a usable one scores."""
    unusable, usable = verifier.evaluate_many(
        [
            request("1, 2, \\dots", "1, 2, \\dots", "1,2,\\dots", group="unusable"),
            request("\\frac{\\sqrt{3}}{2}", "\\frac{\\sqrt{3}}{2}", "\\dfrac{\\sqrt3}{2}", group="usable"),
        ]
    )
    assert [item.result.status for item in unusable.items] == ["skipped", "skipped"]
    assert [passed(item.result) for item in usable.items] == [True, True]


def test_a_box_holding_an_escaped_brace_is_read() -> None:
    """``\\boxed{\\left\\{ ... \\right.}`` has one ``\\{`` and no ``\\}``: its braces still balance."""
    from rewardkit_rl.verifiers.math_answers import all_boxes, extract_answer

    text = f"So \\boxed{{1}} is wrong; the answer is \\boxed{{{PIECEWISE_ARRAY}}}."
    assert all_boxes(text) == ["1", PIECEWISE_ARRAY]  # two boxes, each read whole
    assert extract_answer(f"The answer is \\boxed{{{PIECEWISE_ARRAY}}}.") == (PIECEWISE_ARRAY, "boxed")
    assert extract_answer("\\boxed{\\{1, 2\\}}") == ("\\{1, 2\\}", "boxed")


@pytest.mark.parametrize(
    ("reference", "plain"),
    [
        ("4a-2", True),
        ("12\\frac{3}{5}", True),
        ("7\\pi", True),
        ("\\frac{\\sqrt{3}}{2}", True),
        ("(1+2)(3-x)", True),
        ("\\frac{}{}", False),
        ("a^", False),
        ("1++2", False),
        ("1, 2", False),
        ("x=1", False),
        ("1, 2, \\dots", False),
        ("\\text{A}", False),
    ],
)
def test_plain_expressions_need_no_worker_to_be_known_usable(reference: str, plain: bool) -> None:
    """The calling process settles a verbatim answer to these; any other reference is checked."""
    from rewardkit_rl.verifiers.math_answers import plain_expression

    assert plain_expression(reference) is plain
    if plain:
        assert reference_problem(reference) is None
