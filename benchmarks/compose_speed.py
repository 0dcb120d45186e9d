"""How much of the 30 µs/candidate in-process budget `compose` takes.

Baseline (same run): a bare weighted sum over the same outcome dicts, no rules and no validation,
i.e. the least any composition could cost. Variants: `compose` with a validated `RewardSpec` (the hot
path), with `ComponentOutcome` values, and with a dict spec (validated on every call; not for hot paths).

    python benchmarks/compose_speed.py [--components N] [--repeat R]

Prints a table and writes benchmarks/results/compose_speed.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import timeit
from pathlib import Path
from typing import Any

from rewardkit.scoring.composition import ComponentOutcome, RewardSpec, compose

BUDGET_US = 30.0


def build(n: int) -> tuple[RewardSpec, dict[str, dict[str, Any]]]:
    components = [{"name": f"c{i}", "provider": "math", "weight": 1.0 / (i + 1)} for i in range(n)]
    components[0]["gate"] = True
    components[0]["threshold"] = 0.5
    spec = RewardSpec.parse({"components": components, "onError": "zero", "clip": [-1, 1]})
    outcomes: dict[str, dict[str, Any]] = {f"c{i}": {"status": "scored", "value": 0.75} for i in range(n)}
    outcomes[f"c{n - 1}"] = {"status": "skipped", "reason": "n/a"} if n > 1 else outcomes[f"c{n - 1}"]
    return spec, outcomes


def baseline(weights: list[tuple[str, float]], outcomes: dict[str, dict[str, Any]]) -> float:
    total = 0.0
    for name, weight in weights:
        outcome = outcomes[name]
        if outcome["status"] == "scored":
            total += weight * outcome["value"]
    return total


def per_call_us(fn: Any, number: int, repeat: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--components", type=int, nargs="+", default=[1, 3, 8])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--number", type=int, default=20000)
    args = parser.parse_args()

    rows = [row for n in args.components for row in measure(n, args.number, args.repeat)]
    print_and_write(rows)


def measure(n: int, number: int, repeat: int) -> list[dict[str, Any]]:
    rows = []
    spec, outcomes = build(n)
    weights = [(c.name, c.weight) for c in spec.components]
    values = {name: ComponentOutcome(**outcome) for name, outcome in outcomes.items()}
    as_dict = spec.to_json()
    base = per_call_us(lambda: baseline(weights, outcomes), number, repeat)
    variants = {
        "bare weighted sum (baseline)": base,
        "compose(RewardSpec, dicts)": per_call_us(lambda: compose(spec, outcomes), number, repeat),
        "compose(RewardSpec, ComponentOutcome)": per_call_us(lambda: compose(spec, values), number, repeat),
        "compose(dict spec, dicts)": per_call_us(
            lambda: compose(as_dict, outcomes), max(number // 10, 1), repeat
        ),
    }
    for label, us in variants.items():
        rows.append(
            {
                "components": n,
                "variant": label,
                "us_per_call": round(us, 3),
                "ratio_vs_baseline": round(us / base, 2),
                "share_of_30us_budget": round(us / BUDGET_US, 3),
            }
        )
    return rows


def print_and_write(rows: list[dict[str, Any]]) -> None:
    print(f"{'n':>3}  {'variant':40} {'µs/call':>9} {'x baseline':>11} {'of 30 µs':>9}")
    for row in rows:
        print(
            f"{row['components']:>3}  {row['variant']:40} {row['us_per_call']:>9.3f} "
            f"{row['ratio_vs_baseline']:>11.2f} {row['share_of_30us_budget']:>9.1%}"
        )
    out = Path(__file__).resolve().parent / "results" / "compose_speed.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {"benchmark": "compose_speed", "python": platform.python_version(), "rows": rows}, indent=2
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
