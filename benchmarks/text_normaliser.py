"""Nanoseconds per character of ``rewardkit.contracts.text`` on 10 KiB texts, against ``str.lower`` in the
same run.

    python benchmarks/text_normaliser.py [--repeat 200]

Texts: the English, Chinese and Japanese prose of testdata/prose, emoji-heavy text, this file's
code, and English with a look-alike letter and a zero-width space in every word (the slow path).
Each is repeated up to 10,240 characters. The ratio column divides by ``str.lower`` on the same
text, so machines compare.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

from _report import report

from rewardkit.contracts.text import fold_lookalikes, is_blank, normalise, skeleton, visible

ROOT = Path(__file__).resolve().parents[1]
SIZE = 10_240


def texts() -> dict[str, str]:
    prose = {
        name: (ROOT / "testdata" / "prose" / f"{name}.txt").read_text() for name in ("english", "chinese")
    }
    prose["japanese"] = (ROOT / "testdata" / "prose" / "japanese.txt").read_text()
    prose["emoji"] = "Great job 👍🏽! The family 👨‍👩‍👧 loved it ❤️ 😀 "
    prose["code"] = Path(__file__).read_text()
    prose["disguised"] = " ".join(word[:1] + "\u200b\u0430" + word[1:] for word in prose["english"].split())
    return {name: (text * (SIZE // len(text) + 1))[:SIZE] for name, text in prose.items()}


def per_char(function: Callable[[str], object], text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeat):
            function(text)
        best = min(best, (time.perf_counter() - start) / repeat)
    return best / len(text) * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    functions: dict[str, Callable[[str], object]] = {
        "visible": visible,
        "normalise": normalise,
        "skeleton": skeleton,
        "fold_lookalikes": fold_lookalikes,
        "is_blank": is_blank,
    }
    rows = []
    for name, text in texts().items():
        baseline = per_char(str.lower, text, args.repeat)
        for label, function in functions.items():
            cost = per_char(function, text, args.repeat)
            rows.append(
                {
                    "text": name,
                    "function": label,
                    "ns_per_char": round(cost, 1),
                    "x_lower": round(cost / baseline, 1),
                }
            )
    report("text_normaliser", rows, {"chars": SIZE})


if __name__ == "__main__":
    main()
