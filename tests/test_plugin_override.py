"""A plugin that registers a built-in's name, met through the real CLI: the built-in wins, the
registration is skipped with a warning naming the plugin and the way to disable it, every command
keeps working, and ``REWARDKIT_STRICT_PLUGINS=1`` keeps it fatal.

The plugin is ``examples/acme_override`` as shipped, installed the way ``pip install`` lays out a
distribution: its metadata (entry point included) in a ``.dist-info`` folder, its source on the path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "acme_override"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder that, on ``PYTHONPATH`` beside the example's ``src``, makes ``acme-override`` installed."""
    root = tmp_path_factory.mktemp("site")
    info = root / "acme_override-0.2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-override\nVersion: 0.2.0\n")
    (info / "entry_points.txt").write_text("[rewardkit]\nacme-override = acme_override\n")
    return root


def rewardkit(
    site: Path, *argv: str, strict: bool = False, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    # The test suite runs strict; a user does not, so the variable is removed unless asked for.
    env = {key: value for key, value in os.environ.items() if not key.startswith("REWARDKIT_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(EXAMPLE / "src"), env.get("PYTHONPATH", "")])
    if strict:
        env["REWARDKIT_STRICT_PLUGINS"] = "1"
    command = [sys.executable, "-m", "rewardkit.cli", *argv]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def test_the_built_in_wins_and_the_listing_warns_naming_the_plugin(site: Path):
    listed = rewardkit(site, "providers", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["exact-match"]["builtin"] and rows["exact-match"]["distribution"] == "rewardkit-core"
    warning = listed.stderr
    assert "override the built-in provider 'exact-match'" in warning
    assert "entry point 'acme-override' of distribution acme-override" in warning
    assert "REWARDKIT_DISABLE_PLUGINS=acme-override" in warning
    assert "Traceback" not in warning


def test_plugins_lists_the_refusal_and_exits_0(site: Path):
    listed = rewardkit(site, "plugins", "--json")
    assert listed.returncode == 0, listed.stderr
    row = next(row for row in json.loads(listed.stdout) if row["name"] == "acme-override")
    assert row["status"] == "refused" and row["distribution"] == "acme-override"
    assert len(row["refused"]) == 1 and "'exact-match'" in row["refused"][0]
    assert row["provides"] == {}, "nothing of it was registered"
    table = rewardkit(site, "plugins")
    assert table.returncode == 0, table.stderr
    line = next(line for line in table.stdout.splitlines() if line.startswith("acme-override"))
    assert "refused" in line and "exact-match" in line


def test_scoring_with_an_unrelated_provider_and_with_the_built_in_still_works(site: Path, tmp_path: Path):
    rows = [
        {"group_id": "g", "trajectory_id": f"t{index}", "completion": text, "reference": "42"}
        for index, text in enumerate(("42", "41", "42", ""))
    ]
    data = tmp_path / "rollouts.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    for provider, expected in (("nonempty", [1.0, 1.0, 1.0, 0.0]), ("exact-match", [1.0, 0.0, 1.0, 0.0])):
        out = tmp_path / f"{provider}.jsonl"
        config = tmp_path / f"{provider}.yaml"
        config.write_text(
            "rl:\n  group_size: 4\n  data:\n    rollouts_path: rollouts.jsonl\n"
            f"    reference_column: reference\n  reward:\n    provider: {provider}\n"
        )
        scored = rewardkit(site, "score", str(config), "--out", str(out), cwd=tmp_path)
        assert scored.returncode == 0, scored.stderr
        finals = [json.loads(line)["final"] for line in out.read_text().splitlines()]
        # exact-match is the built-in: the plugin's version would give 1.0 to every candidate.
        assert finals == expected, provider


def test_strict_mode_keeps_the_override_fatal(site: Path):
    for verb in (["providers"], ["plugins"]):
        refused = rewardkit(site, *verb, strict=True)
        assert refused.returncode == 2, refused.stdout
        assert refused.stderr.startswith("rewardkit: error:")
        assert "override the built-in provider 'exact-match'" in refused.stderr
        assert "REWARDKIT_DISABLE_PLUGINS=acme-override" in refused.stderr


def test_disabling_the_plugin_as_the_warning_says_silences_it(site: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("REWARDKIT_DISABLE_PLUGINS", "acme-override")
    env = {key: value for key, value in os.environ.items() if key != "REWARDKIT_STRICT_PLUGINS"}
    env.update(PYTHONPATH=os.pathsep.join([str(site), str(EXAMPLE / "src")]), REWARDKIT_STRICT_PLUGINS="1")
    command = [sys.executable, "-m", "rewardkit.cli", "providers"]
    quiet = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert quiet.returncode == 0 and "acme-override" not in quiet.stderr, quiet.stderr
