"""What ``rewardkit view`` and ``rewardkit compare`` run; their options are declared by this
distribution's plugin (``rewardkit_view.plugin``). Errors are ``RewardkitError``s, which the core's
command line prints in one line (exit 2)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from rewardkit_view.compare import compare, format_comparison, load_side, scratch_folder
from rewardkit_view.inputs import ViewInputError, read_audit, read_monitor, read_results
from rewardkit_view.page import page_data, render_page

__all__ = ["run_compare", "run_view"]


def _write(path: Path, text: str) -> None:
    # written beside its target and renamed: a reader never opens half a page
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def _check_max_text(value: int) -> None:
    if value < 1:
        raise ViewInputError(f"--max-text must be at least 1, got {value}")


def run_view(args: argparse.Namespace) -> int:
    _check_max_text(args.max_text)
    results = read_results(args.results)
    audit = read_audit(args.audit) if args.audit else None
    monitor = read_monitor(args.monitor) if args.monitor else None
    out = Path(args.out) if args.out else results.path.with_suffix(".html")
    data = page_data(results, audit=audit, monitor=monitor, max_text=args.max_text)
    _write(out, render_page(data, f"rewardkit view: {results.path.name}"))
    print(
        f"wrote {out} ({len(results.rows):,} candidates); open it in a browser, no server needed",
        file=sys.stderr,
    )
    return 0


def run_compare(args: argparse.Namespace) -> int:
    _check_max_text(args.max_text)
    with scratch_folder() as scratch:
        a = load_side(args.a, args.rollouts, args.set_a, "A", Path(scratch))
        b = load_side(args.b, args.rollouts, args.set_b, "B", Path(scratch))
        comparison = compare(a, b)
        print(format_comparison(comparison, b, args.limit), flush=True)
        if args.json:
            shown = {key: value for key, value in comparison.items() if key != "a_by_trajectory"}
            _write(Path(args.json), json.dumps(shown, indent=1) + "\n")
            print(f"wrote the comparison to {args.json}", file=sys.stderr)
        if args.html:
            source = f"{a.label} against {b.label}"
            data = page_data(b.results, comparison=comparison, max_text=args.max_text, source=source)
            _write(Path(args.html), render_page(data, f"rewardkit compare: {source}"))
            print(f"wrote the comparison page to {args.html}", file=sys.stderr)
    return 0
