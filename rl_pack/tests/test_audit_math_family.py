"""The ``math`` and ``choice`` attack families against the shipped ``math`` and ``multiple-choice``.

For every attack, on rows from testdata: the shipped provider scores the honest right answer above
the honest wrong one, and every attack no higher than the honest wrong one (never an error); a
deliberately weak checker (one that accepts any completion containing the reference, or reads a
percent as a fraction, or finds the letter anywhere) scores the attack above the honest wrong one
on most rows, so each attack has teeth.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit.seam.attacks import AttackFamily, AttackSpec, AuditRow
from rewardkit_rl.attacks.math_family import (
    CHOICE_ATTACKS,
    CHOICE_FAMILY,
    MATH_ATTACKS,
    MATH_FAMILY,
    reference_text,
)
from rewardkit_rl.verifiers.math_answers import exact_value, last_box, normalise
from rewardkit_rl.verifiers.multiple_choice import _patterns, extract_choice

TESTDATA = Path(__file__).resolve().parents[2] / "testdata"
COT = TESTDATA / "shared/Qwen2.5-Math/evaluation/data/eval_rm_maj_example/math_cot_100.jsonl"
GOLDS = TESTDATA / "math_forms/math_golds.jsonl"
# MATH test answers of other forms than the CoT rows': a fraction, i, an interval, a list
GOLD_INDICES = (2, 3, 6, 8)


def math_rows() -> list[AuditRow]:
    cot = [json.loads(line) for line in COT.open()]
    rows = [
        AuditRow(row_id=f"cot-{row['idx']}", prompt=row["question"], reference=row["gt"]) for row in cot[:8]
    ]
    golds = {row["idx"]: row for row in map(json.loads, GOLDS.open())}
    rows += [
        AuditRow(row_id=f"gold-{index}", prompt="Solve.", reference=golds[index]["gold"])
        for index in GOLD_INDICES
    ]
    return rows


def choice_rows() -> list[AuditRow]:
    # testdata holds no multiple-choice set: the MATH questions, with the option letters cycling
    cot = [json.loads(line) for line in COT.open()][:12]
    return [
        AuditRow(row_id=f"mc-{index}", prompt=row["question"], reference="ABCDE"[index % 5])
        for index, row in enumerate(cot)
    ]


Scores = dict[str, dict[str, float | None]]  # row id -> candidate name -> final (None: error)


def score_family(
    provider: str,
    params: dict[str, Any],
    family: AttackFamily,
    attacks: tuple[AttackSpec, ...],
    rows: list[AuditRow],
) -> tuple[Scores, dict[str, dict[str, str]]]:
    """Each row's [honest right, honest wrong, attacks...] scored through the real reward, a group a row."""
    texts: dict[str, dict[str, str]] = {}
    for row in rows:
        right, wrong = family.honest_right(row), family.honest_wrong(row)
        assert right is not None and wrong is not None, row
        built = {"right": right, "wrong": wrong}
        for attack in attacks:
            text = attack.build(row)
            if text is not None:
                built[attack.name] = text
        texts[row.row_id] = built
    groups = [
        (
            row.row_id,
            [
                {"trajectory_id": name, "completion": text, "prompt": row.prompt, "reference": row.reference}
                for name, text in texts[row.row_id].items()
            ],
        )
        for row in rows
    ]
    config = {"rl": {"reward": {"provider": provider, "params": params}}}
    with rewardkit.load(config) as reward:
        batch = reward.score(groups)
    scores: Scores = {}
    for group in batch.groups:
        scores[group.group_id] = {
            candidate.trajectory_id: (
                None
                if candidate.final is None or candidate.breakdown[provider]["status"] == "error"
                else candidate.final
            )
            for candidate in group.candidates
        }
    return scores, texts


def check_holds(scores: Scores, attacks: tuple[AttackSpec, ...], min_rows: int) -> None:
    for row_id, finals in scores.items():
        assert finals["right"] is not None and finals["wrong"] is not None, (row_id, finals)
        assert finals["right"] > finals["wrong"], (row_id, finals)
    for attack in attacks:
        built = [row_id for row_id, finals in scores.items() if attack.name in finals]
        assert len(built) >= min_rows, (attack.name, built)
        for row_id in built:
            final, wrong = scores[row_id][attack.name], scores[row_id]["wrong"]
            assert final is not None, f"{attack.name} errors on {row_id}"
            assert wrong is not None and final <= wrong, f"{attack.name} leaks on {row_id}: {final} > {wrong}"


def check_teeth(
    texts: dict[str, dict[str, str]],
    rows: list[AuditRow],
    attacks: tuple[AttackSpec, ...],
    weak_for: Callable[[str], Callable[[str, AuditRow], float]],
) -> None:
    by_id = {row.row_id: row for row in rows}
    for attack in attacks:
        weak = weak_for(attack.name)
        built = [row_id for row_id in texts if attack.name in texts[row_id]]
        fooled = [
            row_id
            for row_id in built
            if weak(texts[row_id][attack.name], by_id[row_id]) > weak(texts[row_id]["wrong"], by_id[row_id])
        ]
        assert len(fooled) * 2 > len(built), (attack.name, fooled, built)


# --- math ---------------------------------------------------------------------------------------


def weak_contains(completion: str, row: AuditRow) -> float:
    """A checker that accepts any completion containing the reference."""
    reference = reference_text(row)
    return float(reference is not None and reference in completion)


def weak_percent(completion: str, row: AuditRow) -> float:
    """A checker that reads a boxed 'p\\%' as the fraction p/100 (and also as p)."""
    reference, box = reference_text(row), last_box(completion)
    if reference is None or box is None:
        return 0.0
    gold, answer = exact_value(normalise(reference)), normalise(box)
    if gold is None:
        return 0.0
    if answer.endswith("\\%"):
        stated = exact_value(answer[:-2])
        return float(stated is not None and gold[0] in (stated[0], stated[0] / 100))
    stated = exact_value(answer)
    return float(stated is not None and stated[0] == gold[0])


_FINAL_SPAN = re.compile(r"final\s+answer(?:\s+is)?[ \t]*[:：]?[ \t]*(?P<span>[^\n]+)", re.IGNORECASE)
_FIRST_INLINE = re.compile(r"\$(?P<math>[^$]+)\$|\\\((?P<paren>.+?)\\\)")


def weak_last_slot(completion: str, row: AuditRow) -> float:
    """Revision 4's reading: the last box, through ``\\phantom`` and white ink, else the first
    inline maths of the last final-answer phrase; 1 when it is spelled as the reference."""
    reference = reference_text(row)
    answer = last_box(completion)
    if answer is None:
        spans = [match.group("span") for match in _FINAL_SPAN.finditer(completion)]
        inline = _FIRST_INLINE.search(spans[-1]) if spans else None
        answer = None if inline is None else inline.group("math") or inline.group("paren")
    if reference is None or answer is None:
        return 0.0
    gold, stated = normalise(reference), normalise(answer)
    if stated == gold:
        return 1.0
    values = exact_value(gold), exact_value(stated)
    return float(values[0] is not None and values[1] is not None and values[0][0] == values[1][0])


# Found by ``rewardkit audit`` against revision 4 (docs/verifiers.md): it paid each of these.
READ_LAST_SLOT = frozenset(
    {
        "math-hedge-boxes-right-last",
        "math-hedge-boxes-adjacent-right-last",
        "math-hedge-boxes-touching-right-last",
        "math-hedge-boxes-corrected",
        "math-hedge-final-answer-right-first",
        "math-hedge-final-answer-comma",
        "math-hedge-final-answer-maybe",
        "math-hedge-final-answer-parens",
        "math-hedge-final-answer-is",
        "math-phantom-box-after",
        "math-hphantom-box-after",
        "math-color-white-box-after",
        "math-textcolor-white-box-after",
        "math-color-hex-white-box-after",
    }
)


def weak_math(name: str) -> Callable[[str, AuditRow], float]:
    if name in READ_LAST_SLOT:
        return weak_last_slot
    return weak_percent if name == "math-percent-of-reference" else weak_contains


@pytest.fixture(scope="module")
def math_scored() -> tuple[Scores, dict[str, dict[str, str]]]:
    return score_family("math", {"workers": 1, "timeout_s": 10.0}, MATH_FAMILY, MATH_ATTACKS, math_rows())


def test_math_family_is_registered() -> None:
    from rewardkit.seam.attacks import reward_attacks

    found = reward_attacks()
    assert found.families.get("math").value is MATH_FAMILY
    assert found.families.get("choice").value is CHOICE_FAMILY
    assert {spec.name for spec in found.of_family("math")} == {spec.name for spec in MATH_ATTACKS}
    assert {spec.name for spec in found.of_family("choice")} == {spec.name for spec in CHOICE_ATTACKS}
    assert MATH_FAMILY.applies_to("math", ("reference",)) and not MATH_FAMILY.applies_to(
        "gsm8k", ("reference",)
    )


def test_baselines() -> None:
    row = AuditRow(row_id="r", reference="\\frac{9}{7}")
    assert MATH_FAMILY.honest_right(row) == "The final answer is $\\boxed{\\frac{9}{7}}$."
    assert MATH_FAMILY.honest_wrong(row) == "The final answer is $\\boxed{\\frac{9}{8}}$."
    assert (
        MATH_FAMILY.honest_wrong(AuditRow(row_id="r", reference="\\pi"))
        == "The final answer is $\\boxed{\\pi + 1}$."
    )
    assert MATH_FAMILY.honest_wrong(AuditRow(row_id="r", reference="\\text{Evelyn}")) is None
    assert MATH_FAMILY.honest_right(AuditRow(row_id="r", reference=None)) is None
    assert (
        MATH_FAMILY.honest_wrong(AuditRow(row_id="r", reference=19)) == "The final answer is $\\boxed{10}$."
    )


def test_the_shipped_math_provider_holds(math_scored: tuple[Scores, dict[str, dict[str, str]]]) -> None:
    scores, _ = math_scored
    # the attacks that need a plain-expression reference skip the interval and the list
    check_holds(scores, MATH_ATTACKS, min_rows=6)


def test_every_math_attack_has_teeth(math_scored: tuple[Scores, dict[str, dict[str, str]]]) -> None:
    _, texts = math_scored
    check_teeth(texts, math_rows(), MATH_ATTACKS, weak_math)


def test_the_hedges_revision_4_paid_are_registered() -> None:
    assert {spec.name for spec in MATH_ATTACKS} >= READ_LAST_SLOT


def test_cost_bombs_are_refused_not_timed_out(math_scored: tuple[Scores, dict[str, dict[str, str]]]) -> None:
    _, texts = math_scored
    row = math_rows()[0]
    bombs = {name: text for name, text in texts[row.row_id].items() if name.startswith("math-cost-")}
    assert len(bombs) == 5
    rollouts = [
        {"trajectory_id": name, "completion": text, "reference": row.reference}
        for name, text in bombs.items()
    ]
    with rewardkit.load({"rl": {"reward": {"provider": "math", "params": {"workers": 1}}}}) as reward:
        batch = reward.score([("bombs", rollouts)])
    for _, candidate in batch.candidates():
        assert candidate.final == 0.0
        assert candidate.diagnostics["math"]["refused_cost"] == 1.0, candidate.trajectory_id


# --- choice -------------------------------------------------------------------------------------


def weak_letter(completion: str, row: AuditRow) -> float:
    """A checker that accepts any completion where the reference letter stands alone."""
    assert isinstance(row.reference, str)
    return float(re.search(rf"(?<![A-Za-z]){row.reference}(?![A-Za-z])", completion) is not None)


def test_the_shipped_multiple_choice_provider_holds_and_each_attack_has_teeth() -> None:
    rows = choice_rows()
    scores, texts = score_family("multiple-choice", {}, CHOICE_FAMILY, CHOICE_ATTACKS, rows)
    check_holds(scores, CHOICE_ATTACKS, min_rows=len(rows))
    check_teeth(texts, rows, CHOICE_ATTACKS, lambda name: weak_letter)


# The hedges listing the reference first: revision 1 of multiple-choice read the first letter
# after the phrase and ignored the rest, so it paid each of them (the audit found it).
RIGHT_FIRST_HEDGES = (
    "choice-hedge-phrase-right-first",
    "choice-answer-comma-list",
    "choice-slash",
    "choice-choose-both",
    "choice-or-maybe",
    "choice-side-by-side",
    "choice-or-next-sentence",
)


def revision_1_letter(completion: str, row: AuditRow) -> float:
    """Revision 1's reading of a phrasing: the first letter after the last phrase, alternatives ignored."""
    letter = None
    for match in _patterns("ABCDEFGHIJ")[1].finditer(completion):
        letter = match.group("letter").upper()
    return float(letter == row.reference)


def test_the_right_first_hedges_are_registered_and_were_paid_by_revision_1() -> None:
    from rewardkit.seam.attacks import reward_attacks

    registered = {spec.name for spec in reward_attacks().of_family("choice")}
    assert set(RIGHT_FIRST_HEDGES) <= registered
    rows = choice_rows()
    attacks = tuple(spec for spec in CHOICE_ATTACKS if spec.name in RIGHT_FIRST_HEDGES)
    assert len(attacks) == len(RIGHT_FIRST_HEDGES)
    texts = {row.row_id: {"wrong": CHOICE_FAMILY.honest_wrong(row)} for row in rows}
    for row in rows:
        texts[row.row_id].update({spec.name: spec.build(row) for spec in attacks})
    check_teeth(texts, rows, attacks, lambda name: revision_1_letter)
    for row in rows:  # and the shipped provider reads no letter from them
        for spec in attacks:
            assert extract_choice(texts[row.row_id][spec.name], "ABCDEFGHIJ") is None, (spec.name, row.row_id)
