"""Writes the rows `rewardkit audit` runs on in CI (testdata/audit/*.jsonl), from copied data.

Each file holds 24 rows, the first 24 usable ones of its source, reshaped into the columns the
audited providers read (prompt and reference). Run from the repository root:

    python testdata/audit/make_audit_rows.py          # write
    python testdata/audit/make_audit_rows.py --check  # fail when a file differs from what it writes
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent
ROWS = 24


def _jsonl(path: Path) -> Iterator[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def gsm8k_rows() -> list[dict]:
    """GSM8K test problems: the question, the full gold solution (``#### N``) and the number N."""
    rows = []
    for record in _jsonl(DATA / "shared/grade-school-math/grade_school_math/data/test.jsonl"):
        gold = record["answer"].rsplit("####", 1)[1].strip().replace(",", "")
        rows.append({"prompt": record["question"], "solution": record["answer"], "gold": gold})
    return rows[:ROWS]


_COUNTDOWN = re.compile(r"Using the numbers \[([\d, ]+)\], create an equation that equals (\d+)\.")


def countdown_rows() -> list[dict]:
    """Countdown problems of the countdown_post_train eval set, one per problem id."""
    rows = []
    for record in _jsonl(DATA / "shared/countdown_post_train/post_train/data/eval/grpo/eval_samples.jsonl"):
        found = _COUNTDOWN.search(record["prompt"])
        if found is None:
            continue
        numbers = [int(value) for value in found.group(1).split(",")]
        rows.append(
            {"prompt": record["prompt"], "reference": {"numbers": numbers, "target": int(found.group(2))}}
        )
    return rows[:ROWS]


def math_rows() -> list[dict]:
    """MATH problems with their gold final answer (Qwen2.5-Math's 50-problem example set)."""
    rows = []
    path = DATA / "shared/Qwen2.5-Math/evaluation/data/eval_rm_maj_example/math_cot_100.jsonl"
    seen: set[int] = set()
    for record in _jsonl(path):
        if record["idx"] in seen:
            continue
        seen.add(record["idx"])
        rows.append({"prompt": record["question"], "reference": record["gt"]})
    return rows[:ROWS]


def mbpp_rows() -> list[dict]:
    """Sanitized MBPP tasks: the prompt and the code-tests reference, which also carries the task's
    reference solution as ``code`` (code-tests reads only the tests; the audit's honest right)."""
    tasks = json.loads((DATA / "code/sanitized-mbpp.json").read_text())
    return [
        {
            "prompt": task["prompt"],
            "reference": {
                "test_list": task["test_list"],
                "test_imports": task["test_imports"],
                "code": task["code"],
            },
        }
        for task in tasks[:ROWS]
    ]


def choice_rows() -> list[dict]:
    """Multiple-choice rows for a rule grader: the GSM8K questions with a reference letter A-D
    assigned by position (the grader reads only letters; testdata holds no real choice set)."""
    return [
        {"prompt": row["prompt"], "reference": "ABCD"[index % 4]} for index, row in enumerate(gsm8k_rows())
    ]


FILES = {
    "gsm8k.jsonl": gsm8k_rows,
    "countdown.jsonl": countdown_rows,
    "math.jsonl": math_rows,
    "mbpp.jsonl": mbpp_rows,
    "choice.jsonl": choice_rows,
}


def main(argv: list[str]) -> int:
    stale = []
    for name, make in FILES.items():
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in make())
        target = HERE / name
        if "--check" in argv:
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            target.write_text(text, encoding="utf-8")
    if stale:
        print(f"stale: {', '.join(stale)}; run python testdata/audit/make_audit_rows.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
