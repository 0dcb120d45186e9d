"""Loading the labelled sets vendored in testdata/shared for the benchmark harnesses.

The files keep the layout `<repo-name>/<path in that repo>` (see testdata/SOURCES.md); large ones
are stored gzipped as `<name>.gz`. Only the repository is read: a clone has everything it needs.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

COUNTDOWN_PROMPT = re.compile(r"numbers \[([\d, ]+)\], create an equation that equals (\d+)")


SHARED_DATA = Path(__file__).resolve().parents[1] / "testdata" / "shared"


def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        raise SystemExit(f"vendored data not found at {SHARED_DATA}: is this a full clone?")
    return SHARED_DATA


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Rows of a JSON-lines file: `path`, or `path`.gz where only the compressed copy is vendored."""
    packed = path.with_name(path.name + ".gz")
    if not path.is_file() and packed.is_file():
        with gzip.open(packed, "rt", encoding="utf-8") as handle:
            yield from (json.loads(line) for line in handle if line.strip())
        return
    with path.open(encoding="utf-8") as handle:
        yield from (json.loads(line) for line in handle if line.strip())


def read_jsonl(relative: str) -> list[dict[str, Any]]:
    """All rows of a vendored JSON-lines file, by its path under testdata/shared."""
    return list(_jsonl(shared_data() / relative))


def gsm8k_groups() -> list[tuple[str, object, list[str], list[bool]]]:
    """(group id, reference, completions, labels): one group per problem, one completion per model."""
    path = shared_data() / "grade-school-math/grade_school_math/data/example_model_solutions.jsonl"
    groups = []
    for index, row in enumerate(_jsonl(path)):
        models = [value for value in row.values() if isinstance(value, dict)]
        groups.append(
            (
                f"gsm8k-{index}",
                row["ground_truth"],
                [m["solution"] for m in models],
                [m["is_correct"] for m in models],
            )
        )
    return groups


def math_groups() -> list[tuple[str, object, list[str], list[bool]]]:
    """The 50 MATH problems x 8 Qwen2.5-Math chain-of-thought responses with the rule grader's labels."""
    path = shared_data() / "Qwen2.5-Math/evaluation/data/eval_rm_maj_example/math_cot_100.jsonl"
    return [(f"math-{row['idx']}", row["gt"], list(row["code"]), list(row["score"])) for row in _jsonl(path)]


def countdown_groups() -> list[tuple[str, object, list[str], list[bool]]]:
    """The 250 problems x 7 Qwen3 models, grouped by problem, with the strict labels."""
    by_problem: dict[str, tuple[dict[str, Any], list[str], list[bool]]] = {}
    for path in sorted(
        (shared_data() / "countdown_post_train/post_train/data/eval").glob("*/eval_samples.jsonl")
    ):
        for row in _jsonl(path):
            match = COUNTDOWN_PROMPT.search(row["prompt"])
            if match is None:
                raise SystemExit(f"{path}: cannot read numbers/target from the prompt of {row['id']}")
            reference = {
                "numbers": [int(n) for n in match.group(1).split(",")],
                "target": int(match.group(2)),
            }
            entry = by_problem.setdefault(row["id"], (reference, [], []))
            entry[1].append(row["raw_generation"])
            entry[2].append(row["correct"])
    return [
        (f"countdown-{key}", ref, texts, labels) for key, (ref, texts, labels) in sorted(by_problem.items())
    ]


def math_verify_cases() -> list[dict[str, Any]]:
    return read_jsonl("Math-Verify/tests_extracted_cases.jsonl")


def hendrycks_cases() -> list[dict[str, Any]]:
    return read_jsonl("math/math_equivalence_test_cases.jsonl")


def direct_math_verify(groups: list) -> list[bool]:
    """The baseline: math-verify called directly, the way TRL's accuracy_reward does it
    (parse the gold, parse the completion, verify), one candidate after another."""
    from latex2sympy2_extended import NormalizationConfig
    from math_verify import LatexExtractionConfig, parse, verify

    answer_config = [
        LatexExtractionConfig(
            normalization_config=NormalizationConfig(
                nits=False, malformed_operators=False, basic_latex=True, boxed="all", units=True
            ),
            boxed_match_priority=0,
            try_extract_without_anchor=False,
        )
    ]
    verdicts = []
    for _, reference, texts, _ in groups:
        gold = parse(f"${reference}$", extraction_mode="first_match")
        for text in texts:
            answer = parse(text, extraction_config=answer_config, extraction_mode="first_match")
            verdicts.append(bool(gold) and bool(verify(gold, answer)))
    return verdicts
