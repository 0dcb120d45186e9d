"""No infinities (issue 41): an infinite, undefined or NaN answer is close to no finite number.

Revision 5 paid ``\\infty`` (and ``\\frac{1}{0}``, ``\\log(0)``, ...) against a reference
``E \\approx v`` with a closed-form ``E``: "within 1e-12 of the larger of the two" held for an
infinity and every number, the scale being infinite too. Here every approximation reference of
the math dev set is answered with each non-finite spelling, through ``rewardkit.load(...)
.score(...)`` and the real workers: each scores 0, as a plain wrong answer does, and the
reference itself (its identity row) keeps its 1.
"""

from __future__ import annotations

import json
from pathlib import Path

import rewardkit

DEVSET = Path(__file__).resolve().parents[2] / "testdata" / "math_forms" / "devset.jsonl"
APPROXIMATION_FAMILIES = ("approximations", "approximate unions")

# Infinities, complex infinity, NaN and undefined values, as values, relations and sets.
NON_FINITE = (
    "\\infty",
    "-\\infty",
    "+\\infty",
    "\\infty i",
    "inf",
    "-inf",
    "oo",
    "zoo",
    "\\text{undefined}",
    "\\text{NaN}",
    "NaN",
    "\\frac{1}{0}",
    "-\\frac{1}{0}",
    "\\frac{0}{0}",
    "1/0",
    "\\infty - \\infty",
    "\\log(0)",
    "\\ln 0",
    "\\tan(\\frac{\\pi}{2})",
    "\\lim_{x\\to 0} \\frac{1}{x}",
    "\\approx \\infty",
    "x \\approx \\infty",
    "\\approx (-\\infty, \\infty)",
    "(-\\infty, \\infty)",
)


def approximation_rows() -> list[dict[str, object]]:
    """Every approximation reference of the dev set (a family of approximations, or an ``\\approx``)
    with its identity row and one wrong answer of the set."""
    rows = [json.loads(line) for line in DEVSET.read_text().splitlines() if line.strip()]
    chosen: dict[str, dict[str, object]] = {}
    for row in rows:
        gold = row["gold"]
        if row["family"] not in APPROXIMATION_FAMILIES and "\\approx" not in gold:
            continue
        entry = chosen.setdefault(gold, {"gold": gold, "right": None, "wrong": None})
        if row["kind"] == "identity":
            entry["right"] = row["answer"]
        elif not row["label"] and entry["wrong"] is None:
            entry["wrong"] = row["answer"]
    return list(chosen.values())


def test_every_approximation_reference_refuses_every_non_finite_answer() -> None:
    references = approximation_rows()
    assert len(references) >= 100, len(references)  # 56 approximations, 52 approximate unions
    groups = []
    for index, reference in enumerate(references):
        answers = {"right": reference["right"], "wrong": reference["wrong"]}
        answers.update({f"non-finite {spelled}": spelled for spelled in NON_FINITE})
        rollouts = [
            {
                "trajectory_id": name,
                "completion": f"So the answer is $\\boxed{{{answer}}}$.",
                "reference": reference["gold"],
            }
            for name, answer in answers.items()
            if answer is not None
        ]
        groups.append((f"approximation-{index}", rollouts))
    config = {"rl": {"reward": {"provider": "math", "params": {"workers": 2}}}}
    with rewardkit.load(config) as reward:
        batch = reward.score(groups)
    paid = []
    for group, reference in zip(batch.groups, references):
        finals = {candidate.trajectory_id: candidate.final for candidate in group.candidates}
        assert finals["right"] == 1.0, (reference["gold"], finals)
        if "wrong" in finals:
            assert finals["wrong"] == 0.0, (reference["gold"], finals)
        gold = reference["gold"]
        paid += [(gold, name) for name, final in finals.items() if name.startswith("non-finite") and final]
    assert paid == []
