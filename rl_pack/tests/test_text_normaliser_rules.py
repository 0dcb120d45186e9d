"""The rules read candidate text as a reader sees it (``rewardkit.contracts.text``, issue 41).

Attacks: copies of a sentence told apart only by invisible format characters or look-alike letters
(repetition), blocks that render blank and look-alike copies of a tag (format), a second option
written with a look-alike letter (multiple-choice). Each scores no better than the plain version
of the same text. Honest text is not penalised: on every real completion in ``testdata/`` and on
honest texts in several scripts, repetition and format score what the previous revisions'
rules (written out below, on raw code points) give.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit_rl.verifiers.repetition import unit_keys, units

TESTDATA = Path(__file__).resolve().parents[2] / "testdata"
SENTENCE = "The ferry to the island ran twice a day and the harbour master kept the log."
# Format characters (category Cf) that revision 2's default-ignorable list did not hold, then some
# it held: interlinear annotation marks, Arabic number signs, Syriac abbreviation, Kaithi, Egyptian.
FORMAT_CHARS = "\ufff9\ufffa\ufffb\u0600\u0601\u0602\u0603\u06dd\u070f\u08e2\U000110bd\U00013430\u200b\u2060"
# Latin letter -> look-alikes from other scripts and compatibility forms.
LOOKALIKES = {
    "a": "аɑａ𝐚",
    "e": "еｅ𝐞",
    "o": "оοｏ𝐨0",
    "i": "іιｉ",
    "c": "сⅽｃ",
    "p": "рｐ",
    "T": "ТΤＴ",
    "h": "һｈ",
    "y": "уｙ",
    "s": "ѕｓ",
}


def score(provider: str, texts: dict[str, str], **params: Any) -> dict[str, float]:
    """The final reward of each text through ``rewardkit.load`` (reference B), in groups of 200."""
    config = {"rl": {"reward": {"provider": provider, "params": params}}}
    rollouts = [
        {"trajectory_id": name, "completion": text, "prompt": "p", "reference": "B"}
        for name, text in texts.items()
    ]
    groups = [(f"g{start}", rollouts[start : start + 200]) for start in range(0, len(rollouts), 200)]
    with rewardkit.load(config) as reward:
        batch = reward.score(groups)
    finals = {
        candidate.trajectory_id: candidate.final for group in batch.groups for candidate in group.candidates
    }
    assert len(finals) == len(texts) and all(value is not None for value in finals.values()), finals
    return {name: float(value) for name, value in finals.items()}  # type: ignore[arg-type]


def with_format_chars(copy: int) -> str:
    """``SENTENCE`` with format characters inside every word, a different pattern in each copy."""
    words = SENTENCE.split(" ")
    marked = []
    for index, word in enumerate(words):
        char = FORMAT_CHARS[(copy + index) % len(FORMAT_CHARS)]
        count = 1 + (copy // len(FORMAT_CHARS) + index) % 3
        marked.append(word[:1] + char * count + word[1:])
    return " ".join(marked)


def with_lookalikes(copy: int) -> str:
    """``SENTENCE`` with some letters swapped for look-alikes, a different choice in each copy."""
    out = []
    for index, char in enumerate(SENTENCE):
        choices = LOOKALIKES.get(char)
        if choices and (index * 7 + copy) % 3 == 0:
            out.append(choices[(index + copy) % len(choices)])
        else:
            out.append(char)
    return "".join(out)


def test_repetition_sees_one_sentence_however_each_copy_is_disguised():
    texts = {
        "plain": " ".join([SENTENCE] * 50),
        "format characters in every copy": " ".join(with_format_chars(copy) for copy in range(50)),
        "look-alike letters in every copy": " ".join(with_lookalikes(copy) for copy in range(50)),
        "both": " ".join(with_lookalikes(copy).replace(" ", " \ufffb") for copy in range(50)),
        "blank-rendering spaces": "\u2800".join(
            SENTENCE.replace(" ", "\u3164" if copy % 2 else "\u2800") for copy in range(50)
        ),
        "full-width and mathematical copies": " ".join(
            SENTENCE.translate({ord(c): chr(ord(c) + 0xFEE0) for c in "aeiou"})
            if copy % 2
            else SENTENCE.translate({ord(c): chr(0x1D41A + ord(c) - ord("a")) for c in "rnt"})
            for copy in range(50)
        ),
    }
    assert len(set(texts.values())) == len(texts)
    got = score("repetition", texts)
    assert got["plain"] <= -0.9
    assert {name: value for name, value in got.items() if value > -0.9} == {}, got


def test_format_pays_nothing_for_blocks_that_render_blank():
    blank_blocks = {
        "braille blanks": "<think>\u2800\u2800\u2800</think>\n<answer>\u2800</answer>",
        "Hangul fillers": "<think>a</think>\n<answer>\u3164\u115f\u1160\uffa0</answer>",
        "format characters": "<think>a</think>\n<answer>\ufff9\ufffb\u0600\U000e0041</answer>",
        "punctuation": "<think>...</think>\n<answer>. , ; ~ *</answer>",
        "variation selectors and spaces": "<think>a</think>\n<answer>\ufe0f\u3000\u2003\ufe0e</answer>",
    }
    plain = {"plain": "<think>I add them.</think>\n<answer>41</answer>"}
    got = score("format", {**plain, **blank_blocks})
    assert got["plain"] == 1.0
    assert {name: value for name, value in got.items() if name != "plain" and value != 0.0} == {}, got


def test_format_counts_a_look_alike_tag_as_the_tag():
    texts = {
        "plain": "<think>a</think> and so <answer>41</answer>",
        "a second answer block, in Cyrillic": (
            "<think>a</think> so <answer>41</answer> or <аnswer>42</аnswer>"
        ),
        "a second think block, in syllabics": "ᐸthinkᐳbᐸ/thinkᐳ <think>a</think> <answer>41</answer>",
        "the same blocks twice, one with a zero-width space": (
            "<think>a</think><answer>41</answer> <ans\u200bwer>42</answer>"
        ),
    }
    got = score("format", texts, allow_outside_text=True)
    assert got == {name: 1.0 if name == "plain" else 0.0 for name in texts}, got
    # the blocks read as the tags they imitate: a completion written in them is well formed
    disguised = {"fullwidth and Cyrillic": "＜thіnk＞a＜/thіnk＞\n<аnswer>41</аnswer>"}
    assert score("format", disguised) == {"fullwidth and Cyrillic": 1.0}


def test_multiple_choice_reads_a_look_alike_second_option():
    texts = {
        "plain answer": "The answer is (B).",
        "plain hedge": "The answer is (B) or (C).",
        "hedge with a Cyrillic C": "The answer is (B) or (\u0421).",
        "hedge with a zero-width space": "The answer is (B) or (\u200bC).",
        "hedge with a full-width C": "The answer is (B) or (\uff23).",
        "stated in Greek capitals": "The answer is (\u0392).",
    }
    got = score("multiple-choice", texts)
    assert got == {
        "plain answer": 1.0,
        "plain hedge": 0.0,
        "hedge with a Cyrillic C": 0.0,
        "hedge with a zero-width space": 0.0,
        "hedge with a full-width C": 0.0,
        "stated in Greek capitals": 1.0,  # a reader sees "(B)"
    }, got


# -- honest text is not penalised -----------------------------------------------------------------

# Revision 2's rules, on raw code points: what honest text must keep scoring.
_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
_CJK = (
    "\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u31c0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U000323af"
)
_PIECES = re.compile(f"[{_CJK}]|[^{_CJK}]+")


def raw_repetition(text: str, ngram_size: int = 3) -> float:
    units: list[str] = []
    for word in _IGNORABLE.sub("", text.lower()).split():
        if len(word) > 32:
            units.extend(word)
        elif re.search(f"[{_CJK}]", word) is None:
            units.append(word)
        else:
            units.extend(_PIECES.findall(word))
    total = len(units) - ngram_size + 1
    if total <= 0:
        return 0.0
    return -(total - len(set(zip(*(units[start:] for start in range(ngram_size)))))) / total


def raw_format(text: str, tags: tuple[str, ...] = ("think", "answer"), outside: bool = False) -> float:
    spans, empty = [], False
    for tag in tags:
        opening, closing = f"<{tag}>", f"</{tag}>"
        if text.count(opening) != 1 or text.count(closing) != 1:
            return 0.0
        start, end = text.find(opening), text.find(closing)
        if end < start:
            return 0.0
        empty = empty or not _IGNORABLE.sub("", text[start + len(opening) : end]).strip()
        spans.append((start, end + len(closing)))
    cursor = 0
    for start, end in spans:
        if empty or start < cursor or (not outside and text[cursor:start].strip()):
            return 0.0
        cursor = end
    return 0.0 if not outside and text[cursor:].strip() else 1.0


HONEST = {
    "chinese": "外婆每天五点起床，先生火煮粥。她说：“早饭要吃饱！”我们都笑了。（这是真的。）",
    "japanese": "祖母は毎朝五時に起きて、朝ご飯を作る。「おはよう」と言って、窓を開けた。",
    "korean": "할머니는 매일 아침 다섯 시에 일어나서 죽을 끓이셨다. 우리는 모두 웃었다.",
    "arabic": "كانت جدتي تستيقظ كل يوم في الساعة الخامسة، وتطبخ العصيدة. ضحكنا جميعًا.",
    "hebrew": "סבתא קמה כל בוקר בחמש ומבשלת דייסה. כולנו צחקנו.",
    "russian": "Бабушка вставала каждый день в пять часов и варила кашу. Все мы смеялись.",
    "greek": "Η γιαγιά ξυπνούσε κάθε μέρα στις πέντε και μαγείρευε χυλό.",
    "hindi": "दादी हर दिन पाँच बजे उठकर दलिया बनाती थीं। हम सब हँसे।",
    "emoji": "Great job 👍🏽! The family 👨‍👩‍👧 went to 🇫🇷 and loved it ❤️ 😀😀",
    "code": 'def area(r: float) -> float:\n    """Area of a circle."""\n    return 3.14159 * r ** 2  # πr²\n',
    "math": "Let $x^2 + 1 = 10$, so $x = \\pm 3$. Then ½ · 6 = 3 and 10⁻³ m = 1 mm. ∎",
    "format cjk": "<think>先算 6×7。</think>\n<answer>四十二</answer>",
    "format arabic": "<think>٦ × ٧</think>\n<answer>٤٢</answer>",
    "format emoji": "<think>🤔 six sevens</think><answer>42 ✅</answer>",
}


def real_completions() -> Iterator[str]:
    """Every model completion kept under testdata/ (countdown, GSM8K, MATH, MBPP runs) and the prose."""
    for path in sorted(
        (TESTDATA / "shared/countdown_post_train/post_train/data/eval").glob("*/eval_samples.jsonl")
    ):
        for line in path.read_text(encoding="utf-8").splitlines():
            yield json.loads(line)["raw_generation"]
    solutions = TESTDATA / "shared/grade-school-math/grade_school_math/data/example_model_solutions.jsonl"
    for line in solutions.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        yield from (value["solution"] for value in row.values() if isinstance(value, dict))
    maths = TESTDATA / "shared/Qwen2.5-Math/evaluation/data/eval_rm_maj_example/math_cot_100.jsonl"
    for line in maths.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        yield from row["code"]  # the eight sampled chain-of-thought responses
    for name in ("reflexion_simple_mbpp_py.jsonl", "reflexion_simple_mbpp_py2.jsonl"):
        for line in (TESTDATA / "code" / name).read_text(encoding="utf-8").splitlines():
            yield json.loads(line)["solution"]
    with gzip.open(TESTDATA / "code/HumanEval.jsonl.gz", "rt", encoding="utf-8") as file:
        for line in file:
            yield json.loads(line)["canonical_solution"]
    for path in sorted((TESTDATA / "prose").glob("*.txt")):
        yield path.read_text(encoding="utf-8")


def look_alike_pairs(text: str) -> set[str]:
    """The units of ``text`` that the rule now reads as another unit of the same text."""
    by_key: dict[str, set[str]] = {}
    for unit, key in zip(units(text), unit_keys(text)):
        by_key.setdefault(key, set()).add(unit)
    return {unit for found in by_key.values() if len(found) > 1 for unit in found}


def test_honest_text_scores_what_it_scored_on_raw_code_points():
    texts = {f"real {index}": text for index, text in enumerate(real_completions())}
    assert len(texts) > 4000  # the corpus is really read
    texts.update(HONEST)
    repetition = score("repetition", texts)
    strict = score("format", texts)
    form = score("format", texts, tags=["answer"], allow_outside_text=True)  # as countdown asks
    assert [name for name, text in texts.items() if strict[name] != raw_format(text)] == []
    assert [name for name, text in texts.items() if form[name] != raw_format(text, ("answer",), True)] == []
    changed = {
        name: repetition[name] - raw_repetition(text)
        for name, text in texts.items()
        if repetition[name] != pytest.approx(raw_repetition(text), abs=1e-12)
    }
    # Only texts that write a letter and its look-alike (two of the MATH responses end in a
    # multilingual ramble: "к" beside "k", "𝐄" beside "e") read differently, by less than 0.001.
    assert {name for name in changed if not look_alike_pairs(texts[name])} == set()
    assert len(changed) <= 2 and all(abs(delta) < 1e-3 for delta in changed.values()), changed
    # and the corpus exercises both rules: formats that pay, repetition that is measured
    assert sum(value == 1.0 for value in form.values()) > 800 and sum(strict.values()) >= 3
    assert sum(value < 0 for value in repetition.values()) > 1000
