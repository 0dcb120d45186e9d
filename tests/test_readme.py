"""The README's quick start runs as written; .ci/run runs the README's first command exactly as
written, in the clone's root, before its test command; and that command leaves a clone clean and
the doc tests working."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from doc_snippets import blocks, environment, run_block, runnable, scratch

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_quick_start_runs_and_prints_scores():
    (block,) = re.findall(r"```python\n(.*?)```", README, re.DOTALL)
    assert len(block.splitlines()) <= 20
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {})
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("a 1.0 ") and lines[1].startswith("b 0.0 ")
    assert "train/reward/mean" in lines[-1]


def readme_main_job() -> str:
    """The README's first command, as written."""
    commands = re.findall(r"```bash\n(.*?)```", README, re.DOTALL)
    return next(c.strip() for c in commands if "rewardkit score" in c)


def test_ci_runs_the_readme_commands():
    main_job = readme_main_job()
    tests = next(c.strip() for c in re.findall(r"```bash\n(.*?)```", README, re.DOTALL) if "tox" in c)
    ci = (ROOT / ".ci" / "run").read_text()
    assert main_job == "pip install . && rewardkit score examples/gsm8k/config.yaml --out results.jsonl"
    # exactly as written, in the clone's root, and before the tests: a user's untracked results
    # file must not break them
    lines = [line.strip() for line in ci.splitlines()]
    assert main_job in lines and tests in lines
    assert lines.index(main_job) < lines.index(tests)
    assert 'test "$(wc -l < results.jsonl)" -eq 48' in lines


def _git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", *args],
        cwd=folder, capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    return done.stdout


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A repository holding this checkout's files as they are now (tracked, or new and not ignored),
    committed: what a fresh clone of this work looks like (a real `git clone` would miss what is not
    committed yet)."""
    folder = tmp_path / "clone"
    for name in _git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0"):
        source = ROOT / name
        if name and source.is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, folder / name)
    _git(folder, "init", "-q")
    _git(folder, "add", "-A")
    _git(folder, "commit", "-q", "-m", "clone")
    return folder


def test_the_readme_command_leaves_the_clone_clean_and_the_doc_tests_working(clone: Path, tmp_path: Path):
    install, score = (part.strip() for part in readme_main_job().split("&&"))
    assert install == "pip install ."
    # `pip install .` builds in the source tree; a wheel build writes there what the install does
    # (the install itself would replace this env's editable rewardkit)
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "-w", str(wheels), "."],
        cwd=clone, capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", score], cwd=clone, env=environment(), capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len((clone / "results.jsonl").read_text().splitlines()) == 48
    assert _git(clone, "status", "--porcelain", "--untracked-files=all") == ""

    # The doc snippets run from a scratch folder linked to the checkout: the user's results must
    # not leak into it (a snippet writing `--out results.jsonl` would find a finished run there).
    block = next(
        b for b in blocks("docs/configuration.md") if runnable(b) and "--out results.jsonl" in b.text
    )
    folder = tmp_path / "scratch"
    folder.mkdir()
    cwd = scratch(folder, root=clone)
    assert not (cwd / "results.jsonl").exists() and (cwd / "examples" / "gsm8k" / "config.yaml").is_file()
    ran = run_block(block, cwd)
    assert ran.returncode == 0, f"{block.where}:\n{ran.stdout}\n{ran.stderr}"


def test_the_scratch_folder_links_only_what_git_tracks(clone: Path, tmp_path: Path):
    (clone / "notes.txt").write_text("a user's file\n")
    (clone / "outputs").mkdir()
    folder = tmp_path / "scratch"
    folder.mkdir()
    linked = {entry.name for entry in scratch(folder, root=clone).iterdir()}
    assert {"README.md", "examples", "core", "docs", ".gitignore"} <= linked
    assert not linked & {"notes.txt", "outputs", ".git"}
