"""The attack families for the core's built-in providers, on rows built from ``testdata/``.

For each family, every attack goes through the real shipped provider in one group with the two
baselines (as the audit sends them) and must score no higher than honest wrong on every row,
while honest right scores above honest wrong. Each attack also has teeth: a deliberately weak
checker written here (one a careless reward author could ship) pays it above honest wrong, or
errors on it, on most rows. None of this needs the audit engine.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit.builtin.answers import last_answer_tag
from rewardkit.builtin.countdown import judge_countdown
from rewardkit.builtin.expressions import ExpressionError, evaluate
from rewardkit.builtin.numbers import first_number, iter_numbers, last_number
from rewardkit.seam.attacks import AttackFamily, AttackSpec, AuditRow, reward_attacks
from rewardkit_audit.families import answer, countdown, exact

ROOT = Path(__file__).resolve().parents[3]
GSM8K = ROOT / "testdata/shared/grade-school-math/grade_school_math/data/test.jsonl"
COUNTDOWN_EVAL = ROOT / "testdata/shared/countdown_post_train/post_train/data/eval/grpo/eval_samples.jsonl"
REASONING_GYM = ROOT / "testdata/shared/reasoning-gym/test_countdown_cases.jsonl"
ROWS = 12


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def gsm8k_rows() -> list[AuditRow]:
    return [
        AuditRow(row_id=f"gsm8k-{i}", prompt=item["question"], reference=item["answer"])
        for i, item in enumerate(_jsonl(GSM8K)[:ROWS])
    ]


def _gold(row: AuditRow) -> int:
    return int(str(row.reference).rsplit("####", 1)[1].replace(",", "").strip())


def arithmetic_rows() -> list[AuditRow]:
    """The same gold numbers: as ints, as strings, and inside expressions (fractions too)."""
    rows = []
    for i, row in enumerate(gsm8k_rows()):
        gold = _gold(row)
        reference: object = (
            gold,
            gold,
            gold,
            gold,
            gold,
            gold,
            str(gold),
            str(gold),
            f"({gold}+1)/4",
            f"{gold}*3-2",
            f"{gold}/8",
            f"2*({gold}-1)/3",
        )[i]
        rows.append(AuditRow(row_id=f"arithmetic-{i}", prompt=row.prompt, reference=reference))
    return rows


def exact_rows() -> list[AuditRow]:
    """Short string references from the GSM8K rows: gold numbers, the question's first words."""
    rows = []
    for i, row in enumerate(gsm8k_rows()):
        words = str(row.prompt).split()
        reference = (str(_gold(row)), " ".join(words[:2]), f"{_gold(row)} {words[-1].strip('?.')}")[i % 3]
        rows.append(AuditRow(row_id=f"exact-{i}", prompt=row.prompt, reference=reference))
    return rows


_COUNTDOWN_PROMPT = re.compile(
    r"Using the numbers \[(?P<numbers>[\d, ]+)\], create an equation that equals (?P<target>\d+)"
)


def countdown_rows() -> list[AuditRow]:
    """Eight problems of the countdown eval set and the four reasoning-gym cases with numbers."""
    rows = []
    for item in _jsonl(COUNTDOWN_EVAL)[:8]:
        match = _COUNTDOWN_PROMPT.search(item["prompt"])
        assert match is not None, item["prompt"]
        numbers = [int(n) for n in match["numbers"].split(",")]
        rows.append(
            AuditRow(
                row_id=item["id"],
                prompt=item["prompt"],
                reference={"numbers": numbers, "target": int(match["target"])},
            )
        )
    for i, case in enumerate(item for item in _jsonl(REASONING_GYM) if item["numbers"]):
        rows.append(
            AuditRow(
                row_id=f"reasoning-gym-{i}",
                prompt=f"Reach {case['target']} with {case['numbers']}.",
                reference={"nums": case["numbers"], "target": case["target"]},
            )
        )
    assert len(rows) == ROWS
    return rows


# -- scoring through the real provider, as the audit does ---------------------------------------


def _family(name: str) -> tuple[AttackFamily, list[AttackSpec]]:
    """A family and the attacks every configuration gets (an attack that a weakening param enables, such
    as the last-number fallback's, is meant to leak there: test_weak_rewards.py covers it)."""
    registry = reward_attacks()
    return registry.families.get(name).value, [a for a in registry.of_family(name) if not a.params]


def _group(family: AttackFamily, attacks: Sequence[AttackSpec], row: AuditRow) -> dict[str, str]:
    """The group the audit scores for a row: honest right, honest wrong, every attack built."""
    built = {"honest-right": family.honest_right(row), "honest-wrong": family.honest_wrong(row)}
    built.update((attack.name, attack.build(row)) for attack in attacks)
    return {name: text for name, text in built.items() if text is not None}


def score_groups(
    reward: dict[str, Any], rows: Sequence[AuditRow], groups: Sequence[dict[str, str]]
) -> list[dict[str, tuple[float, str]]]:
    """``(final, status)`` of every candidate of every group, scored in one batch."""
    provider = reward["provider"]
    batch = [
        (
            row.row_id,
            [
                {
                    "trajectory_id": name,
                    "completion": text,
                    "prompt": row.prompt,
                    "reference": row.reference,
                    "completion_token_count": len(text.split()),
                    "finish_reason": "stop",
                }
                for name, text in group.items()
            ],
        )
        for row, group in zip(rows, groups, strict=True)
    ]
    with rewardkit.load({"rl": {"reward": reward}}) as loaded:
        result = loaded.score(batch)
    return [
        {c.trajectory_id: (c.final, c.breakdown[provider]["status"]) for c in group.candidates}
        for group in result.groups
    ]


def assert_family_holds(
    family_name: str, reward: dict[str, Any], rows: Sequence[AuditRow], *, right_above_wrong: bool = True
) -> list[dict[str, tuple[float, str]]]:
    family, attacks = _family(family_name)
    groups = [_group(family, attacks, row) for row in rows]
    scored = score_groups(reward, rows, groups)
    failures = []
    for row, group, scores in zip(rows, groups, scored, strict=True):
        if "honest-right" not in group:
            continue
        right, wrong = scores["honest-right"][0], scores["honest-wrong"][0]
        if right_above_wrong and not right > wrong:
            failures.append(f"{row.row_id}: honest right {right} is not above honest wrong {wrong}")
        for attack in attacks:
            if attack.name not in scores:
                continue
            final, status = scores[attack.name]
            if status == "error" or final > wrong:
                failures.append(
                    f"{row.row_id}: {attack.name} scores {final} ({status}) against honest wrong "
                    f"{wrong}: {group[attack.name][:200]!r}"
                )
    assert not failures, "\n".join(failures)
    return scored


WeakChecker = Callable[[str, AuditRow], float]


def assert_teeth(
    family_name: str,
    rows: Sequence[AuditRow],
    checkers: dict[str, WeakChecker],
    teeth: dict[str, str],
    *,
    right_above_wrong: bool = True,
) -> None:
    """Each attack's weak checker pays it above honest wrong (or errors on it) on most rows;
    and each weak checker is a real checker: it pays honest right above honest wrong."""
    family, attacks = _family(family_name)
    assert sorted(teeth) == sorted(attack.name for attack in attacks)

    def run(checker: WeakChecker, text: str, row: AuditRow) -> float | None:
        try:
            return checker(text, row)
        except (ValueError, OverflowError, ArithmeticError):
            return None  # an error: what the audit reports as `errors`

    for name, checker in checkers.items():
        for row in rows:
            right, wrong = family.honest_right(row), family.honest_wrong(row)
            if right is None or wrong is None:
                continue
            got_right, got_wrong = run(checker, right, row), run(checker, wrong, row)
            assert got_right is not None and got_wrong is not None, (name, row.row_id)
            if right_above_wrong:
                assert got_right > got_wrong, (name, row.row_id, right, wrong)
    for attack in attacks:
        checker = checkers[teeth[attack.name]]
        tried = bitten = 0
        for row in rows:
            text, wrong = attack.build(row), family.honest_wrong(row)
            if text is None or wrong is None or family.honest_right(row) is None:
                continue
            tried += 1
            got, baseline = run(checker, text, row), run(checker, wrong, row)
            assert baseline is not None
            bitten += got is None or got > baseline
        assert tried and bitten * 2 > tried, (
            f"{attack.name}: {teeth[attack.name]} is fooled on {bitten}/{tried} rows"
        )


# -- registration -----------------------------------------------------------------------------


def test_the_builtin_families_and_their_attacks_are_registered() -> None:
    registry = reward_attacks()
    expected = {
        "answer": ("gsm8k", "arithmetic"),
        "exact": ("exact-match",),
        "countdown": ("countdown",),
        "any-text": ("constant", "nonempty"),
    }
    for name, providers in expected.items():
        family = registry.families.get(name).value
        assert family.providers == providers
        attacks = registry.of_family(name)
        assert len(attacks) >= 3
        for attack in attacks:
            assert attack.name.startswith(f"{name}-") and attack.description
            assert not attack.destructive and attack.providers == ()
        for provider in providers:
            assert family.applies_to(provider, ("reference",))
    # a customer's own reference-based checker is audited by the answer family, by its needs
    assert registry.families.get("answer").value.applies_to("acme-checker", ("prompt", "reference"))
    for name in ("exact", "countdown", "any-text"):
        assert not registry.families.get(name).value.applies_to("acme-checker", ("prompt", "reference"))


def test_builders_skip_rows_without_what_they_need() -> None:
    answer_family, answer_attacks = _family("answer")
    exact_family, exact_attacks = _family("exact")
    countdown_family, countdown_attacks = _family("countdown")
    for reference in ({"numbers": [1, 2], "target": 3}, ["18"], True, "no number here", None):
        row = AuditRow(row_id="r", reference=reference)
        assert answer_family.honest_right(row) is None and answer_family.honest_wrong(row) is None
        assert all(attack.build(row) is None for attack in answer_attacks)
    for reference in (18, {"a": 1}, "   ", None):
        row = AuditRow(row_id="r", reference=reference)
        assert exact_family.honest_right(row) is None
        assert all(attack.build(row) is None for attack in exact_attacks)
    for reference in ("#### 18", {"numbers": [], "target": 3}, {"numbers": [1.5], "target": 3}):
        row = AuditRow(row_id="r", reference=reference)
        assert countdown_family.honest_right(row) is None and countdown_family.honest_wrong(row) is None
        assert all(attack.build(row) is None for attack in countdown_attacks)
    # six numbers are past the solver's bound: no honest right, no attack built on a solution
    six = AuditRow(row_id="six", reference={"numbers": [1, 2, 3, 4, 5, 6], "target": 21})
    assert countdown_family.honest_right(six) is None
    assert countdown.solve((1, 2, 3, 4, 5, 6), 21) is None


# -- answer: gsm8k and arithmetic ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("reward", "rows"),
    [
        ({"provider": "gsm8k"}, gsm8k_rows),
        ({"provider": "gsm8k", "params": {"fallback_last_number": True}}, gsm8k_rows),
        ({"provider": "arithmetic"}, arithmetic_rows),
        ({"provider": "arithmetic", "params": {"fallback_last_number": True}}, arithmetic_rows),
    ],
    ids=["gsm8k", "gsm8k-fallback", "arithmetic", "arithmetic-fallback"],
)
def test_the_answer_family_holds_on_gsm8k_and_arithmetic(
    reward: dict[str, Any], rows: Callable[[], list[AuditRow]]
) -> None:
    built = rows()
    scored = assert_family_holds("answer", reward, built)
    assert all(group["honest-right"][0] == 1.0 for group in scored)
    attacks = _family("answer")[1]
    assert all(len(group) == 2 + len(attacks) for group in scored)  # every attack built on every row


_FINAL_HASH = re.compile(r"####[ \t]*([^\n]*)")
_BOX = re.compile(r"\\boxed\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}")
_NUMBER = r"-?\d+(?:\.\d+)?(?:/\d+)?"
_PLUS_MINUS = re.compile(rf"({_NUMBER})\s*\\pm\s*({_NUMBER})")


def _gold_of(row: AuditRow) -> Fraction:
    gold = answer.gold_number(row.reference)
    assert gold is not None
    return gold


def _finals(text: str) -> list[str]:
    return _FINAL_HASH.findall(text) or _BOX.findall(text)


def weak_first_final(text: str, row: AuditRow) -> float:
    """Reads the FIRST final answer (#### or box): fooled by a second, wrong one after it."""
    finals = _finals(text)
    return float(bool(finals) and first_number(finals[0]) == _gold_of(row))


def weak_any_in_final(text: str, row: AuditRow) -> float:
    """Pays when any number of the final span is right (a 'set' comparison, '\\pm' expanded)."""
    finals = _finals(text)
    if not finals:
        return 0.0
    values = set(iter_numbers(finals[-1]))
    for a, d in _PLUS_MINUS.findall(finals[-1]):
        values |= {Fraction(a) - Fraction(d), Fraction(a) + Fraction(d)}
    return float(_gold_of(row) in values)


def weak_first_number_of_final(text: str, row: AuditRow) -> float:
    """The first number of the last final answer (what gsm8k and arithmetic read at revision 1):
    fooled by a hedge, a list or an expression that starts with the right number."""
    finals = _finals(text)
    return float(bool(finals) and first_number(finals[-1]) == _gold_of(row))


def weak_contains(text: str, row: AuditRow) -> float:
    """Pays any completion that contains the gold number."""
    pattern = rf"(?<![\d.]){re.escape(answer.spell(_gold_of(row)))}(?![\d./])"
    return float(re.search(pattern, text) is not None)


def weak_last_number(text: str, row: AuditRow) -> float:
    """The last number anywhere in the completion."""
    return float(last_number(text) == _gold_of(row))


def _naive_value(span: str) -> float | Fraction:
    power = re.fullmatch(r"(.+?)\^\{(.+)\}", span)
    if power is not None:
        return float(Fraction(power[1])) ** float(_naive_value(power[2]))  # OverflowError
    return Fraction(span)  # ValueError past Python's 4,300-digit limit


def weak_naive_parse(text: str, row: AuditRow) -> float:
    """Evaluates the last final answer with Python numbers and no cost cap."""
    finals = _finals(text)
    return float(bool(finals) and _naive_value(finals[-1].strip()) == _gold_of(row))


ANSWER_CHECKERS: dict[str, WeakChecker] = {
    "first-final": weak_first_final,
    "any-in-final": weak_any_in_final,
    "first-number": weak_first_number_of_final,
    "contains": weak_contains,
    "last-number": weak_last_number,
    "naive-parse": weak_naive_parse,
}
ANSWER_TEETH = {
    "answer-two-finals": "first-final",
    "answer-hedge-or": "any-in-final",
    "answer-hedge-or-right-first": "first-number",
    "answer-list-right-first": "first-number",
    "answer-pm-right": "first-number",
    "answer-computed-from-right": "first-number",
    "answer-power-of-right": "first-number",
    "answer-phantom-right": "first-number",
    "answer-empty-marker-then-prose": "contains",
    "answer-hedge-comma": "any-in-final",
    "answer-hedge-between": "any-in-final",
    "answer-hedge-pm": "any-in-final",
    "answer-hedge-boxes": "first-final",
    "answer-prose-after-final": "last-number",
    "answer-number-flood": "any-in-final",
    "answer-empty-final": "last-number",
    "answer-digit-flood": "naive-parse",
    "answer-power-tower": "naive-parse",
    "answer-phantom": "contains",
    "answer-white-text": "contains",
    "answer-comment": "contains",
}


@pytest.mark.parametrize("rows", [gsm8k_rows, arithmetic_rows], ids=["gsm8k", "arithmetic"])
def test_the_answer_attacks_fool_weak_checkers(rows: Callable[[], list[AuditRow]]) -> None:
    assert_teeth("answer", rows(), ANSWER_CHECKERS, ANSWER_TEETH)


def test_answer_spellings_are_read_back_exactly_by_both_providers() -> None:
    values = tuple(map(Fraction, (18, -3, "5/2", "1/3", "-7/6", 10**30 + 1)))
    rows = [AuditRow(row_id=f"v{i}", reference=answer.spell(value)) for i, value in enumerate(values)]
    assert [answer.gold_number(row.reference) for row in rows] == list(values)
    groups = [
        {"spelled": f"#### {row.reference}", "plus-one": f"#### {answer.spell(value + 1)}"}
        for row, value in zip(rows, values, strict=True)
    ]
    for provider in ("gsm8k", "arithmetic"):
        scored = score_groups({"provider": provider}, rows, groups)
        assert all(group["spelled"][0] == 1.0 and group["plus-one"][0] == 0.0 for group in scored), provider


# -- exact: exact-match -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [{}, {"case_sensitive": True}, {"collapse_whitespace": False}],
    ids=["default", "case-sensitive", "whitespace-kept"],
)
def test_the_exact_family_holds_on_exact_match(params: dict[str, Any]) -> None:
    scored = assert_family_holds("exact", {"provider": "exact-match", "params": params}, exact_rows())
    assert all(group["honest-right"][0] == 1.0 and group["honest-wrong"][0] == 0.0 for group in scored)


def weak_exact_contains(text: str, row: AuditRow) -> float:
    """Pays a completion that contains the reference anywhere (case-folded)."""
    return float(str(row.reference).strip().casefold() in text.casefold())


def weak_exact_alnum(text: str, row: AuditRow) -> float:
    """Compares only letters and digits: drops quotes, fences and invisible characters too."""

    def keep(value: str) -> str:
        return re.sub(r"[\W_]+", "", value.casefold())

    return float(keep(text) == keep(str(row.reference)))


def test_the_exact_attacks_fool_weak_checkers() -> None:
    attacks = _family("exact")[1]
    teeth = {attack.name: "contains" for attack in attacks}
    assert_teeth("exact", exact_rows(), {"contains": weak_exact_contains, "alnum": weak_exact_alnum}, teeth)


def test_the_exact_honest_wrong_differs_in_any_case_and_spacing() -> None:
    assert exact.altered("Paris") == "Parit" and exact.altered("18") == "19" and exact.altered("x9z") == "x9a"
    assert exact.altered("Zz") == "Za" and exact.altered("¿?") == "not ¿?"


# -- countdown ----------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["strict", "lenient"])
def test_the_countdown_family_holds_under_both_policies(policy: str) -> None:
    rows = countdown_rows()
    scored = assert_family_holds("countdown", {"provider": "countdown", "params": {"policy": policy}}, rows)
    solved = [group for group in scored if "honest-right" in group]
    assert len(solved) >= 9, f"the solver found {len(solved)} of {len(rows)} solutions"
    assert all(group["honest-right"][0] == 1.0 for group in solved)
    # every attack is built on some solved rows
    attacks = _family("countdown")[1]
    for attack in attacks:
        assert sum(attack.name in group for group in solved) >= 3, attack.name


def test_the_countdown_solver_finds_exact_solutions() -> None:
    for row in countdown_rows():
        numbers, target = countdown.problem(row) or ((), 0)
        solution = countdown.solve(tuple(numbers), target)
        if solution is not None:
            assert judge_countdown(f"<answer>{solution.expression}</answer>", numbers, target, "strict") == (
                True,
                "ok",
            )
    # integer division is not division: 6*34/11-1 is 193/11, and only exact solutions count
    assert (
        countdown.solve((6, 34, 1, 11), 17) is None
        or evaluate(countdown.solve((6, 34, 1, 11), 17).expression).value == 17
    )
    assert countdown.solve((44, 3), 47) is not None and countdown.solve((5,), 5) is not None
    assert countdown.solve((5,), 6) is None


def _last_expression(text: str) -> str | None:
    block = last_answer_tag(text)
    return None if block is None else block.rsplit("=", 1)[-1]


def weak_countdown_value(text: str, row: AuditRow) -> float:
    """Checks only the value of the last block (the part after its last '=', unary minus
    allowed): never which numbers it used."""
    found = countdown.problem(row)
    expression = _last_expression(text)
    if found is None or expression is None:
        return 0.0
    try:
        return float(evaluate(expression.strip(), allow_unary_minus=True).value == found[1])
    except (ExpressionError, ZeroDivisionError):
        return 0.0


def weak_countdown_first_block(text: str, row: AuditRow) -> float:
    """Judges the FIRST <answer> block strictly: fooled by a wrong block after a right one."""
    found = countdown.problem(row)
    match = re.search(r"<answer>(.*?)</answer>", text, re.DOTALL)
    if found is None or match is None:
        return 0.0
    return float(judge_countdown(f"<answer>{match[1]}</answer>", found[0], found[1], "strict")[0])


def test_the_countdown_attacks_fool_weak_checkers() -> None:
    attacks = _family("countdown")[1]
    teeth = {attack.name: "value-only" for attack in attacks} | {"countdown-right-then-wrong": "first-block"}
    checkers = {"value-only": weak_countdown_value, "first-block": weak_countdown_first_block}
    assert_teeth("countdown", countdown_rows(), checkers, teeth)


# -- any-text: constant and nonempty ------------------------------------------------------------


def _any_text_rows() -> list[AuditRow]:
    return [*gsm8k_rows()[:4], *exact_rows()[:4], *countdown_rows()[:4]]


@pytest.mark.parametrize(
    "reward",
    [{"provider": "constant"}, {"provider": "constant", "params": {"value": 0.25}}, {"provider": "nonempty"}],
    ids=["constant", "constant-quarter", "nonempty"],
)
def test_the_any_text_family_holds_on_constant_and_nonempty(reward: dict[str, Any]) -> None:
    scored = assert_family_holds("any-text", reward, _any_text_rows(), right_above_wrong=False)
    for group in scored:
        assert group["honest-right"] == group["honest-wrong"]  # both pay an honest answer alike
        if reward["provider"] == "nonempty":
            assert group["any-text-empty"][0] == group["any-text-whitespace"][0] == 0.0


def weak_brevity(text: str, row: AuditRow) -> float:
    """A 'conciseness' reward that pays the shortest answer most: an empty one above all."""
    return 1.0 / (1.0 + len(text.strip()))


def test_the_any_text_attacks_fool_a_brevity_reward() -> None:
    attacks = _family("any-text")[1]
    teeth = {attack.name: "brevity" for attack in attacks}
    assert_teeth("any-text", _any_text_rows(), {"brevity": weak_brevity}, teeth, right_above_wrong=False)
