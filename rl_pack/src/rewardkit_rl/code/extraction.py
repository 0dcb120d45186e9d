"""Finding the program in a completion: fenced code blocks, or the whole text."""

from __future__ import annotations

import re

# An opening fence with an optional language tag; the block runs to the next fence or the end
# (a completion cut at its token budget often has no closing fence).
_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)(?:^[ \t]*```[ \t]*$|\Z)", re.M | re.S)
_PYTHON_TAGS = frozenset({"", "python", "py", "python3", "py3"})


def extract_program(completion: str, entry_point: str | None = None) -> str:
    """The program a completion contains.

    The last fenced block tagged python (``py``, ``python3``) or untagged is taken; when
    ``entry_point`` is given, the last such block that defines it is preferred, so a trailing
    usage example does not replace the solution. Without any fence the whole text is the
    program, unchanged (a HumanEval continuation keeps its leading indentation).
    """
    blocks = [body for tag, body in _FENCE.findall(completion) if tag.lower() in _PYTHON_TAGS]
    if not blocks:
        return completion
    if entry_point:
        defining = re.compile(rf"^\s*(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(", re.M)
        for body in reversed(blocks):
            if defining.search(body):
                return body
    return blocks[-1]


def defines(program: str, entry_point: str) -> bool:
    """Whether ``program`` has a top-level ``def entry_point(`` (or ``async def``)."""
    return re.search(rf"^(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(", program, re.M) is not None
