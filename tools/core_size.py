"""The size of the core in Python statements (``ast.stmt`` nodes), by folder: how issue 45 measures it.

Statements, not lines: packing code onto fewer lines changes nothing, and a docstring counts once
however long it is. Prints a table and, with ``--json FILE``, writes the counts.

    python tools/core_size.py [--json benchmarks/results/core_size.json]
"""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "core"


def statements(path: Path) -> int:
    """How many statements ``path`` holds, nested ones included."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return sum(isinstance(node, ast.stmt) for node in ast.walk(tree))


def by_folder(root: Path = CORE) -> dict[str, int]:
    """Statements per folder of ``root`` (``.`` for the modules at its top), largest first."""
    counts: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        folder = path.parent.relative_to(root).as_posix()
        counts[folder] = counts.get(folder, 0) + statements(path)
    return dict(sorted(counts.items(), key=lambda item: -item[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the counts to this file")
    args = parser.parse_args()
    counts = by_folder()
    total = sum(counts.values())
    width = max(map(len, counts))
    for folder, count in counts.items():
        print(f"{folder:<{width}}  {count:>6}")
    print(f"{'total':<{width}}  {total:>6}")
    if args.json is not None:
        args.json.write_text(json.dumps({"total": total, "by_folder": counts}, indent=1) + "\n")


if __name__ == "__main__":
    main()
