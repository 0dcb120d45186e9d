"""The ``repetition`` verifier: a penalty for repeating the same n-grams of words or characters.

The penalty is ``-max_penalty * repeated / total`` over the completion's n-grams, where
``repeated`` counts every n-gram occurrence after its first. A completion shorter than one n-gram
has nothing to repeat and gets 0.

The units (``units``): the completion is lower-cased, invisible characters are removed (Unicode's
Default_Ignorable_Code_Point set: U+200B, U+200C, U+200D, U+2060, U+FEFF, the soft hyphen,
bidirectional marks, variation selectors, ...) and it is split at whitespace. A piece of ordinary
words is a unit, so whitespace-delimited text scores what it did in revision 1. Text written
without spaces is segmented by character instead: every CJK character (Han, kana, CJK punctuation
and full-width forms) is a unit of its own, and so is every character of a run without spaces
longer than ``MAX_WORD_CHARS`` (``"abc" * 2000``, a sentence repeated with no space between the
copies). Padding copies with different numbers of zero-width characters therefore hides nothing.
"""

from __future__ import annotations

import math
import re

from rewardkit.contracts import RewardCandidate, RewardContext, RewardProviderResult
from rewardkit.pointwise import MappedProvider, map_candidates

# The longest run without spaces still counted as one word: longer than English or German words
# in use, shorter than any repeated sentence with its spaces taken out.
MAX_WORD_CHARS = 32
REVISION = "2"  # 1 counted whitespace words only: CJK, unspaced runs and zero-width padding scored 0
SEMANTIC_IDENTITY = {
    "unit": "lower-cased whitespace words; characters of CJK text and of runs without spaces "
    f"over {MAX_WORD_CHARS} characters; default-ignorable characters removed"
}

# Unicode DerivedCoreProperties.txt, Default_Ignorable_Code_Point: characters that render as nothing.
_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
# Scripts written without spaces between words, one unit per character: CJK punctuation, kana,
# Han (with its extensions and compatibility forms), full-width and half-width forms.
_CJK = (
    "\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u31c0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U000323af"
)
_PIECES = re.compile(f"[{_CJK}]|[^{_CJK}]+")
_HAS_CJK = re.compile(f"[{_CJK}]")


def units(text: str) -> list[str]:
    """The units whose n-grams are counted: words, or characters where text has no spaces (see module)."""
    found: list[str] = []
    for word in _IGNORABLE.sub("", text.lower()).split():
        if len(word) > MAX_WORD_CHARS:
            found.extend(word)  # every character of a long run is a unit, CJK or not
        elif _HAS_CJK.search(word) is None:
            found.append(word)
        else:
            found.extend(_PIECES.findall(word))  # a CJK character each; a Latin word within stays one
    return found


def repeated_fraction(text: str, ngram_size: int) -> float:
    """Share of n-grams of ``units(text)`` that repeat an earlier one (0 when there are none)."""
    tokens = units(text)
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
