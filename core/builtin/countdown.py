"""The ``countdown`` reward: reach the target with each given number exactly once.
Two policies, chosen by the ``policy`` parameter:

- ``strict`` (default): the last ``<answer>...</answer>`` block must hold one expression of
  integers, ASCII ``+ - * /`` and parentheses; the integers used must be exactly the given
  numbers (as a multiset); its exact rational value must equal the target.
- ``lenient``: as strict, but Unicode and LaTeX operators (``×``, ``÷``, ``−``, ``\\times``,
  ``\\div``, ``\\cdot``) are read as their ASCII forms and one trailing ``= target`` is allowed.

Neither policy accepts unary minus (a given number cannot be negated) or a chain of equations.

The ``<answer>`` tags are found as a reader sees them (``answers.read_as_reader``: a look-alike or
zero-width-padded tag is a tag), and the expression is read as written, less its invisible
characters (``1\\u200b2`` is ``12``, as it renders); no fold touches its digits or operators."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Literal

from rewardkit.builtin.answers import EXTRACTED_ANSWER, read_answer_tag
from rewardkit.builtin.expressions import ExpressionError, evaluate
from rewardkit.contracts import MetricContribution, RewardCandidate, RewardContext, RewardProviderResult
from rewardkit.contracts.errors import RewardContractError
from rewardkit.scoring.pointwise import MappedProvider, map_candidates

Policy = Literal["strict", "lenient"]
POLICIES: tuple[str, ...] = ("strict", "lenient")

_INTEGER = re.compile(r"\s*-?\d+\s*")
_LENIENT_LATEX = (("\\times", "*"), ("\\cdot", "*"), ("\\div", "/"), ("\\left", ""), ("\\right", ""))
_LENIENT_CHARACTERS = str.maketrans(
    dict.fromkeys("×✕·⋅∗", "*") | dict.fromkeys("÷∕", "/") | dict.fromkeys("−–—", "-")
)


def countdown_problem(reference: object) -> tuple[tuple[int, ...], int]:
    """``(numbers, target)`` from a reference mapping with ``numbers`` (or ``nums``) and ``target``."""
    if not isinstance(reference, Mapping):
        raise RewardContractError(
            "countdown needs a reference mapping with 'numbers' and 'target', "
            f"got {type(reference).__name__}",
            rule="reference-type",
        )
    key = "numbers" if "numbers" in reference else "nums"
    numbers, target = reference.get(key), reference.get("target")
    if isinstance(numbers, (str, bytes)) or not isinstance(numbers, Sequence) or not numbers:
        raise RewardContractError(
            f"countdown reference key 'numbers' must be a non-empty list of integers, got {numbers!r}",
            rule="reference-value",
        )
    for index, number in enumerate(numbers):
        if isinstance(number, bool) or not isinstance(number, int):
            raise RewardContractError(
                f"countdown reference {key}[{index}] must be an integer, got {number!r}",
                rule="reference-value",
            )
    if isinstance(target, bool) or not isinstance(target, int):
        raise RewardContractError(
            f"countdown reference key 'target' must be an integer, got {target!r}", rule="reference-value"
        )
    return tuple(numbers), target


def _lenient_expression(answer: str, target: int) -> str | None:
    """Map Unicode/LaTeX operators to ASCII and drop a trailing ``= target``; None if it is wrong."""
    for old, new in _LENIENT_LATEX:
        answer = answer.replace(old, new)
    answer = answer.translate(_LENIENT_CHARACTERS).strip().strip("$").strip()
    left, equals, right = answer.partition("=")
    if not equals:
        return answer
    if "=" in right or _INTEGER.fullmatch(right) is None or int(right) != target:
        return None
    return left


def judge_countdown(completion: str, numbers: Sequence[int], target: int, policy: str) -> tuple[bool, str]:
    """``(correct, why)`` where ``why`` is ``ok``, ``missing-answer``, ``invalid-expression``,
    ``number-mismatch``, ``division-by-zero`` or ``wrong-value``."""
    return _judge_answer(read_answer_tag(completion), numbers, target, policy)


def _judge_answer(answer: str | None, numbers: Sequence[int], target: int, policy: str) -> tuple[bool, str]:
    """``judge_countdown`` on the content of the answer tag (None: there is none)."""
    if answer is None:
        return False, "missing-answer"
    expression = _lenient_expression(answer, target) if policy == "lenient" else answer
    if expression is None:
        return False, "invalid-expression"
    try:
        evaluated = evaluate(expression.strip())
    except ExpressionError:
        return False, "invalid-expression"
    except ZeroDivisionError:
        return False, "division-by-zero"
    if any(literal.denominator != 1 for literal in evaluated.literals) or Counter(
        evaluated.literals
    ) != Counter(Fraction(number) for number in numbers):
        return False, "number-mismatch"
    if evaluated.value != target:
        return False, "wrong-value"
    return True, "ok"


def score_countdown(
    candidate: RewardCandidate, context: RewardContext, *, policy: Policy = "strict"
) -> RewardProviderResult:
    """1 when the last ``<answer>`` reaches the target using each given number once (see module)."""
    numbers, target = countdown_problem(context.reference)
    answer = read_answer_tag(candidate.completion)  # read once: folding a long text is not free
    correct, why = _judge_answer(answer, numbers, target, policy)
    extracted = why != "missing-answer"
    valid = extracted and why not in ("invalid-expression", "number-mismatch", "division-by-zero")
    diagnostics = (
        MetricContribution("extracted", float(extracted)),
        MetricContribution("valid", float(valid)),
    )
    notes = None if answer is None else {EXTRACTED_ANSWER: answer.strip()}
    return RewardProviderResult(terms={"task": float(correct)}, diagnostics=diagnostics, notes=notes)


def countdown_provider(*, policy: Policy = "strict") -> MappedProvider:
    """The provider factory: checks ``policy`` at construction so a typo fails in preflight."""
    if policy not in POLICIES:
        raise ValueError(f"countdown policy must be one of {list(POLICIES)}, got {policy!r}")
    return map_candidates(score_countdown, policy=policy)
