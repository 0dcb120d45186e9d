"""A multi grader's ``calculate_output``: arithmetic over the sub-graders' names, never ``eval``.

The formula is parsed with ``ast`` and checked node by node against a whitelist: numbers, the
names of the grader's sub-graders, ``+ - * /``, ``^`` and ``**`` (both power: the guide lists
``^`` among the operators), unary ``+``/``-``, parentheses, and calls of ``min max abs floor ceil
exp sqrt log`` by name with positional arguments. Anything else (an attribute, a subscript, a
string, a lambda, a comprehension, a call of another name, a keyword argument...) is refused at
load naming the node. Evaluation walks the checked tree in floats only, so ``9 ** 9 ** 9``
overflows to an error instead of building an integer as large as memory.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

MAX_FORMULA_CHARS = 2000

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.BitXor: operator.pow,  # the guide's ``^`` is a power, as in a spreadsheet
}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}
# name -> (function, fewest arguments, most arguments or None)
_FUNCTIONS: dict[str, tuple[Callable[..., float], int, int | None]] = {
    "min": (min, 2, None),
    "max": (max, 2, None),
    "abs": (abs, 1, 1),
    "floor": (lambda x: float(math.floor(x)), 1, 1),
    "ceil": (lambda x: float(math.ceil(x)), 1, 1),
    "exp": (math.exp, 1, 1),
    "sqrt": (math.sqrt, 1, 1),
    "log": (math.log, 1, 1),
}
ALLOWED = "numbers, grader names, + - * / ^ **, unary + and -, parentheses and " + ", ".join(_FUNCTIONS)

Node = Callable[[Mapping[str, float]], float]


class FormulaError(ValueError):
    """``calculate_output`` is not the arithmetic a multi grader allows."""


class FormulaValueError(ArithmeticError):
    """The formula has no finite value for these grades (a division by zero, log of 0, an overflow)."""


@dataclass(frozen=True)
class Formula:
    source: str
    names: frozenset[str]
    _root: Node

    def __call__(self, grades: Mapping[str, float]) -> float:
        try:
            value = float(self._root(grades))
        except (ArithmeticError, ValueError) as error:  # ZeroDivisionError, OverflowError, math domain
            raise FormulaValueError(f"calculate_output {self.source!r}: {error}") from None
        if not math.isfinite(value):
            raise FormulaValueError(f"calculate_output {self.source!r} is not finite ({value})")
        return value


def compile_formula(source: object, names: Collection[str], where: str = "calculate_output") -> Formula:
    """``source`` checked against the whitelist and ``names`` (the sub-graders); ``FormulaError`` names
    the first thing refused."""
    if not isinstance(source, str) or not source.strip():
        raise FormulaError(f"{where}: expected a formula such as '(a + b) / 2', got {source!r}")
    if len(source) > MAX_FORMULA_CHARS:
        raise FormulaError(f"{where}: {len(source)} characters; a formula may have {MAX_FORMULA_CHARS}")
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as error:
        raise FormulaError(f"{where}: not a formula ({error.msg}): {source!r}") from None
    known = frozenset(names)
    root = _compile(tree.body, known, where)
    return Formula(source, known, root)


def _refuse(node: ast.AST, where: str, why: str = "") -> FormulaError:
    text = ast.unparse(node) if isinstance(node, ast.expr) else type(node).__name__
    return FormulaError(f"{where}: {type(node).__name__} {text!r} is not allowed{why}; allowed: {ALLOWED}")


def _compile(node: ast.AST, names: frozenset[str], where: str) -> Node:
    if isinstance(node, ast.Constant):
        value: Any = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _refuse(node, where, " (only numbers are constants)")
        number = float(value)
        return lambda grades: number
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise FormulaError(f"{where}: unknown name {node.id!r}; the graders are {sorted(names)}")
        name = node.id
        return lambda grades: grades[name]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        apply = _BINARY[type(node.op)]
        left, right = _compile(node.left, names, where), _compile(node.right, names, where)
        return lambda grades: apply(left(grades), right(grades))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        unary = _UNARY[type(node.op)]
        operand = _compile(node.operand, names, where)
        return lambda grades: unary(operand(grades))
    if isinstance(node, ast.Call):
        return _compile_call(node, names, where)
    raise _refuse(node, where)


def _compile_call(node: ast.Call, names: frozenset[str], where: str) -> Node:
    if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
        raise _refuse(node, where, " (only calls of the listed functions, by name)")
    if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
        raise _refuse(node, where, " (arguments are positional formulas)")
    function, fewest, most = _FUNCTIONS[node.func.id]
    if len(node.args) < fewest or (most is not None and len(node.args) > most):
        wanted = str(fewest) if most == fewest else f"at least {fewest}"
        raise FormulaError(f"{where}: {node.func.id} takes {wanted} argument(s), got {len(node.args)}")
    arguments = [_compile(arg, names, where) for arg in node.args]
    return lambda grades: float(function(*(argument(grades) for argument in arguments)))
