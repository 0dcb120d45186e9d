"""Build the labelled dev set of math answer forms: testdata/math_forms/devset.jsonl.

    python benchmarks/verifier_forms_devset.py           # (re)write the dev set
    python benchmarks/verifier_forms_devset.py --check   # fail if the checked-in file is stale

Sources (both in testdata/math_forms/, see its README): the final answers of the 5,000 MATH test
problems (``math_golds.jsonl``) and answer forms written for this set, by family
(``families.jsonl``: relations, equation answers, systems, matrices, multisets, intervals,
piecewise, approximations, percents and units), each with correct rewrites and typical wrong answers.

The method, for every reference ``g``:
- ``identity``: the answer ``g`` itself must score 1;
- ``dfrac``: ``g`` with every ``\\frac`` written ``\\dfrac`` must score 1;
- ``mutation``: ``g`` with one digit of the answer changed must score 0. When ``g`` is a relation,
  only digits after its last ``=`` or ``\\approx`` are changed. Up to two mutations per reference,
  at positions and to digits chosen by a hash of the reference (deterministic);
- ``rewrite`` (label 1) and ``wrong`` (label 0): written by hand in families.jsonl.
A mutation that happens to leave the value unchanged is listed in ``EQUIVALENT_MUTATIONS`` with
the reason, and labelled 1.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "testdata" / "math_forms"
OUTPUT = FOLDER / "devset.jsonl"
MUTATIONS_PER_REFERENCE = 2

# (reference, mutated answer) -> why the mutation does not change the value.
EQUIVALENT_MUTATIONS: dict[tuple[str, str], str] = {}

_RELATION_END = re.compile(r"=|\\approx(?![a-zA-Z])")


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def mutations(gold: str, count: int = MUTATIONS_PER_REFERENCE) -> list[str]:
    """``gold`` with one digit changed, at up to ``count`` different positions."""
    start = 0
    for match in _RELATION_END.finditer(gold):
        start = match.end()
    positions = [index for index in range(start, len(gold)) if gold[index].isdigit()]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if devset.jsonl is not what this builds")
    args = parser.parse_args()
    text = serialise(build())
    if args.check:
        if not OUTPUT.exists() or OUTPUT.read_text() != text:
            sys.exit(f"{OUTPUT} is stale: run python benchmarks/verifier_forms_devset.py")
        print(f"{OUTPUT} is up to date")
        return
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT} ({text.count(chr(10))} cases)")


if __name__ == "__main__":
    main()
