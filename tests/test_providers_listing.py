"""What `rewardkit providers` tells a new user, through the real CLI: a description for every
provider, the extra a provider still needs before it can score, a provider whose function returns
terms it never declared refused with the fix, and distribution versions that satisfy their pins."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import bind_spec, fake_distribution
from packaging.requirements import Requirement

import rewardkit
from rewardkit import RegistrationError
from rewardkit.contracts.errors import RewardContractError

if sys.version_info >= (3, 11):
    import tomllib
else:  # the core depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]

PLUGIN = '''
from functools import partial
from rewardkit import RewardProviderResult, RewardProviderSpec, hookimpl, map_candidates


def length_score(candidate, context):
    """Shorter is better: 1 / (1 + words).

    More text that the listing leaves out.
    """
    return RewardProviderResult({"task": 1.0 / (1 + len(candidate.completion.split()))})


@hookimpl
def register_reward_providers(register):
    score = partial(map_candidates, length_score)
    register(RewardProviderSpec("acme-short", score, (), "1", ("task",)))
    absent = ("acme_module_that_is_not_installed",)
    register(RewardProviderSpec("acme-gpu", score, (), "1", ("task",), extra_modules=absent,
                                extra="acme-rewards[gpu]"))
    register(RewardProviderSpec("acme-heavy", score, (), "1", ("task",),
                                extra_modules=("fake_heavy",), extra="acme-rewards[heavy]"))
'''

# Installed, and must stay unimported by a listing: importing it is what the check avoids.
HEAVY = """
raise SystemExit("fake_heavy was imported by a listing")
"""

UNDECLARED = '''
import rewardkit
from rewardkit import hookimpl


@rewardkit.provider(name="acme-two-terms", revision="1")
def two_terms(completion: str):
    """Accuracy and format, in one function."""
    return {"accuracy": float("42" in completion), "format": 1.0}


@hookimpl
def register_reward_providers(register):
    register(two_terms)
'''


def rewardkit_cli(site: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    # A user's shell: not the test suite's strict mode.
    env = {key: value for key, value in os.environ.items() if not key.startswith("REWARDKIT_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT / "rl_pack" / "src"), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "rewardkit.cli", *argv]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=site, timeout=300)


def listed(site: Path) -> tuple[dict[str, dict[str, Any]], str]:
    as_json = rewardkit_cli(site, "providers", "--json")
    assert as_json.returncode == 0, as_json.stderr
    table = rewardkit_cli(site, "providers")
    assert table.returncode == 0, table.stderr
    return {row["name"]: row for row in json.loads(as_json.stdout)}, table.stdout


def table_line(table: str, name: str) -> str:
    return next(line for line in table.splitlines() if line.split()[:1] == [name])


@pytest.fixture
def site(tmp_path: Path) -> Path:
    fake_distribution(
        tmp_path, "acme-rewards", {"acme": "fake_acme"}, {"fake_acme": PLUGIN, "fake_heavy": HEAVY}
    )
    return tmp_path


def test_every_provider_is_described_by_its_spec_or_its_docstring(site: Path):
    rows, table = listed(site)
    assert table.splitlines()[0].split()[-1] == "description"
    undescribed = sorted(name for name, row in rows.items() if not row["description"])
    assert not undescribed, f"listed without a description: {undescribed}"
    # No description in the spec: the first line of the scorer's docstring, in the table and --json.
    assert rows["acme-short"]["description"] == "Shorter is better: 1 / (1 + words)."
    assert table_line(table, "acme-short").endswith("Shorter is better: 1 / (1 + words).")
    assert rows["exact-match"]["description"].startswith("1 when the completion equals the reference")


def test_a_missing_extra_is_named_and_a_present_one_is_not_imported(site: Path):
    rows, table = listed(site)  # fake_heavy exits the process if the listing imports it
    assert rows["acme-gpu"]["missing_modules"] == ["acme_module_that_is_not_installed"]
    assert rows["acme-gpu"]["extra"] == "acme-rewards[gpu]"
    assert "needs acme-rewards[gpu] (acme_module_that_is_not_installed not installed)" in table_line(
        table, "acme-gpu"
    )
    assert rows["acme-heavy"]["missing_modules"] == [] and "needs" not in table_line(table, "acme-heavy")
    assert rows["acme-short"]["extra"] is None and rows["acme-short"]["missing_modules"] == []


def test_reward_models_say_they_need_the_rm_extra_when_torch_is_missing(tmp_path: Path):
    # rewardkit-rl's reward-model plugin as pip lays it out; its registering imports neither torch
    # nor transformers (nor math-verify), so it lists in the core's own environment.
    fake_distribution(tmp_path, "rewardkit-rl", {"rl-reward-models": "rewardkit_rl.reward_models"}, {})
    rows, table = listed(tmp_path)
    missing = [module for module in ("torch", "transformers") if importlib.util.find_spec(module) is None]
    for name in ("reward-model", "reward-model-ensemble"):
        assert rows[name]["missing_modules"] == missing and rows[name]["extra"] == "rewardkit-rl[rm]"
        assert ("needs rewardkit-rl[rm]" in table_line(table, name)) == bool(missing)


def test_a_function_returning_undeclared_terms_is_refused_when_listed_with_the_fix(tmp_path: Path):
    fake_distribution(tmp_path, "acme-two", {"two": "fake_two"}, {"fake_two": UNDECLARED})
    providers = rewardkit_cli(tmp_path, "providers")
    assert providers.returncode == 0, providers.stderr
    assert "acme-two-terms" not in providers.stdout, "not listed as usable"
    assert "terms=('accuracy', 'format')" in providers.stderr
    assert "to @rewardkit.provider" in providers.stderr and "fake_two.py:9" in providers.stderr
    plugins = rewardkit_cli(tmp_path, "plugins", "--json")
    row = next(row for row in json.loads(plugins.stdout) if row["name"] == "two")
    assert row["status"] == "failed" and "terms=('accuracy', 'format')" in row["error"]


def test_the_decorator_reads_returned_terms_without_calling_the_function():
    calls: list[str] = []
    with pytest.raises(RegistrationError, match=r"add terms=\('accuracy', 'format'\) to @rewardkit.provider"):

        @rewardkit.provider(name="two", revision="1")
        def two(completion: str) -> Any:
            calls.append(completion)
            if completion:
                return {"accuracy": 1.0, "format": 1.0}
            return {"score": 0.0}

    assert calls == [], "registering runs no user code"

    @rewardkit.provider(name="two", revision="1", terms=("accuracy", "format"))
    def declared(completion: str) -> Any:
        def helper() -> dict[str, float]:
            return {"not-a-term": 1.0}  # another function's return

        return {"accuracy": 1.0, "format": helper()["not-a-term"]}

    assert declared.terms == ("accuracy", "format")


def test_terms_the_source_does_not_show_fail_when_scored_with_the_fix():
    @rewardkit.provider(name="built", revision="1")
    def built(completion: str) -> Any:
        return dict.fromkeys(("accuracy", "format"), 1.0)  # not a literal: found only when it runs

    with pytest.raises(RewardContractError) as caught:
        bind_spec(built).score_group("g", [{"trajectory_id": "a", "completion": "x"}])
    message = str(caught.value)
    assert "undeclared ['accuracy', 'format']" in message
    assert "terms=('accuracy', 'format') in @rewardkit.provider(...)" in message


def _distributions() -> dict[str, tuple[Path, dict[str, Any]]]:
    found = {}
    for path in sorted(ROOT.glob("**/pyproject.toml")):
        if any(
            part.startswith(".") or part in ("build", "node_modules") for part in path.relative_to(ROOT).parts
        ):
            continue
        project = tomllib.loads(path.read_text())["project"]
        found[project["name"]] = (path.relative_to(ROOT), project)
    return found


def test_every_distribution_satisfies_the_pins_on_it_and_first_party_ones_share_the_core_version():
    distributions = _distributions()
    core_version = distributions["rewardkit-core"][1]["version"]
    assert {
        "rewardkit-core",
        "rewardkit-rl",
        "rewardkit-nih-judge",
        "rewardkit-service",
    } <= distributions.keys()
    unsatisfied = []
    for where, project in distributions.values():
        wanted = list(project.get("dependencies", []))
        for extra in project.get("optional-dependencies", {}).values():
            wanted.extend(extra)
        for line in wanted:
            requirement = Requirement(line)
            if requirement.name in distributions:
                version = distributions[requirement.name][1]["version"]
                if not requirement.specifier.contains(version, prereleases=True):
                    unsatisfied.append(f"{where} asks for {line!r}; this repository's is {version}")
    assert not unsatisfied, unsatisfied
    behind = sorted(
        f"{where}: {project['version']}"
        for name, (where, project) in distributions.items()
        if name.startswith("rewardkit-") and project["version"] != core_version
    )
    assert not behind, f"first-party distributions not at the core's {core_version}: {behind}"
    rl_version = distributions["rewardkit-rl"][1]["version"]
    init = (ROOT / "rl_pack" / "src" / "rewardkit_rl" / "__init__.py").read_text()
    assert f'__version__ = "{rl_version}"' in init
