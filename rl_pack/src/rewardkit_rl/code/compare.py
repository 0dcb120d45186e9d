"""Comparing a program's stdout with the expected output of a stdin/stdout case."""

from __future__ import annotations

import math
from typing import Literal

CompareMode = Literal["exact", "token", "float"]
COMPARE_MODES: tuple[str, ...] = ("exact", "token", "float")


def _lines(text: str) -> list[str]:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    return [line.rstrip() for line in lines]


def _number(token: str) -> float | None:
    try:
        value = float(token)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def outputs_match(
    actual: str, expected: str, mode: CompareMode = "token", rel_tol: float = 1e-6, abs_tol: float = 1e-6
) -> bool:
    """Whether ``actual`` matches ``expected`` under ``mode``.

    - ``exact``: equal line by line, ignoring only trailing spaces on a line, ``\\r\\n`` versus
      ``\\n`` and blank lines at the end (judges print a final newline or not);
    - ``token``: equal sequences of whitespace-separated tokens;
    - ``float``: like ``token``, but two numeric tokens match within ``rel_tol``/``abs_tol``.
    """
    if mode == "exact":
        return _lines(actual) == _lines(expected)
    got, want = actual.split(), expected.split()
    if mode == "token":
        return got == want
    if mode != "float":
        raise ValueError(f"unknown compare mode {mode!r}; use one of {list(COMPARE_MODES)}")
    if len(got) != len(want):
        return False
    for mine, theirs in zip(got, want):
        if mine == theirs:
            continue
        a, b = _number(mine), _number(theirs)
        if a is None or b is None or not math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol):
            return False
    return True
