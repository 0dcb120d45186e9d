"""Comparing an answer with a reference: the forms first, then the leaves.

The reference's form decides the comparison (``relations``, ``intervals`` and the containers
here); leaves go to ``values.leaf_equal``. Anything the answer says that cannot be read or
matched is a wrong answer with a reason, never a pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

import sympy

from rewardkit_rl.verifiers.math_forms import constants, intervals, relations, values
from rewardkit_rl.verifiers.math_forms.forms import (
    Form,
    Interval,
    Items,
    Leaf,
    Matrix,
    Piecewise,
    Relation,
    Restated,
    Text,
    Union,
    Unsupported,
    expression_key,
    label_key,
    read,
)


@dataclass(frozen=True, slots=True)
class Verdict:
    """``equal``; and when the answer could not be read or matched, why (``unparsed`` is set
    when it could not be read at all)."""

    equal: bool
    reason: str | None = None
    unparsed: bool = False


class _Unreadable(Exception):
    """The answer has a shape that is not supported."""


@lru_cache(maxsize=4096)
def reference_form(gold: str) -> Form:
    return _systems(read(gold))


def _systems(form: Form) -> Form:
    """``x = y = 4`` states two values: ``x = 4, y = 4`` (each keeping the rest of the chain, whose
    links are checked); so do the chains in a list joined by commas or "and" (``x=y=4, z=2``)."""
    if isinstance(form, Relation):
        parts = _named_chain(form)
        return form if parts is None else Items("list", parts)
    if isinstance(form, Items) and form.kind == "list" and "or" not in form.joiners:
        items = tuple(part for item in form.items for part in (_named_chain(item) or (item,)))
        return form if len(items) == len(form.items) else Items("list", items, form.joiners)
    return form


def _named_chain(form: Form) -> tuple[Relation, ...] | None:
    """The equations of a chain that starts with two or more names (None for any other form)."""
    if not isinstance(form, Relation) or set(form.ops) != {"="}:
        return None
    names = 0
    while names < len(form.sides) and relations.name_of(form.sides[names]) is not None:
        names += 1
    if names < 2 or names == len(form.sides):
        return None
    rest = form.sides[names:]
    return tuple(Relation((name, *rest), ("=",) * len(rest)) for name in form.sides[:names])


@lru_cache(maxsize=4096)
def reference_problem(gold: str) -> str | None:
    """Why a reference cannot be used (unsupported shape, unparseable leaf, false statement),
    or None when it can."""
    try:
        return _problem(reference_form(gold))
    except values.Unparseable as error:
        return f"the reference could not be parsed as math: {error}"


@lru_cache(maxsize=4096)
def compare(gold: str, answer: str) -> Verdict:
    """Whether ``answer`` states the reference ``gold`` (call ``reference_problem`` first).
    Cached: a group's samples often repeat one answer."""
    reference = reference_form(gold)
    form = _systems(read(answer))
    try:
        if _equal(reference, form):
            return Verdict(True)
    except _Unreadable as error:
        return Verdict(False, f"the answer could not be read: {error}", unparsed=True)
    except values.Unparseable as error:
        return Verdict(False, f"the answer could not be parsed: {error}", unparsed=True)
    if isinstance(form, Unsupported):
        return Verdict(False, f"the answer could not be read: {form.reason}", unparsed=True)
    unparsed = _first_unparsed(form)
    if unparsed is not None:
        return Verdict(False, f"the answer could not be parsed: {unparsed[:60]!r}", unparsed=True)
    mine, theirs = _kind(reference), _kind(form)
    if mine != theirs and theirs != "a relation":
        return Verdict(False, f"the answer is {theirs}, the reference {mine}")
    return Verdict(False)


def _first_unparsed(form: Form | None) -> str | None:
    """The first leaf of an answer that does not parse (None when every leaf does)."""
    if isinstance(form, Leaf):
        return None if values.parse_leaf(form.latex) is not None else form.latex
    if isinstance(form, Relation):
        parts: tuple[Form | None, ...] = form.sides
    elif isinstance(form, Items):
        parts = form.items
    elif isinstance(form, Interval):
        parts = (form.low, form.high)
    elif isinstance(form, Union):
        parts = form.parts
    elif isinstance(form, Matrix):
        parts = tuple(cell for row in form.rows for cell in row)
    elif isinstance(form, Piecewise):
        parts = tuple(part for branch in form.branches for part in branch)
    elif isinstance(form, Restated):
        parts = (form.statement, form.restatement)
    else:
        return None
    for part in parts:
        found = _first_unparsed(part)
        if found is not None:
            return found
    return None


def _kind(form: Form) -> str:
    if isinstance(form, Items):
        return {"list": "a list", "set": "a set", "tuple": "a tuple", "pair": "an ordered pair"}[form.kind]
    names = {
        Leaf: "a value",
        Text: "text",
        Relation: "a relation",
        Interval: "an interval",
        Union: "a union of intervals",
        Matrix: "a matrix",
        Piecewise: "a piecewise function",
        Restated: "a relation restated as a set",
        Unsupported: "unsupported",
    }
    return names[type(form)]


# -- the reference ---------------------------------------------------------------------------


def _problem(form: Form | None) -> str | None:
    if form is None:
        return None
    if isinstance(form, Unsupported):
        if form.reason in ("unbalanced brackets", "an empty answer", "an empty value"):
            return f"the reference could not be parsed as math: {form.reason}"
        return f"the reference's form is not supported: {form.reason}"
    if isinstance(form, Leaf):
        if form.approx and values.plain_decimal(form.latex) is None:
            return "an approximate reference whose value is not a number written in digits"
        values.value(form.latex)
        return None
    if isinstance(form, Text):
        return None
    if isinstance(form, Relation):
        return _relation_problem(form)
    if isinstance(form, Items):
        if not form.items:
            return "an empty list or set"
        kinds = {isinstance(item, Relation) for item in form.items}
        if len(kinds) > 1:
            return "a list mixing relations and values"
        return _first(_problem(item) for item in form.items)
    if isinstance(form, Interval):
        return _first(_problem(end) for end in (form.low, form.high))
    if isinstance(form, Union):
        return _first(_problem(part) for part in form.parts)
    if isinstance(form, Matrix):
        return _first(_problem(cell) for row in form.rows for cell in row)
    if isinstance(form, Piecewise):
        return _first(_problem(part) for branch in form.branches for part in branch)
    if isinstance(form, Restated):
        return _restated_problem(form)
    return "an unknown form"


def _restated_problem(form: Restated) -> str | None:
    """Both halves usable, and the same set of numbers: else which one is meant is unknown."""
    found = _first(_problem(half) for half in (form.statement, form.restatement))
    if found is not None:
        return found
    mine = intervals.pieces(form.statement, pair_is_interval=True)
    theirs = intervals.pieces(form.restatement, pair_is_interval=True)
    if mine is None or theirs is None:
        return "a restated reference whose halves are not both sets of numbers"
    if not intervals.same_set(mine, theirs, _equal):
        return "the two halves of the reference (relation : interval) state different sets"
    return None


def _approximate_set(form: Form | None) -> list[Interval] | None:
    """The pieces of ``\\approx (a, b) \\cup (c, d)``, each finite end a rounded value (as the leaf
    of ``x \\approx 1.41`` is); None when it is not such a set or an end is not written in digits."""
    if not isinstance(form, (Interval, Union)) and not (isinstance(form, Items) and form.kind == "pair"):
        return None
    found = intervals.pieces(form, pair_is_interval=True)
    if not found:
        return None
    marked = []
    for piece in found:
        ends = []
        for end in (piece.low, piece.high):
            if not intervals.infinity_sign(end):
                if values.plain_decimal(end.latex) is None:
                    return None
                end = Leaf(end.latex, "\\approx")
            ends.append(end)
        marked.append(Interval(ends[0], ends[1], piece.closed_low, piece.closed_high))
    return marked


def _first(problems: object) -> str | None:
    for problem in problems:  # type: ignore[attr-defined]
        if problem is not None:
            return problem  # type: ignore[no-any-return]
    return None


def _relation_problem(form: Relation) -> str | None:
    found = _first(_problem(side) for side in form.sides)
    if found is not None:
        return found
    ops = set(form.ops)
    if "~" in ops:
        if ops != {"~"} or len(form.sides) != 2:
            return "an approximation chained with other relations"
        if form.sides[0] is None and _approximate_set(form.sides[1]) is not None:
            return None
        target = relations.approximation_target(form)
        if target is None:
            return "an approximation whose value is not a number written in digits"
        value, unit, exact, _ = target
        if exact is not None and relations.distance(exact, value) > unit:
            return f"the reference's approximation is off by more than its last digit: {_spell(form)}"
        return None
    if ops == {"="}:
        if relations.name_of(form.sides[0]) is not None or form.sides[0] is None:
            return _links_problem(form)
        if relations.is_numeric_statement(form):
            truth = relations.is_true(form)
            if truth is None:
                return f"the reference's equation could not be evaluated: {_spell(form)}"
            return None if truth else f"the reference states a false equation: {_spell(form)}"
        if len(form.sides) != 2 or not all(isinstance(side, Leaf) for side in form.sides):
            return "an equation chain or an equation between non-values"
        return None
    if ops <= {"<", "<=", ">", ">=", "!="} or ops == {"in"}:
        if ops != {"in"} and not all(isinstance(side, Leaf) for side in form.sides):
            return "an inequality between non-values"
        if ops == {"!="} and len(form.ops) != 1:
            return "a chain of \\ne"
        if relations.is_numeric_statement(form) and not relations.inequality_holds(form):
            return f"the reference states a false (or unevaluable) inequality: {_spell(form)}"
        return None
    return "a chain mixing equations and inequalities"


def _links_problem(form: Relation) -> str | None:
    """Past its name, every link of a chain ``x = a = b`` must hold (``x = 2 + 3 = 6`` does not)."""
    rest = form.sides[1:]
    if len(rest) < 2:
        return None
    if not all(isinstance(side, Leaf) for side in rest):
        return "an equation chain between non-values"
    for first, second in pairwise(rest):
        if not values.leaf_equal(first.latex, second.latex):  # type: ignore[union-attr]
            return f"the reference states a chain whose links do not all hold: {_spell(form)}"
    return None


def _spell(form: Relation) -> str:
    return " ".join(
        part
        for index, side in enumerate(form.sides)
        for part in ((form.ops[index - 1],) if index else ())
        + ((side.latex if isinstance(side, Leaf) else "?"),)
    )[:80]


# -- comparison ------------------------------------------------------------------------------


def _equal(gold: Form, answer: Form) -> bool:
    if isinstance(answer, Unsupported):
        raise _Unreadable(answer.reason)
    if isinstance(gold, Leaf):
        return _leaf(gold, answer)
    if isinstance(gold, Text):
        return _text(gold, answer)
    if isinstance(gold, Relation):
        return _relation(gold, answer)
    if isinstance(gold, Items):
        if gold.kind == "list" and intervals.pieces(gold, pair_is_interval=False) is not None:
            return _number_set(gold, answer)  # x <= -1 or x >= 2
        return _items(gold, answer)
    if isinstance(gold, (Interval, Union)):
        gold_set = intervals.pieces(gold, pair_is_interval=True)
        answer_set = intervals.pieces(answer, pair_is_interval=True)
        if gold_set is None or answer_set is None:
            return False
        return intervals.same_set(gold_set, answer_set, _equal)
    if isinstance(gold, Matrix):
        return _matrix(gold, answer)
    if isinstance(gold, Piecewise):
        return _piecewise(gold, answer)
    if isinstance(gold, Restated):
        return _restated(gold, answer)
    return False


def _restated(gold: Restated, answer: Form) -> bool:
    """Either half of the reference (they state the same set); an answer restated the same way
    must have both of its halves right, so that one of them cannot carry a wrong one."""
    if isinstance(answer, Restated):
        return _equal(gold, answer.statement) and _equal(gold, answer.restatement)
    mine: list[str] = []
    theirs: list[str] = []
    intervals.pieces(gold.statement, pair_is_interval=True, variable=mine)
    intervals.pieces(answer, pair_is_interval=True, variable=theirs)
    if mine and theirs and set(mine) != set(theirs):
        return False  # -1 < y <= 1 does not answer -1 < x <= 1 : (-1, 1]
    return _equal(gold.statement, answer) or _equal(gold.restatement, answer)


def _number_set(gold: Form, answer: Form) -> bool:
    gold_names: list[str] = []
    answer_names: list[str] = []
    gold_set = intervals.pieces(gold, pair_is_interval=False, variable=gold_names)
    answer_set = intervals.pieces(answer, pair_is_interval=True, variable=answer_names)
    if gold_set is None or answer_set is None:
        return False
    if gold_names and answer_names and set(gold_names) != set(answer_names):
        return False  # x \\ne 1, 4 is not y \\ne 1, 4
    return intervals.same_set(gold_set, answer_set, _equal)


def _stated(answer: Form) -> Form | None:
    """What an ``x = value`` answer states (None when it is not such a statement)."""
    if isinstance(answer, Relation):
        return relations.stated_value(answer, _equal)
    return None


def _leaf(gold: Leaf, answer: Form) -> bool:
    if gold.approx:
        claimed = answer.approx if isinstance(answer, Leaf) else ""
        if claimed and _precision_words(claimed) != _precision_words(gold.approx):
            return False  # "to 5 significant figures" does not answer "to 3 significant figures"
        target = relations.approximation_target(gold)
        return target is not None and relations.approximation(target, answer, _equal)
    if isinstance(answer, Leaf):
        return values.leaf_equal(gold.latex, answer.latex)
    if isinstance(answer, Text):
        return values.text_key(gold.latex) == values.text_key(answer.words)
    stated = _stated(answer)
    return stated is not None and _equal(gold, stated)


_NUMBER_WORDS = re.compile(r"\d+|\b(?:one|two|three|four|five|six|seven|eight|nine|ten)\b", re.IGNORECASE)


def _precision_words(marker: str) -> list[str]:
    return [word.lower() for word in _NUMBER_WORDS.findall(marker)]


def _text(gold: Text, answer: Form) -> bool:
    if isinstance(answer, Text):
        return values.text_key(gold.words) == values.text_key(answer.words)
    if isinstance(answer, Leaf):
        return values.text_key(gold.words) == values.text_key(answer.latex)
    stated = _stated(answer)
    return stated is not None and _equal(gold, stated)


def _relation(gold: Relation, answer: Form) -> bool:
    ops = set(gold.ops)
    if ops == {"~"}:
        marked = _approximate_set(gold.sides[1]) if gold.sides[0] is None else None
        if marked is not None:
            answer_set = intervals.pieces(_approximated(answer), pair_is_interval=True)
            return answer_set is not None and intervals.same_set(marked, answer_set, _equal)
        target = relations.approximation_target(gold)
        return target is not None and relations.approximation(target, answer, _equal)
    if ops == {"="}:
        return relations.equation(gold, answer, _equal)
    if ops == {"in"}:
        return relations.membership(gold, answer, _equal)
    return relations.inequality(gold, answer, _equal)


def _approximated(answer: Form) -> Form | None:
    """What ``\\approx S`` (or ``x \\approx S``) says is approximately the set: ``S``."""
    if isinstance(answer, Relation) and answer.ops == ("~",):
        left = answer.sides[0]
        if left is None or label_key(left) is not None:
            return answer.sides[1]
    return answer


def _multiset(gold: tuple[Form, ...], answer: tuple[Form, ...]) -> bool:
    """Each gold item paired with its own equal answer item (multiplicity counts)."""
    if len(gold) != len(answer):
        return False
    unused = list(answer)
    for item in gold:
        for index, candidate in enumerate(unused):
            if _equal(item, candidate):
                del unused[index]
                break
        else:
            return False
    return True


def _values_of(answer: Form) -> tuple[Form, ...] | None:
    """The values of an answer given as a list or set (``1, 2``, ``\\{1, 2\\}``, ``x = 1, x = 2``,
    ``x \\in \\{1, 2\\}``); None for any other shape."""
    if isinstance(answer, Relation):
        if answer.ops == ("in",) and label_key(answer.sides[0]) is not None:
            answer = answer.sides[1]  # type: ignore[assignment]
        else:
            stated = _stated(answer)
            if stated is None:
                return None
            answer = stated
    if not isinstance(answer, Items) or answer.kind not in ("list", "set"):
        return None
    names = {relations.name_of(item.sides[0]) for item in answer.items if isinstance(item, Relation)}
    if len(names) > 1 or None in names:
        return answer.items
    found = []
    for item in answer.items:
        stated = _stated(item) if isinstance(item, Relation) else item
        if stated is None:
            return None
        found.append(stated)
    return tuple(found)


def _items(gold: Items, answer: Form) -> bool:
    if gold.kind == "list" and all(isinstance(item, Relation) for item in gold.items):
        return _relation_list(gold, answer)
    if gold.kind in ("pair", "tuple"):
        stated = _stated(answer)
        if stated is not None:
            answer = stated
        if not isinstance(answer, Items) or answer.kind != gold.kind or len(answer.items) != len(gold.items):
            return False
        return all(_equal(mine, theirs) for mine, theirs in zip(gold.items, answer.items))
    found = _values_of(answer)
    if found is None:
        return False
    if gold.kind == "set":
        return all(any(_equal(mine, theirs) for theirs in found) for mine in gold.items) and all(
            any(_equal(mine, theirs) for mine in gold.items) for theirs in found
        )
    return _multiset(gold.items, found)


def _part_key(part: Form) -> str | None:
    """What names one part of several relations: its left side's name, or the expression of a
    numeric statement (``\\cos(\\pi)``)."""
    if not isinstance(part, Relation):
        return None
    name = relations.name_of(part.sides[0])
    if name is not None:
        return name
    if relations.is_numeric_statement(part):
        parsed = values.parse_leaf(part.sides[0].latex)  # type: ignore[union-attr]
        return "=" + sympy.srepr(parsed) if parsed is not None else expression_key(part.sides[0])
    return None


def _relation_list(gold: Items, answer: Form) -> bool:
    """Several relations: every part must match. Parts named by distinct names are paired by
    name (bare values by position); otherwise the parts are compared as a multiset."""
    parts = answer.items if isinstance(answer, Items) and answer.kind in ("list", "set") else (answer,)
    if len(parts) != len(gold.items):
        return False
    keys = [_part_key(part) for part in gold.items]
    if None in keys or len(set(keys)) != len(keys):
        return _multiset(gold.items, parts)
    used: set[int] = set()
    for position, part in enumerate(parts):
        key = _part_key(part)
        if key is None:
            index = position
        elif key in keys:
            index = keys.index(key)
        else:
            return False
        if index in used or not _equal(gold.items[index], part):
            return False
        used.add(index)
    return True


def _matrix(gold: Matrix, answer: Form) -> bool:
    stated = _stated(answer)
    if stated is not None:
        answer = stated
    if not isinstance(answer, Matrix) or answer.shape != gold.shape:
        return False
    if all(
        _equal(mine, theirs)
        for gold_row, answer_row in zip(gold.rows, answer.rows)
        for mine, theirs in zip(gold_row, answer_row)
    ):
        return True
    # A general solution (free constants c_1, c_2): the same set of functions, see ``constants``.
    return constants.has_constants(gold) and constants.same_solutions(gold, answer)


def _condition(gold: Form | None, answer: Form | None) -> bool:
    if gold is None or answer is None:
        return gold is None and answer is None
    gold_set = intervals.pieces(gold, pair_is_interval=False)
    answer_set = intervals.pieces(answer, pair_is_interval=False)
    if gold_set is not None and answer_set is not None:
        return intervals.same_set(gold_set, answer_set, _equal)
    return _equal(gold, answer)


def _condition_sets(branches: tuple[tuple[Form, Form | None], ...]) -> list[object] | None:
    """Each branch's condition as a SymPy set of the variable, "otherwise" as what the other
    conditions leave; None when a condition is not an interval, a point or "otherwise"."""
    found: list[object] = []
    for _, condition in branches:
        if condition is None:
            found.append(None)
            continue
        pieces = intervals.pieces(condition, pair_is_interval=False)
        if pieces is None and isinstance(condition, Relation) and condition.ops == ("=",):
            side = condition.sides[1]
            if label_key(condition.sides[0]) is not None and isinstance(side, Leaf):
                pieces = [Interval(side, side, True, True)]
        number_set = None if pieces is None else intervals.as_set(pieces)
        if number_set is None:
            return None
        found.append(number_set)
    if found.count(None) > 1:
        return None
    if None in found:
        covered = sympy.Union(*[item for item in found if item is not None])
        found[found.index(None)] = sympy.S.Reals - covered
    return found


def _piecewise(gold: Piecewise, answer: Form) -> bool:
    """Every branch: the same expression under the same condition (in any order). Conditions
    that are intervals or points are compared as sets, so "otherwise" equals what it leaves."""
    stated = _stated(answer)
    if stated is not None:
        answer = stated
    if not isinstance(answer, Piecewise) or len(answer.branches) != len(gold.branches):
        return False
    gold_sets, answer_sets = _condition_sets(gold.branches), _condition_sets(answer.branches)
    unused = list(range(len(answer.branches)))
    for position, (expression, condition) in enumerate(gold.branches):
        for index in unused:
            their_expression, their_condition = answer.branches[index]
            if gold_sets is not None and answer_sets is not None:
                same = intervals.same_numbers(gold_sets[position], answer_sets[index])  # type: ignore[arg-type]
            else:
                same = _condition(condition, their_condition)
            if same and _equal(expression, their_expression):
                unused.remove(index)
                break
        else:
            return False
    return True
