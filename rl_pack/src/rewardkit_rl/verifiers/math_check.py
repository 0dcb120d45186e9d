"""The expensive half of the ``math`` verifier; it runs only inside pool worker processes.

``math_forms`` reads the form of the reference and of the answer and compares them, leaf by leaf,
with math-verify's LaTeX parser and checker. Only math-verify's LaTeX extraction is used: its
plain-expression extraction hands text to SymPy's ``parse_expr``, which evaluates Python, so
model text never goes there. Its own SIGALRM timeouts are switched off (``None``): the parent
pool enforces the wall clock.
"""

from __future__ import annotations

from typing import Any

import sympy

from rewardkit_rl.verifiers.math_answers import normalise
from rewardkit_rl.verifiers.math_forms import compare, reference_problem
from rewardkit_rl.verifiers.math_forms.compare import reference_form
from rewardkit_rl.verifiers.math_forms.values import parse_leaf

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
    ("x^2-2x+10=0", "2x^2-4x+20=0"),
    ("\\cos(e) \\approx -0.912", "-0.9117"),
    (
        "\\begin{cases} x & x < 0 \\\\ 2x & x \\ge 0 \\end{cases}",
        "\\begin{cases} x & x<0 \\\\ 2x & x\\geq 0 \\end{cases}",
    ),
)


def warm_up() -> None:
    """Build the LaTeX parser tables and SymPy caches at worker start-up (see ``WARM_UP_PAIRS``),
    and import what ``simplify`` imports on first use (``sympy.physics.units``, about a second)."""
    x, y = sympy.symbols("x y")
    sympy.simplify((x + y) ** 2 - x**2 - 2 * x * y - y**2)
    for gold, answer in WARM_UP_PAIRS:
        if reference_problem(gold) is None:
            compare(gold, answer)
    for cached in (parse_leaf, reference_form, reference_problem, compare):
        cached.cache_clear()


def check(request: tuple[str, ...]) -> tuple[str, Any]:
    """``("gold", gold)`` -> ``("ok", problem)`` (None when the reference is usable);
    ``("verify", gold, answer)`` -> ``("ok", (equal, reason, unparsed))``, or ``("skip", reason)``
    when the reference cannot be used; ``("canary", gold, variant)``: the same as ``verify``, but
    ``variant`` (the reference respaced, drawn per request) goes through the whole comparison even
    where its spelling is the reference's, so that a worker vouched for by a canary has parsed and
    compared the reference as a candidate's answer would be."""
    kind = request[0]
    if kind == "gold":
        return "ok", reference_problem(request[1])
    if kind == "canary":
        problem = reference_problem(request[1])
        if problem is not None:
            return "skip", problem
        verdict = compare(request[1], request[2])
        return "ok", (verdict.equal, verdict.reason, verdict.unparsed)
    if kind == "verify":
        problem = reference_problem(request[1])
        if problem is not None:
            return "skip", problem
        if normalise(request[1]) == normalise(request[2]):
            # The reference itself (spacing aside), and it was just found usable: parsed, and a
            # true relation where it states one.
            return "ok", (True, None, False)
        verdict = compare(request[1], request[2])
        return "ok", (verdict.equal, verdict.reason, verdict.unparsed)
    raise ValueError(f"unknown request kind {kind!r}")
