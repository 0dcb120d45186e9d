"""Distributions bring their own verbs, config sections and backends: the test distribution
``tests/seam_plugin`` (installed in the core env) adds ``rewardkit seam-greet``, the sections ``seam`` and
``rl.seam_weights`` and the backend ``seam-echo`` through the hooks alone; the core's source names none
of the subsystem distributions, which all register through entry points of group ``rewardkit``."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import rewardkit
from rewardkit.cli import main

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
SUBSYSTEMS = ("service", "ray", "checkpoints", "audit", "monitor")
ROLLOUTS = '{"group_id": "g", "completion": "four", "reference": "four"}\n'


def _config(tmp_path: Path, extra: str = "") -> Path:
    (tmp_path / "r.jsonl").write_text(ROLLOUTS)
    config = tmp_path / "c.yaml"
    config.write_text(
        "rl: {data: {rollouts_path: r.jsonl, response_column: reference}, reward: {provider: exact-match}}\n"
        + extra
    )
    return config


def test_rewardkit_help_lists_the_plugins_verb() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rewardkit.cli", "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert re.search(r"^\s+seam-greet\s+greet from the seam example plugin$", done.stdout, re.MULTILINE)


def test_the_verb_runs_with_its_own_arguments_and_reads_its_section(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    config = _config(tmp_path, "seam: {greeting: hi, repeat: 2}\n")
    assert main(["seam-greet", str(config), "--name", "ada"]) == 0
    assert capsys.readouterr().out == "hi, ada\nhi, ada\n"
    assert main(["seam-greet", str(config), "seam.greeting=yo", "--name", "bo"]) == 0
    assert capsys.readouterr().out == "yo, bo\nyo, bo\n"


@pytest.mark.parametrize(
    ("extra", "key", "said"),
    [
        ("seam: {greting: hi}\n", "seam.greting", "did you mean seam.greeting?"),
        ("seam.repeat: 0\n", "seam.repeat", "greater than or equal to 1"),
        ("rl.seam_weights.scal: 2\n", "rl.seam_weights.scal", "did you mean rl.seam_weights.scale?"),
        ("seem: {greeting: hi}\n", "seem", "did you mean seam?"),
    ],
)
def test_rewardkit_score_validates_the_plugins_sections(
    tmp_path: Path, capsys: pytest.CaptureFixture, extra: str, key: str, said: str
) -> None:
    config = _config(tmp_path, extra)
    assert main(["score", str(config), "--out", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert f"{key}: " in err and said in err, err
    assert not (tmp_path / "o.jsonl").exists()


def test_a_valid_section_scores_and_has_its_defaults(tmp_path: Path) -> None:
    config = _config(tmp_path, "seam: {greeting: hi}\n")
    assert main(["score", str(config), "--out", str(tmp_path / "o.jsonl")]) == 0
    loaded = rewardkit.load(config)
    try:
        weights = loaded.config.section("rl.seam_weights", object)  # type: ignore[type-var]
        assert type(weights).__name__ == "SeamWeights" and weights.scale == 1.0  # type: ignore[attr-defined]
    finally:
        loaded.close()


def test_rewards_backend_selects_the_plugins_backend() -> None:
    from rewardkit_seam_example import EchoReward  # type: ignore[import-not-found]

    config = {
        "rl.reward.provider": "exact-match",
        "rl.data.response_column": "reference",
        "rewards.backend": "seam-echo",
    }
    before = len(EchoReward.scored_batches)
    with rewardkit.load(config) as reward:
        assert type(reward) is EchoReward
        scored = reward.score(
            [
                {
                    "group_id": "g",
                    "rollouts": [{"trajectory_id": "t", "completion": "four", "reference": "four"}],
                }
            ]
        )
    assert [candidate.final for candidate in scored.groups[0].candidates] == [1.0]
    assert EchoReward.scored_batches[before:] == [1]
    with pytest.raises(rewardkit.ConfigError, match=r"'local', 'ray' or 'seam-echo' \(got 'seam-ech'\)"):
        rewardkit.load({**config, "rewards.backend": "seam-ech"})


def test_rewardkit_plugins_lists_the_plugin_with_its_hooks(capsys: pytest.CaptureFixture) -> None:
    assert main(["plugins", "--json"]) == 0
    row = next(row for row in json.loads(capsys.readouterr().out) if row["name"] == "seam-example")
    assert row["distribution"] == "rewardkit-seam-example" and row["status"] == "loaded"
    assert row["hooks"] == ["register_commands", "register_config_sections", "register_reward_backends"]
    assert row["provides"] == {
        "backends": ["seam-echo"],
        "sections": ["rl.seam_watch", "rl.seam_weights", "seam"],
        "commands": ["seam-greet"],
    }


# -- the core names no distribution ------------------------------------------------------------------


def _layout() -> tuple[frozenset[str], frozenset[str]]:
    """The import names of every distribution of the repository but the core's (``rewardkit_ray``...)
    and their distribution names (``rewardkit-ray``...), read from the pyproject files."""
    packages: set[str] = set()
    names: set[str] = set()
    for pyproject in [*ROOT.glob("*/pyproject.toml"), *ROOT.glob("plugins/*/pyproject.toml")]:
        project = tomllib.loads(pyproject.read_text()).get("project", {})
        if "name" in project and (pyproject.parent / "src").is_dir():
            names.add(project["name"])
            packages.update(init.parent.name for init in (pyproject.parent / "src").glob("*/__init__.py"))
    return frozenset(packages), frozenset(names)


DISTRIBUTION_PACKAGES, DISTRIBUTION_NAMES = _layout()
# The two tables allowed to name distributions: what to install for a missing verb, section or backend
# (``rewardkit.seam.extras``), and where the old import paths moved (``rewardkit.seam.moved``).
TABLES = ("core/seam/extras.py", "core/seam/moved.py")


def distribution_names_in(
    source: str, packages: frozenset[str] = DISTRIBUTION_PACKAGES, names: frozenset[str] = DISTRIBUTION_NAMES
) -> list[str]:
    """How a source reaches a distribution by name: an import of its package, its package in any string
    or identifier (a lazy loader's ``"pkg.module"``, a docstring, a moved-paths target), or a string that
    is exactly its distribution name (a handle a helper derives the package from: ``f("rewardkit-audit")``).
    Comments aside; prose that mentions a distribution name among other words is documentation."""
    module = re.compile(r"\b(" + "|".join(sorted(map(re.escape, packages), key=len, reverse=True)) + r")\b")
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names if module.match(alias.name))
        elif isinstance(node, ast.ImportFrom) and node.module and module.match(node.module):
            found.append(node.module)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.extend(match.group(0) for match in module.finditer(node.value))
            found.extend([node.value] if node.value in names else [])
        elif isinstance(node, ast.Name | ast.Attribute):
            name = node.id if isinstance(node, ast.Name) else node.attr
            found.extend([name] if module.match(name) else [])
    return found


def test_the_cores_source_names_no_distribution_outside_its_two_tables() -> None:
    assert {
        "rewardkit_monitor",
        "rewardkit_audit",
        "rewardkit_rl",
        "rewardkit_media",
    } <= DISTRIBUTION_PACKAGES
    named = {
        relative: names
        for path in sorted((ROOT / "core").rglob("*.py"))
        if (relative := str(path.relative_to(ROOT))) not in TABLES
        and (names := distribution_names_in(path.read_text()))
    }
    assert named == {}


def test_the_checker_sees_each_way_of_naming_one() -> None:
    source = (
        "import rewardkit_ray\nfrom rewardkit_service.client import RemoteReward\n"
        "LAZY = ('rewardkit_audit', 'audit')\n\n\ndef f():\n    '''Calls rewardkit_monitor.build.'''\n"
        "    return import_from('rewardkit-audit', 'audit', 'x'), rewardkit_rl\n"
        "# a comment naming rewardkit_ray is no reach\n"
        "NOTE = 'extras such as rewardkit-rl[rm] install the model libraries'\n"
    )
    assert sorted(distribution_names_in(source)) == sorted(
        [
            "rewardkit_ray",
            "rewardkit_service.client",
            "rewardkit_audit",
            "rewardkit_monitor",
            "rewardkit-audit",
            "rewardkit_rl",
        ]
    )


@pytest.mark.parametrize("subsystem", SUBSYSTEMS)
def test_every_subsystem_distribution_registers_through_an_entry_point(subsystem: str) -> None:
    project = tomllib.loads((ROOT / "plugins" / subsystem / "pyproject.toml").read_text())["project"]
    entry_points = project.get("entry-points", {}).get("rewardkit", {})
    assert entry_points.get(subsystem) == f"rewardkit_{subsystem}.plugin", entry_points
    assert (ROOT / "plugins" / subsystem / "src" / f"rewardkit_{subsystem}" / "plugin.py").is_file()
