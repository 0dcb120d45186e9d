"""A clone of the repository is all the tests need: nothing refers to a folder beside the clone,
and every file in testdata/ says where it comes from (testdata/SOURCES.md)."""

from __future__ import annotations

import fnmatch
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Spelt in two parts so this file does not match itself.
OUTSIDE = ("../" + "shared").encode()


def project_files() -> list[str]:
    """Tracked files plus new ones not ignored: what a clone (or the next commit) would contain."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.fail(f"these checks read the file list from git, which failed in {ROOT}: {error}")
    return sorted({name for name in listed.decode().split("\0") if name and (ROOT / name).is_file()})


def test_no_file_refers_to_a_folder_beside_the_clone():
    offenders = []
    for name in project_files():
        for number, line in enumerate((ROOT / name).read_bytes().splitlines(), start=1):
            if OUTSIDE in line:
                offenders.append(f"{name}:{number}: {line.decode(errors='replace').strip()[:120]}")
    assert not offenders, (
        f"{len(offenders)} line(s) refer to {OUTSIDE.decode()}, which a clone does not have; "
        "vendor what they need into testdata/ (with an entry in testdata/SOURCES.md):\n"
        + "\n".join(offenders)
    )


def test_every_testdata_file_has_its_source_listed():
    sources = (ROOT / "testdata" / "SOURCES.md").read_text()
    # The first cell of each table row names files, in backticks, relative to testdata/.
    patterns = [
        pattern
        for row in re.findall(r"^\| *(.+?) *\|", sources, re.MULTILINE)
        for pattern in re.findall(r"`([^`]+)`", row)
    ]
    assert patterns, "testdata/SOURCES.md lists no files"
    files = project_files()
    unlisted = [
        name
        for name in files
        if name.startswith("testdata/")
        and not any(fnmatch.fnmatchcase(name.removeprefix("testdata/"), p) for p in patterns)
    ]
    assert not unlisted, (
        "files in testdata/ without a row in testdata/SOURCES.md (add origin, licence and what "
        "they are):\n" + "\n".join(unlisted)
    )
    missing = [p for p in patterns if not any(fnmatch.fnmatchcase(n, "testdata/" + p) for n in files)]
    assert not missing, f"testdata/SOURCES.md lists files that are not there: {missing}"
