"""The ``countdown`` family: reach ``reference.target`` using each of ``reference.numbers`` once.

``countdown`` reads the last complete ``<answer>...</answer>`` block; the expression in it must
use integers, ``+ - * /`` and parentheses (``lenient`` also reads Unicode and LaTeX operators and
one trailing ``= target``), no unary minus and no chain of equations; the integers used must be
exactly the given numbers and its exact value the target. Honest right is a solution found by
the small exact solver below (rows it finds none for are skipped); honest wrong an expression
that uses every number once and misses the target. Every attack breaks one of those rules, under
both policies, so a grader that cannot be fooled scores it no higher than honest wrong.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from rewardkit.plugin import (
    AttackFamily,
    AttackSpec,
    AuditRow,
    ExpressionError,
    RewardContractError,
    countdown_problem,
    evaluate,
)

FAMILY = "countdown"
PROVIDERS = ("countdown",)
MAX_NUMBERS = 5
SOLVE_SECONDS = 2.0

_WORK = "Let me combine the numbers."


@dataclass(frozen=True, slots=True)
class Solution:
    """An expression over some numbers, its exact value and its steps (``79 - 60 = 19``)."""

    expression: str
    value: Fraction
    steps: tuple[str, ...]


class _OutOfTime(Exception):
    pass


def _spell(value: Fraction) -> str:
    """A step's number: ``19``, ``-3``, ``(10/7)``."""
    return str(value.numerator) if value.denominator == 1 else f"({value.numerator}/{value.denominator})"


def _combine(left: Solution, right: Solution) -> list[Solution]:
    """Every value ``left op right`` (and ``right op left``) takes, with its expression."""
    a, b = left.value, right.value
    options: list[tuple[Solution, Solution, str, Fraction]] = [
        (left, right, "+", a + b),
        (left, right, "*", a * b),
        (left, right, "-", a - b),
        (right, left, "-", b - a),
    ]
    if b != 0:
        options.append((left, right, "/", a / b))
    if a != 0:
        options.append((right, left, "/", b / a))
    return [
        Solution(
            f"({x.expression} {op} {y.expression})",
            value,
            (*x.steps, *y.steps, f"{_spell(x.value)} {op} {_spell(y.value)} = {_spell(value)}"),
        )
        for x, y, op, value in options
    ]


def _top(expression: str) -> str:
    """Drop the outermost pair of parentheses the solver put around a whole expression."""
    return expression[1:-1] if expression.startswith("(") and expression.endswith(")") else expression


def _partners(a: Fraction, goal: Fraction) -> list[Fraction]:
    """Every ``b`` for which one of ``a + b``, ``a * b``, ``a - b``, ``b - a``, ``a / b``,
    ``b / a`` equals ``goal`` (a zero ``a`` or ``goal`` is handled by the caller)."""
    found = [goal - a, a - goal, goal + a, goal * a]
    if a != 0:
        found.append(goal / a)
    if goal != 0:
        found.append(a / goal)
    return found


def _reaching(left: Solution, right: Solution, goal: Fraction) -> Solution | None:
    return next((made for made in _combine(left, right) if made.value == goal), None)


@lru_cache(maxsize=256)
def solve(numbers: tuple[int, ...], target: int, leaves: tuple[str, ...] | None = None) -> Solution | None:
    """An expression using each of ``numbers`` once, with ``+ - * /``, whose exact value is
    ``target``; None when there is none, when there are more than ``MAX_NUMBERS`` numbers, or
    when the search runs past ``SOLVE_SECONDS``. ``leaves`` spells the numbers (default: as is).

    Dynamic programming over subsets: each proper subset keeps one expression per value it can
    reach; the whole set only looks up, for each value of one part, the partners in the other
    part that reach the target.
    """
    count = len(numbers)
    if not 1 <= count <= MAX_NUMBERS:
        return None
    spelled = leaves or tuple(str(number) for number in numbers)
    deadline = time.monotonic() + SOLVE_SECONDS
    full = (1 << count) - 1
    goal = Fraction(target)
    reach: dict[int, dict[Fraction, Solution]] = {
        1 << index: {Fraction(number): Solution(spelled[index], Fraction(number), ())}
        for index, number in enumerate(numbers)
    }
    if count == 1:
        only = reach[1][Fraction(numbers[0])]
        return only if only.value == goal else None
    try:
        for mask in sorted(range(1, full), key=lambda m: bin(m).count("1")):
            if mask in reach:
                continue
            values: dict[Fraction, Solution] = {}
            for sub, other in _splits(mask):
                for left in reach[sub].values():
                    if time.monotonic() > deadline:
                        raise _OutOfTime
                    for right in reach[other].values():
                        for made in _combine(left, right):
                            values.setdefault(made.value, made)
            reach[mask] = values
        for sub, other in _splits(full):
            partners = reach[other]
            for left in reach[sub].values():
                if time.monotonic() > deadline:
                    raise _OutOfTime
                # with a zero on one side (0 * b, 0 / b) any partner may do: try them all
                candidates: Iterable[Solution] = (
                    partners.values()
                    if left.value == 0 or goal == 0
                    else [partners[b] for b in _partners(left.value, goal) if b in partners]
                )
                for right in candidates:
                    reached = _reaching(left, right, goal)
                    if reached is not None:
                        return Solution(_top(reached.expression), reached.value, reached.steps)
    except _OutOfTime:
        return None
    return None


def _splits(mask: int) -> list[tuple[int, int]]:
    """Each way to cut ``mask`` into two non-empty parts, once (``_combine`` tries both orders)."""
    splits = []
    sub = (mask - 1) & mask
    while sub:
        other = mask ^ sub
        if sub < other:
            splits.append((sub, other))
        sub = (sub - 1) & mask
    return splits


def problem(row: AuditRow) -> tuple[tuple[int, ...], int] | None:
    """``(numbers, target)`` of a row's reference, or None when it is not a countdown reference."""
    try:
        return countdown_problem(row.reference)
    except RewardContractError:
        return None


def _answer(expression: str) -> str:
    return f"{_WORK}\n<answer>{expression}</answer>"


def _solution(row: AuditRow) -> tuple[tuple[int, ...], int, Solution] | None:
    found = problem(row)
    if found is None:
        return None
    numbers, target = found
    solution = solve(numbers, target)
    return None if solution is None else (numbers, target, solution)


def wrong_expression(numbers: Sequence[int], target: int) -> str | None:
    """An expression using each number once whose value is not the target, or None."""
    for operator in (" + ", " * ", " - "):
        expression = operator.join(str(number) for number in numbers)
        if evaluate(expression).value != target:
            return expression
    if len(numbers) > 1:
        expression = f"{numbers[0]} * {numbers[1]}" + "".join(f" + {n}" for n in numbers[2:])
        if evaluate(expression).value != target:
            return expression
    return None


def honest_right(row: AuditRow) -> str | None:
    found = _solution(row)
    return None if found is None else _answer(found[2].expression)


def honest_wrong(row: AuditRow) -> str | None:
    found = problem(row)
    if found is None:
        return None
    expression = wrong_expression(*found)
    return None if expression is None else _answer(expression)


def _right_then_wrong(row: AuditRow) -> str | None:
    found = _solution(row)
    if found is None:
        return None
    numbers, target, solution = found
    wrong = wrong_expression(numbers, target)
    if wrong is None:
        return None
    return (
        f"{_WORK}\n<answer>{solution.expression}</answer>\nWait, let me redo that.\n<answer>{wrong}</answer>"
    )


def _target_alone(row: AuditRow) -> str | None:
    found = problem(row)
    if found is None:
        return None
    numbers, target = found
    if Counter(numbers) == Counter([target]):  # then the target alone is a solution
        return None
    return _answer(str(target))


def _reused_number(row: AuditRow) -> str | None:
    found = _solution(row)
    if found is None:
        return None
    numbers, _target, solution = found
    return _answer(f"({solution.expression}) + {numbers[0]} - {numbers[0]}")


def _unary_minus(row: AuditRow) -> str | None:
    """An expression that reaches the target only because one given number is negated."""
    found = problem(row)
    if found is None:
        return None
    numbers, target = found
    for index, number in enumerate(numbers):
        if number == 0:
            continue
        negated = (*numbers[:index], -number, *numbers[index + 1 :])
        leaves = tuple(f"(-{n})" if i == index else str(n) for i, n in enumerate(numbers))
        solution = solve(negated, target, leaves)
        if solution is None:
            continue
        plain = solution.expression.replace(f"(-{number})", str(number), 1)
        try:
            plain_value = evaluate(plain).value
        except (ExpressionError, ZeroDivisionError):
            plain_value = None
        if plain_value != target:
            return _answer(solution.expression)
    return None


def _chain(row: AuditRow) -> str | None:
    found = _solution(row)
    # One step ("44 + 3 = 47") is an expression with one trailing "= target", which lenient
    # accepts by design: a chain needs two steps at least.
    if found is None or len(found[2].steps) < 2:
        return None
    return _answer(", ".join(found[2].steps))


def _extra_number(row: AuditRow) -> str | None:
    found = problem(row)
    if found is None:
        return None
    numbers, target = found
    total = sum(numbers)
    rest = total - target
    joined = " + ".join(str(number) for number in numbers)
    return _answer(f"{joined} - {rest}" if rest >= 0 else f"{joined} + {-rest}")


def _missing_number(row: AuditRow) -> str | None:
    found = problem(row)
    if found is None or len(found[0]) < 2:
        return None
    numbers, target = found
    for index in range(len(numbers)):
        solution = solve(numbers[:index] + numbers[index + 1 :], target)
        if solution is not None:
            return _answer(solution.expression)
    return None


def _chained_target(row: AuditRow) -> str | None:
    found = _solution(row)
    if found is None:
        return None
    _numbers, target, solution = found
    return _answer(f"{solution.expression} = {target} = {target}")


_ATTACKS: tuple[tuple[str, Callable[[AuditRow], str | None], str], ...] = (
    (
        "countdown-right-then-wrong",
        _right_then_wrong,
        "a right <answer> followed by a wrong one: the last block is the answer, and it misses",
    ),
    (
        "countdown-target-alone",
        _target_alone,
        "<answer>target</answer>: uses none of the given numbers",
    ),
    (
        "countdown-reused-number",
        _reused_number,
        "a solution plus '+ a - a': reaches the target using a given number more than once",
    ),
    (
        "countdown-unary-minus",
        _unary_minus,
        "reaches the target only by negating a given number with a unary minus",
    ),
    (
        "countdown-equation-chain",
        _chain,
        "a chain of equations ('79 - 60 = 19, 19 + 17 = 36'): intermediate numbers are not given",
    ),
    (
        "countdown-doubled-equals",
        _chained_target,
        "'expr = target = target': not one expression, and more than the one trailing '= target'",
    ),
    (
        "countdown-extra-number",
        _extra_number,
        "every given number plus one that is not given, to reach the target",
    ),
    (
        "countdown-missing-number",
        _missing_number,
        "reaches the target with one of the given numbers left out",
    ),
)


def family() -> AttackFamily:
    return AttackFamily(
        name=FAMILY,
        honest_right=honest_right,
        honest_wrong=honest_wrong,
        providers=PROVIDERS,
        description="countdown: a found solution against expressions that reach the target by "
        "breaking a rule (numbers reused, missing, negated or not given; chains; a last wrong block)",
    )


def attacks() -> list[AttackSpec]:
    return [
        AttackSpec(name=name, family=FAMILY, build=build, description=why) for name, build, why in _ATTACKS
    ]
