"""Reading a math completion's final answer, and the cheap exact comparison tried before math-verify.

Most answers are plain integers or fractions that match the reference character for character
after light normalisation; those are decided here in microseconds. Only the rest go to the
worker pool.
"""

from __future__ import annotations

import re
from fractions import Fraction

from rewardkit.builtin.answers import last_answer_tag, last_boxed

_FINAL_ANSWER = re.compile(r"final\s+answer(?:\s+is)?[ \t]*[:：]?[ \t]*(?P<span>[^\n]+)", re.IGNORECASE)
_HOPE = re.compile(r"\.?\s*I hope it is correct\.?\s*$", re.IGNORECASE)
_INLINE_MATH = re.compile(r"\$(?P<math>[^$]+)\$|\\\((?P<paren>.+?)\\\)")
_SPACING = re.compile(r"\\left|\\right|\\displaystyle|\\[!,;: ]|\s+")
_INTEGER = re.compile(r"-?\d+")
_DECIMAL = re.compile(r"-?\d+\.\d+")
_SLASH = re.compile(r"(-?\d+)/(\d+)")
_LATEX_FRACTION = re.compile(r"(-?)\\frac\{(-?\d+)\}\{(\d+)\}")
# A reference stating a relation is never settled by spelling alone: the workers check that it
# is true (``\log_6(216)=4`` is not) before anything can equal it.
_RELATION = re.compile(r"[=<>≈≤≥≠]|\\(?:approx|le|ge|leq|geq|ne|neq|lt|gt|leqslant|geqslant)(?![a-zA-Z])")


def extract_answer(text: str) -> tuple[str, str] | None:
    """``(answer, form)`` from the last ``\\boxed{}``, else the last ``<answer>``, else a
    "final answer" phrase; None when the completion states no answer."""
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed.strip(), "boxed"
    tagged = last_answer_tag(text)
    if tagged is not None:
        inner = last_boxed(tagged)
        return (inner if inner is not None else tagged).strip(), "answer-tag"
    span = None
    for match in _FINAL_ANSWER.finditer(text):
        span = match.group("span")
    if span is None:
        return None
    span = _HOPE.sub("", span)
    inline = _INLINE_MATH.search(span)
    if inline is not None:
        span = inline.group("math") or inline.group("paren")
    span = span.strip().rstrip(".").strip()
    return (span, "final-answer") if span else None


def normalise(answer: str) -> str:
    """Spacing-free form used for the character-for-character comparison."""
    answer = answer.strip().strip("$")
    answer = answer.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    answer = _SPACING.sub("", answer)
    return answer.rstrip(".")


def exact_value(normalised: str) -> tuple[Fraction, bool] | None:
    """``(value, is_decimal)`` when the answer is a plain integer, decimal or simple fraction."""
    if _INTEGER.fullmatch(normalised):
        return Fraction(int(normalised)), False
    if _DECIMAL.fullmatch(normalised):
        return Fraction(normalised), True
    match = _SLASH.fullmatch(normalised)
    if match is not None and int(match.group(2)) != 0:
        return Fraction(int(match.group(1)), int(match.group(2))), False
    match = _LATEX_FRACTION.fullmatch(normalised)
    if match is not None and int(match.group(3)) != 0:
        value = Fraction(int(match.group(2)), int(match.group(3)))
        return (-value if match.group(1) else value), False
    return None


def fast_verdict(gold: str, answer: str) -> bool | None:
    """True/False when a cheap exact comparison settles it; None when math-verify must decide.

    A False is only given when both sides are exact integers or fractions, never for decimals,
    because math-verify compares decimals with a tolerance that this path must not contradict.
    A reference that states a relation always goes to the workers.
    """
    gold_form, answer_form = normalise(gold), normalise(answer)
    if gold_form == answer_form:
        return None if _RELATION.search(gold_form) else True
    gold_value, answer_value = exact_value(gold_form), exact_value(answer_form)
    if gold_value is None or answer_value is None:
        return None
    if gold_value[0] == answer_value[0]:
        return True
    if gold_value[1] or answer_value[1]:
        return None
    return False
