"""Sets of real numbers: intervals, unions, finite sets, and the inequalities that denote them.

Every such form becomes a list of ``Interval`` pieces (a point ``{a}`` is ``[a, a]``). Two lists
are equal when, sorted by their ends, they pair off with equal ends and the same open/closed
ends. ``(a, b)`` on its own is an ordered pair or an open interval; the caller decides which.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

import sympy

from rewardkit_rl.verifiers.math_forms import values
from rewardkit_rl.verifiers.math_forms.forms import Form, Interval, Items, Leaf, Relation, Union, label_key

_MINUS_INFINITY = Leaf("-\\infty")
_PLUS_INFINITY = Leaf("\\infty")
_REALS = {"\\mathbb{R}", "\\mathbb R", "\\R", "\\mathbb{R}^{1}", "(-\\infty,\\infty)"}
_EMPTY = {"\\emptyset", "\\varnothing", "\\{\\}", "\\O"}
FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def pieces(
    form: Form | None, *, pair_is_interval: bool, variable: list[str] | None = None
) -> list[Interval] | None:
    """The set a form denotes as interval pieces, or None when it does not denote one.
    ``variable`` collects the names of the variables of inequalities met on the way."""
    if isinstance(form, Interval):
        return [form]
    if isinstance(form, Items):
        if form.kind == "pair" and pair_is_interval:
            low, high = form.items
            if isinstance(low, Leaf) and isinstance(high, Leaf):
                return [Interval(low, high, False, False)]
            return None
        if form.kind == "set":
            points = [item for item in form.items if isinstance(item, Leaf)]
            if len(points) != len(form.items):
                return None
            return [Interval(point, point, True, True) for point in points]
        excluded = _exclusion(form)
        if excluded is not None:
            if variable is not None:
                variable.append(excluded[0])
            return excluded[1]
        if form.kind == "list" and form.joiners <= {"or"}:
            found: list[Interval] = []
            names: list[str] = []
            for item in form.items:
                item_pieces = pieces(item, pair_is_interval=pair_is_interval, variable=names)
                if item_pieces is None:
                    return None
                found.extend(item_pieces)
            if len(set(names)) > 1:
                return None  # x > 0, y > 0 is a system, not a set of numbers
            if variable is not None:
                variable.extend(names)
            return found
        return None
    if isinstance(form, Union):
        found = []
        for part in form.parts:
            piece = pieces(part, pair_is_interval=True, variable=variable)
            if piece is None:
                return None
            found.extend(piece)
        return found
    if isinstance(form, Leaf):
        spelled = form.latex.replace(" ", "")
        if spelled in _REALS:
            return [Interval(_MINUS_INFINITY, _PLUS_INFINITY, False, False)]
        if spelled in _EMPTY:
            return []
        return None
    if isinstance(form, Relation):
        return _inequality_pieces(form, variable)
    return None


def _exclusion(form: Items) -> tuple[str, list[Interval]] | None:
    """``x \\ne -1, x \\ne 4`` (or ``x \\ne -1, 4``, joined by commas or "and", never "or"): every
    real but these points, as ``(variable, pieces between the points)``; None for anything else,
    or when a point is not a real closed-form number (the points cannot be put in order)."""
    if form.kind != "list" or "or" in form.joiners or len(form.items) < 2:
        return None
    names: set[str | None] = set()
    points: list[Leaf] = []
    for item in form.items:
        if not isinstance(item, Relation) or item.ops != ("!=",) or not isinstance(item.sides[1], Leaf):
            return None
        names.add(label_key(item.sides[0]))
        points.append(item.sides[1])
    if len(names) != 1 or None in names:
        return None
    numbers = [values.number(point.latex) for point in points]
    if any(number is None or not number.is_real for number in numbers):
        return None
    ordered = sorted(zip(numbers, points), key=lambda pair: float(pair[0]))  # type: ignore[arg-type]
    if any(values.same_number(low, high) is not False for (low, _), (high, _) in pairwise(ordered)):
        return None  # a point given twice
    ends = [_MINUS_INFINITY, *(point for _, point in ordered), _PLUS_INFINITY]
    name = names.pop()
    assert name is not None  # checked above
    return name, [Interval(low, high, False, False) for low, high in pairwise(ends)]  # type: ignore[arg-type]


def _inequality_pieces(relation: Relation, variable: list[str] | None) -> list[Interval] | None:
    sides, ops = relation.sides, relation.ops
    names = [label_key(side) for side in sides]
    if ops == ("in",):
        if names[0] is None:
            return None
        if variable is not None:
            variable.append(names[0])
        return pieces(sides[1], pair_is_interval=True, variable=variable)
    if not set(ops) <= {"<", "<=", ">", ">=", "!="}:
        return None
    at = [index for index, name in enumerate(names) if name is not None]
    if len(at) != 1 or not all(isinstance(side, Leaf) for side in sides):
        return None
    index = at[0]
    if not all(values.is_closed_form(side.latex) for i, side in enumerate(sides) if i != index):  # type: ignore[union-attr]
        return None
    if variable is not None:
        variable.append(names[index])  # type: ignore[arg-type]
    if ops == ("!=",):
        point = sides[1 - index]
        return [
            Interval(_MINUS_INFINITY, point, False, False),  # type: ignore[arg-type]
            Interval(point, _PLUS_INFINITY, False, False),  # type: ignore[arg-type]
        ]
    if "!=" in ops:
        return None
    low: tuple[Leaf, bool] = (_MINUS_INFINITY, False)
    high: tuple[Leaf, bool] = (_PLUS_INFINITY, False)
    # Read each bound as "variable OP bound" (flipping when the variable is on the right).
    if index > 0:
        op = FLIP[ops[index - 1]]
        bound = (sides[index - 1], op in ("<=", ">="))
        low, high = (bound, high) if op in (">", ">=") else (low, bound)  # type: ignore[assignment]
    if index < len(ops):
        op = ops[index]
        bound = (sides[index + 1], op in ("<=", ">="))
        if op in (">", ">="):
            if low[0] is not _MINUS_INFINITY:
                return None
            low = bound  # type: ignore[assignment]
        else:
            if high[0] is not _PLUS_INFINITY:
                return None
            high = bound  # type: ignore[assignment]
    if len(ops) > 2:
        return None
    return [Interval(low[0], high[0], low[1], high[1])]


def _sort_key(piece: Interval) -> tuple[float, float]:
    def end(leaf: Leaf) -> float:
        found = values.number(leaf.latex)
        if found is None:
            return float("nan")
        try:
            return float(sympy.re(found))
        except (TypeError, ValueError):
            return float("nan")

    return end(piece.low), end(piece.high)


def infinity_sign(leaf: Leaf) -> int:
    """+1 or -1 for an infinite end, 0 for a finite one."""
    spelled = leaf.latex.replace(" ", "")
    if spelled.lstrip("+-") not in ("\\infty", "\\infinity"):
        return 0
    return -1 if spelled.startswith("-") else 1


def same_set(gold: list[Interval], answer: list[Interval], equal: Callable[[Form, Form], bool]) -> bool:
    """Piece by piece, after sorting both by their ends."""
    if len(gold) != len(answer):
        return False
    gold_sorted = sorted(gold, key=_sort_key)
    answer_sorted = sorted(answer, key=_sort_key)
    for mine, theirs in zip(gold_sorted, answer_sorted):
        for end_gold, end_answer, closed_gold, closed_answer in (
            (mine.low, theirs.low, mine.closed_low, theirs.closed_low),
            (mine.high, theirs.high, mine.closed_high, theirs.closed_high),
        ):
            if infinity_sign(end_gold) or infinity_sign(end_answer):
                if infinity_sign(end_gold) != infinity_sign(end_answer):
                    return False
                continue
            if closed_gold != closed_answer or not equal(end_gold, end_answer):
                return False
    return True


def as_set(found: list[Interval]) -> sympy.Set | None:
    """The pieces as one SymPy set (None when an end is not a closed-form number)."""
    parts = []
    for piece in found:
        ends = []
        for end in (piece.low, piece.high):
            sign = infinity_sign(end)
            if sign:
                ends.append(sympy.oo if sign > 0 else -sympy.oo)
                continue
            if not values.is_closed_form(end.latex):
                return None
            ends.append(values.value(end.latex))
        try:
            parts.append(sympy.Interval(ends[0], ends[1], not piece.closed_low, not piece.closed_high))
        except Exception:
            return None
    return sympy.Union(*parts) if parts else sympy.S.EmptySet


def same_numbers(first: sympy.Set, second: sympy.Set) -> bool:
    """Whether two SymPy sets of reals are the same set (False when SymPy cannot tell)."""
    try:
        return bool(first.symmetric_difference(second) == sympy.S.EmptySet)
    except Exception:
        return False
