"""``repetition`` counts what a reader sees repeated: words where text is spaced, characters where
it is not (CJK, runs without spaces), zero-width characters ignored.

The honest prose is under testdata/prose/ (written for rewardkit, see testdata/SOURCES.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rewardkit import resolve_catalog
from rewardkit_rl.verifiers.repetition import repeated_fraction

PROSE = Path(__file__).resolve().parents[2] / "testdata" / "prose"
LANGUAGES = ("english", "chinese", "japanese")
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"
SENTENCES = {
    "english": "The ferry to the island ran twice a day.",
    "chinese": "外婆每天五点起床，先生火煮粥。",
    "japanese": "祖母は毎朝五時に起きて朝ご飯を作る。",
}


def prose(language: str) -> str:
    return (PROSE / f"{language}.txt").read_text(encoding="utf-8")


def scores(texts: dict[str, str], **params: object) -> dict[str, float]:
    """The provider's ``repetition`` term for each text, scored as one group."""
    bound = resolve_catalog().bind("repetition", params)
    names = list(texts)
    result = bound.score_group("g", [{"trajectory_id": name, "completion": texts[name]} for name in names])
    return {name: item.result.terms["repetition"] for name, item in zip(names, result.items)}


def word_ngram_fraction(text: str, ngram_size: int) -> float:
    """Revision 1's measure: lower-cased whitespace words only."""
    words = text.lower().split()
    total = len(words) - ngram_size + 1
    if total <= 0:
        return 0.0
    return (total - len({tuple(words[i : i + ngram_size]) for i in range(total)})) / total


def padded(text: str, copy: int) -> str:
    """``text`` with ``copy`` zero-width characters (of every kind, in turn) after each word."""
    padding = "".join(ZERO_WIDTH[i % len(ZERO_WIDTH)] for i in range(copy))
    return " ".join(word + padding for word in text.split(" "))


def test_honest_prose_scores_at_least_minus_0_1_and_is_measured():
    got = scores({language: prose(language) for language in LANGUAGES})
    assert all(value >= -0.1 for value in got.values()), got
    for language in LANGUAGES:
        # Measured in units that do recur (words, characters): not a few paragraph-long tokens
        # that can never repeat, which would score 0 whatever the text.
        assert repeated_fraction(prose(language), 1) >= 0.3, language
    english = prose("english")
    for ngram_size in (1, 2, 3, 4):  # whitespace-delimited text keeps its word n-gram values
        assert repeated_fraction(english, ngram_size) == word_ngram_fraction(english, ngram_size)


def test_the_same_sentence_repeated_50_times_scores_at_most_minus_0_9_however_it_is_written():
    english, chinese, japanese = SENTENCES["english"], SENTENCES["chinese"], SENTENCES["japanese"]
    texts = {
        "english": " ".join([english] * 50),
        "chinese": chinese * 50,
        "japanese": japanese * 50,
        "chinese, a space between copies": " ".join([chinese] * 50),
        "english without spaces": english.replace(" ", "") * 50,
        "english, copies run together": english * 50,
        "abc * 2000": "abc" * 2000,
        "english, each copy padded differently": " ".join(padded(english, copy) for copy in range(50)),
        "chinese, each copy padded differently": "".join(chinese + "\u200b" * copy for copy in range(50)),
        "english, zero-width for spaces": "".join(
            english.replace(" ", ZERO_WIDTH[copy % 5] * (1 + copy % 3)) for copy in range(50)
        ),
    }
    got = scores(texts)
    assert {name: value for name, value in got.items() if value > -0.9} == {}, got


@pytest.mark.parametrize(
    "text", ["a b c a b c a b c", "go go go go", *SENTENCES.values()], ids=["abc", "go", *SENTENCES]
)
def test_zero_width_padding_neither_hides_nor_makes_repetition(text):
    clean = repeated_fraction(text, 3), repeated_fraction(text, 1)
    for copies in ((1, 2, 3), (0, 5, 1)):
        repeated = " ".join(padded(text, copy) for copy in copies)
        assert (repeated_fraction(repeated, 3), repeated_fraction(repeated, 1)) == (
            repeated_fraction(" ".join([text] * len(copies)), 3),
            repeated_fraction(" ".join([text] * len(copies)), 1),
        )
    assert (repeated_fraction(padded(text, 4), 3), repeated_fraction(padded(text, 4), 1)) == clean


def test_runs_without_spaces_are_counted_by_character():
    assert scores({"abc": "abc" * 2000})["abc"] == pytest.approx(-(5998 - 3) / 5998)
    assert scores({"abc": "abc" * 2000}, max_penalty=0.5)["abc"] == pytest.approx(-0.5 * (5998 - 3) / 5998)
    from rewardkit_rl.verifiers.repetition import MAX_WORD_CHARS, units

    longest = "x" * MAX_WORD_CHARS
    assert units(f"Ordinary {longest} WORDS") == ["ordinary", longest, "words"]
    assert units("y" * (MAX_WORD_CHARS + 1)) == ["y"] * (MAX_WORD_CHARS + 1)
    assert units("我用Python写代码。") == ["我", "用", "python", "写", "代", "码", "。"]
    assert units("a\u200bb c\ufeff") == ["ab", "c"]


def test_the_revision_says_the_units_changed():
    spec = resolve_catalog().entry("repetition").spec
    assert spec.revision == "3"  # 1 counted whitespace words only; 2 compared raw code points
    from rewardkit_rl.verifiers.repetition import REVISION, SEMANTIC_IDENTITY

    assert spec.revision == REVISION
    assert spec.semantic_identity == SEMANTIC_IDENTITY
