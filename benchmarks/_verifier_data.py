"""Loading the labelled sets of ../shared/data for the verifier harnesses (read in place, never copied)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

COUNTDOWN_PROMPT = re.compile(r"numbers \[([\d, ]+)\], create an equation that equals (\d+)")


def shared_data() -> Path:
    root = os.environ.get("REWARDKIT_SHARED_DATA")
    path = Path(root) if root else Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
    if not path.is_dir():
        raise SystemExit(f"shared data not found at {path}; set REWARDKIT_SHARED_DATA")
    return path.resolve()


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open() as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


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
    return list(_jsonl(shared_data() / "Math-Verify/tests_extracted_cases.jsonl"))


def hendrycks_cases() -> list[dict[str, Any]]:
    return list(_jsonl(shared_data() / "math/math_equivalence_test_cases.jsonl"))


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
