"""Reading a math completion's final answer, and the cheap exact comparison tried before math-verify.

Most answers are plain integers or fractions that match the reference character for character
after light normalisation; those are decided here in microseconds. Only the rest go to the
worker pool.
"""

from __future__ import annotations

import re
from fractions import Fraction

from rewardkit.builtin.answers import last_answer_tag, last_boxed

_FINAL_ANSWER = re.compile(r"final\s+answer(?:\s+is)?[ \t]*[:：]?[ \t]*(?P<span>[^\n]+)", re.IGNORECASE)
_HOPE = re.compile(r"\.?\s*I hope it is correct\.?\s*$", re.IGNORECASE)
_INLINE_MATH = re.compile(r"\$(?P<math>[^$]+)\$|\\\((?P<paren>.+?)\\\)")
_SPACING = re.compile(r"\\left|\\right|\\displaystyle|\\[!,;: ]|\s+")
_INTEGER = re.compile(r"-?\d+")
_DECIMAL = re.compile(r"-?\d+\.\d+")
_SLASH = re.compile(r"(-?\d+)/(\d+)")
_LATEX_FRACTION = re.compile(r"(-?)\\frac\{(-?\d+)\}\{(\d+)\}")
# A reference stating a relation is never settled by spelling alone: the workers check that it
# is true (``\log_6(216)=4`` is not) before anything can equal it.
_RELATION = re.compile(r"[=<>≈≤≥≠]|\\(?:approx|le|ge|leq|geq|ne|neq|lt|gt|leqslant|geqslant)(?![a-zA-Z])")


_BOX_COMMANDS = ("\\boxed", "\\fbox")
_BRACE = re.compile(r"[{}]")
_MAX_BOXES = 8  # boxes tried from the last one back: linear time on a completion full of them


def _escaped_at(text: str, index: int) -> bool:
    """Whether the character at ``index`` follows an odd run of backslashes (``\\{``, not ``\\\\{``)."""
    start = index
    while start > 0 and text[start - 1] == "\\":
        start -= 1
    return (index - start) % 2 == 1


def _box_content(text: str, command: int) -> str | None:
    """The balanced ``{...}`` right after the box command at ``command`` (None if there is none)."""
    opening = text.find("{", command)
    if opening < 0 or text[command:opening].strip() not in _BOX_COMMANDS:
        return None
    depth = 0
    for brace in _BRACE.finditer(text, opening):
        index = brace.start()
        if _escaped_at(text, index):
            continue
        depth += 1 if brace.group() == "{" else -1
        if depth == 0:
            return text[opening + 1 : index]
    return None


def last_box(text: str) -> str | None:
    """The content of the last ``\\boxed{}`` (``\\fbox{}``) whose braces balance, reading ``\\{``
    and ``\\}`` as the escaped braces they are: ``\\boxed{\\left\\{\\begin{array}..\\right.}`` (a
    piecewise function) has one ``\\{`` and no ``\\}``. Falls back to ``last_boxed``."""
    end = len(text)
    for _ in range(_MAX_BOXES):
        command = max(text.rfind(name, 0, end) for name in _BOX_COMMANDS)
        if command < 0:
            break
        content = _box_content(text, command)
        if content is not None:
            return content
        end = command
    return last_boxed(text)


def extract_answer(text: str) -> tuple[str, str] | None:
    """``(answer, form)`` from the last ``\\boxed{}``, else the last ``<answer>``, else a
    "final answer" phrase; None when the completion states no answer."""
    boxed = last_box(text)
    if boxed is not None:
        return boxed.strip(), "boxed"
    tagged = last_answer_tag(text)
    if tagged is not None:
        inner = last_box(tagged)
        return (inner if inner is not None else tagged).strip(), "answer-tag"
    span = None
    for match in _FINAL_ANSWER.finditer(text):
        span = match.group("span")
    if span is None:
        return None
    span = _HOPE.sub("", span)
    inline = _INLINE_MATH.search(span)
    if inline is not None:
        span = inline.group("math") or inline.group("paren")
    span = span.strip().rstrip(".").strip()
    return (span, "final-answer") if span else None


def normalise(answer: str) -> str:
    """Spacing-free form used for the character-for-character comparison."""
    answer = answer.strip().strip("$")
    answer = answer.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    answer = _SPACING.sub("", answer)
    return answer.rstrip(".")


def exact_value(normalised: str) -> tuple[Fraction, bool] | None:
    """``(value, is_decimal)`` when the answer is a plain integer, decimal or simple fraction."""
    if _INTEGER.fullmatch(normalised):
        return Fraction(int(normalised)), False
    if _DECIMAL.fullmatch(normalised):
        return Fraction(normalised), True
    match = _SLASH.fullmatch(normalised)
    if match is not None and int(match.group(2)) != 0:
        return Fraction(int(match.group(1)), int(match.group(2))), False
    match = _LATEX_FRACTION.fullmatch(normalised)
    if match is not None and int(match.group(3)) != 0:
        value = Fraction(int(match.group(2)), int(match.group(3)))
        return (-value if match.group(1) else value), False
    return None


_PLAIN_TOKEN = re.compile(r"\\[a-zA-Z]+|\d+(?:\.\d+)?|[a-zA-Z]|[-+*/^(){}]|\s+|.")
_PLAIN_CONSTANTS = frozenset({"\\pi"})
_PLAIN_PRODUCTS = frozenset({"*", "/", "\\cdot", "\\times"})
_PLAIN_FRACTIONS = frozenset({"\\frac", "\\dfrac", "\\tfrac"})
_PLAIN_MAX_TOKENS = 60


class _PlainReader:
    """A recursive reader of the smallest grammar math-verify's parser always reads: sums of
    products of numbers, single letters, ``\\pi``, ``\\frac{}{}``, ``\\sqrt{}``, brackets and powers
    (``4a-2``, ``12\\frac{3}{5}``, ``7\\pi``, ``\\frac{\\sqrt{3}}{2}``)."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, token: str) -> bool:
        if self.peek() != token:
            return False
        self.pos += 1
        return True

    def expression(self) -> bool:
        self.take("-") or self.take("+")
        if not self.product():
            return False
        while self.take("+") or self.take("-"):
            if not self.product():
                return False
        return True

    def product(self) -> bool:
        if not self.power():
            return False
        while True:
            if self.peek() in _PLAIN_PRODUCTS:
                self.pos += 1
                if not self.power():
                    return False
            elif self.peek() not in (None, "+", "-", ")", "}"):
                if not self.power():
                    return False
            else:
                return True

    def power(self) -> bool:
        if not self.atom():
            return False
        if self.take("^"):
            return self.atom()
        return True

    def group(self, opener: str, closer: str) -> bool:
        return self.take(opener) and self.expression() and self.take(closer)

    def atom(self) -> bool:
        token = self.peek()
        if token is None:
            return False
        if token[0].isdigit() or (token.isalpha() and len(token) == 1) or token in _PLAIN_CONSTANTS:
            self.pos += 1
            return True
        if token == "(":
            return self.group("(", ")")
        if token == "{":
            return self.group("{", "}")
        self.pos += 1
        if token in _PLAIN_FRACTIONS:
            return self.group("{", "}") and self.group("{", "}")
        if token == "\\sqrt":
            return self.group("{", "}")
        return False


def plain_expression(reference: str) -> bool:
    """Whether a reference is a plain expression math-verify's parser always reads (see
    ``_PlainReader``): usable without a worker's check, like a plain number."""
    tokens = [token for token in _PLAIN_TOKEN.findall(reference.strip().strip("$")) if not token.isspace()]
    if not tokens or len(tokens) > _PLAIN_MAX_TOKENS:
        return False
    reader = _PlainReader(tokens)
    try:
        return reader.expression() and reader.pos == len(tokens)
    except RecursionError:
        return False


def fast_verdict(gold: str, answer: str) -> bool | None:
    """True/False when a cheap exact comparison settles it; None when math-verify must decide.

    A False is only given when both sides are exact integers or fractions, never for decimals,
    because math-verify compares decimals with a tolerance that this path must not contradict.
    A reference that states a relation always goes to the workers.
    """
    return verdict_of_forms(normalise(gold), normalise(answer))


def verdict_of_forms(gold_form: str, answer_form: str) -> bool | None:
    """``fast_verdict`` on answers already ``normalise``d."""
    if gold_form == answer_form:
        return None if _RELATION.search(gold_form) else True
    gold_value, answer_value = exact_value(gold_form), exact_value(answer_form)
    if gold_value is None or answer_value is None:
        return None
    if gold_value[0] == answer_value[0]:
        return True
    if gold_value[1] or answer_value[1]:
        return None
    return False
