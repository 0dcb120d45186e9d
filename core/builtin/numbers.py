"""Reading exact numbers out of model text: thousands separators, currency, units, LaTeX wrappers.
Every value is a ``fractions.Fraction`` so that ``18``, ``18.00`` and ``\\$18`` compare equal and
no float rounding can turn a wrong answer into a right one."""

from __future__ import annotations

import re
from collections.abc import Iterator
from fractions import Fraction
from itertools import islice

MAX_DIGITS = 1000

# A number token: optional sign, digits with comma thousands groups or plain digits, optional
# decimals, optional "/denominator". The look-behind stops a match inside a longer number or word.
NUMBER_PATTERN = re.compile(
    r"(?<![\w.,/])(?P<sign>[-+]?)(?=\.?\d)(?P<int>\d{1,3}(?:,\d{3})+|\d+)?(?P<frac>\.\d+)?"
    r"(?:\s*/\s*(?P<den>\d+))?"
)

_DIGIT = re.compile(r"\d")
_NOT_ONE_VALUE = re.compile(r"[!^±∓]|\\[mp]m\b")
# A superscript digit right after the number makes it a power: ``\d`` does not match ``²``, and
# ``10²`` is 100, not 10 (``18 m²``, a unit, keeps its number).
_POWER_AFTER = re.compile("[⁰¹²³⁴-⁹]")

# LaTeX and Unicode spellings that only dress a number up; removed or replaced before reading it.
_LATEX_FRACTION = re.compile(r"\\[dt]?frac\s*\{\s*([-+]?\d+)\s*\}\s*\{\s*(\d+)\s*\}")
_LATEX_TEXT = re.compile(r"\\(?:text|textbf|mathrm|mbox|mathbf)\s*\{([^{}]*)\}")
_LATEX_SPELLINGS = (("{,}", ","), ("\\,", ""), ("\\!", ""), ("\\ ", " "), ("\\$", ""), ("\\%", "%"))
# The minus sign, an en dash used as minus, and a no-break space.
_UNICODE_SPELLINGS = (("\u2212", "-"), ("\u2013", "-"), ("\u00a0", " "))


def dress_down(text: str) -> str:
    """Strip the LaTeX and Unicode decoration around numbers (``\\$``, ``{,}``, ``\\frac{a}{b}``)."""
    for old, new in (*_LATEX_SPELLINGS, *_UNICODE_SPELLINGS):
        text = text.replace(old, new)
    text = _LATEX_TEXT.sub(r" \1 ", text)
    return _LATEX_FRACTION.sub(r"\1/\2", text)


def _to_fraction(match: re.Match[str]) -> Fraction | None:
    whole, decimals, denominator = match.group("int"), match.group("frac"), match.group("den")
    if whole is None and decimals is None:
        return None
    digits = (whole or "0").replace(",", "") + (decimals or "")
    if len(digits) > MAX_DIGITS:  # a wall of digits is not an answer, and int() refuses it anyway
        return None
    value = Fraction(digits)
    if denominator is not None:
        # int() refuses more than 4,300 digits: a longer denominator would raise, not read as none.
        if decimals is not None or len(denominator) > MAX_DIGITS or int(denominator) == 0:
            return None
        value /= int(denominator)
    return -value if match.group("sign") == "-" else value


def iter_numbers(text: str) -> Iterator[Fraction]:
    """Every number in ``text``, in order, as exact fractions, produced lazily."""
    for match in NUMBER_PATTERN.finditer(dress_down(text)):
        value = _to_fraction(match)
        if value is not None:
            yield value


def first_number(text: str) -> Fraction | None:
    """The first number in ``text`` (the answer in "A: $1,200 per month"), or None."""
    return next(iter_numbers(text), None)


def last_number(text: str) -> Fraction | None:
    """The last number in ``text``, or None."""
    found = list(iter_numbers(text))
    return found[-1] if found else None


def stated_number(text: str) -> Fraction | None:
    """The one number ``text`` states, or None when it holds none, more than one, a digit outside
    that number (``18e5``, ``18,5``) or an operator that makes it a computation or a range
    (``18!``, ``18^2``, ``18 \\pm 1``)."""
    dressed = dress_down(text)
    found = [(m, value) for m in NUMBER_PATTERN.finditer(dressed) if (value := _to_fraction(m)) is not None]
    if len(found) != 1:
        return None
    match, value = found[0]
    rest = dressed[: match.start()] + dressed[match.end() :]
    if _POWER_AFTER.match(dressed, match.end()) is not None:
        return None
    return None if _DIGIT.search(rest) or _NOT_ONE_VALUE.search(rest) else value


def parse_number(text: str) -> Fraction | None:
    """``text`` read as exactly one number, allowing currency, units and separators around it; None
    when there is no number or more than one (so "3 + 4" is not a number)."""
    found = list(islice(iter_numbers(text), 2))
    return found[0] if len(found) == 1 else None
