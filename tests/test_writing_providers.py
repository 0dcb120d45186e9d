"""docs/writing_providers.md end to end: its shell blocks, run in order in a fresh virtual environment.

The environment has no site packages but its own: pip installs the core, the conformance kit's
distribution (``plugins/testing``) and the tutorial's package from a copy of this repository, so
what the page promises (the provider is listed, scores, and passes the conformance kit) is checked
as a new user meets it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import venv
from pathlib import Path

from doc_snippets import ROOT, Block, all_blocks

DOC = "docs/writing_providers.md"
EXAMPLE = ROOT / "examples" / "tutorial_provider"
IGNORED = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "*.pyc")


def doc_blocks() -> list[Block]:
    return [block for block in all_blocks() if block.doc == DOC]


def shell_blocks() -> list[Block]:
    return [block for block in doc_blocks() if block.lang == "bash"]


def test_the_page_shows_every_file_of_the_example():
    shown = {block.argument for block in doc_blocks() if block.marker == "file"}
    files = {
        str(path.relative_to(ROOT))
        for path in EXAMPLE.rglob("*")
        if path.suffix in (".py", ".toml", ".yaml") and not set(path.parts) & {"build", "__pycache__"}
    }
    assert files <= shown, f"files of the example the page does not include: {sorted(files - shown)}"


def test_the_shell_blocks_are_left_to_this_test():
    # they install packages: the snippet runner must not run them in the developer's environment
    for block in shell_blocks():
        assert block.marker == "skip" and "tests/test_writing_providers.py" in block.argument, block.where


def user_environment(env_dir: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("REWARDKIT_", "PYTHON", "VIRTUAL_ENV", "PIP_REQUIRE"))
    }
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(env_dir)
    env["REWARDKIT_STRICT_PLUGINS"] = "1"  # a plugin that fails to load fails the run
    return env


def run(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"`{command}` failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def test_the_tutorial_package_installs_lists_scores_and_passes_the_kit(tmp_path: Path):
    clone = tmp_path / "clone"  # what the page's commands need of a clone, copied: builds stay out of ours
    clone.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, clone / name)
    shutil.copytree(ROOT / "core", clone / "core", ignore=IGNORED)
    shutil.copytree(ROOT / "plugins" / "testing", clone / "plugins" / "testing", ignore=IGNORED)
    shutil.copytree(EXAMPLE, clone / "examples" / "tutorial_provider", ignore=IGNORED)
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
    assert "include-system-site-packages = false" in (env_dir / "pyvenv.cfg").read_text()
    env = user_environment(env_dir)

    install, score, kit = shell_blocks()
    assert "pip install" in install.text and "rewardkit providers" in install.text
    listed = run(install.text, clone, env).stdout
    assert "final-answer" in listed and "keyword-coverage" in listed
    rows = {row["name"]: row for row in json.loads(run("rewardkit providers --json", clone, env).stdout)}
    for name, terms in (("final-answer", ["score"]), ("keyword-coverage", ["coverage", "all_found"])):
        assert (rows[name]["distribution"], rows[name]["version"]) == ("tutorial-rewards", "0.1.0")
        assert rows[name]["terms"] == terms and rows[name]["needs"] == ["reference"]
    assert rows["final-answer"]["params"] == {
        "case_sensitive": {"expects": "true or false", "default": False}
    }
    located = run(
        "python -c 'import rewardkit, pytest; print(rewardkit.__file__, pytest.__file__)'", clone, env
    )
    assert all(path.startswith(str(env_dir)) for path in located.stdout.split()), located.stdout

    scored = run(score.text, clone, env)
    lines = [json.loads(line) for line in (clone / "tutorial_results.jsonl").read_text().splitlines()]
    statuses = {row["trajectory_id"]: row["breakdown"]["final-answer"]["status"] for row in lines}
    values = {row["trajectory_id"]: row["breakdown"]["final-answer"]["value"] for row in lines}
    assert statuses == {"capital/0": "scored", "capital/1": "scored", "sum/0": "scored", "sum/1": "skipped"}
    assert (values["capital/0"], values["capital/1"], values["sum/0"]) == (1.0, 0.0, 1.0)
    assert scored.stdout.splitlines()[-2:] == ["a 1.0 scored", "b 0.0 scored"]

    tested = run(kit.text, clone, env).stdout
    assert "18 passed" in tested, tested
