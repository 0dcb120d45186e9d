"""String-level LaTeX helpers for reading answer forms: cleaning, and bracket-aware scanning.

Nothing here evaluates mathematics. Brackets are counted loosely on purpose: ``(`` and ``[`` both
open and ``)`` and ``]`` both close, because half-open intervals such as ``(1, 2]`` mix them.
``\\{ \\}``, ``\\langle \\rangle``, ``{ }`` and ``\\begin{..} \\end{..}`` count too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from rewardkit.plugin import last_boxed

_SUBSTITUTIONS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        (
            r"\\(?:left|right|bigl|bigr|Bigl|Bigr|biggl|biggr|Biggl|Biggr|big|Big|bigg|Bigg)(?![a-zA-Z])\.?",
            "",
        ),
        (r"\\(?:displaystyle|textstyle|scriptstyle)(?![a-zA-Z])", ""),
        (r"\\[dt]frac(?![a-zA-Z])", r"\\frac"),
        # \frac with one-token arguments: \frac12, \frac \pi4, \frac{a}b
        (r"\\frac\s*(\\[a-zA-Z]+|[0-9a-zA-Z])\s*(\\[a-zA-Z]+|[0-9a-zA-Z])", r"\\frac{\1}{\2}"),
        (r"\\frac\s*(\\[a-zA-Z]+|[0-9a-zA-Z])\s*(\{)", r"\\frac{\1}\2"),
        (r"\\frac\s*(\{[^{}]*\})\s*(\\[a-zA-Z]+|[0-9a-zA-Z])", r"\\frac\1{\2}"),
        (r"\\(?:mbox|textrm|textnormal|textit|textbf|textup|textsf)(?![a-zA-Z])", r"\\text"),
        (r"\\(?:leqslant|leq|le)(?![a-zA-Z])|≤|⩽", r"\\le "),
        (r"\\(?:geqslant|geq|ge)(?![a-zA-Z])|≥|⩾", r"\\ge "),
        (r"\\(?:neq|ne)(?![a-zA-Z])|≠", r"\\ne "),
        (r"\\lt(?![a-zA-Z])", "<"),
        (r"\\gt(?![a-zA-Z])", ">"),
        (r"\\(?:approx|thickapprox)(?![a-zA-Z])|≈", r"\\approx "),
        (r"\\lbrace(?![a-zA-Z])", r"\\{"),
        (r"\\rbrace(?![a-zA-Z])", r"\\}"),
        (r"\\(?:qquad|quad)(?![a-zA-Z])", " "),
        (r",\s*\\!\s*", ","),  # 11,\! 111 is one number
        (r"\\!", ""),
        (r"\\[,;: ]|~", " "),
        (r"−|–", "-"),
        (r"\)\s*(or|and)\s*\(", r") \1 ("),  # (11,7)or(7,11)
        (r"\s+", " "),
    )
)
_DOLLARS = re.compile(r"^\$+|\$+$")
_TRAILING = re.compile(r"(?:\s|\\text\{\s*[.,;]?\s*\}|[.,;])+$")


def clean(text: str) -> str:
    """Spacing, sizing and synonym commands folded into one spelling (``\\geq`` -> ``\\ge``,
    ``\\dfrac`` -> ``\\frac``, ``\\left(`` -> ``(``), surrounding ``$`` and trailing punctuation
    removed. Text inside ``\\text{}`` keeps its words."""
    text = _DOLLARS.sub("", text.strip()).replace("\x00", "").replace("\\\\", "\x00")  # protect row breaks
    for pattern, replacement in _SUBSTITUTIONS:
        text = pattern.sub(replacement, text)
    text = text.replace("\x00", "\\\\")
    text = _TRAILING.sub("", text)
    return text.strip()


_COMMAND = re.compile(r"\\[a-zA-Z]+|\\.")
_ENVIRONMENT = re.compile(r"\\(begin|end)\{([a-zA-Z*]+)\}")


def _token(text: str, index: int) -> tuple[int, int]:
    """``(depth change, length)`` of the token starting at ``index``."""
    char = text[index]
    if char == "\\":
        env = _ENVIRONMENT.match(text, index)
        if env is not None:
            return (1 if env.group(1) == "begin" else -1), env.end() - index
        if text.startswith("\\{", index):
            return 1, 2
        if text.startswith("\\}", index):
            return -1, 2
        command = _COMMAND.match(text, index)
        if command is not None:
            name = command.group(0)
            if name == "\\langle":
                return 1, len(name)
            if name == "\\rangle":
                return -1, len(name)
            return 0, len(name)
        return 0, 1
    if char in "([{":
        return 1, 1
    if char in ")]}":
        return -1, 1
    return 0, 1


def top_level(text: str) -> Iterator[tuple[int, int]]:
    """``(index, length)`` of each token at bracket depth 0 (a bracket that opens a group is
    itself at depth 0; what follows it is not)."""
    depth = 0
    index = 0
    while index < len(text):
        change, length = _token(text, index)
        if change < 0:
            depth -= 1
        if depth == 0 and change >= 0:
            yield index, length
        if change > 0:
            depth += 1
        index += length


def balanced(text: str) -> bool:
    """Whether every bracket closes and none closes before it opens."""
    depth = 0
    index = 0
    while index < len(text):
        change, length = _token(text, index)
        depth += change
        if depth < 0:
            return False
        index += length
    return depth == 0


def split_top(text: str, separator: re.Pattern[str]) -> list[tuple[str, str]]:
    """Split at separators that start at depth 0: ``[(part, separator before it), ...]``; the first
    part's separator is ``""``."""
    parts: list[tuple[str, str]] = []
    start, before = 0, ""
    skip_to = 0
    for index, _ in top_level(text):
        if index < skip_to:
            continue
        match = separator.match(text, index)
        if match is None or match.end() == index:
            continue
        parts.append((text[start:index], before))
        before = match.group(0)
        start = skip_to = match.end()
    parts.append((text[start:], before))
    return parts


def enclosing(text: str) -> tuple[str, str, str] | None:
    """``(opener, inside, closer)`` when one bracket pair wraps all of ``text``; else None."""
    if not text:
        return None
    change, length = _token(text, 0)
    if change <= 0:
        return None
    depth = 0
    index = 0
    while index < len(text):
        step, size = _token(text, index)
        depth += step
        if depth == 0:
            if index + size != len(text):
                return None
            return text[:length], text[length:index], text[index:]
        index += size
    return None


def group_end(text: str, start: int) -> int | None:
    """The index just after the group that opens at ``start`` (None when none opens there, or it
    does not close)."""
    change, _ = _token(text, start)
    if change <= 0:
        return None
    depth = 0
    index = start
    while index < len(text):
        step, size = _token(text, index)
        depth += step
        index += size
        if depth == 0:
            return index
    return None


def braced_argument(text: str, start: int) -> tuple[str, int] | None:
    """The ``{...}`` group starting at ``start``: ``(content, index after it)``."""
    if start >= len(text) or text[start] != "{":
        return None
    depth = 0
    for index in range(start, len(text)):
        char = text[index]
        if char == "\\":
            continue
        if char == "{" and (index == 0 or text[index - 1] != "\\"):
            depth += 1
        elif char == "}" and (index == 0 or text[index - 1] != "\\"):
            depth -= 1
            if depth == 0:
                return text[start + 1 : index], index + 1
    return None


_TEXT_GROUP = re.compile(r"\\text\s*\{")


def text_groups(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, content)`` of every ``\\text{...}`` group."""
    found = []
    for match in _TEXT_GROUP.finditer(text):
        argument = braced_argument(text, match.end() - 1)
        if argument is not None:
            found.append((match.start(), argument[1], argument[0]))
    return found


def strip_text(text: str) -> str:
    """``text`` with every ``\\text{...}`` group replaced by its content."""
    groups = text_groups(text)
    for start, end, content in reversed(groups):
        text = text[:start] + content + text[end:]
    return text


_DOUBLED_COMMAND = re.compile(r"\\\\(?=[a-zA-Z])")
# Display math may span lines; inline math ($...$, \(...\)) may not (as math-verify reads it).
_MATH_SEGMENT = re.compile(r"\$\$(.+?)\$\$|\$([^$\n]+)\$|\\\(([^\n]+?)\\\)|\\\[(.+?)\\\]", re.DOTALL)
_WORDS = re.compile(r"[A-Za-z]{3,}")
_JOINING = re.compile(r"[\s,;.]*(?:(?:and|or|,)[\s,;.]*)*")
_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
_MAX_UNWRAP = 4


def _all_boxed(text: str) -> list[str]:
    found = []
    for match in _BOX.finditer(text):
        content = braced_argument(text, match.end() - 1)
        if content is not None:
            found.append(content[0])
    return found


def unwrap(text: str) -> str:
    """The math of a reference or an answer given with its wrapping: the content of
    ``\\boxed{}`` (of every box, as a list, when there are several side by side), the last
    ``$...$`` (or ``\\(...\\)``, ``\\[...\\]``) of a sentence, and commands written with doubled
    backslashes (``\\\\frac``, from an escaped string) outside matrices and cases."""
    if "\\begin" not in text and "\\\\" in text:
        text = _DOUBLED_COMMAND.sub(r"\\", text)
    for _ in range(_MAX_UNWRAP):
        boxes = _all_boxed(text)
        if len(boxes) > 1 and all("\\boxed" not in box for box in boxes):
            leftover = _BOX.sub("", text)
            for box in boxes:
                leftover = leftover.replace(box + "}", " ", 1)
            if _JOINING.fullmatch(_MATH_SEGMENT.sub(" ", leftover).strip()):
                return ", ".join(box.strip() for box in boxes)
        boxed = last_boxed(text)
        if boxed is not None:
            text = boxed
            continue
        segments = list(_MATH_SEGMENT.finditer(text))
        if not segments:
            break
        outside = _MATH_SEGMENT.sub(" ", text)
        contents = [next(group for group in match.groups() if group is not None) for match in segments]
        if _JOINING.fullmatch(outside.strip()):
            text = ", ".join(content.strip() for content in contents)  # $1$ and $2$
            continue
        if not _WORDS.search(strip_text(outside)):
            break
        text = contents[-1]
    return text.strip()
