"""Relations: equations, inequalities, approximations and "expression = value" restatements.

A reference relation is one of:

- an *assignment* ``x = 5``, ``f(x) = 2x + 1``, ``\\mathbf{y} = [matrix]``: its left side names
  something. It matches the same name with an equal right side, or the right side alone;
- a *numeric statement* ``\\log_6(216) = 3``: both sides are closed-form numbers. It must be
  true (a false one is an unusable reference). It matches its value, or a true restatement
  whose last side equals the value;
- an *equation or inequality in variables* ``x^2 - 2x + 10 = 0``: it matches a relation of the
  same type whose ``lhs - rhs`` is the reference's times a non-zero constant (a positive one for
  an inequality, after both are turned to face the same way);
- an *approximation* ``\\cos(e) \\approx -0.912``: see ``approximation``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from itertools import pairwise

import sympy

from rewardkit_rl.verifiers.math_forms import intervals, values
from rewardkit_rl.verifiers.math_forms.forms import Form, Leaf, Relation, label_key

Equal = Callable[[Form, Form], bool]
_INEQUALITIES = {"<", "<=", ">", ">="}


_SUBSCRIPT = re.compile(r"_\s*(?:\{[^{}]*\}|\w)")
_QUANTITY_MARKS = re.compile(r"\\(?:overline|angle|measuredangle|triangle|frac)(?![a-zA-Z])|[|:/\[\]{}\s]")


def quantity_key(form: Form | None) -> str | None:
    """A canonical spelling when ``form`` names a geometric or named quantity built from
    capital-letter names (``AB``, ``|AB|``, ``A:B``, ``V_1:V_2``, ``\\frac{NO}{BO}``, ``[ABC]``),
    which a reference states the value of (``AB = 4``); None otherwise."""
    if not isinstance(form, Leaf):
        return None
    text = form.latex
    bare = _QUANTITY_MARKS.sub("", _SUBSCRIPT.sub("", text)).replace("m\\angle", "")
    if not bare.isalpha() or not any(char.isupper() for char in bare):
        return None
    return re.sub(r"[\s{}]", "", text)


def name_of(form: Form | None) -> str | None:
    """What the left side of ``name = value`` names (``x``, ``f(x)``, ``\\mathbf{y}``, ``AB``)."""
    return label_key(form) or quantity_key(form)


def is_numeric_statement(relation: Relation) -> bool:
    """Every side is a closed-form number (``\\cos(\\pi) = -1``)."""
    return all(isinstance(side, Leaf) and values.is_closed_form(side.latex) for side in relation.sides)


def is_true(relation: Relation) -> bool | None:
    """Whether a numeric statement of ``=`` links holds (to a relative 1e-12); None when a side
    cannot be evaluated."""
    numbers = [values.value(side.latex) for side in relation.sides]  # type: ignore[union-attr]
    verdicts = [values.same_number(first, second) for first, second in pairwise(numbers)]
    if None in verdicts:
        return None
    return all(verdicts)


def inequality_holds(relation: Relation) -> bool:
    """Whether a numeric statement of ``<``, ``<=``, ``>``, ``>=``, ``!=`` links holds (False when a
    side cannot be evaluated as a real number)."""
    numbers = [values.number(side.latex) for side in relation.sides]  # type: ignore[union-attr]
    if any(number is None or not number.is_real for number in numbers):
        return False
    for (first, second), op in zip(pairwise(numbers), relation.ops):
        same = values.same_number(first, second)  # type: ignore[arg-type]
        if same is None:
            return False
        below, above = bool(first < second), bool(first > second)  # type: ignore[operator]
        holds = {
            "!=": not same,
            "<": below and not same,
            ">": above and not same,
            "<=": below or same,
            ">=": above or same,
        }[op]
        if not holds:
            return False
    return True


def stated_value(relation: Relation, equal: Equal) -> Form | None:
    """The value an ``=`` answer states: the last side of ``x = v``, ``= v``, ``x = a = v`` (all
    right sides equal) or of a true numeric statement; None for anything else."""
    if len(set(relation.ops)) != 1 or relation.ops[0] not in ("=", "~"):
        return None
    sides = relation.sides
    if relation.ops[0] == "~" and (len(sides) != 2 or (sides[0] is not None and name_of(sides[0]) is None)):
        return None  # x \approx 11 states 11; 1/3 \approx 0.3 states nothing exact
    if sides[0] is None:
        return sides[1]
    if name_of(sides[0]) is not None:
        last = sides[-1]
        if all(equal(side, last) for side in sides[1:-1]):  # type: ignore[arg-type]
            return last
        return None
    if is_numeric_statement(relation):
        return sides[-1] if is_true(relation) is True else None
    return None


def _difference(relation: Relation) -> sympy.Expr | None:
    """``lhs - rhs`` of a two-sided relation of plain values."""
    if len(relation.sides) != 2 or not all(isinstance(side, Leaf) for side in relation.sides):
        return None
    left = values.value(relation.sides[0].latex)  # type: ignore[union-attr]
    right = values.value(relation.sides[1].latex)  # type: ignore[union-attr]
    if not isinstance(left, sympy.Expr) or not isinstance(right, sympy.Expr):
        return None
    return left - right


def _facing_up(relation: Relation) -> tuple[str, sympy.Expr] | None:
    """``(kind, d)`` with the relation read as ``d > 0``, ``d >= 0``, ``d = 0`` or ``d != 0``."""
    difference = _difference(relation)
    if difference is None:
        return None
    op = relation.ops[0]
    if op in ("<", "<="):
        return (">" if op == "<" else ">="), -difference
    if op in (">", ">="):
        return op, difference
    return op, difference


def same_up_to_factor(gold: Relation, answer: Relation) -> bool:
    """Same relation type, and ``lhs - rhs`` equal up to a non-zero (for inequalities: positive)
    constant factor."""
    if len(gold.ops) != 1 or len(answer.ops) != 1:
        return False
    mine, theirs = _facing_up(gold), _facing_up(answer)
    if mine is None or theirs is None or mine[0] != theirs[0]:
        return False
    if mine[1] == 0 or theirs[1] == 0:
        return False
    ratio = sympy.cancel(sympy.together(mine[1] / theirs[1]))
    if ratio.free_symbols:
        ratio = sympy.simplify(ratio)
    if ratio.free_symbols or ratio.atoms(sympy.core.function.AppliedUndef):
        return False
    number = sympy.N(ratio, 30)
    if not number.is_number or not number.is_finite or number == 0:
        return False
    if mine[0] in ("=", "!="):
        return True
    return bool(number.is_real and number > 0)


def equation(gold: Relation, answer: Form, equal: Equal) -> bool:
    """A reference made of ``=`` links (see the module docstring)."""
    sides = gold.sides
    if sides[0] is None:
        return equal(sides[1], answer)  # type: ignore[arg-type]
    value = sides[-1]
    name = name_of(sides[0])
    if name is None and not is_numeric_statement(gold):
        return isinstance(answer, Relation) and same_up_to_factor(gold, answer)
    if not isinstance(answer, Relation):
        return equal(value, answer)  # type: ignore[arg-type]
    if set(answer.ops) != {"="}:
        return False
    answer_name = name_of(answer.sides[0])
    if name is not None and answer_name is not None and answer_name != name:
        return False  # y = 2x + 3 is not f(x) = 2x + 3, nor f'(x) = 6x - 5 f(x) = 6x - 5
    stated = stated_value(answer, equal)
    if stated is not None:
        return equal(value, stated)  # type: ignore[arg-type]
    return name is not None and len(gold.sides) == 2 and same_up_to_factor(gold, answer)


def inequality(gold: Relation, answer: Form, equal: Equal) -> bool:
    """``<``, ``<=``, ``>``, ``>=``, ``!=`` and chains of them."""
    gold_variable: list[str] = []
    gold_set = intervals.pieces(gold, pair_is_interval=True, variable=gold_variable)
    if gold_set is not None:
        answer_variable: list[str] = []
        answer_set = intervals.pieces(answer, pair_is_interval=True, variable=answer_variable)
        if answer_set is not None:
            if answer_variable and set(answer_variable) != set(gold_variable):
                return False
            return intervals.same_set(gold_set, answer_set, equal)
    if not isinstance(answer, Relation):
        return False
    if len(gold.ops) == 1:
        return same_up_to_factor(gold, answer)
    # A chain that is not an interval (``f(2) < f(1) < f(4)``): the same chain, either way round.
    if len(answer.ops) != len(gold.ops):
        return False
    if answer.ops == gold.ops:
        pairs = zip(gold.sides, answer.sides)
    elif tuple(intervals.FLIP.get(op, op) for op in reversed(answer.ops)) == gold.ops:
        pairs = zip(gold.sides, reversed(answer.sides))
    else:
        return False
    return all(equal(mine, theirs) for mine, theirs in pairs)  # type: ignore[arg-type]


def membership(gold: Relation, answer: Form, equal: Equal) -> bool:
    """``x \\in S``: the same set, stated as ``x \\in S'``, as ``S'`` or as inequalities."""
    target = gold.sides[1]
    name = label_key(gold.sides[0])
    if isinstance(answer, Relation) and answer.ops == ("in",):
        if label_key(answer.sides[0]) != name:
            return False
        return equal(target, answer.sides[1])  # type: ignore[arg-type]
    return equal(target, answer)  # type: ignore[arg-type]


# -- approximations ----------------------------------------------------------------------------


def approximation_target(
    gold: Relation | Leaf,
) -> tuple[Decimal, Decimal, sympy.Expr | None, str | None] | None:
    """``(value, unit in the last place, exact value or None, name or None)`` of an approximate
    reference (``\\cos(e) \\approx -0.912``, ``x \\approx 1.41``, ``\\approx 0.3``, ``0.33`` marked
    "to two significant figures"); None when its value is not a number written in digits."""
    if isinstance(gold, Leaf):
        found = values.plain_decimal(gold.latex)
        return None if found is None else (found[0], found[1], None, None)
    if len(gold.sides) != 2 or not isinstance(gold.sides[1], Leaf):
        return None
    found = values.plain_decimal(gold.sides[1].latex)
    if found is None:
        return None
    left = gold.sides[0]
    name = name_of(left)
    exact = None
    if name is None and isinstance(left, Leaf):
        exact = values.number(left.latex)
        if exact is None:
            return None
    elif left is not None and name is None:
        return None
    return found[0], found[1], exact, name


def close_enough(target: tuple[Decimal, Decimal, sympy.Expr | None, str | None], answer: Leaf) -> bool:
    """Whether a value answers an approximate reference. A decimal answer must be at least as
    precise as the reference and round to it (to the exact value when the reference states
    one); an exact answer must lie within half a unit of the reference's last place. The
    reference's value is a finite decimal: an infinite, undefined or NaN answer (``\\infty``,
    ``\\frac{1}{0}``, ``\\frac{0}{0}``) approximates no such value and is refused here, before any
    tolerance is applied (issue 41)."""
    reference, unit, exact, _ = target
    written = values.plain_decimal(answer.latex)
    if written is not None:
        number, answer_unit = written
        if answer_unit > unit:
            return False
        if exact is not None:
            return distance(exact, number) <= answer_unit / 2 * Decimal("1.000000001")
        # Every value the answer can stand for rounds to the reference.
        return abs(number - reference) + answer_unit / 2 <= unit / 2
    if exact is not None:
        if not values.is_closed_form(answer.latex):
            return False
        stated = values.number(answer.latex)
        if stated is not None and not values.is_finite_number(stated):
            return False
        return values.same_number(values.value(answer.latex), exact) is True
    stated = values.number(answer.latex)
    if stated is None or not stated.is_real or not values.is_finite_number(stated):
        return False
    return distance(stated, reference) <= unit / 2


def distance(exact: sympy.Expr, number: Decimal) -> Decimal:
    """``|exact - number|`` to 40 digits (infinite for a non-real value)."""
    if not exact.is_real:
        return Decimal("Infinity")
    return abs(Decimal(str(sympy.N(exact, 40))) - number)


def approximation(
    target: tuple[Decimal, Decimal, sympy.Expr | None, str | None], answer: Form, equal: Equal
) -> bool:
    """An answer to an approximate reference: a value, or ``name/expression \\approx value`` (or
    ``=``) whose restated expression is itself right to the precision it gives."""
    if isinstance(answer, Leaf):
        return close_enough(target, answer)
    if not isinstance(answer, Relation) or len(answer.ops) != 1 or answer.ops[0] not in ("~", "="):
        return False
    left, right = answer.sides
    if not isinstance(right, Leaf):
        return False
    name = target[3]
    if left is not None:
        answer_name = name_of(left)
        if answer_name is not None:
            if name is not None and answer_name != name:
                return False
        elif isinstance(left, Leaf):
            restated = values.number(left.latex)
            written = values.plain_decimal(right.latex)
            if restated is None or written is None or distance(restated, written[0]) > written[1] / 2:
                return False  # the restated expression is not approximately its stated value
        else:
            return False
    return close_enough(target, right)
