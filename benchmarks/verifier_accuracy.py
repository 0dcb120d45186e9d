"""Agreement of the rule verifiers with the labelled sets vendored in testdata/.

    python benchmarks/verifier_accuracy.py [--skip-devset]

Per set: agreement, precision, recall and false-positive rate of "verifier says correct" against the
label, with counts of errors and skips (both count as "not correct" in agreement). Every
disagreement is written to benchmarks/results/verifier_accuracy.json for reading.

The math answer-forms dev set (testdata/math_forms/devset.jsonl, built by
verifier_forms_devset.py) is scored by ``math`` and by math-verify called directly, per family;
every case math-verify gets wrong is listed beside our verdict in
testdata/math_forms/math_verify_mistakes.jsonl.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import report
from _verifier_data import (
    countdown_groups,
    direct_math_verify,
    gsm8k_groups,
    hendrycks_cases,
    math_groups,
    math_verify_cases,
)

from rewardkit import resolve_catalog
from rewardkit.contracts import RewardCandidate, RewardContext, RewardGroupRequest


def _score_groups(name: str, params: dict[str, Any], groups: list) -> list[tuple[str, bool, str, str]]:
    """(group, verdict, status, completion tail) per candidate, using the provider as a trainer would."""
    bound = resolve_catalog().bind(name, params)
    requests = [
        RewardGroupRequest(
            group_id,
            tuple(RewardCandidate(f"{group_id}/{i}", text) for i, text in enumerate(texts)),
            RewardContext(reference=reference),
        )
        for group_id, reference, texts, _ in groups
    ]
    evaluate_many = getattr(bound.provider, "evaluate_many", None)
    if evaluate_many is not None:
        results = [
            bound.check_result(request, result) for request, result in zip(requests, evaluate_many(requests))
        ]
    else:
        results = [bound.evaluate(request) for request in requests]
    out = []
    for request, result in zip(requests, results):
        for candidate, item in zip(request.candidates, result.items):
            verdict = item.result.status == "scored" and item.result.terms[bound.spec.default_term] == 1.0
            out.append((request.group_id, verdict, item.result.status, candidate.completion[-160:]))
    return out


def _row(label: str, verdicts: list[bool], labels: list[bool], statuses: list[str]) -> dict[str, Any]:
    tp = sum(v and y for v, y in zip(verdicts, labels))
    fp = sum(v and not y for v, y in zip(verdicts, labels))
    fn = sum(y and not v for v, y in zip(verdicts, labels))
    tn = len(labels) - tp - fp - fn
    return {
        "set": label,
        "n": len(labels),
        "agreement": (tp + tn) / len(labels),
        "precision": tp / (tp + fp) if tp + fp else 1.0,
        "recall": tp / (tp + fn) if tp + fn else 1.0,
        "fpr": fp / (fp + tn) if fp + tn else 0.0,
        "disagree": fp + fn,
        "errors": statuses.count("error"),
        "skips": statuses.count("skipped"),
    }


def _case_table(name: str, cases: list[dict[str, Any]], expected_key: str) -> tuple[dict[str, Any], list]:
    bound = resolve_catalog().bind("math", {"timeout_s": 5.0})
    verdicts, labels, statuses, misses = [], [], [], []
    requests = []
    for index, case in enumerate(cases):
        pred = case["pred"]
        text = pred if "\\boxed" in pred else f"\\boxed{{{pred}}}"
        requests.append(
            RewardGroupRequest(
                f"{name}-{index}", (RewardCandidate("p", text),), RewardContext(reference=case["gold"])
            )
        )
    for case, result in zip(cases, bound.provider.evaluate_many(requests)):
        item = result.items[0].result
        verdict = item.status == "scored" and item.terms["task"] == 1.0
        expected = bool(case[expected_key])
        verdicts.append(verdict)
        labels.append(expected)
        statuses.append(item.status)
        if verdict != expected:
            misses.append({"case": case, "status": item.status, "reason": item.reason, "verdict": verdict})
    bound.provider.close()
    return _row(name, verdicts, labels, statuses), misses


DEVSET = Path(__file__).resolve().parents[1] / "testdata" / "math_forms" / "devset.jsonl"
MISTAKES = DEVSET.with_name("math_verify_mistakes.jsonl")


def _math_verify_pairs(pairs: list[tuple[str, str]]) -> list[bool]:
    """math-verify 0.9 called directly on (reference, answer) pairs, the way TRL's accuracy reward
    calls it: the reference as ``$...$``, the answer as a boxed completion."""
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
    for gold, answer in pairs:
        try:
            parsed = parse(f"${gold}$", extraction_mode="first_match")
            predicted = parse(f"The answer is $\\boxed{{{answer}}}$.", extraction_config=answer_config)
            verdicts.append(bool(parsed) and bool(verify(parsed, predicted)))
        except Exception:  # a timeout inside math-verify: not a pass
            verdicts.append(False)
    return verdicts


def _devset(rows: list[dict[str, Any]], disagreements: dict[str, list]) -> list[dict[str, Any]]:
    """Rows for the dev set (ours and math-verify, overall and per family); writes MISTAKES."""
    cases = [json.loads(line) for line in DEVSET.read_text().splitlines() if line.strip()]
    bound = resolve_catalog().bind("math", {"timeout_s": 5.0})
    requests = [
        RewardGroupRequest(
            f"devset-{case['id']}",
            (RewardCandidate("c", f"The answer is \\boxed{{{case['answer']}}}."),),
            RewardContext(reference=case["gold"]),
        )
        for case in cases
    ]
    items = [result.items[0].result for result in bound.provider.evaluate_many(requests)]
    bound.provider.close()
    ours = [item.status == "scored" and item.terms["task"] == 1.0 for item in items]
    theirs = _math_verify_pairs([(case["gold"], case["answer"]) for case in cases])
    labels = [bool(case["label"]) for case in cases]
    statuses = [item.status for item in items]
    rows.append(_row("math forms dev set (`math`)", ours, labels, statuses))
    rows.append(_row("math forms dev set, direct math-verify", theirs, labels, ["scored"] * len(cases)))
    families: list[dict[str, Any]] = []
    for family in dict.fromkeys(case["family"] for case in cases):
        picked = [index for index, case in enumerate(cases) if case["family"] == family]
        positives = [index for index in picked if labels[index]]
        negatives = [index for index in picked if not labels[index]]
        families.append(
            {
                "family": family,
                "references": sum(cases[index]["kind"] == "identity" for index in picked),
                "cases": len(picked),
                "ours FP": sum(ours[index] for index in negatives),
                "ours recall": sum(ours[index] for index in positives) / len(positives),
                "math-verify FP": sum(theirs[index] for index in negatives),
                "math-verify recall": sum(theirs[index] for index in positives) / len(positives),
                "negatives": len(negatives),
            }
        )
    disagreements["math forms dev set (`math`)"] = [
        {**case, "status": item.status, "reason": item.reason}
        for case, item, verdict in zip(cases, items, ours)
        if verdict != case["label"]
    ]
    mistakes = [
        {
            "id": case["id"],
            "family": case["family"],
            "kind": case["kind"],
            "gold": case["gold"],
            "answer": case["answer"],
            "label": case["label"],
            "math_verify": int(verdict),
            "ours": int(mine),
        }
        for case, verdict, mine in zip(cases, theirs, ours)
        if verdict != case["label"]
    ]
    MISTAKES.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in mistakes))
    return families


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-devset", action="store_true", help="leave out the math forms dev set")
    args = parser.parse_args()
    rows = []
    disagreements: dict[str, list] = {}

    def labelled(label: str, name: str, params: dict[str, Any], groups: list) -> None:
        scored = _score_groups(name, params, groups)
        labels = [y for _, _, _, ys in groups for y in ys]
        rows.append(_row(label, [s[1] for s in scored], labels, [s[2] for s in scored]))
        disagreements[label] = [
            {"group": g, "label": y, "status": status, "tail": tail}
            for (g, verdict, status, tail), y in zip(scored, labels)
            if verdict != y
        ]

    gsm8k = gsm8k_groups()
    labelled("gsm8k (2,640 GPT-3 solutions)", "gsm8k", {}, gsm8k)
    maths = math_groups()
    labelled("MATH CoT (400 Qwen2.5-Math)", "math", {}, maths)
    direct = direct_math_verify(maths)
    math_labels = [y for _, _, _, ys in maths for y in ys]
    rows.append(_row("MATH CoT, direct math-verify", direct, math_labels, ["scored"] * len(direct)))
    countdown = countdown_groups()
    labelled("countdown strict (1,750 Qwen3)", "countdown", {"policy": "strict"}, countdown)
    labelled("countdown lenient vs strict labels", "countdown", {"policy": "lenient"}, countdown)
    row, misses = _case_table("Math-Verify cases (269)", math_verify_cases(), "expected")
    rows.append(row)
    disagreements[row["set"]] = misses
    row, misses = _case_table("hendrycks cases (16)", hendrycks_cases(), "expected_is_equiv")
    rows.append(row)
    disagreements[row["set"]] = misses
    families = [] if args.skip_devset else _devset(rows, disagreements)
    report("verifier_accuracy", rows, {"disagreements": disagreements, "devset_families": families})
    if families:
        print()
        report("verifier_accuracy_devset", families)


if __name__ == "__main__":
    main()
