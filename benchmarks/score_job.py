"""``rewardkit score`` at scale: wall time, throughput and peak memory (RSS) of the whole job.

Writes a GSM8K-shaped rollouts file (short question, ``#### N`` gold answer, a worked completion
ending in ``A: N``; about 290 bytes a row) of each size, then runs the job as users run it,
``python -m rewardkit.cli score CONFIG --out OUT``, in a child process, and reads the child's own
peak RSS from ``wait4``. Rows of a group are contiguous unless ``--interleaved``.

    python benchmarks/score_job.py [--sizes 100000 1000000] [--group-size 8] [--label after]

To measure another checkout's job, run this script with that checkout first on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _report import report

CONFIG = """rl:
  group_size: {group_size}
  data:
    rollouts_path: rollouts.jsonl
    prompt_column: question
    response_column: answer
  reward:
    provider: gsm8k
rewards:
  max_inflight: 4096
"""


def write_rollouts(path: Path, rollouts: int, group_size: int, interleaved: bool) -> int:
    """A rollouts file of ``rollouts`` rows in groups of ``group_size``; returns its size in bytes."""
    rng = random.Random(7)
    groups = rollouts // group_size
    order = [(g, k) for g in range(groups) for k in range(group_size)]
    if interleaved:
        order.sort(key=lambda pair: (pair[1], pair[0]))  # every group's first row, then every second...
    with path.open("w", encoding="utf-8") as out:
        for g, k in order:
            a, b = 3 + g % 97, 5 + g % 89
            gold = a * b
            answer = gold if rng.random() < 0.5 else gold + 1
            row = {
                "group_id": f"q{g:07d}",
                "trajectory_id": f"q{g:07d}/{k}",
                "question": f"A crate holds {a} rows of {b} eggs. How many eggs are in the crate?",
                "answer": f"There are {a} * {b} = <<{a}*{b}={gold}>>{gold} eggs.\n#### {gold}",
                "completion": f"Each row has {b} eggs and there are {a} rows, so {a} * {b} = {answer}."
                f"\nA: {answer}",
            }
            out.write(json.dumps(row) + "\n")
    return path.stat().st_size


def run_job(folder: Path, out: Path) -> tuple[float, int, int]:
    """Seconds, peak RSS (bytes) and exit status of one ``rewardkit score`` child process."""
    # --overwrite: every size writes to the same --out, and a complete result is kept otherwise
    command = [sys.executable, "-m", "rewardkit.cli", "score", str(folder / "config.yaml"), "--out", str(out),
               "--overwrite"]  # fmt: skip
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    error = child.stderr.read().decode() if child.stderr else ""
    if child.returncode != 0:
        raise SystemExit(f"rewardkit score failed ({child.returncode}): {error[-2000:]}")
    return elapsed, usage.ru_maxrss * 1024, child.returncode


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--interleaved", action="store_true", help="rows of a group are not adjacent")
    parser.add_argument("--label", default="", help="suffix of the results file (e.g. before, after)")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="rk-score-job-") as tmp:
        folder = Path(tmp)
        (folder / "config.yaml").write_text(CONFIG.format(group_size=args.group_size))
        for size in args.sizes:
            file_bytes = write_rollouts(folder / "rollouts.jsonl", size, args.group_size, args.interleaved)
            out = folder / "results.jsonl"
            seconds, peak, _ = run_job(folder, out)
            lines = sum(1 for _ in out.open("rb"))
            assert lines == size // args.group_size * args.group_size, (lines, size)
            rows.append(
                {
                    "rollouts": size,
                    "file_mb": round(file_bytes / 1e6, 1),
                    "seconds": round(seconds, 2),
                    "rollouts_per_s": round(size / seconds),
                    "peak_rss_mb": round(peak / 1e6, 1),
                }
            )
            out.unlink()
            for leftover in folder.glob("results.jsonl*"):
                leftover.unlink()
    name = "score_job" + (f"_{args.label}" if args.label else "")
    report(name, rows, {"group_size": args.group_size, "interleaved": args.interleaved})


if __name__ == "__main__":
    main()
