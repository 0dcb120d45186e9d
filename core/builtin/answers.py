"""Final-answer rewards over exact numbers: ``gsm8k`` and ``arithmetic``.
A completion's answer is read from the first of these forms that is present (the last occurrence
of that form wins): ``#### N``, ``\\boxed{N}``, ``<answer>N</answer>``, an ``A: N`` /
``Answer: N`` / ``Final answer: N`` line, "the answer is N", or a completion that is nothing but
one number. Reading "the last number anywhere" is available as the explicit
``fallback_last_number`` option because it rewards a model that stops mid-sentence.
Values compare as exact fractions after removing thousands separators, currency and units."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import partial

from rewardkit.builtin.expressions import ExpressionError, evaluate
from rewardkit.builtin.numbers import last_number, parse_number, stated_number
from rewardkit.contracts import MetricContribution, RewardCandidate, RewardContext, RewardProviderResult
from rewardkit.errors import RewardContractError

# [ \t]*, not \s*: an empty "####" line must not read the next line of prose as its answer.
_HASH_FORM = re.compile(r"####[ \t]*(?P<span>[^\n]*)")
_ANSWER_LINE = re.compile(
    r"^[ \t*#>_]*(?:A|Answer|Final\s+answer)[\s*_]*[:：][\s*_]*(?P<span>[^\n]*)", re.IGNORECASE | re.MULTILINE
)
_ANSWER_IS = re.compile(r"\bthe\s+(?:final\s+)?answer\s+is\b[\s:*_]*(?P<span>[^\n]*)", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.;!?](?=\s|$)")
_OPERATOR = re.compile(r"[+*/()=]|(?<=[\d\s])-")
_BOX_COMMANDS = ("\\boxed", "\\fbox")
_MAX_BOX_ATTEMPTS = 8
EXTRACTED_ANSWER = "extracted_answer"  # the note naming the text a verifier read as the answer


@dataclass(frozen=True, slots=True)
class FoundAnswer:
    """The text a completion gives as its answer, and which form it was found in."""

    form: str
    span: str


def last_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) with balanced braces, or None."""
    best = max(text.rfind(command) for command in _BOX_COMMANDS)
    # Bounded so that a completion full of unclosed boxes costs linear time, not quadratic.
    for _ in range(_MAX_BOX_ATTEMPTS):
        if best < 0:
            break
        content = _braced_after(text, best)
        if content is not None:
            return content
        # An unbalanced last box: look for an earlier, well-formed one.
        best = max(text.rfind(command, 0, best) for command in _BOX_COMMANDS)
    return None


def last_answer_tag(text: str) -> str | None:
    """Content of the last complete ``<answer>...</answer>``, or None; linear time on any input."""
    end = text.rfind("</answer>")
    if end < 0:
        return None
    start = text.rfind("<answer>", 0, end)
    return None if start < 0 else text[start + len("<answer>") : end]


def _braced_after(text: str, start: int) -> str | None:
    opening = text.find("{", start)
    if opening < 0 or text[start:opening].strip() not in _BOX_COMMANDS:
        return None
    depth = 0
    for index, char in enumerate(text[opening:], opening):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[opening + 1 : index]
    return None


def _last_match(pattern: re.Pattern[str], text: str) -> str | None:
    span = None
    for match in pattern.finditer(text):
        span = match.group("span")
    return span


# The forms an answer is read from, in precedence order (a completion that is one number comes last).
_FORMS: tuple[tuple[str, Callable[[str], str | None]], ...] = (
    ("hash", partial(_last_match, _HASH_FORM)),
    ("boxed", last_boxed),
    ("answer-tag", last_answer_tag),
    ("answer-line", partial(_last_match, _ANSWER_LINE)),
    ("answer-is", partial(_last_match, _ANSWER_IS)),
)


def find_answer(text: str) -> FoundAnswer | None:
    """The completion's stated answer, by the precedence in the module docstring, or None."""
    for form, read in _FORMS:
        span = read(text)
        if span is not None:
            return FoundAnswer(form, span)
    return FoundAnswer("bare", text) if parse_number(text) is not None else None


def stated_part(span: str) -> str:
    """The part of a stated answer its number is read from: its first sentence, and there the part
    after the last ``=`` ("3 + 4 = 7" gives " 7")."""
    span = _SENTENCE_END.split(span, maxsplit=1)[0]
    if "=" in span:
        span = span.rsplit("=", 1)[1]
    return span


def answer_value(span: str) -> Fraction | None:
    """The number a stated answer gives (read from ``stated_part``). That part must state one number
    (``stated_number``): "18 or 19", "18 \\pm 1" or "18^2" state none, so a policy cannot pay itself by
    hedging with the right number first."""
    return stated_number(stated_part(span))


@dataclass(frozen=True, slots=True)
class ReadAnswer:
    """What a completion answered: the number (``None``: none, or not exactly one), the form it was
    found in (``none`` when absent) and the text the number was read from (``None`` when absent)."""

    value: Fraction | None
    form: str
    text: str | None


def read_completion(text: str, fallback_last_number: bool) -> ReadAnswer:
    """The completion's answer, by the precedence in the module docstring."""
    found = find_answer(text)
    if found is not None:
        part = stated_part(found.span)
        return ReadAnswer(stated_number(part), found.form, part.strip())
    if fallback_last_number:
        value = last_number(text)
        if value is not None:
            return ReadAnswer(value, "last-number", str(value))
    return ReadAnswer(None, "none", None)


def completion_value(text: str, fallback_last_number: bool) -> tuple[Fraction | None, str]:
    """The completion's answer as a number and the form it came from (``none`` when absent)."""
    answer = read_completion(text, fallback_last_number)
    return answer.value, answer.form


def _numeric_reference(provider: str, reference: object) -> Fraction | str:
    """A reference that is already a number, or its text (to be read by the caller)."""
    if isinstance(reference, bool) or not isinstance(reference, (int, float, str)):
        raise RewardContractError(
            f"{provider} needs a number or a string reference, got {type(reference).__name__}",
            rule="reference-type",
        )
    if isinstance(reference, float):
        if not math.isfinite(reference):
            raise RewardContractError(
                f"{provider} reference {reference!r} is not finite", rule="reference-value"
            )
        return Fraction(repr(reference))
    if isinstance(reference, int):
        return Fraction(reference)
    return reference


def gsm8k_gold(reference: object) -> Fraction | None:
    """The gold number of a GSM8K reference: a number, ``"... #### N"``, ``"A: N"`` or ``"N"``."""
    value = _numeric_reference("gsm8k", reference)
    if isinstance(value, Fraction):
        return value
    span = _last_match(_HASH_FORM, value)
    if span is not None:
        return answer_value(span)
    bare = parse_number(value)
    if bare is not None:
        return bare
    found = find_answer(value)
    return answer_value(found.span) if found is not None else None


def _verdict(gold: Fraction, completion: str, fallback_last_number: bool) -> RewardProviderResult:
    answer = read_completion(completion, fallback_last_number)
    value = answer.value
    return RewardProviderResult(
        terms={"task": float(value is not None and value == gold)},
        diagnostics=(MetricContribution("extracted", float(value is not None)),),
        # The text read as the answer, even one stating no single number ("18 or 19": extracted 0),
        # so a 0 can be read against what the completion said.
        notes=None if answer.text is None else {EXTRACTED_ANSWER: answer.text},
    )


def score_gsm8k(
    candidate: RewardCandidate, context: RewardContext, *, fallback_last_number: bool = False
) -> RewardProviderResult:
    """1 when the completion's final answer equals the GSM8K gold number exactly, else 0; skipped
    (with the reason) when the reference holds no number."""
    gold = gsm8k_gold(context.reference)
    if gold is None:
        return RewardProviderResult.skip(
            f"the gsm8k reference has no number: {str(context.reference)[:80]!r}"
        )
    return _verdict(gold, candidate.completion, fallback_last_number)


def arithmetic_gold(reference: object) -> Fraction | None:
    """The exact value of an arithmetic reference: a number, or an expression like ``"3*(4+5)"``."""
    value = _numeric_reference("arithmetic", reference)
    if isinstance(value, Fraction):
        return value
    try:
        return evaluate(value.strip(), allow_unary_minus=True).value
    except (ExpressionError, ZeroDivisionError):
        # "$1,200" is a number with dressing; "2 +" is a broken expression, not the number 2.
        return None if _OPERATOR.search(value) else parse_number(value)


def score_arithmetic(
    candidate: RewardCandidate, context: RewardContext, *, fallback_last_number: bool = False
) -> RewardProviderResult:
    """1 when the completion's answer equals the reference's exact value (a number or expression);
    skipped (with the reason) when the reference is neither a number nor a valid expression."""
    gold = arithmetic_gold(context.reference)
    if gold is None:
        return RewardProviderResult.skip(
            f"the arithmetic reference is not a number or expression: {str(context.reference)[:80]!r}"
        )
    return _verdict(gold, candidate.completion, fallback_last_number)


__all__ = [
    "EXTRACTED_ANSWER",
    "FoundAnswer",
    "ReadAnswer",
    "answer_value",
    "arithmetic_gold",
    "completion_value",
    "find_answer",
    "gsm8k_gold",
    "last_answer_tag",
    "last_boxed",
    "read_completion",
    "score_arithmetic",
    "score_gsm8k",
    "stated_part",
]
