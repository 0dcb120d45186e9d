"""The code-change rule, as docs state it and as the CLI behaves: what the fingerprint covers, the
warning of a fresh run after a change without a revision bump, and the refused resume."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from helpers import fake_distribution

ROOT = Path(__file__).resolve().parents[1]
RULE_PAGES = ("docs/configuration.md", "docs/plugins.md", "docs/writing_providers.md")
RULE_HEAD = "**Code changed without a revision bump.**"

PROVIDER = '''
import rewardkit
from rewardkit import hookimpl
from fake_rule.helpers import bonus


@rewardkit.provider(name="acme-rule", revision="1", cheap=True)
def rule(completion: str) -> float:
    """One point for an answer, plus the bonus."""
    return float(bool(completion.strip())) + bonus()


@hookimpl
def register_reward_providers(register):
    register(rule)
'''
HELPERS = "def bonus():\n    return 0.0\n"
SIBLING = "def unrelated():\n    return 1\n"


def rule_paragraph(page: str) -> str:
    text = (ROOT / page).read_text()
    start = text.index(RULE_HEAD)
    return " ".join(text[start:].split("\n\n", 1)[0].split())


def test_every_page_states_the_same_rule():
    stated = {page: rule_paragraph(page) for page in RULE_PAGES}
    assert len(set(stated.values())) == 1, stated
    rule = stated[RULE_PAGES[0]]
    # The claims the test below checks against the CLI.
    for claim in (
        "docstrings",
        "refuses (exit 2",
        "--allow-code-change",
        "a fresh `rewardkit score`",
        "warns",
    ):
        assert claim in rule, claim
    for page in ("docs/plugins.md", "docs/writing_providers.md"):
        assert not re.search(r"resuming warns|a warning on resume", (ROOT / page).read_text()), page


def score(site: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("REWARDKIT_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    env["REWARDKIT_STRICT_PLUGINS"] = "1"
    command = [sys.executable, "-m", "rewardkit.cli", "score", "job.yaml", "--out", "out.jsonl", *extra]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=site, timeout=300)


def test_the_cli_behaves_as_the_rule_says(tmp_path: Path):
    fake_distribution(tmp_path, "acme-rule", {"rule": "fake_rule.provider"}, {})
    package = tmp_path / "fake_rule"
    package.mkdir()
    for name, source in (
        ("__init__", ""),
        ("provider", PROVIDER),
        ("helpers", HELPERS),
        ("sibling", SIBLING),
    ):
        (package / f"{name}.py").write_text(source)
    rows = [{"group_id": "g", "trajectory_id": f"t{index}", "completion": f"a{index}"} for index in range(2)]
    (tmp_path / "rollouts.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (tmp_path / "job.yaml").write_text(
        "rl:\n  group_size: 2\n  data: {rollouts_path: rollouts.jsonl}\n  reward: {provider: acme-rule}\n"
    )
    first = score(tmp_path)
    assert first.returncode == 0, first.stderr

    # A docstring, a comment and a module nothing imports cannot change a score: no warning.
    provider = package / "provider.py"
    provider.write_text(provider.read_text().replace("plus the bonus.", "plus a bonus.  # reworded"))
    (package / "sibling.py").write_text("def unrelated():\n    return 2\n")
    quiet = score(tmp_path, "--overwrite")
    assert quiet.returncode == 0, quiet.stderr
    assert "revision" not in quiet.stderr, quiet.stderr

    # A helper the scorer calls changes what it scores: the fresh run warns once, naming the fix.
    (package / "helpers.py").write_text("def bonus():\n    return 0.5\n")
    warned = score(tmp_path, "--overwrite")
    assert warned.returncode == 0, warned.stderr
    lines = [line for line in warned.stderr.splitlines() if "acme-rule" in line]
    assert len(lines) == 1 and lines[0].startswith("rewardkit: warning:"), warned.stderr
    assert "revision is still '1'" in lines[0] and "bump `revision`" in lines[0]

    # A pending run recorded before a change is not resumed under it (exit 2), unless allowed.
    manifest = tmp_path / "out.jsonl.run.json"
    recorded = json.loads(manifest.read_text())
    recorded["status"] = "pending"
    manifest.write_text(json.dumps(recorded))
    (package / "helpers.py").write_text("def bonus():\n    return 0.25\n")
    refused = score(tmp_path, "--resume")
    assert refused.returncode == 2 and "--allow-code-change" in refused.stderr, refused.stderr
    allowed = score(tmp_path, "--resume", "--allow-code-change")
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(manifest.read_text())["code_changes"], "both fingerprints recorded"
