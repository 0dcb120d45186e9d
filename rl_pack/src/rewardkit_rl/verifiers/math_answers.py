"""Reading a math completion's final answer, and the cheap exact comparison tried before math-verify.

Most answers are plain integers or fractions that match the reference character for character
after light normalisation; those are decided here in microseconds. Only the rest go to the
worker pool.

Everything here reads candidate text in the calling process, outside every worker timeout, so
every reader runs in linear time on any input: each pattern below is either anchored to a short
token (no quantifier that can re-read what another one read) or replaced by a scan that moves
forward only (``_Forward``), and no search is started again over text an earlier one covered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from rewardkit.plugin import last_answer_tag, last_boxed

_FINAL_ANSWER = re.compile(r"final\s+answer(?:\s+is)?[ \t]*[:：]?[ \t]*(?P<span>[^\n]+)", re.IGNORECASE)
# Minerva's closing sentence, read at the end of a final-answer line (``_without_hope``).
_HOPE = re.compile(r"I hope it is correct", re.IGNORECASE)
_HOPE_CHARS = len("I hope it is correct")
_INLINE_OPENER = re.compile(r"\$|\\\(")
_SPACING = re.compile(r"\\left|\\right|\\displaystyle|\\[!,;: ]|\s+")
# Longer numbers are not read as exact values: ``int()`` refuses more than 4,300 digits (a
# ValueError a completion could raise at will), and none is an answer a reference can equal.
MAX_EXACT_DIGITS = 4000
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
# A command is read as ``\\name`` (not followed by a letter), spaces, an optional ``[model]`` (no
# ``]``, ``{`` or ``}`` inside), spaces, an optional ``{colour}`` (no brace inside), spaces
# (``_read_command``). The ends of ``[model]`` and ``{colour}`` are found by forward searches
# (``_Forward``): a regex ``[^\]{}]*`` per command would read the same text again for every
# ``\\color[`` that never closes (quadratic).
_BRACE_OR_COMMAND = re.compile(r"\\(?P<command>[hv]?phantom|textcolor|mathcolor|color)(?![a-zA-Z])|[{}]")
_SPACES = re.compile(r"\s*")
_MODEL_END = re.compile(r"[\]{}]")
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


class _Forward:
    """The first match of ``pattern`` in ``text`` at or after a position, asked for positions that
    never go back. A search that found its match at ``m`` answers every later question from a
    position up to ``m`` (nothing matches in between), and one that found none answers every
    later question: the text is searched once, however many questions are asked."""

    __slots__ = ("_found", "_pattern", "_searched_from", "_text")

    def __init__(self, pattern: re.Pattern[str], text: str) -> None:
        self._pattern = pattern
        self._text = text
        self._searched_from = len(text) + 1  # no search yet
        self._found: re.Match[str] | None = None

    def next_from(self, position: int) -> re.Match[str] | None:
        found = self._found
        if self._searched_from <= position and (found is None or position <= found.start()):
            return found
        self._searched_from = position
        self._found = self._pattern.search(self._text, position)
        return self._found


@dataclass(frozen=True, slots=True)
class _Command:
    """One ``\\phantom``/``\\textcolor``/``\\mathcolor``/``\\color`` and its bracket groups."""

    name: str
    start: int
    end: int  # after the groups and the spaces after them
    model: str | None  # what ``[...]`` holds (None: no such group)
    colour: str | None  # what ``{...}`` holds (None: no such group)
    colour_start: int  # where the text of ``colour`` starts (-1 without one)


def _read_command(text: str, name: re.Match[str], model_ends: _Forward, colour_ends: _Forward) -> _Command:
    """The command whose name ``name`` matched, with its groups (see ``_BRACE_OR_COMMAND``)."""
    position = _SPACES.match(text, name.end()).end()  # type: ignore[union-attr]  # \s* always matches
    model = colour = None
    colour_start = -1
    if text.startswith("[", position):
        closer = model_ends.next_from(position + 1)
        if closer is not None and closer.group() == "]":
            model = text[position + 1 : closer.start()]
            position = _SPACES.match(text, closer.end()).end()  # type: ignore[union-attr]
    if text.startswith("{", position):
        closer = colour_ends.next_from(position + 1)
        if closer is not None and closer.group() == "}":
            colour, colour_start = text[position + 1 : closer.start()], position + 1
            position = _SPACES.match(text, closer.end()).end()  # type: ignore[union-attr]
    return _Command(name.group("command"), name.start(), position, model, colour, colour_start)


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
    commands: list[_Command] = []
    model_ends, colour_ends = _Forward(_MODEL_END, text), _Forward(_BRACE, text)
    read_up_to = 0  # a command inside the groups of the one before is part of them, not a command
    for brace in _BRACE_OR_COMMAND.finditer(text):
        index = brace.start()
        token = brace.group()
        if token.startswith("\\"):
            if index < read_up_to:
                continue
            command = _read_command(text, brace, model_ends, colour_ends)
            read_up_to = command.end
            commands.append(command)
            colour = command.colour
            if command.name == "color" and colour is not None and _invisible_colour(command.model, colour):
                switches.append((command.start, stack[-1] if stack else None))
            continue
        if _escaped_at(text, index):
            continue
        if token == "{":
            stack.append(index)
        elif stack:
            closing[stack.pop()] = index
    for command in commands:
        if command.name == "color":
            continue
        if command.name in ("textcolor", "mathcolor"):
            if command.colour is None or not _invisible_colour(command.model, command.colour):
                continue
            argument = command.end
        else:  # a phantom: what was read as its colour is its argument
            argument = command.end if command.colour is None else command.colour_start - 1
        if argument < len(text) and text[argument] == "{":
            hidden.append((command.start, closing.get(argument, len(text) - 1) + 1))
        else:  # an argument of one token: ``\\phantom4``
            following = _NEXT_TOKEN.match(text, argument)
            hidden.append((command.start, argument if following is None else following.end()))
    math_ends = _Forward(_MATH_END, text)  # switches come in order: one search over the text
    for start, group in switches:
        if group is not None:
            end = closing.get(group, len(text))
        else:
            found = math_ends.next_from(start)
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
    # Braces before the first box command decide nothing: a brace's match depends only on what
    # follows it. Boxes close the text, so the one pass starts there and reads a few braces.
    first = min((found for found in map(text.find, _BOX_COMMANDS) if found >= 0), default=-1)
    if first < 0:
        return []
    spans: list[tuple[int, int]] = []
    stack: list[tuple[int, bool]] = []  # (where the content starts, whether a box opened it)
    for token in _BRACE_OR_BOX.finditer(text, first):
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
    if len(answers) == 1:
        # Most completions state one answer: nothing to tell apart, and ``_plan`` normalises it
        # anyway. Skipping the key saves a normalisation and an exact-value parse per candidate in
        # the calling thread, which is what an idle trainer's next group pays for (issue 46).
        return [answers[0].strip()]
    seen: set[object] = set()
    kept = []
    for answer in dict.fromkeys(answer.strip() for answer in answers):  # the same text: once
        form = normalise(answer)
        value = exact_value(form)
        # The value's numerator and denominator, not the Fraction: hashing a Fraction computes a
        # modular inverse (about 10 µs), more than the rest of the extraction together.
        key = ("value", value[0].numerator, value[0].denominator) if value is not None else ("form", form)
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
    span = _without_hope(span)
    stated = _distinct([item for item in _inline_maths(span) if item.strip()])
    if stated:
        return stated, "final-answer"
    span = span.strip().rstrip(".").strip()
    return ([span], "final-answer") if span else None


def _without_hope(line: str) -> str:
    """``line`` less a closing "I hope it is correct" (Minerva's format), with the full stop and
    the spaces around it: what the regex ``\\.?\\s*I hope it is correct\\.?\\s*$`` removes, read
    from the end (that regex, searched, reads a line of spaces again from every space)."""
    tail = line.rstrip()
    if tail.endswith("."):
        tail = tail[:-1]
    sentence = len(tail) - _HOPE_CHARS
    if sentence < 0 or _HOPE.fullmatch(tail, sentence) is None:
        return line
    head = tail[:sentence].rstrip()
    return head[:-1] if head.endswith(".") else head


def _inline_maths(line: str) -> list[str]:
    """The inline maths of one line, in order: ``$...$`` (one character or more, no ``$``) and
    ``\\(...\\)`` (one character or more, up to the first ``\\)``), as the regex
    ``\\$([^$]+)\\$|\\\\\\((.+?)\\\\\\)`` reads them from left to right; a closer found missing is not
    searched for again from a later opener (that regex does, from each one: quadratic)."""
    found: list[str] = []
    dollars_close = parens_close = True  # False once no closer is left after some opener
    position = 0
    while (opener := _INLINE_OPENER.search(line, position)) is not None:
        start = opener.start()
        position = start + 1
        if opener.group() == "$":
            closer = line.find("$", start + 1) if dollars_close else -1
            dollars_close = closer >= 0
            if closer > start + 1:
                found.append(line[start + 1 : closer])
                position = closer + 1
        else:
            closer = line.find("\\)", start + 3) if parens_close else -1
            parens_close = closer >= 0
            if closer >= 0:
                found.append(line[start + 2 : closer])
                position = closer + 2
    return found


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
    """``(value, is_decimal)`` when the answer is a plain integer, decimal or simple fraction (of
    at most ``MAX_EXACT_DIGITS`` characters)."""
    if len(normalised) > MAX_EXACT_DIGITS:
        return None
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
