"""Build the labelled dev set of math answer forms: testdata/math_forms/devset.jsonl.

    python benchmarks/verifier_forms_devset.py           # (re)write the dev set
    python benchmarks/verifier_forms_devset.py --check   # fail if the checked-in file is stale
    python benchmarks/verifier_forms_devset.py --families  # also rebuild the generated families

Sources (both in testdata/math_forms/, see its README): the final answers of the 5,000 MATH test
problems (``math_golds.jsonl``) and answer forms written for this set, by family
(``families.jsonl``: relations, equation answers, systems, matrices, multisets, intervals,
piecewise, approximations, percents and units), each with correct rewrites and typical wrong answers;
seven of its families (``GENERATED_FAMILIES``: chained equalities, equation chain systems,
piecewise arrays, relation : interval, approximate unions, vector solutions, exclusions) are
written by the seeded generator below (``--families``), the rest by hand.

The method, for every reference ``g``:
- ``identity``: the answer ``g`` itself must score 1;
- ``dfrac``: ``g`` with every ``\\frac`` written ``\\dfrac`` must score 1;
- ``mutation``: ``g`` with one digit of the answer changed must score 0. When ``g`` is a relation,
  only digits after its last ``=`` or ``\\approx`` are changed; never the subscript of a free
  constant (``c_{1}``), which names it. Up to two mutations per reference,
  at positions and to digits chosen by a hash of the reference (deterministic);
- ``rewrite`` (label 1) and ``wrong`` (label 0): written by hand in families.jsonl.
A mutation that happens to leave the value unchanged is listed in ``EQUIVALENT_MUTATIONS`` with
the reason, and labelled 1.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from decimal import ROUND_HALF_EVEN, Decimal, getcontext
from fractions import Fraction
from itertools import pairwise
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "testdata" / "math_forms"
OUTPUT = FOLDER / "devset.jsonl"
MUTATIONS_PER_REFERENCE = 2

# (reference, mutated answer) -> why the mutation does not change the value.
EQUIVALENT_MUTATIONS: dict[tuple[str, str], str] = {}

_RELATION_END = re.compile(r"=|\\approx(?![a-zA-Z])")
# The subscript of a free constant (``c_{1}``) names it: a changed digit renames the constant, which
# leaves a general solution the same set of functions.
_CONSTANT_NAME = re.compile(r"(?<![a-zA-Z\\])[cCkK]_\{?(\d+)\}?")


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def mutations(gold: str, count: int = MUTATIONS_PER_REFERENCE) -> list[str]:
    """``gold`` with one digit changed, at up to ``count`` different positions."""
    start = 0
    for match in _RELATION_END.finditer(gold):
        start = match.end()
    names = {index for match in _CONSTANT_NAME.finditer(gold) for index in range(*match.span(1))}
    positions = [index for index in range(start, len(gold)) if gold[index].isdigit() and index not in names]
    found: list[str] = []
    seed = _digest(gold)
    while positions and len(found) < count:
        position = positions.pop(seed % len(positions))
        digit = (int(gold[position]) + 1 + (seed // 7) % 9) % 10
        found.append(gold[:position] + str(digit) + gold[position + 1 :])
        seed = _digest(str(seed))
    return found


def cases(
    family: str, source: str, gold: str, rewrites: list[str], wrongs: list[str]
) -> list[dict[str, Any]]:
    rows = [{"kind": "identity", "answer": gold, "label": 1}]
    if "\\frac" in gold:
        rows.append({"kind": "dfrac", "answer": gold.replace("\\frac", "\\dfrac"), "label": 1})
    for answer in mutations(gold):
        reason = EQUIVALENT_MUTATIONS.get((gold, answer))
        row = {"kind": "mutation", "answer": answer, "label": 1 if reason else 0}
        if reason:
            row["note"] = reason
        rows.append(row)
    rows += [{"kind": "rewrite", "answer": answer, "label": 1} for answer in rewrites]
    rows += [{"kind": "wrong", "answer": answer, "label": 0} for answer in wrongs]
    return [{"family": family, "source": source, "gold": gold, **row} for row in rows]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def build() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for entry in _jsonl(FOLDER / "math_golds.jsonl"):
        rows += cases("MATH", f"MATH test #{entry['idx']}", entry["gold"], [], [])
    for entry in _jsonl(FOLDER / "families.jsonl"):
        rows += cases(
            entry["family"], "written", entry["gold"], entry.get("rewrites", []), entry.get("wrong", [])
        )
    for index, row in enumerate(rows):
        row["id"] = index
    return rows


def serialise(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)


# -- generated families (issue 28) ---------------------------------------------------------------
# Compound college-level reference forms, varied over numbers and names by a seeded generator so
# that they are not copies of one string. ``--families`` rewrites their rows in families.jsonl (the
# other families there are hand-written and kept); ``--check`` also fails when those rows are stale.

GENERATED_FAMILIES = (
    "chained equalities",
    "equation chain systems",
    "piecewise arrays",
    "relation : interval",
    "approximate unions",
    "vector solutions",
    "exclusions",
)
ROWS_PER_FAMILY = 52

Row = dict[str, Any]


def _fraction(numerator: int, denominator: int, style: str = "frac") -> str:
    value = Fraction(numerator, denominator)
    if value.denominator == 1:
        return str(value.numerator)
    sign = "-" if value < 0 else ""
    top, bottom = abs(value.numerator), value.denominator
    return f"{sign}{top}/{bottom}" if style == "slash" else f"{sign}\\frac{{{top}}}{{{bottom}}}"


def _chained_equalities(rng: random.Random) -> list[Row]:
    name_sets = [
        ("\\bar{x}", "\\bar{y}"),
        ("x", "y"),
        ("a", "b"),
        ("p", "q"),
        ("m", "n"),
        ("u", "v"),
        ("\\bar{x}", "\\bar{z}"),
        ("x_{1}", "x_{2}"),
        ("\\alpha", "\\beta"),
        ("x", "y", "z"),
    ]
    rows = []
    for index in range(ROWS_PER_FAMILY):
        names = name_sets[index % len(name_sets)]
        top, bottom = rng.randint(1, 40), rng.randint(2, 15)
        while Fraction(top, bottom).denominator == 1:
            top += 1
        kind = index % 4
        if kind == 0:
            gold_value, other, wrong = f"{top}/{bottom}", _fraction(top, bottom), _fraction(top + 1, bottom)
        elif kind == 1:
            gold_value, other = f"{top} /({bottom} \\pi)", f"\\frac{{{top}}}{{{bottom}\\pi}}"
            wrong = f"\\frac{{{top}}}{{{bottom}}}"
        elif kind == 2:
            gold_value, other, wrong = _fraction(top, bottom), f"{top}/{bottom}", _fraction(top, bottom + 1)
        else:
            root = rng.choice([2, 3, 5, 6, 7, 10])
            gold_value, other = f"{top}\\sqrt{{{root}}}", f"\\sqrt{{{top * top * root}}}"
            wrong = f"{top + 1}\\sqrt{{{root}}}"
        chain = "=".join(names)
        others = [chr(ord("k") + i) for i in range(len(names))]
        doubled = f"\\frac{{{2 * top}}}{{{2 * bottom}}}" if kind in (0, 2) else other
        rows.append(
            {
                "gold": f"{chain}={gold_value}",
                "rewrites": [
                    f"{chain}={other}",
                    ", ".join(f"{name}={other}" for name in names),
                    ", ".join(f"{name}={other}" for name in reversed(names)),
                    ", ".join(other for _ in names),
                    f"{chain}={doubled}={other}" if kind in (0, 2) else f"{chain} = {other}",
                ],
                "wrong": [
                    f"{chain}={wrong}",
                    f"{chain}={wrong}={other}",
                    f"{names[0]}={other}",
                    other,
                    ", ".join([f"{names[0]}={other}", *(f"{name}={wrong}" for name in names[1:])]),
                    "=".join([names[0], *others[1:]]) + f"={other}",
                ],
            }
        )
    return rows


def _equation_chain_systems(rng: random.Random) -> list[Row]:
    letters = [
        ("x", "y", "z"),
        ("a", "b", "c"),
        ("p", "q", "r"),
        ("u", "v", "w"),
        ("x_{1}", "x_{2}", "x_{3}"),
    ]
    rows = []
    for index in range(ROWS_PER_FAMILY):
        first, second, third = letters[index % len(letters)]
        halved = index % 3 == 2
        shared, single = rng.randint(-9, 12), rng.randint(-9, 12)
        while Fraction(shared, 2 if halved else 1) == single:
            single = rng.randint(-9, 12)
        if halved:
            shared_text, single_text = _fraction(shared, 2), str(single)
            shared_other = f"{shared / 2:g}" if shared % 2 else str(shared // 2)
            shared_off = _fraction(shared + 2, 2)
        else:
            shared_text, single_text, shared_other = str(shared), str(single), f"\\frac{{{2 * shared}}}{{2}}"
            shared_off = str(shared + 1)
        gold = f"{first}={second}={shared_text}, {third}={single_text}"
        in_order, out_of_order = (
            [shared_text, shared_text, single_text],
            [single_text, shared_text, shared_text],
        )
        if index % 4 == 3:
            gold = f"{third}={single_text}, {first}={second}={shared_text}"
            in_order, out_of_order = out_of_order, in_order  # bare values answer in the reference's order
        rows.append(
            {
                "gold": gold,
                "rewrites": [
                    f"{first}={shared_text}, {second}={shared_text}, {third}={single_text}",
                    f"{third}={single_text}, {second}={first}={shared_other}",
                    f"{first}={second}={shared_text} \\text{{ and }} {third}={single_text}",
                    ", ".join(in_order),
                    f"\\left\\{{\\begin{{array}}{{l}} {first}={shared_text} \\\\ {second}={shared_text}"
                    f" \\\\ {third}={single_text} \\end{{array}}\\right.",
                ],
                "wrong": [
                    f"{first}={second}={shared_text}, {third}={single + 1}",
                    f"{first}={second}={third}={shared_text}",
                    f"{first}={shared_text}, {second}={single_text}, {third}={single_text}",
                    f"{first}={second}={shared_text}",
                    f"{first}={second}={single_text}, {third}={shared_text}",
                    f"{first}={second}={shared_off}, {third}={single_text}",
                    ", ".join(out_of_order),
                    f"{first}={second}={shared_text}, {third}={single_text}, s=0",
                ],
            }
        )
    return rows


def _linear(slope: int, intercept: int, variable: str) -> str:
    head = {1: variable, -1: f"-{variable}"}.get(slope, f"{slope}{variable}")
    if intercept == 0:
        return head
    return f"{head}{'+' if intercept > 0 else '-'}{abs(intercept)}"


def _cases(*branches: tuple[str, str]) -> str:
    return "\\begin{cases} " + " \\\\ ".join(f"{e} & {c}" for e, c in branches) + " \\end{cases}"


def _brace_array(spec: str, *rows: str) -> str:
    return f"\\left\\{{\\begin{{array}}{{{spec}}} " + " \\\\ ".join(rows) + " \\end{array}\\right."


def _piecewise_arrays(rng: random.Random) -> list[Row]:
    rows = []
    for index in range(ROWS_PER_FAMILY):
        variable = "x" if index % 3 else "t"
        name = f"{['f', 'g', 'h', 'y'][index % 4]}({variable})"
        cut = rng.randint(-5, 6)
        power = rng.randint(2, 4)
        slope, intercept = rng.choice([-3, -2, -1, 2, 3, 4]), rng.randint(-6, 6)
        square = f"{variable}^{{{power}}}"
        line = _linear(slope, intercept, variable)
        low, high = f"{variable}<{cut}", f"{variable} \\geq {cut}"
        if index % 2:
            body = _brace_array("rll", f"{square} & \\text{{if}} & {low}", f"{line} & \\text{{if}} & {high}")
        else:
            body = _brace_array("ll", f"{square}, & {low}", f"{line}, & {high}")
        rewritten = f"{intercept}+{slope}{variable}" if intercept else f"{slope}\\cdot {variable}"
        shifted = (f"{variable}<{cut + 1}", f"{variable} \\geq {cut + 1}")
        other_line = _linear(slope, intercept + 1, variable)
        rows.append(
            {
                "gold": f"{name}={body}",
                "rewrites": [
                    f"{name}={_cases((square, low), (line, high))}",
                    _cases((line, f"{variable}\\ge {cut}"), (square, f"{cut}>{variable}")),
                    _cases((square, low), (line, "\\text{otherwise}")),
                    _brace_array(
                        "lll",
                        f"{line} & \\text{{for}} & {high}",
                        f"{variable}^{power} & \\text{{for}} & {low}",
                    ),
                    f"{name}={_cases((square, low), (rewritten, high))}",
                ],
                "wrong": [
                    _cases((square, f"{variable} \\le {cut}"), (line, f"{variable}>{cut}")),
                    _cases((f"{variable}^{{{power + 1}}}", low), (line, high)),
                    _cases((line, low), (square, high)),
                    _cases((square, shifted[0]), (line, shifted[1])),
                    _brace_array("ll", f"{square}, & {low}"),
                    f"{name}="
                    + _brace_array(
                        "rll", f"{square} & \\text{{if}} & {low}", f"{other_line} & \\text{{if}} & {high}"
                    ),
                ],
            }
        )
    return rows


def _interval(low: str, high: str, closed_low: bool, closed_high: bool) -> str:
    return f"{'[' if closed_low else '('}{low},{high}{']' if closed_high else ')'}"


def _relation_intervals(rng: random.Random) -> list[Row]:
    rows = []
    for index in range(ROWS_PER_FAMILY):
        variable = ["x", "x", "t", "y"][index % 4]
        a = rng.randint(-12, 5)
        b = a + rng.randint(1, 9)
        a_text = _fraction(a * 2 + 1, 2) if index % 5 == 4 else str(a)
        kind = index % 4
        if kind == 0:  # a < x <= b
            relation, interval = f"{a_text}<{variable} \\leqslant {b}", _interval(a_text, str(b), False, True)
            other_relation = f"{b} \\ge {variable} > {a_text}"
            wrong_interval = _interval(a_text, str(b), False, False)
            wrong_relation = f"{a_text} \\le {variable} \\le {b}"
        elif kind == 1:  # x < a
            relation, interval = f"{variable}<{a_text}", _interval("-\\infty", a_text, False, False)
            other_relation = f"{a_text}>{variable}"
            wrong_interval = _interval("-\\infty", a_text, False, True)
            wrong_relation = f"{variable} \\le {a_text}"
        elif kind == 2:  # x >= a
            relation, interval = f"{variable} \\geqslant {a_text}", _interval(a_text, "\\infty", True, False)
            other_relation = f"{a_text} \\le {variable}"
            wrong_interval = _interval(a_text, "\\infty", False, False)
            wrong_relation = f"{variable}>{a_text}"
        else:  # a <= x <= b
            relation, interval = f"{a_text} \\leq {variable} \\leq {b}", _interval(a_text, str(b), True, True)
            other_relation = f"{b} \\ge {variable} \\ge {a_text}"
            wrong_interval = _interval(a_text, str(b + 1), True, True)
            wrong_relation = f"{a_text}<{variable}<{b}"
        other_variable = "z" if variable != "z" else "w"
        sized = interval.replace("(", "\\left(").replace(")", "\\right)")
        rows.append(
            {
                "gold": f"{relation}:{interval}",
                "rewrites": [
                    interval,
                    relation,
                    other_relation,
                    f"{variable} \\in {interval}",
                    f"{other_relation} : {sized}",
                ],
                "wrong": [
                    wrong_interval,
                    wrong_relation,
                    f"{relation} : {wrong_interval}",
                    f"{wrong_relation} : {interval}",
                    relation.replace(variable, other_variable),
                    f"{variable} \\in {wrong_interval}",
                ],
            }
        )
    return rows


def _rounded(value: Decimal, places: int) -> Decimal:
    return value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)


def _approximate_unions(rng: random.Random) -> list[Row]:
    getcontext().prec = 40
    rows: list[Row] = []
    while len(rows) < ROWS_PER_FAMILY:
        index = len(rows)
        places = 4 if index % 3 else 3
        unit = Decimal(1).scaleb(-places)
        square = rng.randint(3, 400)
        if int(square**0.5) ** 2 == square:
            continue
        exact = Decimal(square).sqrt()
        shown = _rounded(exact, places)
        precise = _rounded(exact, places + 2)
        # Only values well inside their rounding interval: a more precise rewrite must round to them.
        if abs(exact - shown) + unit / 100 > unit / 2 * Decimal("0.9"):
            continue
        coarse = _rounded(exact, places - 2)
        off = shown + unit
        root = f"\\sqrt{{{square}}}"
        outside = index % 2 == 0
        if outside:
            gold = f"\\approx(-\\infty,-{shown}) \\cup({shown}, \\infty)"
            rewrites = [
                f"(-\\infty,-{shown})\\cup({shown},\\infty)",
                f"\\approx\\left(-\\infty,-{precise}\\right) \\cup\\left({precise}, \\infty\\right)",
                f"(-\\infty,-{root})\\cup({root},\\infty)",
                f"x<-{shown} \\text{{ or }} x>{shown}",
                f"\\approx({shown},\\infty)\\cup(-\\infty,-{shown})",
            ]
            wrong = [
                f"(-\\infty,-{coarse})\\cup({coarse},\\infty)",
                f"(-\\infty,-{off})\\cup({shown},\\infty)",
                f"(-\\infty,-{shown}]\\cup[{shown},\\infty)",
                f"(-{shown},{shown})",
                f"({shown},\\infty)",
                f"\\approx(-\\infty,-{shown}) \\cup({off}, \\infty)",
            ]
        else:
            gold = f"\\approx[-{shown}, {shown}]"
            rewrites = [
                f"[-{shown},{shown}]",
                f"\\approx\\left[-{precise}, {precise}\\right]",
                f"[-{root},{root}]",
                f"-{shown} \\le x \\le {shown}",
            ]
            wrong = [
                f"[-{coarse},{coarse}]",
                f"(-{shown},{shown})",
                f"[-{shown},{off}]",
                f"(-\\infty,-{shown}]\\cup[{shown},\\infty)",
                f"\\approx[{shown}, {shown}]",
            ]
        rows.append({"gold": gold, "rewrites": rewrites, "wrong": wrong})
    return rows


def _vector(entries: list[int], env: str = "array") -> str:
    body = " \\\\ ".join(str(entry) for entry in entries)
    if env == "array":
        return f"\\left[\\begin{{array}}{{r}}{body}\\end{{array}}\\right]"
    return f"\\begin{{{env}}}{body}\\end{{{env}}}"


def _exponential(rate: int, variable: str) -> str:
    return {1: f"e^{{{variable}}}", -1: f"e^{{-{variable}}}"}.get(rate, f"e^{{{rate} {variable}}}")


def _expanded(vectors: list[list[int]], rates: list[int], names: list[str], variable: str) -> str:
    cells = []
    for row in range(len(vectors[0])):
        terms = []
        for vector, rate, name in zip(vectors, rates, names):
            entry = vector[row]
            if entry == 0:
                continue
            factor = {1: "+", -1: "-"}.get(entry, f"{'+' if entry > 0 else ''}{entry}")
            terms.append(f"{factor}{name} {_exponential(rate, variable)}")
        cells.append("".join(terms).lstrip("+") or "0")
    return "\\begin{pmatrix}" + " \\\\ ".join(cells) + "\\end{pmatrix}"


def _combination(
    vectors: list[list[int]], rates: list[int], names: list[str], variable: str, env: str
) -> str:
    return "+".join(
        f"{name}{_vector(vector, env)} {_exponential(rate, variable)}"
        for vector, rate, name in zip(vectors, rates, names)
    )


def _parallel(first: list[int], second: list[int]) -> bool:
    """Whether two integer vectors are multiples of each other (every 2x2 minor vanishes)."""
    return all(
        first[i] * second[j] == first[j] * second[i] for i in range(len(first)) for j in range(len(first))
    )


def _vector_solutions(rng: random.Random) -> list[Row]:
    variable = "t"

    def bracketed(vectors: list[list[int]], rates: list[int], names: list[str]) -> str:
        return _combination(vectors, rates, names, variable, "bmatrix")

    rows = []
    for index in range(ROWS_PER_FAMILY):
        size = 3 if index % 2 else 2
        count = 3 if size == 3 and index % 4 == 1 else 2
        label = "\\mathbf{y}" if index % 3 else "\\mathbf{x}"
        rates = rng.sample([-3, -2, -1, 1, 2, 3, 4], count)
        vectors: list[list[int]] = []
        while len(vectors) < count:
            vector = [rng.randint(-3, 3) for _ in range(size)]
            if sum(entry != 0 for entry in vector) >= 2 and not any(_parallel(vector, v) for v in vectors):
                vectors.append(vector)
        names = [f"c_{{{i + 1}}}" for i in range(count)]
        gold = f"{label}={_combination(vectors, rates, names, variable, 'array')}"
        swapped = list(zip(vectors, rates, names))[::-1]
        scaled = [[-entry for entry in vectors[0]], *vectors[1:]]
        doubled = [vectors[0], [2 * entry for entry in vectors[1]], *vectors[2:]]
        renamed = [f"C_{{{i + 1}}}" for i in range(count)]
        bad_entry = [vectors[0][0] + 1, *vectors[0][1:]]
        other_label = "\\mathbf{z}"

        rows.append(
            {
                "gold": gold,
                "rewrites": [
                    f"{label}="
                    + _combination(
                        [v for v, _, _ in swapped],
                        [r for _, r, _ in swapped],
                        [n for _, _, n in swapped],
                        variable,
                        "bmatrix",
                    ),
                    f"{label}={_combination(scaled, rates, renamed, variable, 'pmatrix')}",
                    _combination(
                        doubled, rates, [f"k_{{{i + 1}}}" for i in range(count)], variable, "bmatrix"
                    ),
                    f"{label}={_expanded(vectors, rates, names, variable)}",
                ],
                "wrong": [
                    f"{label}={bracketed([bad_entry, *vectors[1:]], rates, names)}",
                    f"{label}={bracketed(vectors, [rates[0] + 5, *rates[1:]], names)}",
                    f"{label}={bracketed(vectors, rates, [names[0]] * count)}",
                    f"{label}={bracketed(vectors[:-1], rates[:-1], names[:-1])}",
                    f"{label}={bracketed(vectors, rates, names)}+{_vector([1] * size, 'bmatrix')}",
                    f"{label}={bracketed(vectors[::-1], rates, names)}",
                    f"{other_label}={bracketed(vectors, rates, names)}",
                ],
            }
        )
    return rows


def _exclusions(rng: random.Random) -> list[Row]:
    rows = []
    for index in range(ROWS_PER_FAMILY):
        variable = ["x", "x", "t", "a"][index % 4]
        count = 3 if index % 5 == 0 else 2
        numbers = sorted(rng.sample(range(-9, 10), count))
        texts = [str(n) for n in numbers]
        if index % 6 == 5:
            texts[0] = _fraction(2 * numbers[0] - 1, 2)
            numbers_sorted = [Fraction(2 * numbers[0] - 1, 2), *numbers[1:]]
        else:
            numbers_sorted = [Fraction(n) for n in numbers]
        order = sorted(range(count), key=lambda i: numbers_sorted[i])
        ordered = [texts[i] for i in order]
        gold = f"{variable} \\neq {','.join(texts)}"
        ends = ["-\\infty", *ordered, "\\infty"]
        union = "\\cup".join(f"({low},{high})" for low, high in pairwise(ends))
        closed_union = "\\cup".join(
            _interval(low, high, low != "-\\infty", high != "\\infty") for low, high in pairwise(ends)
        )
        missing_middle = "\\cup".join(
            f"({low},{high})" for low, high in [(ends[0], ends[1]), (ends[-2], ends[-1])]
        )
        other = "s" if variable != "s" else "u"
        rows.append(
            {
                "gold": gold,
                "rewrites": [
                    f"{variable} \\ne {', '.join(reversed(texts))}",
                    ", ".join(f"{variable} \\neq {text}" for text in texts),
                    " \\text{ and } ".join(f"{variable} \\ne {text}" for text in texts),
                    union,
                    f"{variable} \\in {union}",
                ],
                "wrong": [
                    f"{variable} \\neq {texts[0]}",
                    f"{variable} \\neq {','.join([*texts[:-1], str(numbers[-1] + 1)])}",
                    " \\text{ or } ".join(f"{variable} \\ne {text}" for text in texts),
                    closed_union,
                    missing_middle,
                    f"{variable} = {','.join(texts)}",
                    f"{other} \\neq {','.join(texts)}",
                ],
            }
        )
    return rows


_GENERATORS = {
    "chained equalities": _chained_equalities,
    "equation chain systems": _equation_chain_systems,
    "piecewise arrays": _piecewise_arrays,
    "relation : interval": _relation_intervals,
    "approximate unions": _approximate_unions,
    "vector solutions": _vector_solutions,
    "exclusions": _exclusions,
}


def generated_families() -> list[Row]:
    """The rows of ``GENERATED_FAMILIES``, the same on every run (one seed per family)."""
    rows: list[Row] = []
    for family, generate in _GENERATORS.items():
        rng = random.Random(_digest(family))
        rows += [{"family": family, **row} for row in generate(rng)]
    return rows


def families_text() -> str:
    """families.jsonl with the generated families' rows rebuilt (the hand-written ones kept)."""
    kept = [row for row in _jsonl(FOLDER / "families.jsonl") if row["family"] not in GENERATED_FAMILIES]
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in [*kept, *generated_families()])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if devset.jsonl is not what this builds")
    parser.add_argument(
        "--families", action="store_true", help="first rewrite the generated families in families.jsonl"
    )
    args = parser.parse_args()
    families = FOLDER / "families.jsonl"
    if args.check:
        if families.read_text() != families_text():
            sys.exit(f"{families} is stale: run python benchmarks/verifier_forms_devset.py --families")
        if not OUTPUT.exists() or OUTPUT.read_text() != serialise(build()):
            sys.exit(f"{OUTPUT} is stale: run python benchmarks/verifier_forms_devset.py")
        print(f"{OUTPUT} is up to date")
        return
    if args.families:
        families.write_text(families_text())
        print(f"wrote {families}")
    text = serialise(build())
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT} ({text.count(chr(10))} cases)")


if __name__ == "__main__":
    main()
