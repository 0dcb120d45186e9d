"""The expensive half of the ``math`` verifier; it runs only inside pool worker processes.

Only math-verify's LaTeX extraction is used. Its plain-expression extraction hands text to
SymPy's ``parse_expr``, which evaluates Python, so model text never goes there. Its own
SIGALRM timeouts are switched off (``None``): the parent pool enforces the wall clock.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

from math_verify import LatexExtractionConfig, parse, verify

logging.getLogger("math_verify").setLevel(logging.ERROR)

_LATEX_ONLY = (LatexExtractionConfig(boxed_match_priority=0),)


def _parse(answer: str) -> list[Any]:
    return parse(
        "\\boxed{" + answer + "}",
        extraction_config=_LATEX_ONLY,
        fallback_mode="no_fallback",
        extraction_mode="first_match",
        parsing_timeout=None,  # type: ignore[arg-type]
    )


@lru_cache(maxsize=2048)
def _parse_gold(gold: str) -> tuple[Any, ...]:
    return tuple(_parse(gold))


# One of each common answer shape: ANTLR builds its parsing tables lazily, per construct, so the
# first fraction, root, interval or matrix a worker meets is slow. Pay that once, at start-up.
WARM_UP_PAIRS: tuple[tuple[str, str], ...] = (
    ("\\frac{\\sqrt{2}}{2}+x^{2}", "\\dfrac{1}{\\sqrt{2}}+x^2"),
    ("12\\frac{3}{5}", "\\frac{63}{5}"),
    ("7\\pi", "7 \\pi"),
    ("4a-2", "2(2a-1)"),
    ("(1, 2]", "(1,2]"),
    ("\\{1, 2\\}", "1, 2"),
    ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}"),
    ("\\text{(A)}", "A"),
    ("30^\\circ", "30"),
    ("50\\%", "0.5"),
    ("y = 2x + 1", "2x+1"),
    ("\\log_2 8 + \\sin(x)", "3+\\sin x"),
    ("-\\infty", "-\\infty"),
    ("4:30 \\text{ p.m.}", "4:30"),
)


def warm_up() -> None:
    """Build the LaTeX parser tables and SymPy caches at worker start-up (see ``WARM_UP_PAIRS``)."""
    for gold, answer in WARM_UP_PAIRS:
        verify(_parse(gold), _parse(answer), timeout_seconds=None)
    _parse_gold.cache_clear()


def check(request: tuple[str, ...]) -> tuple[str, Any]:
    """``("gold", gold)`` -> ``("ok", parseable)``; ``("verify", gold, answer)`` -> ``("ok", equal)``
    or ``("skip", reason)`` when the gold does not parse."""
    kind = request[0]
    if kind == "gold":
        return "ok", bool(_parse_gold(request[1]))
    if kind == "verify":
        gold = _parse_gold(request[1])
        if not gold:
            return "skip", "the reference could not be parsed as math"
        predicted = _parse(request[2])
        if not predicted:
            return "ok", False
        return "ok", bool(verify(list(gold), predicted, timeout_seconds=None))
    raise ValueError(f"unknown request kind {kind!r}")
