"""General solutions with free constants: ``c_{1} v_{1}(t) + c_{2} v_{2}(t) + p(t)``, as one matrix.

The reference's solution set is ``{p + c_1 F_1 + ... + c_k F_k}``, where ``F_i`` is the matrix's
derivative by the constant ``c_i`` and ``p`` what is left with every constant at 0. An answer
states the same set when its constants pair off with the reference's one to one, each of its
``F`` a non-zero constant multiple of its partner's (constants renamed or reordered, eigenvectors
rescaled: ``c_1 [-1, 1, 1] e^t`` is ``k_2 [1, -1, -1] e^t``), and its ``p`` is the reference's. A
free constant is a symbol named ``c``, ``C``, ``k`` or ``K`` with a numeric subscript (``c_{1}``);
the rule applies only to a reference that also has a variable (``t``): ``[a_1 + b_1, ...]`` or
``[c_1, c_2]`` alone are given values, compared entry by entry. Both sides must be linear in their
constants.

Not recognised (scored 0, documented in docs/verifiers.md): another basis of the same space (a
sum of two of the reference's parts for one constant, real and complex forms of one solution),
constants that are not subscripted, and answers given as components (``y_1 = ..., y_2 = ...``).
"""

from __future__ import annotations

import re

import sympy

from rewardkit_rl.verifiers.math_forms import values
from rewardkit_rl.verifiers.math_forms.forms import Matrix

_CONSTANT = re.compile(r"[cCkK]_\{?\d+\}?")
# More constants than this is not a general solution a problem asks for; it also bounds the
# pairing (at most k^2 proportionality checks).
MAX_CONSTANTS = 6

_Parts = tuple[list[sympy.Matrix], sympy.Matrix]


def has_constants(matrix: Matrix) -> bool:
    """Whether a matrix is a general solution: its leaves hold a free constant (``c_{1}``) and a
    variable."""
    cells = _cells(matrix) or []
    found = _constants(cells)
    symbols = {symbol for cell in cells for symbol in cell.free_symbols}
    return bool(found) and bool(symbols - set(found))


def same_solutions(gold: Matrix, answer: Matrix) -> bool:
    """Whether two matrices with free constants are the same general solution (module docstring)."""
    mine, theirs = _parts(gold), _parts(answer)
    if mine is None or theirs is None or len(mine[0]) != len(theirs[0]):
        return False
    if not all(_zero(a - g) for a, g in zip(theirs[1], mine[1])):
        return False
    unused = list(range(len(mine[0])))
    for part in theirs[0]:
        partner = next((index for index in unused if _multiple(part, mine[0][index])), None)
        if partner is None:
            return False
        unused.remove(partner)
    return True


def _cells(matrix: Matrix) -> list[sympy.Expr] | None:
    cells = [values.parse_leaf(cell.latex) for row in matrix.rows for cell in row]  # type: ignore[union-attr]
    if not all(isinstance(cell, sympy.Expr) for cell in cells):
        return None
    return cells


def _constants(cells: list[sympy.Expr]) -> list[sympy.Symbol]:
    found = {symbol for cell in cells for symbol in cell.free_symbols if _CONSTANT.fullmatch(symbol.name)}
    return sorted(found, key=str)


def _parts(matrix: Matrix) -> _Parts | None:
    """``([F_1, ..., F_k], p)`` of a matrix linear in its constants; None otherwise."""
    cells = _cells(matrix)
    if cells is None:
        return None
    constants = _constants(cells)
    if not constants or len(constants) > MAX_CONSTANTS:
        return None
    vector = sympy.Matrix(cells)
    parts = [vector.diff(constant) for constant in constants]
    if any(part.free_symbols & set(constants) for part in parts):
        return None  # not linear in its constants (c_1 c_2, e^{c_1 t})
    return parts, vector.subs({constant: 0 for constant in constants})


def _multiple(answer: sympy.Matrix, gold: sympy.Matrix) -> bool:
    """Whether ``answer`` is a non-zero constant times ``gold`` (a non-zero matrix)."""
    pivot = next((index for index, cell in enumerate(gold) if not _zero(cell)), None)
    if pivot is None:
        return False
    try:
        ratio = sympy.simplify(answer[pivot] / gold[pivot])
        number = sympy.N(ratio, 30)
    except Exception:
        return False
    if ratio.free_symbols or not number.is_number or not number.is_finite or number == 0:
        return False
    return all(_zero(mine - ratio * theirs) for mine, theirs in zip(answer, gold))


def _zero(expression: sympy.Expr) -> bool:
    """Whether an expression is identically zero; a sample point where it is not spares ``simplify``."""
    try:
        expanded = sympy.expand(expression)
        if expanded == 0:
            return True
        if values.differ_somewhere(expanded, sympy.Integer(0)):
            return False
        return bool(sympy.simplify(expanded) == 0)
    except Exception:
        return False
