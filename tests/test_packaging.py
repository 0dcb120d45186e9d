"""Packaging end to end: a fresh venv, `pip install .`, the example customer package, uninstall."""

from __future__ import annotations

import json
import os
import subprocess
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(("REWARDKIT_", "PYTHONPATH"))
    }
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=600, **kwargs)  # type: ignore[call-overload]


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=True).create(where)
    pip = [str(where / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    installed = run([*pip, str(ROOT)])
    assert installed.returncode == 0, installed.stderr
    return where


def providers(env: Path) -> subprocess.CompletedProcess[str]:
    return run([str(env / "bin" / "rewardkit"), "providers", "--json"])


def test_fresh_install_lists_built_ins_and_example_plugin_comes_and_goes(fresh_venv: Path):
    python = str(fresh_venv / "bin" / "python")
    listed = providers(fresh_venv)
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert {"constant", "nonempty", "exact-match"} <= rows.keys()
    for row in rows.values():
        assert len(row["identity"]) == 64 and row["distribution"] == "rewardkit-core"
        assert {"name", "distribution", "version", "revision", "identity", "needs", "terms"} <= row.keys()

    installed = run([python, "-m", "pip", "install", "-q", str(ROOT / "examples" / "acme_rewards")])
    assert installed.returncode == 0, installed.stderr
    listed_with_acme = providers(fresh_venv)
    rows = {row["name"]: row for row in json.loads(listed_with_acme.stdout)}
    assert rows["acme-keywords"]["distribution"] == "acme-rewards"
    assert rows["acme-keywords"]["version"] == "1.2.0"
    assert rows["acme-keywords"]["needs"] == ["reference"]
    selected = run(
        [
            python,
            "-c",
            "import rewardkit;"
            "b = rewardkit.resolve_catalog().bind('acme-keywords');"
            "row = {'trajectory_id': 'a', 'completion': 'Red, BLUE', 'reference': ['red', 'blue', 'green']};"
            "r = b.score_group('g', [row]);"
            "print(r.items[0].result.terms['coverage'])",
        ]
    )
    assert selected.returncode == 0, selected.stderr
    assert float(selected.stdout) == pytest.approx(2 / 3)

    override = run([python, "-m", "pip", "install", "-q", str(ROOT / "examples" / "acme_override")])
    assert override.returncode == 0, override.stderr
    refused = providers(fresh_venv)
    assert refused.returncode == 0, "the built-in wins and every command keeps working"
    assert "override the built-in provider 'exact-match'" in refused.stderr
    assert "REWARDKIT_DISABLE_PLUGINS=acme-override" in refused.stderr
    assert json.loads(refused.stdout) == json.loads(listed_with_acme.stdout)
    assert run([python, "-m", "pip", "uninstall", "-y", "-q", "acme-override"]).returncode == 0

    assert run([python, "-m", "pip", "uninstall", "-y", "-q", "acme-rewards"]).returncode == 0
    names = {row["name"] for row in json.loads(providers(fresh_venv).stdout)}
    assert "acme-keywords" not in names and "exact-match" in names


def test_plugins_command_reports_the_example_in_this_environment(fresh_venv: Path):
    plugins = run([str(fresh_venv / "bin" / "rewardkit"), "plugins", "--json"])
    assert plugins.returncode == 0, plugins.stderr
    rows = json.loads(plugins.stdout)
    builtin = [row for row in rows if row["builtin"]]
    assert builtin and all(row["status"] == "loaded" for row in builtin)
    rules = next(row for row in builtin if row["name"] == "rewardkit.builtin.rules")
    assert "register_reward_providers" in rules["hooks"]
