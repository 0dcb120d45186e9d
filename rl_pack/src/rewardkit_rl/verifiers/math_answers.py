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


_BRACE_OR_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{|[{}]")
_INNER_BOX = re.compile(r"\\(?:boxed|fbox)(?![a-zA-Z])")
# What does not render: ``\phantom`` and its kin take room but show nothing, and white (or fully
# transparent) ink shows nothing on the white page a reader sees. ``\textcolor{c}{..}`` colours its
# argument; ``\color{c}`` is a switch, to the end of the enclosing group (or, outside any group, of
# the maths span).
_INVISIBLE = re.compile(
    r"\\(?P<command>[hv]?phantom|textcolor|mathcolor|color)(?![a-zA-Z])\s*"
    r"(?:\[(?P<model>[^\]{}]*)\]\s*)?(?:\{(?P<colour>[^{}]*)\}\s*)?"
)
_BRACE_OR_COMMAND = re.compile(r"\\(?:[hv]?phantom|textcolor|mathcolor|color)(?![a-zA-Z])|[{}]")
_NEXT_TOKEN = re.compile(r"\s*(?:\\[a-zA-Z]+|\\?.)", re.DOTALL)
_MATH_END = re.compile(r"(?<!\\)\$|\\\)|\\\]")
_WHITE_NAMES = frozenset(
    {
        "white",
        "transparent",
        "#fff",
        "#ffff",
        "#ffffff",
        "#ffffffff",
        "rgb(255,255,255)",
        "rgba(255,255,255,1)",
    }
)
_TRANSPARENT_HEX = re.compile(r"#(?:[0-9a-f]{3}0|[0-9a-f]{6}00)")
_TRANSPARENT_RGBA = re.compile(r"rgba\([^)]*,0*(?:\.0*)?\)")
_MODEL_WHITE = {"rgb": ("1", "1.0"), "RGB": ("255",), "gray": ("1", "1.0"), "HTML": ("FFFFFF", "ffffff")}


def _invisible_colour(model: str | None, colour: str) -> bool:
    """Whether ``\\color[model]{colour}`` is white or fully transparent."""
    spec = colour.replace(" ", "")
    if model is None:
        spec = spec.lower()
        if spec in _WHITE_NAMES:
            return True
        return bool(_TRANSPARENT_HEX.fullmatch(spec) or _TRANSPARENT_RGBA.fullmatch(spec))
    accepted = _MODEL_WHITE.get(model.strip())
    return accepted is not None and all(part in accepted for part in spec.split(","))


def visible(text: str) -> str:
    """``text`` with what does not render blanked: the argument of ``\\phantom``/``\\hphantom``/
    ``\\vphantom``, of ``\\textcolor{white}`` (and ``\\mathcolor``), and what follows a
    ``\\color{white}`` switch to the end of its group (outside any group, to the end of the maths
    span: the next ``$``, ``\\)`` or ``\\]``, else the end of the text). A transparent colour counts
    as white. An argument that never closes is blanked to the end. Linear time."""
    if "phantom" not in text and "color" not in text:
        return text
    closing: dict[int, int] = {}
    stack: list[int] = []
    hidden: list[tuple[int, int]] = []
    switches: list[tuple[int, int | None]] = []  # (where a white \color switch is, its group's opening)
    commands = {match.start(): match for match in _INVISIBLE.finditer(text)}
    for brace in _BRACE_OR_COMMAND.finditer(text):
        index = brace.start()
        token = brace.group()
        if token.startswith("\\"):
            match = commands.get(index)
            if match is not None and match.group("command") == "color":
                colour = match.group("colour")
                if colour is not None and _invisible_colour(match.group("model"), colour):
                    switches.append((match.start(), stack[-1] if stack else None))
            continue
        if _escaped_at(text, index):
            continue
        if token == "{":
            stack.append(index)
        elif stack:
            closing[stack.pop()] = index
    for match in commands.values():
        command, colour = match.group("command"), match.group("colour")
        if command == "color":
            continue
        if command in ("textcolor", "mathcolor"):
            if colour is None or not _invisible_colour(match.group("model"), colour):
                continue
            argument = match.end()
        else:  # a phantom: what was read as its colour is its argument
            argument = match.end() if colour is None else match.start("colour") - 1
        if argument < len(text) and text[argument] == "{":
            hidden.append((match.start(), closing.get(argument, len(text) - 1) + 1))
        else:  # an argument of one token: ``\\phantom4``
            following = _NEXT_TOKEN.match(text, argument)
            hidden.append((match.start(), argument if following is None else following.end()))
    for start, group in switches:
        if group is not None:
            end = closing.get(group, len(text))
        else:
            found = _MATH_END.search(text, start)
            end = len(text) if found is None else found.start()
        hidden.append((start, end))
    if not hidden:
        return text
    pieces, cursor = [], 0
    for start, end in sorted(hidden):
        if end <= cursor:
            continue
        start = max(start, cursor)
        pieces.append(text[cursor:start])
        pieces.append(" ")
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def all_boxes(text: str) -> list[str]:
    """The contents of every outermost ``\\boxed{}``/``\\fbox{}`` whose braces balance (``\\{`` and
    ``\\}`` read as escaped), in order, with box commands nested inside taken off
    (``\\boxed{\\boxed{4}}`` states 4). Linear time on any input."""
    spans: list[tuple[int, int]] = []
    stack: list[tuple[int, bool]] = []  # (where the content starts, whether a box opened it)
    for token in _BRACE_OR_BOX.finditer(text):
        index = token.start()
        if token.group() == "}":
            if _escaped_at(text, index) or not stack:
                continue
            start, is_box = stack.pop()
            if is_box:
                spans.append((start, index))
        elif token.group() == "{":
            if not _escaped_at(text, index):
                stack.append((index + 1, False))
        else:  # a box command and its opening brace
            stack.append((token.end(), True))
    boxes, reach = [], -1
    for start, end in sorted(spans):
        if start > reach:  # not inside a box already taken
            boxes.append(_INNER_BOX.sub("", text[start:end]))
            reach = end
    return boxes


def _distinct(answers: list[str]) -> list[str]:
    """The answers that state different things, in order: the same spelling (``normalise``) or the
    same exact number (``4``, ``\\frac{8}{2}``, ``4.0``) is one answer, stated again."""
    seen: set[object] = set()
    kept = []
    for answer in dict.fromkeys(answer.strip() for answer in answers):  # the same text: once
        form = normalise(answer)
        value = exact_value(form)
        key = ("value", value[0]) if value is not None else ("form", form)
        if key not in seen:
            seen.add(key)
            kept.append(answer)
    return kept


def stated_answers(text: str) -> tuple[list[str], str] | None:
    """``(answers, form)``: what the completion states as its final answer, read from the text that
    renders (``visible``): every non-empty ``\\boxed{}``, else the last ``<answer>`` block, else the
    inline maths of the last "final answer" phrase (or its text when it has none). Several different
    answers (``_distinct``) are all returned: a completion that boxes ``5`` and ``4`` states the list
    "5, 4", not 4. None when the completion states no answer."""
    text = visible(text)
    boxes = all_boxes(text)
    if not boxes:
        fallback = last_boxed(text)
        boxes = [] if fallback is None else [fallback]
    if boxes:
        stated = _distinct([box for box in boxes if box.strip()])
        return (stated or [""]), "boxed"
    tagged = last_answer_tag(text)
    if tagged is not None:
        inner = last_box(tagged)
        return [(inner if inner is not None else tagged).strip()], "answer-tag"
    span = None
    for match in _FINAL_ANSWER.finditer(text):
        span = match.group("span")
    if span is None:
        return None
    span = _HOPE.sub("", span)
    inline = [found.group("math") or found.group("paren") for found in _INLINE_MATH.finditer(span)]
    stated = _distinct([item for item in inline if item.strip()])
    if stated:
        return stated, "final-answer"
    span = span.strip().rstrip(".").strip()
    return ([span], "final-answer") if span else None


def joined(answers: list[str]) -> str:
    """Several stated answers as the one list they state together (``5, 4``)."""
    return answers[0] if len(answers) == 1 else ", ".join(answers)


def extract_answer(text: str) -> tuple[str, str] | None:
    """``(answer, form)``: ``stated_answers``, several of them joined into the list they state."""
    found = stated_answers(text)
    return None if found is None else (joined(found[0]), found[1])


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
