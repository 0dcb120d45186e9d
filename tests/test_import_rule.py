"""The layout's import rule, checked over the source of every distribution in the repository.

The core imports no distribution (it reaches a verb or backend of one lazily, by name, through
``rewardkit.seam.extras.import_optional``); distributions import the core and themselves; plugins never
import each other, except the shared libraries (media protocol, statistics, process supervision),
which exist to be shared. A distribution that imports another one also declares it as a dependency,
so it installs alone.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
CORE_IMPORT = "rewardkit"
# import names any plugin may depend on: libraries that register no hooks and exist to be shared (the
# media protocol client; the statistics of checkpoints, audit and monitor; the process trees servers run as)
SHARED_LIBRARIES = {"rewardkit_media", "rewardkit_stats", "rewardkit_supervise"}


@dataclass(frozen=True)
class Distribution:
    name: str
    folder: Path
    packages: dict[str, Path]  # import name -> package folder
    requires: frozenset[str]  # distribution names it depends on (any extra)


def _requirement_name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement.strip(), maxsplit=1)[0].lower()


def distributions() -> list[Distribution]:
    found = []
    for pyproject in [
        ROOT / "pyproject.toml",
        *sorted(ROOT.glob("*/pyproject.toml")),
        *sorted(ROOT.glob("plugins/*/pyproject.toml")),
    ]:
        if pyproject.parent.name == "examples":
            continue
        project = tomllib.loads(pyproject.read_text())["project"]
        folder = pyproject.parent
        if folder == ROOT:
            packages = {CORE_IMPORT: ROOT / "core"}
        else:
            packages = {p.parent.name: p.parent for p in sorted((folder / "src").glob("*/__init__.py"))}
        requirements = list(project.get("dependencies", []))
        for extra in project.get("optional-dependencies", {}).values():
            requirements.extend(extra)
        found.append(
            Distribution(project["name"], folder, packages, frozenset(map(_requirement_name, requirements)))
        )
    return found


DISTRIBUTIONS = distributions()
BY_IMPORT = {name: dist for dist in DISTRIBUTIONS for name in dist.packages}


def imported_top_levels(path: Path) -> set[str]:
    """Every module a file imports with an import statement, anywhere in it (lazy ones included)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def violations(dist: Distribution) -> list[str]:
    found = []
    own = set(dist.packages)
    for package in dist.packages.values():
        for path in sorted(package.rglob("*.py")):
            for name in sorted(imported_top_levels(path) & set(BY_IMPORT)):
                if name in own:
                    continue
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                other = BY_IMPORT[name]
                if dist.packages.keys() == {CORE_IMPORT}:
                    found.append(f"{where}: the core imports {name} ({other.name})")
                elif name != CORE_IMPORT and name not in SHARED_LIBRARIES:
                    found.append(f"{where}: {dist.name} imports {name} ({other.name}), another plugin")
                elif other.name.lower() not in dist.requires:
                    found.append(f"{where}: {dist.name} imports {name} but does not depend on {other.name}")
    return found


def test_every_distribution_of_the_layout_is_found():
    names = {dist.name for dist in DISTRIBUTIONS}
    assert {
        "rewardkit-core",
        "rewardkit-rl",
        "rewardkit-service",
        "rewardkit-ray",
        "rewardkit-checkpoints",
        "rewardkit-media",
        "rewardkit-nih-judge",
        "rewardkit-dancegrpo",
        "rewardkit-t2i",
        "rewardkit-vllm",
        "rewardkit-bindings",
    } <= names
    for dist in DISTRIBUTIONS:
        assert dist.packages, f"{dist.name}: no package found under {dist.folder}"


@pytest.mark.parametrize("dist", DISTRIBUTIONS, ids=lambda dist: dist.name)
def test_imports_point_one_way(dist: Distribution):
    assert violations(dist) == []


def test_the_checker_sees_a_violation(tmp_path: Path):
    # A checker that cannot fail proves nothing: a core module importing a distribution lazily,
    # inside a function, is caught; so is a plugin importing another plugin, and a plugin using
    # the media library without declaring it.
    core = tmp_path / "core"
    core.mkdir()
    (core / "bad.py").write_text("def f():\n    from rewardkit_service.client import RemoteReward\n")
    fake_core = Distribution("rewardkit-core", tmp_path, {CORE_IMPORT: core}, frozenset())
    assert violations(fake_core) == [
        f"{core / 'bad.py'}: the core imports rewardkit_service (rewardkit-service)"
    ]

    plugin = tmp_path / "acme"
    plugin.mkdir()
    (plugin / "__init__.py").write_text(
        "import rewardkit\nimport rewardkit_nih_judge\nimport rewardkit_media\n"
    )
    fake_plugin = Distribution("acme", tmp_path, {"acme": plugin}, frozenset({"rewardkit-core"}))
    assert violations(fake_plugin) == [
        f"{plugin / '__init__.py'}: acme imports rewardkit_media but does not depend on rewardkit-media",
        f"{plugin / '__init__.py'}: acme imports rewardkit_nih_judge (rewardkit-nih-judge), another plugin",
    ]


# -- distributions import only the declared plugin API ----------------------------------------------

PLUGIN_API = "rewardkit.plugin"


def internal_imports(path: Path) -> list[str]:
    """The core modules a file imports other than ``rewardkit`` (the documented top level) and the
    plugin API: what would break when the core's internals move."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names = (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module]
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
            else []
        )
        found.extend(name for name in names if name.startswith(f"{CORE_IMPORT}.") and name != PLUGIN_API)
    return found


def plugin_api_violations(dist: Distribution) -> list[str]:
    found = []
    for package in dist.packages.values():
        for path in sorted(package.rglob("*.py")):
            where = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
            found.extend(
                f"{where}: imports {name}, not {PLUGIN_API}" for name in sorted(set(internal_imports(path)))
            )
    return found


@pytest.mark.parametrize(
    "dist", [d for d in DISTRIBUTIONS if d.name != "rewardkit-core"], ids=lambda d: d.name
)
def test_distributions_import_only_the_plugin_api(dist: Distribution):
    assert plugin_api_violations(dist) == []


def test_the_plugin_api_checker_sees_an_internal_import(tmp_path: Path):
    plugin = tmp_path / "acme"
    plugin.mkdir()
    (plugin / "__init__.py").write_text(
        "import rewardkit\nfrom rewardkit import load\nfrom rewardkit.plugin import HttpClient\n"
        "from rewardkit.scoring.worker import RewardWorker\n\n\ndef f():\n    import rewardkit.seam.catalog\n"
    )
    fake = Distribution("acme", tmp_path, {"acme": plugin}, frozenset({"rewardkit-core"}))
    assert plugin_api_violations(fake) == [
        f"{plugin / '__init__.py'}: imports rewardkit.scoring.worker, not rewardkit.plugin",
        f"{plugin / '__init__.py'}: imports rewardkit.seam.catalog, not rewardkit.plugin",
    ]


def test_every_name_of_the_plugin_api_resolves():
    import rewardkit.plugin as api

    assert sorted(api.__all__) == sorted(api._WHERE)
    for name in api.__all__:
        assert getattr(api, name) is not None, name
