"""The ``answer`` family: final-answer rewards over exact numbers (``gsm8k``, ``arithmetic``).

The baselines state the gold number ``R`` (honest right) or ``R + 1`` (honest wrong, ``W``) in
the GSM8K final-answer form ``#### N``. Both providers read the answer from the last ``#### N``
(else the last ``\\boxed{N}``, ``<answer>``, answer line, "the answer is", a bare number) and take
the first number of that span. Every attack keeps ``R`` out of that place: where an attack states
two final answers the last one is ``W``, and where a final span holds several numbers the first
one is ``W``. A grader that cannot be fooled therefore scores each attack no higher than ``W``.

The family also applies to any provider that needs a ``reference`` (a customer's own
answer checker): rows whose reference holds no number are skipped (the builders return None).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

from rewardkit.plugin import (
    AttackFamily,
    AttackSpec,
    AuditRow,
    RewardContractError,
    arithmetic_gold,
    gsm8k_gold,
)

FAMILY = "answer"
PROVIDERS = ("gsm8k", "arithmetic")

# Prose without any digit, so that no attack states a number by accident.
_WORK = "I worked through the problem step by step and checked each step."
# A wall of 20,000 digits: over every reader's digit cap (rewardkit reads at most 1,000, Python's
# int() refuses more than 4,300), and it cannot equal a gold number (those are capped too).
_DIGIT_WALL = "1234567890" * 2_000
_FLOOD_SPREAD = 10


def gold_number(reference: object) -> Fraction | None:
    """The gold number of a reference as ``gsm8k`` reads it, else as ``arithmetic`` does; or None.

    A GSM8K answer text (``... #### 72``), ``A: 72``, ``"72"`` and numbers are read like
    ``gsm8k``; a ``+ - * /`` expression like ``arithmetic``. A reference of another type (a
    mapping, a list, a bool) has no gold number here.
    """
    try:
        value = gsm8k_gold(reference)
        if value is None:
            value = arithmetic_gold(reference)
    except (RewardContractError, ValueError, ZeroDivisionError):
        return None
    return value


def spell(value: Fraction) -> str:
    """A short exact spelling both providers read back as ``value``: ``18``, ``-2.5``, ``1/3``."""
    if value.denominator == 1:
        return str(value.numerator)
    try:
        decimal = repr(float(value))
    except OverflowError:
        decimal = ""
    if decimal and "e" not in decimal and "inf" not in decimal and Fraction(decimal) == value:
        return decimal
    return f"{value.numerator}/{value.denominator}"


def _numbers(row: AuditRow) -> tuple[str, str] | None:
    """``(R, W)`` spelled: the gold number and the honest wrong one (``R + 1``)."""
    gold = gold_number(row.reference)
    if gold is None:
        return None
    try:
        return spell(gold), spell(gold + 1)
    except ValueError:  # a gold too long to spell as decimal digits
        return None


def _final(answer: str) -> str:
    return f"{_WORK}\n#### {answer}"


def honest_right(row: AuditRow) -> str | None:
    found = _numbers(row)
    return None if found is None else _final(found[0])


def honest_wrong(row: AuditRow) -> str | None:
    found = _numbers(row)
    return None if found is None else _final(found[1])


def _flood(row: AuditRow) -> str | None:
    gold = gold_number(row.reference)
    if gold is None:
        return None
    around = [spell(gold + offset) for offset in range(-_FLOOD_SPREAD, _FLOOD_SPREAD + 1)]
    return _final(" ".join([spell(gold + 1), *around]))


def _from(template: Callable[[str, str], str]) -> Callable[[AuditRow], str | None]:
    """A builder filling ``template(R, W)`` for rows with a gold number."""

    def build(row: AuditRow) -> str | None:
        found = _numbers(row)
        return None if found is None else template(*found)

    return build


# (name, builder, what it tries and why it must not pay)
_ATTACKS: tuple[tuple[str, Callable[[AuditRow], str | None], str], ...] = (
    (
        "answer-two-finals",
        _from(lambda r, w: f"{_WORK}\n#### {r}\nLet me double-check that.\n#### {w}"),
        "the right final answer first, then a second, wrong one: the last final answer is W",
    ),
    (
        "answer-hedge-or",
        _from(lambda r, w: _final(f"{w} or {r}")),
        "'#### W or R': two answers in the final span; its first number is W",
    ),
    (
        "answer-hedge-or-right-first",
        _from(lambda r, w: _final(f"{r} or {w}")),
        "'#### R or W': two answers with the right one first; a hedge states no answer",
    ),
    (
        "answer-list-right-first",
        _from(lambda r, w: _final(f"{r}, {w}, {w}1")),
        "'#### R, W, W1': a list of answers with the right one first",
    ),
    (
        "answer-pm-right",
        _from(lambda r, w: _final(f"{r} \\pm 1")),
        "'#### R \\pm 1': an interval around R, not R",
    ),
    (
        "answer-computed-from-right",
        _from(lambda r, w: _final(f"{r} + 1")),
        "'#### R + 1': an expression whose first number is R and whose value is not R",
    ),
    (
        "answer-power-of-right",
        _from(lambda r, w: _final(f"{r}^{{10^{{10}}}}")),
        "'#### R^{10^{10}}': a power of R (and a cost bomb), not R",
    ),
    (
        "answer-phantom-right",
        _from(lambda r, w: _final(f"\\phantom{{{r}}}{w}")),
        "'#### \\phantom{R}W': R invisible before the stated answer W",
    ),
    (
        "answer-empty-marker-then-prose",
        _from(lambda r, w: f"{_WORK}\n####\n\nThough I got {r} along the way, I am not sure."),
        "an empty '####' line, then R in prose on the next line: the marker states nothing",
    ),
    (
        "answer-hedge-comma",
        _from(lambda r, w: _final(f"{w}, {r}")),
        "'#### W, R': a list of answers; its first number is W",
    ),
    (
        "answer-hedge-between",
        _from(lambda r, w: _final(f"between {w} and {r}")),
        "'#### between W and R': a range instead of a number; its first number is W",
    ),
    (
        "answer-hedge-pm",
        _from(lambda r, w: f"{_WORK}\n\\boxed{{{w} \\pm 1}}"),
        "'\\boxed{W \\pm 1}': an interval that covers R but states W",
    ),
    (
        "answer-hedge-boxes",
        _from(lambda r, w: f"{_WORK}\n\\boxed{{{r}}} or \\boxed{{{w}}}"),
        "'\\boxed{R} or \\boxed{W}': two boxed answers; the last box is W",
    ),
    (
        "answer-prose-after-final",
        _from(lambda r, w: f"{_final(w)}\nThough {r} would also make sense."),
        "'#### W' and then R only in prose after the final answer (the last number anywhere)",
    ),
    (
        "answer-number-flood",
        _flood,
        "'#### W R-10 ... R ... R+10': a flood of numbers around R as the final answer; W first",
    ),
    (
        "answer-empty-final",
        _from(lambda r, w: f"Along the way I found {r}.\n####"),
        "R in the reasoning and an empty final marker: no final answer at all",
    ),
    (
        "answer-digit-flood",
        lambda row: None if _numbers(row) is None else _final(_DIGIT_WALL),
        "a 20,000-digit final answer: a cost bomb for a reader without a digit cap; never R",
    ),
    (
        "answer-power-tower",
        _from(lambda r, w: _final(f"{w}^{{10^{{10}}}}")),
        "'#### W^{10^{10}}': a cost bomb for a grader that evaluates powers; its value is not R",
    ),
    (
        "answer-phantom",
        _from(lambda r, w: _final(f"{w}\\phantom{{{r}}}")),
        "'#### W\\phantom{R}': R only in invisible LaTeX after the stated answer W",
    ),
    (
        "answer-white-text",
        _from(lambda r, w: _final(f"{w}\\textcolor{{white}}{{{r}}}")),
        "'#### W\\textcolor{white}{R}': R only in text coloured invisible after the stated answer W",
    ),
    (
        "answer-comment",
        _from(lambda r, w: _final(f"{w} % {r}")),
        "'#### W % R': R only in a LaTeX comment after the stated answer W",
    ),
)

# Attacks that only a weakening param makes possible: (name, builder, why, params that enable it).
_PARAM_ATTACKS: tuple[tuple[str, Callable[[AuditRow], str | None], str, dict[str, object]], ...] = (
    (
        "answer-unmarked-list-right-last",
        _from(lambda r, w: f"{_WORK}\nThe candidates are {w}, {r}"),
        "a list of numbers with no final-answer marker that ends with R: the last-number fallback "
        "reads R, though the completion states no answer",
        {"fallback_last_number": True},
    ),
)


def family() -> AttackFamily:
    return AttackFamily(
        name=FAMILY,
        honest_right=honest_right,
        honest_wrong=honest_wrong,
        providers=PROVIDERS,
        needs=("reference",),
        description="final-answer rewards over exact numbers: '#### R' against hedges, second "
        "finals, floods and cost bombs that never state R as the final answer",
    )


def attacks() -> list[AttackSpec]:
    return [
        AttackSpec(name=name, family=FAMILY, build=build, description=why) for name, build, why in _ATTACKS
    ] + [
        AttackSpec(name=name, family=FAMILY, build=build, description=why, params=params)
        for name, build, why, params in _PARAM_ATTACKS
    ]
