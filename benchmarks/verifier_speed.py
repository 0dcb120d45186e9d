"""Candidates per second of the rule verifiers against their direct baselines, in one run.

    python benchmarks/verifier_speed.py [--repeat 3]

- ``math`` on the 400 MATH chain-of-thought responses vs calling math-verify directly in a loop in
  this process (parse the gold, parse the completion, verify: the way TRL's accuracy_reward does),
  per group (one ``evaluate`` per problem, as a trainer calls it) and per batch (``evaluate_many``).
  Worker start-up is timed separately and excluded from the rates; agreement with the labels is
  reported for both sides. "Repeated answers": the same batch scored again by a provider that has
  scored it once (workers started, their verdicts and the references cached), which is what a
  trainer pays when its policy repeats answers from step to step: the time goes to the calling
  process (answer extraction, the exact path, the plan), so this row is the one that shows it.
- ``gsm8k`` and ``countdown`` through the bound provider vs their scorer functions in a loop.
Each figure is the best of ``--repeat`` passes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import report
from _verifier_data import countdown_groups, direct_math_verify, gsm8k_groups, math_groups

from rewardkit import resolve_catalog
from rewardkit.builtin.answers import score_gsm8k
from rewardkit.builtin.countdown import score_countdown
from rewardkit.contracts import RewardCandidate, RewardContext, RewardGroupRequest


def _best(repeat: int, run: Callable[[], object]) -> tuple[float, object]:
    best, value = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        value = run()
        best = min(best, time.perf_counter() - started)
    return best, value


def _requests(groups: list) -> list[RewardGroupRequest]:
    return [
        RewardGroupRequest(
            group_id,
            tuple(RewardCandidate(f"{group_id}/{i}", text) for i, text in enumerate(texts)),
            RewardContext(reference=reference),
        )
        for group_id, reference, texts, _ in groups
    ]


def _agreement(verdicts: list[bool], groups: list) -> float:
    labels = [y for _, _, _, ys in groups for y in ys]
    return sum(v == y for v, y in zip(verdicts, labels)) / len(labels)


def _math_rows(repeat: int, cold_direct: bool = False) -> list[dict]:
    from math_verify import parse, verify

    groups = math_groups()
    count = sum(len(texts) for _, _, texts, _ in groups)

    if cold_direct:
        # Child mode: one cold pass after the same warm-up the provider's workers get.
        from rewardkit_rl.verifiers.math_check import WARM_UP_PAIRS

        for warm_gold, warm_answer in WARM_UP_PAIRS:
            verify(parse(f"${warm_gold}$"), parse(f"${warm_answer}$"))
        started = time.perf_counter()
        verdicts = direct_math_verify(groups)
        print(json.dumps({"seconds": time.perf_counter() - started, "verdicts": verdicts}))
        return []
    # Each baseline pass runs in a fresh interpreter, so SymPy's and math-verify's caches are as
    # cold as in a fresh worker: no side is timed on answers it has already seen.
    direct_s, direct_verdicts = float("inf"), []
    for _ in range(repeat):
        output = subprocess.run(
            [sys.executable, __file__, "--cold-direct"], capture_output=True, text=True, check=True
        ).stdout
        document = json.loads(output.strip().splitlines()[-1])
        direct_s = min(direct_s, document["seconds"])
        direct_verdicts = document["verdicts"]

    requests = _requests(groups)
    warm_up = RewardGroupRequest(
        "warm-up", (RewardCandidate("w", "\\boxed{1+y}"),), RewardContext(reference="y+1")
    )
    startups: list[float] = []
    workers = 0

    def verdicts_of(results: list) -> list[bool]:
        return [
            item.result.status == "scored" and item.result.terms["task"] == 1.0
            for result in results
            for item in result.items
        ]

    def timed(batch: bool) -> tuple[float, list[bool]]:
        # A fresh provider per pass: cold worker caches, so no pass profits from an earlier one.
        best, verdicts = float("inf"), []
        for _ in range(repeat):
            nonlocal workers
            bound = resolve_catalog().bind("math")
            provider = bound.provider
            workers = provider.workers
            started = time.perf_counter()
            provider.evaluate(warm_up)  # starts the workers; not part of the rate
            startups.append(time.perf_counter() - started)
            started = time.perf_counter()
            if batch:
                results = provider.evaluate_many(requests)
            else:
                results = [bound.evaluate(request) for request in requests]
            best = min(best, time.perf_counter() - started)
            verdicts = verdicts_of(results)
            provider.close()
        return best, verdicts

    def repeated() -> tuple[float, list[bool]]:
        # One provider: a first pass fills its caches (not timed), then each pass is timed.
        provider = resolve_catalog().bind("math").provider
        provider.evaluate_many(requests)
        best, results = _best(repeat, lambda: provider.evaluate_many(requests))
        provider.close()
        return best, verdicts_of(results)  # type: ignore[arg-type]

    group_s, group_verdicts = timed(batch=False)
    batch_s, batch_verdicts = timed(batch=True)
    repeated_s, repeated_verdicts = repeated()
    startup_s = sum(startups) / len(startups)
    provider = type("Info", (), {"workers": workers})
    base = count / direct_s
    return [
        {
            "verifier": "math-verify direct loop (baseline)",
            "candidates": count,
            "cand_per_s": base,
            "ratio": 1.0,
            "agreement": _agreement(direct_verdicts, groups),
        },
        {
            "verifier": f"math, per group ({provider.workers} workers)",
            "candidates": count,
            "cand_per_s": count / group_s,
            "ratio": count / group_s / base,
            "agreement": _agreement(group_verdicts, groups),
        },
        {
            "verifier": f"math, one batch ({provider.workers} workers)",
            "candidates": count,
            "cand_per_s": count / batch_s,
            "ratio": count / batch_s / base,
            "agreement": _agreement(batch_verdicts, groups),
        },
        {
            "verifier": f"math, repeated answers vs a direct math-verify loop ({provider.workers} workers)",
            "candidates": count,
            "cand_per_s": count / repeated_s,
            "ratio": count / repeated_s / base,
            "agreement": _agreement(repeated_verdicts, groups),
        },
        {"verifier": "math worker start-up, seconds (excluded)", "candidates": 0, "cand_per_s": startup_s},
    ]


def _rule_rows(name: str, scorer: Callable, params: dict, groups: list, repeat: int) -> list[dict]:
    count = sum(len(texts) for _, _, texts, _ in groups)
    prepared = [
        (RewardContext(reference=reference), [RewardCandidate("t", text) for text in texts])
        for _, reference, texts, _ in groups
    ]

    def direct() -> int:
        return sum(
            len([scorer(c, context, **params) for c in candidates]) for context, candidates in prepared
        )

    bound = resolve_catalog().bind(name, params)
    requests = _requests(groups)

    def provider() -> int:
        return sum(len(bound.evaluate(request).items) for request in requests)

    direct_s, _ = _best(repeat, direct)
    provider_s, _ = _best(repeat, provider)
    base = count / direct_s
    return [
        {
            "verifier": f"{name} scorer function (baseline)",
            "candidates": count,
            "cand_per_s": base,
            "ratio": 1.0,
        },
        {
            "verifier": f"{name} bound provider",
            "candidates": count,
            "cand_per_s": count / provider_s,
            "ratio": count / provider_s / base,
        },
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cold-direct", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_direct:
        _math_rows(1, cold_direct=True)
        return
    rows = _math_rows(args.repeat)
    rows += _rule_rows("gsm8k", score_gsm8k, {}, gsm8k_groups(), args.repeat)
    rows += _rule_rows("countdown", score_countdown, {"policy": "strict"}, countdown_groups(), args.repeat)
    report("verifier_speed", rows)


if __name__ == "__main__":
    main()
