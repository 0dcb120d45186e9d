"""A small exact evaluator for ``+ - * /`` and parentheses over non-negative numbers.
Model text is never handed to ``eval``: it is tokenised and parsed here, values are
``Fraction``s (so ``6*34/11-1`` is 193/11, not 17), and nesting depth and length are capped so a
hostile answer cannot exhaust the stack or the CPU."""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

MAX_EXPRESSION_CHARS = 2_000
MAX_DEPTH = 64

_TOKEN = re.compile(r"\s*(?:(?P<num>\d+(?:\.\d+)?)|(?P<op>[-+*/()]))")


class ExpressionError(ValueError):
    """The text is not a well-formed expression; the message says what and at which character."""


@dataclass(frozen=True, slots=True)
class Evaluated:
    """The exact value of an expression and the number literals it used, in order."""

    value: Fraction
    literals: tuple[Fraction, ...]


def tokenize(text: str) -> list[tuple[str, str, int]]:
    """``(kind, text, offset)`` tokens; kind is ``num`` or ``op``. Raises ``ExpressionError``."""
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ExpressionError(f"expression is {len(text)} characters, over the {MAX_EXPRESSION_CHARS} cap")
    tokens = []
    position = 0
    stripped_end = len(text.rstrip())
    while position < stripped_end:
        match = _TOKEN.match(text, position)
        if match is None:
            bad = text[position:].lstrip()[:1]
            raise ExpressionError(f"unexpected character {bad!r} at offset {position}")
        kind = "num" if match.group("num") is not None else "op"
        tokens.append((kind, match.group(kind), match.start(kind)))
        position = match.end()
    if not tokens:
        raise ExpressionError("empty expression")
    return tokens


class _Parser:
    def __init__(self, tokens: list[tuple[str, str, int]], allow_unary_minus: bool) -> None:
        self.tokens = tokens
        self.index = 0
        self.literals: list[Fraction] = []
        self.allow_unary_minus = allow_unary_minus

    def peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self) -> tuple[str, str, int]:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def expression(self, depth: int) -> Fraction:
        value = self.term(depth)
        while (token := self.peek()) is not None and token[1] in "+-" and token[0] == "op":
            self.take()
            right = self.term(depth)
            value = value + right if token[1] == "+" else value - right
        return value

    def term(self, depth: int) -> Fraction:
        value = self.factor(depth)
        while (token := self.peek()) is not None and token[1] in "*/" and token[0] == "op":
            self.take()
            right = self.factor(depth)
            if token[1] == "*":
                value *= right
            elif right == 0:
                raise ZeroDivisionError(f"division by zero at offset {token[2]}")
            else:
                value /= right
        return value

    def factor(self, depth: int) -> Fraction:
        if depth > MAX_DEPTH:
            raise ExpressionError(f"parentheses nested deeper than {MAX_DEPTH}")
        token = self.peek()
        if token is None:
            raise ExpressionError("expression ends where a number or '(' was expected")
        kind, text, offset = self.take()
        if kind == "num":
            value = Fraction(text)
            self.literals.append(value)
            return value
        if text == "(":
            value = self.expression(depth + 1)
            closing = self.peek()
            if closing is None or closing[1] != ")":
                raise ExpressionError(f"'(' at offset {offset} is never closed")
            self.take()
            return value
        if text == "-" and self.allow_unary_minus:
            return -self.factor(depth + 1)
        raise ExpressionError(f"unexpected {text!r} at offset {offset}")


def evaluate(text: str, *, allow_unary_minus: bool = False) -> Evaluated:
    """Evaluate ``text`` exactly; ``ExpressionError`` for malformed text, ``ZeroDivisionError`` for a
    division by zero."""
    parser = _Parser(tokenize(text), allow_unary_minus)
    value = parser.expression(0)
    leftover = parser.peek()
    if leftover is not None:
        raise ExpressionError(f"unexpected {leftover[1]!r} at offset {leftover[2]}")
    return Evaluated(value, tuple(parser.literals))
