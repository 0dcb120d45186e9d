"""The core's answer rules find their markers as a reader sees them (issue 41).

A completion can write a marker with look-alike letters (a Cyrillic ``а`` in "the аnswer is") or
an invisible character inside it (``#\\u200b###``): a reader (a person, a judge model) reads a
marker there, and revision 2 of gsm8k / arithmetic and revision 1 of countdown did not. A policy
then states a right answer with a plain marker and a different final answer with a disguised one:
the rule paid the right answer (1.0) where a plain wrong answer is paid 0.0. Each attack below
pays no more than a plain wrong answer now. Numbers are read as written (only invisible
characters removed), so honest text in any script keeps its verdict: checked on every real
completion in ``testdata/`` against the rules on raw code points, written out below.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit.builtin import answers
from rewardkit.builtin.numbers import last_number, parse_number, stated_number
from rewardkit.seam.catalog import resolve_catalog

TESTDATA = Path(__file__).resolve().parents[1] / "testdata" / "shared"
GOLD = "#### 42"
CYRILLIC_A, CYRILLIC_O, CYRILLIC_CAPITAL_A = "\u0430", "\u043e", "\u0410"
ZERO_WIDTH_SPACE, WORD_JOINER, SOFT_HYPHEN = "\u200b", "\u2060", "\u00ad"


def scores(provider: str, texts: Mapping[str, str], reference: object) -> dict[str, float]:
    """The final reward of each text through ``rewardkit.load(...).score``, one group."""
    rollouts = [
        {"trajectory_id": name, "completion": text, "prompt": "p", "reference": reference}
        for name, text in texts.items()
    ]
    with rewardkit.load({"rl": {"reward": {"provider": provider}}}) as reward:
        batch = reward.score([("g", rollouts)])
    finals = {
        candidate.trajectory_id: candidate.final for group in batch.groups for candidate in group.candidates
    }
    assert len(finals) == len(texts) and all(value is not None for value in finals.values()), finals
    return {name: float(value) for name, value in finals.items()}  # type: ignore[arg-type]


# Gold 42. Each states 42 under a plain marker and, last, 41 under a marker a reader reads too:
# revision 2 read only the plain one and paid 1.0; a reader's final answer is 41.
HEDGES = {
    "answer-is, Cyrillic a": f"The answer is 42.\n\nOn reflection, the {CYRILLIC_A}nswer is 41.",
    "answer-is, zero-width space": f"The answer is 42.\nNo: the ans{ZERO_WIDTH_SPACE}wer is 41.",
    "answer line, Cyrillic A": f"Answer: 42\nLet me recheck.\n{CYRILLIC_CAPITAL_A}nswer: 41",
    "answer line, full-width colon and letters": "Answer: 42\n\uff21\uff4e\uff53\uff57\uff45\uff52\uff1a 41",
    "hash, word joiner": f"#### 42\nWait.\n##{WORD_JOINER}## 41",
    "hash, full-width": "#### 42\nWait.\n\uff03\uff03\uff03\uff03 41",
    "boxed, Cyrillic o": f"\\boxed{{42}} is tempting, but \\b{CYRILLIC_O}xed{{41}}",
    "answer tag, Cyrillic a": f"<answer>42</answer> then <{CYRILLIC_A}nswer>41</{CYRILLIC_A}nswer>",
    "answer tag, look-alike brackets": "<answer>42</answer> then \u1438answer\u1433 41 \u1438/answer\u1433",
    "answer tag, soft hyphen": f"<answer>42</answer> then <an{SOFT_HYPHEN}swer>41</an{SOFT_HYPHEN}swer>",
    "final answer line, fi ligature": "Answer: 42\n\ufb01nal answer: 41",
}
PLAIN_WRONG = "The answer is 41."


@pytest.mark.parametrize("provider", ["gsm8k", "arithmetic"])
def test_a_disguised_marker_hedge_pays_no_more_than_a_wrong_answer(provider: str) -> None:
    reference: object = GOLD if provider == "gsm8k" else "6*7"
    paid = scores(
        provider, {**HEDGES, "plain wrong": PLAIN_WRONG, "plain right": "The answer is 42."}, reference
    )
    assert paid["plain wrong"] == 0.0 and paid["plain right"] == 1.0
    assert {name: paid[name] for name in HEDGES} == dict.fromkeys(HEDGES, paid["plain wrong"])


def test_the_markers_of_the_hedges_are_the_forms_a_reader_reads() -> None:
    """Each hedge's disguised marker is read as the same form as its plain one, and it is the last."""
    for name, text in HEDGES.items():
        found = answers.find_answer(text)
        assert found is not None and answers.stated_part(found.span).strip() == "41", name


# A reader reads 42 in each; revision 2 read no number or no marker (0.0 for a right answer).
READ_AS_42 = {
    "zero-width space inside the number": f"#### 4{ZERO_WIDTH_SPACE}2",
    "word joiner inside the number": f"The answer is 4{WORD_JOINER}2.",
    "soft hyphen inside the marker": f"The an{SOFT_HYPHEN}swer is 42.",
    "zero-width space inside a box": f"\\bo{ZERO_WIDTH_SPACE}xed{{4{ZERO_WIDTH_SPACE}2}}",
    "invisible padding everywhere": f"{ZERO_WIDTH_SPACE}#### {WORD_JOINER}42{ZERO_WIDTH_SPACE}\ufe0f",
    "bare number with invisible padding": f"{ZERO_WIDTH_SPACE}42{WORD_JOINER}",
    # Folds that change the length before the marker: positions still map back to the number.
    "ligature and invisible characters before the marker": (
        f"\ufb01rst{ZERO_WIDTH_SPACE * 3}, 6 \u00d7 7.\n\ufb03ne. The answer is 4{ZERO_WIDTH_SPACE}2."
    ),
}
# A reader reads a wrong answer in each, however it is padded.
READ_AS_WRONG = {
    "invisible padding round a wrong number": f"#### {ZERO_WIDTH_SPACE}41{WORD_JOINER}",
    "zero-width space between two numbers": f"#### 4{ZERO_WIDTH_SPACE}2{ZERO_WIDTH_SPACE}1",
    "a superscript makes a power": "#### 42\u00b2",
    "a right number after an invisible marker, then a wrong one": f"#### 42\n#{ZERO_WIDTH_SPACE}### 43",
    "only invisible characters": f"{ZERO_WIDTH_SPACE}{WORD_JOINER}",
}


def test_invisible_characters_in_a_marker_or_number_read_as_a_reader_reads_them() -> None:
    paid = scores("gsm8k", {**READ_AS_42, **READ_AS_WRONG}, GOLD)
    assert {name: paid[name] for name in READ_AS_42} == dict.fromkeys(READ_AS_42, 1.0)
    assert {name: paid[name] for name in READ_AS_WRONG} == dict.fromkeys(READ_AS_WRONG, 0.0)


def test_the_extracted_note_is_the_written_answer_less_invisible_characters() -> None:
    """Digits are never folded: ``١٢`` stays Arabic-Indic in the note, ``10²`` keeps its ``²``."""
    assert answers.read_completion("Ответ: #### ١٢", False).text == "١٢"
    assert answers.read_completion(f"{CYRILLIC_CAPITAL_A}nswer: 10\u00b2", False).text == "10\u00b2"
    assert answers.read_completion(f"#### 4{ZERO_WIDTH_SPACE}2", False).text == "42"


# Honest completions in several scripts, the gold 42 written in their own digits where they have
# them, and what each scores: the verdict of the rule on raw code points too.
HONEST = {
    "chinese": ("每天剩下 16 - 3 - 4 = 9 个鸡蛋，9 × 2 = 18。不对，应为 42。\n#### 42", 1.0),
    "chinese, full-width digits": ("答案是：\n#### ４２", 1.0),
    "japanese": ("したがって、答えは 42 です。\n#### 42", 1.0),
    "korean": ("따라서 정답은 41입니다.\n#### 41", 0.0),
    "arabic-indic digits": ("إذن الجواب هو ٤٢\n#### ٤٢", 1.0),
    "russian": ("Ответ: 42.", 1.0),
    "russian, wrong": ("Итак, ответ 41.\n#### 41", 0.0),
    "greek": ("Η απάντηση είναι 42.\n\\boxed{42}", 1.0),
    "hindi": ("उत्तर है 42\nThe answer is 42", 1.0),
    "devanagari digits": ("उत्तर: #### ४२", 1.0),
    "emoji": ("🦆🥚 16 - 3 - 4 = 9 ✅\n#### 42 🎉", 1.0),
    "math": ("$x^2 = 1764$, so $x = 42$. The answer is $\\boxed{42}$.", 1.0),
    "unit with a superscript": ("The area is 42 m². The answer is 42 m².", 1.0),
    "code": ("```python\nprint(6 * 7)  # → 42\n```\nThe answer is 42.", 1.0),
}


def test_honest_text_in_many_scripts_scores_as_written() -> None:
    paid = scores("gsm8k", {name: text for name, (text, _) in HONEST.items()}, GOLD)
    assert paid == {name: expected for name, (_, expected) in HONEST.items()}
    for name, (text, expected) in HONEST.items():
        assert raw_code_point_read(text, False)[0] == (42 if expected else 41), name


def test_countdown_reads_disguised_tags_and_invisible_characters_as_a_reader_does() -> None:
    reference = {"numbers": [3, 5, 2], "target": 16}
    texts = {
        "plain right": "<answer>(3+5)*2</answer>",
        "plain wrong": "<answer>3+5+2</answer>",
        # Revision 1 read only the plain tag (right) where a reader's last answer is the wrong one.
        "look-alike tag hedge": f"<answer>(3+5)*2</answer> or <{CYRILLIC_A}nswer>3+5+2</{CYRILLIC_A}nswer>",
        "zero-width tag hedge": f"<answer>(3+5)*2</answer> or <answer>3+5+2</ans{ZERO_WIDTH_SPACE}wer>",
        # A reader reads (3+5)*2; revision 1 called the expression invalid.
        "zero-width space in the expression": f"<answer>(3+5)*{ZERO_WIDTH_SPACE}2</answer>",
    }
    paid = scores("countdown", texts, reference)
    assert paid == {
        "plain right": 1.0,
        "plain wrong": 0.0,
        "look-alike tag hedge": 0.0,
        "zero-width tag hedge": 0.0,
        "zero-width space in the expression": 1.0,
    }


def test_exact_match_and_nonempty_ignore_invisible_characters() -> None:
    paid = scores(
        "exact-match",
        {
            "right": "Paris",
            "right with invisible characters": f"Pa{ZERO_WIDTH_SPACE}ris{WORD_JOINER}",
            "wrong with invisible characters": f"Lyo{ZERO_WIDTH_SPACE}n",
            "look-alike letters are other letters": f"P{CYRILLIC_A}ris",
            "superscripts are not folded": "Paris²",
        },
        f"Paris{SOFT_HYPHEN}",
    )
    assert paid == {
        "right": 1.0,
        "right with invisible characters": 1.0,
        "wrong with invisible characters": 0.0,
        "look-alike letters are other letters": 0.0,
        "superscripts are not folded": 0.0,
    }
    blank = scores(
        "nonempty",
        {"invisible": f"{ZERO_WIDTH_SPACE}\ufe0f{WORD_JOINER}", "braille blank": "\u2800", "text": "."},
        "",
    )
    assert blank == {"invisible": 0.0, "braille blank": 0.0, "text": 1.0}


def test_the_changed_rules_are_at_new_revisions() -> None:
    catalog = resolve_catalog()
    revisions = {
        name: catalog.entry(name).spec.revision
        for name in ("gsm8k", "arithmetic", "countdown", "exact-match", "nonempty", "constant")
    }
    assert revisions == {
        "gsm8k": "3",
        "arithmetic": "3",
        "countdown": "2",
        "exact-match": "2",
        "nonempty": "2",
        "constant": "1",
    }


# --- Real completions: every verdict equals the rule on raw code points (revision 2's reading). ---


def raw_code_point_read(text: str, fallback_last_number: bool) -> tuple[Any, str]:
    """Revision 2's reading, written out: markers found in the raw code points."""
    for form, pattern in (("hash", answers._HASH_FORM),):
        spans = [match.group("span") for match in pattern.finditer(text)]
        if spans:
            return stated_number(answers.stated_part(spans[-1])), form
    for form, read in (("boxed", answers.last_boxed), ("answer-tag", answers.last_answer_tag)):
        span = read(text)
        if span is not None:
            return stated_number(answers.stated_part(span)), form
    for form, pattern in (("answer-line", answers._ANSWER_LINE), ("answer-is", answers._ANSWER_IS)):
        spans = [match.group("span") for match in pattern.finditer(text)]
        if spans:
            return stated_number(answers.stated_part(spans[-1])), form
    if parse_number(text) is not None:
        return stated_number(answers.stated_part(text)), "bare"
    if fallback_last_number and (value := last_number(text)) is not None:
        return value, "last-number"
    return None, "none"


def gsm8k_completions() -> Iterator[str]:
    """The GPT-3 GSM8K solutions and the Qwen2.5-Math MATH responses."""
    solutions = TESTDATA / "grade-school-math/grade_school_math/data/example_model_solutions.jsonl"
    for line in solutions.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        for value in row.values():
            if isinstance(value, dict):
                yield value["solution"]
    maths = TESTDATA / "Qwen2.5-Math/evaluation/data/eval_rm_maj_example/math_cot_100.jsonl"
    for line in maths.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        yield from row["code"]  # the eight sampled chain-of-thought responses


def test_real_gsm8k_and_math_completions_read_as_on_raw_code_points() -> None:
    changed = []
    non_ascii = 0
    for completion in gsm8k_completions():
        non_ascii += not completion.isascii()
        for fallback in (False, True):
            answer = answers.read_completion(completion, fallback)
            if (answer.value, answer.form) != raw_code_point_read(completion, fallback):
                changed.append(completion[:200])
    assert non_ascii >= 90  # the comparison covers non-ASCII text, not only the fast path
    assert changed == []


def test_real_countdown_completions_keep_their_verdicts() -> None:
    """1,750 Qwen3 countdown outputs, 1,428 of them non-ASCII: each policy judges the expression in
    the last ``<answer>`` tag, and the tag a reader finds holds the text of the tag in the raw code
    points in every one, so every verdict is revision 1's."""
    paths = sorted((TESTDATA / "countdown_post_train/post_train/data/eval").glob("*/eval_samples.jsonl"))
    completions = [
        json.loads(line)["raw_generation"]
        for path in paths
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    assert len(completions) == 1750 and sum(not text.isascii() for text in completions) == 1428
    changed = [
        text[:200] for text in completions if answers.read_answer_tag(text) != answers.last_answer_tag(text)
    ]
    assert changed == []
