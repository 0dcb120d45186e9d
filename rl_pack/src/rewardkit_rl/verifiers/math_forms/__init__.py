"""Form-aware comparison of a math answer with its reference, in front of math-verify.

``forms`` reads the shape of a reference and of an answer (relation, list, set, tuple, interval,
matrix, piecewise function, approximation, text, plain expression) from the LaTeX string;
``compare`` matches the shapes and hands the leaves to ``values`` (math-verify's parser and
checker, with guards where it is too lenient); ``relations`` and ``intervals`` hold the rules for
equations, inequalities, approximations and sets of numbers. It runs inside the ``math``
verifier's worker processes, under their hard wall-clock timeout.
"""

from __future__ import annotations

from rewardkit_rl.verifiers.math_forms.compare import Verdict, compare, reference_problem

__all__ = ["Verdict", "compare", "reference_problem"]
