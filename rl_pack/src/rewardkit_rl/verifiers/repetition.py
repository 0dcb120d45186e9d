"""The ``repetition`` verifier: a penalty for repeating the same n-grams of words or characters.

The penalty is ``-max_penalty * repeated / total`` over the completion's n-grams, where
``repeated`` counts every n-gram occurrence after its first. A completion shorter than one n-gram
has nothing to repeat and gets 0.

The units (``units``): the completion is lower-cased, its invisible characters are removed and its
blank-rendering ones read as spaces (``rewardkit.contracts.text.visible``: format characters such as U+200B,
U+2060, U+FEFF, the soft hyphen, bidirectional marks, variation selectors, tag characters; the
Hangul fillers and the braille blank), and it is split at whitespace. A piece of ordinary words is
a unit, so whitespace-delimited text scores what it did in revision 1. Text written without
spaces is segmented by character instead: every CJK character (Han, kana, CJK punctuation and
full-width forms) is a unit of its own, and so is every character of a run without spaces longer
than ``MAX_WORD_CHARS`` (``"abc" * 2000``, a sentence repeated with no space between the copies).
Full-width Latin letters and digits are read as ASCII first: they spell words, not CJK text.

Units are compared as a reader reads them (``unit_keys``): NFKC, case-folded, with every
character whose TR39 skeleton is an ASCII letter or digit read as it
(``rewardkit.contracts.text.fold_lookalikes`` without punctuation), so copies told apart only by invisible
characters, compatibility forms or look-alike letters (a Cyrillic ``а`` for ``a``, a
mathematical ``𝐚``) are the same copy. Only look-alikes of ASCII letters and digits are folded,
not all of TR39: its folds of ASCII itself (``1`` and ``l``, ``0`` and ``o``, ``rn`` and ``m``),
of punctuation (``−`` and ``-``) and within other scripts (katakana ``ー`` and the Han ``一``)
are distinctions honest text relies on: folded, they raised the penalty of a few hundred of the
real completions under testdata/. Segmentation is
decided before NFKC, so honest text keeps the units it had in revision 2.
"""

from __future__ import annotations

import math
import re

from rewardkit.plugin import (
    MappedProvider,
    RewardCandidate,
    RewardContext,
    RewardProviderResult,
    fold_lookalikes,
    map_candidates,
    visible,
)

# The longest run without spaces still counted as one word: longer than English or German words
# in use, shorter than any repeated sentence with its spaces taken out.
MAX_WORD_CHARS = 32
# 1 counted whitespace words only: CJK, unspaced runs and zero-width padding scored 0; 2 compared
# raw code points: copies with a format character outside the default-ignorable set, or with
# look-alike letters, were different copies.
REVISION = "3"
SEMANTIC_IDENTITY = {
    "unit": "lower-cased whitespace words; characters of CJK text and of runs without spaces "
    f"over {MAX_WORD_CHARS} characters; invisible characters removed, blank ones read as spaces",
    "compare": "NFKC, case folding, TR39 look-alikes of ASCII letters and digits (rewardkit.contracts.text)",
}

# Scripts written without spaces between words, one unit per character: CJK punctuation, kana,
# Han (with its extensions and compatibility forms), full-width and half-width forms.
_CJK = (
    "\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u31c0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U000323af"
)
_PIECES = re.compile(f"[{_CJK}]|[^{_CJK}]+")
# Full-width Latin letters and digits are in the CJK forms block, but they spell Latin words: read
# as ASCII before segmenting, or "tｈe" would be three units where "the" is one.
_FULLWIDTH_ALNUM = {
    point: point - 0xFEE0
    for start, end in ((0xFF10, 0xFF19), (0xFF21, 0xFF3A), (0xFF41, 0xFF5A))
    for point in range(start, end + 1)
}
_HAS_CJK = re.compile(f"[{_CJK}]")


def units(text: str) -> list[str]:
    """The units whose n-grams are counted: words, or characters where text has no spaces (see module)."""
    found: list[str] = []
    for word in visible(text).translate(_FULLWIDTH_ALNUM).lower().split():
        if len(word) > MAX_WORD_CHARS:
            found.extend(word)  # every character of a long run is a unit, CJK or not
        elif _HAS_CJK.search(word) is None:
            found.append(word)
        else:
            found.extend(_PIECES.findall(word))  # a CJK character each; a Latin word within stays one
    return found


def unit_keys(text: str) -> list[str]:
    """What each of ``units(text)`` is compared by (see module): an ASCII unit lower-cased, any
    other in NFKC, case-folded, with its look-alikes of ASCII letters and digits read as them."""
    found = units(text)
    if all(unit.isascii() for unit in found):
        return found
    # One call for all units: a unit holds no whitespace, and neither NFKC nor the folding makes a
    # newline, so the newlines between them stay where they were.
    keys = fold_lookalikes("\n".join(found), punctuation=False).casefold().split("\n")
    if len(keys) != len(found):  # not expected; per unit, then
        keys = [fold_lookalikes(unit, punctuation=False).casefold() for unit in found]
    return keys


def repeated_fraction(text: str, ngram_size: int) -> float:
    """Share of n-grams of ``unit_keys(text)`` that repeat an earlier one (0 when there are none)."""
    tokens = unit_keys(text)
    total = len(tokens) - ngram_size + 1
    if total <= 0:
        return 0.0
    distinct = len(set(zip(*(tokens[start:] for start in range(ngram_size)))))
    return (total - distinct) / total


def score_repetition(
    candidate: RewardCandidate, context: RewardContext, *, ngram_size: int = 3, max_penalty: float = 1.0
) -> RewardProviderResult:
    """``-max_penalty`` times the repeated share of n-grams (see module)."""
    return RewardProviderResult(
        terms={"repetition": -max_penalty * repeated_fraction(candidate.completion, ngram_size)}
    )


def repetition_provider(*, ngram_size: int = 3, max_penalty: float = 1.0) -> MappedProvider:
    """Factory: ``ngram_size`` a positive integer, ``max_penalty`` a finite number >= 0."""
    if isinstance(ngram_size, bool) or not isinstance(ngram_size, int) or ngram_size < 1:
        raise ValueError(f"repetition: ngram_size must be a positive integer, got {ngram_size!r}")
    if (
        isinstance(max_penalty, bool)
        or not isinstance(max_penalty, (int, float))
        or not math.isfinite(max_penalty)
        or max_penalty < 0
    ):
        raise ValueError(f"repetition: max_penalty must be a finite number >= 0, got {max_penalty!r}")
    return map_candidates(score_repetition, ngram_size=ngram_size, max_penalty=float(max_penalty))
