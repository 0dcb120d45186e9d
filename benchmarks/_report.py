"""Shared output for benchmark scripts: an aligned table on stdout and a JSON file."""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def report(name: str, rows: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> Path:
    headers = list(rows[0]) if rows else []
    cells = [[_fmt(row.get(h)) for h in headers] for row in rows]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    print("  ".join("-" * w for w in widths))
    for c in cells:
        print("  ".join(v.ljust(w) for v, w in zip(c, widths)))
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"{name}.json"
    document = {
        "benchmark": name,
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"python": platform.python_version(), "cpus": _cpus(), "platform": platform.platform()},
        "rows": rows,
        **(extra or {}),
    }
    out.write_text(json.dumps(document, indent=2))
    print(f"\nwrote {out}")
    return out


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)
