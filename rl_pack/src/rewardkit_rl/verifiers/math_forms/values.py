"""Leaves: parsing one plain expression, and deciding whether two of them are equal.

Parsing is math-verify's LaTeX parser (never its plain-text one, which evaluates Python). Equality
is math-verify's ``verify`` on the two parsed leaves, with guards where it is more lenient than a
reward may be:

- a number written in a base (``1101_4``) is compared digit for digit, base included;
- when both sides give units in ``\\text{}`` (``440\\text{ cm}^2``), the numbers and exponents in
  the units must agree; a ``\\text{}`` group is taken off only when it holds a unit (``UNIT_WORDS``),
  so ``3\\text{ or 4}`` is not ``3``;
- a percent answer (``50\\%``) equals a reference written as that percent or as the same number
  (``50``), never one 100 times smaller (``0.5``): math-verify's rule that ``50\\%`` equals both
  ``50`` and ``0.5`` only applies when the reference is itself a percent;
- two numeric values math-verify calls equal must also agree to a relative 1e-12 (math-verify
  rounds to 6 decimal places, so ``1/2004!`` "equals" ``1/1004!``); when a decimal is involved,
  they must agree to half a unit in the last place of the most precise decimal, and at least to
  6 decimal places (``1/3`` equals ``0.333333`` but ``0.1234567`` does not equal ``0.1234568``).
"""

from __future__ import annotations

import logging
import re
from decimal import Decimal
from functools import lru_cache
from typing import Any

import sympy
from latex2sympy2_extended import NormalizationConfig
from math_verify import LatexExtractionConfig, parse, verify
from sympy.core.function import AppliedUndef

from rewardkit_rl.verifiers.math_forms.latex import strip_text, text_groups

logging.getLogger("math_verify").setLevel(logging.ERROR)

# math-verify's own normalisation, less its unit stripping: that drops a trailing letter it takes
# for a unit (``5 + 9t`` parses as ``5 + 9``, ``2\\pi r h`` as ``2\\pi r``). Units written in
# ``\\text{}`` are taken off here instead (``_without_units``).
_NORMALISATION = NormalizationConfig(
    basic_latex=True, units=False, malformed_operators=True, nits=True, boxed="all", equations=False
)
_LATEX_ONLY = (LatexExtractionConfig(boxed_match_priority=0, normalization_config=_NORMALISATION),)
_TRIG_DEGREES = re.compile(r"\\(?:sin|cos|tan|sec|csc|cot)(?![a-zA-Z])")
_DEGREES = re.compile(r"(\d+(?:\.\d+)?)\s*\^\s*\{?\s*\\circ\s*\}?")
_PRECISION = 40
_RELATIVE = sympy.Rational(1, 10**12)


class Unparseable(Exception):
    """A leaf of the answer (or the reference) could not be parsed as mathematics."""


# What a ``\\text{}`` group may hold to be taken off as a unit: each of its words (split at
# spaces, ``/``, ``-`` and ``^``, a trailing dot dropped, exponents in digits allowed) is one of
# these. Anything else (``\\text{ or 4}``, ``\\text{ (or maybe 4)}``) stays in the leaf, which
# then does not equal a bare number. ``\\text{ percent}`` is the number it follows (as a percent
# answer is, see ``leaf_equal``).
UNIT_WORDS = frozenset(
    str.split(
        """
    m meter meters metre metres km kilometer kilometers kilometre kilometres cm centimeter
    centimeters centimetre centimetres mm millimeter millimeters millimetre millimetres nm um
    in inch inches ft foot feet yd yard yards mi mile miles nautical league leagues
    square sq cubic cu units unit per
    l liter liters litre litres ml milliliter milliliters millilitre millilitres cl dl
    gal gallon gallons qt quart quarts pt pint pints cup cups oz ounce ounces fl tbsp tsp
    g gm gram grams kg kilogram kilograms mg milligram milligrams lb lbs pound pounds ton tons
    tonne tonnes
    s sec secs second seconds min mins minute minutes h hr hrs hour hours day days week weeks
    month months year years yr yrs decade decades century centuries ms millisecond milliseconds
    a.m p.m am pm o'clock
    mph kph kmh knot knots rpm
    deg degree degrees radian radians rad rads °
    dollar dollars cent cents \\$ $ usd euro euros € £ yen ¥ yuan rupee rupees
    pence penny pennies dime dimes nickel nickels quarter quarters
    acre acres hectare hectares
    n newton newtons j joule joules w watt watts kw kwh v volt volts a amp amps ampere amperes
    ohm ohms hz hertz pa kpa atm bar cal calorie calories kcal
    k kelvin c f celsius fahrenheit
    byte bytes kb mb gb tb bit bits
    way ways people person persons student students teacher teachers child children adult adults
    man men woman women boy boys girl girls member members player players team teams
    point points edge edges vertex vertices face faces side sides diagonal diagonals
    digit digits integer integers number numbers term terms multiple multiples divisor divisors
    factor factors
    meal meals ticket tickets book books apple apples coin coins card cards marble marbles ball
    balls car cars page pages box boxes egg eggs item items piece pieces game games times
    handshake handshakes line lines triangle triangles squares cube cubes
    percent percentage pct
    """
    )
)
_UNIT_SPLIT = re.compile(r"[\s/\-]+|\^\s*\{?\s*-?\d+\s*\}?|\\,|\\;|\\ ")


def is_unit(content: str) -> bool:
    """Whether the content of a ``\\text{}`` group is a unit (see ``UNIT_WORDS``)."""
    words = [word.rstrip(".") for word in _UNIT_SPLIT.split(content.strip().lower())]
    words = [word for word in words if word]
    return bool(words) and all(word in UNIT_WORDS for word in words)


def _without_units(latex: str) -> str:
    """``latex`` less its ``\\text{...}`` groups that hold a unit (and an exponent after one),
    unless nothing else is left; degrees inside a trigonometric function become radians."""
    stripped = latex
    for start, end, content in reversed(text_groups(latex)):
        if not is_unit(content):
            continue
        exponent = _UNIT_EXPONENT.match(stripped, end)
        stripped = stripped[:start] + " " + stripped[exponent.end() if exponent else end :]
    stripped = stripped.strip()
    if not stripped or not re.search(r"[\w\\]", stripped):
        stripped = latex
    if _TRIG_DEGREES.search(stripped):
        stripped = _DEGREES.sub(r"(\1\\cdot\\frac{\\pi}{180})", stripped)
    return stripped


@lru_cache(maxsize=8192)
def parse_leaf(latex: str) -> Any:
    """The SymPy value of one leaf, or None when math-verify cannot parse it. The letter ``i``
    is the imaginary unit (as math-verify reads it when it compares complex numbers)."""
    found = parse(
        "\\boxed{" + _without_units(latex) + "}",
        extraction_config=_LATEX_ONLY,
        fallback_mode="no_fallback",
        extraction_mode="first_match",
        parsing_timeout=None,  # type: ignore[arg-type]
    )
    for item in found:
        if isinstance(item, (sympy.Basic, sympy.MatrixBase)):
            if isinstance(item, sympy.Basic):
                unit = [symbol for symbol in item.free_symbols if symbol.name == "i"]
                if unit:
                    item = item.subs(unit[0], sympy.I)
            return item
    return None


def value(latex: str) -> Any:
    """``parse_leaf`` that raises ``Unparseable`` instead of returning None."""
    parsed = parse_leaf(latex)
    if parsed is None:
        raise Unparseable(f"could not parse {latex[:60]!r}")
    return parsed


def is_closed_form(latex: str) -> bool:
    """A number written as an expression: no free variables, no unknown functions."""
    parsed = parse_leaf(latex)
    return (
        isinstance(parsed, sympy.Expr)
        and not parsed.free_symbols
        and not parsed.atoms(AppliedUndef)
        and not isinstance(parsed, (sympy.Set, sympy.Tuple))
    )


def _evaluated(expression: Any) -> Any:
    """Unevaluated wrappers (``gcd``, limits, sums) worked out; the expression itself on failure."""
    try:
        return expression.doit()
    except Exception:
        return expression


def number(latex: str) -> sympy.Expr | None:
    """High-precision numeric value of a closed-form leaf (complex allowed), else None."""
    if not is_closed_form(latex):
        return None
    try:
        evaluated = sympy.N(_evaluated(parse_leaf(latex)), _PRECISION)
    except Exception:
        return None
    return evaluated if evaluated.is_number else None


def _is_zero(number: sympy.Expr) -> bool:
    """Zero, or a value SymPy could only bound near zero (``sin(pi)`` evaluates to ``0.e-191``)."""
    if number == 0:
        return True
    return all(
        part == 0 or (isinstance(part, sympy.Float) and part._prec < 8) for part in number.as_real_imag()
    )


_NOT_FINITE = (sympy.S.Infinity, sympy.S.NegativeInfinity, sympy.S.ComplexInfinity, sympy.S.NaN)
_REAL_INFINITIES = (sympy.S.Infinity, sympy.S.NegativeInfinity)


def is_finite_number(number: sympy.Expr) -> bool:
    """Whether an evaluated number is finite: no infinity (real or complex, ``\\frac{1}{0}``), no
    NaN (``\\frac{0}{0}``) anywhere in it (``\\infty i`` is not finite either)."""
    return number.is_finite is not False and not number.has(*_NOT_FINITE)


def same_number(first: sympy.Expr, second: sympy.Expr) -> bool | None:
    """Two closed-form numbers that agree to a relative 1e-12 (or whose difference is zero);
    None when they cannot be evaluated. An infinity equals only the same real infinity, and NaN
    and complex infinity equal nothing: "within 1e-12 of the larger" would hold between an
    infinity and every number, the scale being infinite too (issue 41)."""
    try:
        first, second = _evaluated(first), _evaluated(second)
        first_number, second_number = sympy.N(first, _PRECISION), sympy.N(second, _PRECISION)
        if not (is_finite_number(first_number) and is_finite_number(second_number)):
            return first_number in _REAL_INFINITIES and first_number == second_number
        difference = sympy.N(first - second, _PRECISION)
        if _is_zero(difference):
            return True
        if not difference.is_number:
            return None
        scale = max(abs(sympy.N(first, _PRECISION)), abs(sympy.N(second, _PRECISION)))
        return bool(abs(difference) <= _RELATIVE * scale)
    except Exception:
        return None


# -- decimals --------------------------------------------------------------------------------

_DECIMAL_LITERAL = re.compile(r"(?<![\d.])\d*\.(\d+)")
_PLAIN_DECIMAL = re.compile(
    r"(?P<sign>[-+]?)\s*(?P<int>\d*)(?:\.(?P<frac>\d+))?"
    r"(?:\s*(?:\\times|\\cdot|\*)\s*10\s*\^\s*\{?\s*(?P<exp>[-+]?\d+)\s*\}?)?"
)


def decimal_places(latex: str) -> int:
    """The most digits after a decimal point in any decimal literal of ``latex`` (0 if none)."""
    outside = latex
    for start, end, _ in reversed(text_groups(latex)):
        outside = outside[:start] + outside[end:]
    return max((len(match.group(1)) for match in _DECIMAL_LITERAL.finditer(outside)), default=0)


def plain_decimal(latex: str) -> tuple[Decimal, Decimal] | None:
    """``(value, unit in the last place)`` of a number written in digits (``-0.912``,
    ``6.0 \\times 10^{3}``); None for anything else."""
    match = _PLAIN_DECIMAL.fullmatch(latex.replace("{,}", "").strip())
    if match is None or not (match.group("int") or match.group("frac")):
        return None
    frac = match.group("frac") or ""
    exponent = int(match.group("exp") or 0)
    digits = Decimal((match.group("int") or "0") + ("." + frac if frac else ""))
    scale = Decimal(10) ** exponent
    sign = -1 if match.group("sign") == "-" else 1
    return sign * digits * scale, Decimal(10) ** (exponent - len(frac))


# -- guards ----------------------------------------------------------------------------------

_BASE_NUMERAL = re.compile(
    r"(?:\\text\{)?([-+]?[0-9A-Z]*[0-9][0-9A-Z]*(?:\.[0-9A-Z]+)?)\}?_\{?\s*(\d+)\s*\}?"
)
_PLAIN_NUMERAL = re.compile(r"[-+]?[0-9A-Z]*[0-9][0-9A-Z]*(?:\.[0-9A-Z]+)?")
_BASE_MARK = re.compile(r"[0-9A-Z]\}?_\{?\s*(\d+)")
_UNIT_EXPONENT = re.compile(r"\s*\^\s*\{?\s*([-+]?\d+)\s*\}?")
_PERCENT = re.compile(r"\\text\s*\{\s*\\?%\s*\}|\\?%")


def _numeral(latex: str) -> tuple[str, str | None] | None:
    text = latex.strip()
    match = _BASE_NUMERAL.fullmatch(text)
    if match is not None:
        return match.group(1).upper().lstrip("0") or "0", match.group(2)
    if _PLAIN_NUMERAL.fullmatch(text):
        return text.lstrip("0") or "0", None
    return None


def _unit_marks(latex: str) -> tuple[str, ...] | None:
    """Digits and exponents written in the units (``\\text{ cm}^2`` -> ``("^2",)``); None when
    the leaf has no ``\\text{}``."""
    groups = text_groups(latex)
    if not groups:
        return None
    marks: list[str] = []
    for _, end, content in groups:
        marks.extend(re.findall(r"\d+", content))
        exponent = _UNIT_EXPONENT.match(latex, end)
        if exponent is not None:
            marks.append("^" + exponent.group(1))
    return tuple(marks)


def _numbers_agree(gold: Any, answer: Any, decimals: int) -> bool:
    """The numeric guard described in the module docstring (True when either is not a number)."""
    if not isinstance(gold, sympy.Expr) or not isinstance(answer, sympy.Expr):
        return True
    if gold.free_symbols or answer.free_symbols or gold.atoms(AppliedUndef) or answer.atoms(AppliedUndef):
        return True
    try:
        first, second = sympy.N(gold, _PRECISION), sympy.N(answer, _PRECISION)
        if not (first.is_number and second.is_number):
            return True
        if not (first.is_finite and second.is_finite):
            return bool(first == second)
        if decimals or gold.atoms(sympy.Float) or answer.atoms(sympy.Float):
            places = max(decimals, 6)
            limit = sympy.Rational(1, 2) * sympy.Rational(1, 10**places) * (1 + _RELATIVE)
            return bool(abs(first - second) <= limit)
        return same_number(gold, answer) is not False
    except Exception:
        return True


def differ_somewhere(gold: Any, answer: Any) -> bool:
    """Whether two expressions in variables take different values at a sample point (a proof
    that they differ, which spares math-verify's ``simplify``). False when it cannot tell: no
    variables, unknown functions, a bare name (math-verify compares ``\\text{ab}`` with ``a b``),
    or a point outside the domain."""
    if not isinstance(gold, sympy.Expr) or not isinstance(answer, sympy.Expr):
        return False
    names = sorted(gold.free_symbols | answer.free_symbols, key=str)
    if not names or gold.atoms(AppliedUndef) or answer.atoms(AppliedUndef):
        return False
    for side in (gold, answer):
        if isinstance(side, sympy.Symbol) or (
            isinstance(side, sympy.Mul) and all(isinstance(f, sympy.Symbol) for f in side.args)
        ):
            return False
    point = {name: sympy.Rational(7 + 3 * index, 11 + 2 * index) for index, name in enumerate(names)}
    try:
        first = sympy.N(gold.subs(point), _PRECISION)
        second = sympy.N(answer.subs(point), _PRECISION)
        if not (first.is_number and second.is_number and first.is_finite and second.is_finite):
            return False
        scale = max(abs(first), abs(second), 1)
        return bool(abs(first - second) > sympy.Rational(1, 10**9) * scale)
    except Exception:
        return False


def text_key(latex: str) -> str:
    """Words compared as text: ``\\text{}`` unwrapped, case, spacing and punctuation dropped."""
    text = strip_text(latex).lower()
    return re.sub(r"[\s{}()\\.$'`\"]|mathrm|textbf|text", "", text)


def leaf_equal(gold: str, answer: str) -> bool:
    """Whether two leaves are the same value (raises ``Unparseable`` for an answer that does not
    parse; the reference is parse-checked before any answer is compared)."""
    if gold == answer:
        return True
    if "%" in answer and "%" not in gold:
        # 50\\% answers 50 (the same number, with %), never 0.5 nor 5000: one answer may not cover
        # two values 100 apart. Only a reference that is itself a percent has math-verify's rule.
        number = _PERCENT.sub(" ", answer).strip()
        return bool(number) and "%" not in number and leaf_equal(gold, number)
    gold_numeral, answer_numeral = _numeral(gold), _numeral(answer)
    if (gold_numeral and gold_numeral[1]) or (answer_numeral and answer_numeral[1]):
        if gold_numeral is None or answer_numeral is None:
            return False
        same_digits = gold_numeral[0] == answer_numeral[0]
        return same_digits and (answer_numeral[1] is None or answer_numeral[1] == gold_numeral[1])
    gold_bases, answer_bases = _BASE_MARK.findall(gold), _BASE_MARK.findall(answer)
    if gold_bases and answer_bases and sorted(gold_bases) != sorted(answer_bases):
        return False  # 101_2 + 11_2 is not 101_3 + 11_3, although math-verify drops the bases
    gold_units, answer_units = _unit_marks(gold), _unit_marks(answer)
    if gold_units is not None and answer_units is not None and gold_units != answer_units:
        return False
    gold_value, answer_value = value(gold), value(answer)
    if differ_somewhere(gold_value, answer_value):
        return False
    if not verify([gold_value], [answer_value], timeout_seconds=None):  # type: ignore[arg-type]
        return False
    if "%" in gold:
        return True  # math-verify's own rule: 10\\% equals 10 and 0.1
    return _numbers_agree(gold_value, answer_value, max(decimal_places(gold), decimal_places(answer)))
