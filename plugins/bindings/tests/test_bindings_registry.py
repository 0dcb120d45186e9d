"""Trainer bindings are resolved from the registry: ``rewardkit.bindings.get``, ``rewardkit bindings``,
and the import paths docs/bindings.md gives each trainer are the registered targets."""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import pytest
from doc_snippets import blocks
from helpers import fake_distribution

import rewardkit.bindings
from rewardkit import PluginLoadError, UnknownNameError
from rewardkit.cli import main
from rewardkit.seam.catalog import trainer_bindings
from rewardkit.seam.plugins import import_module_attribute

DOC = "docs/bindings.md"
# OpenRLHF is given a file, not a function: it imports this name from it.
OPENRLHF_FUNCTION = "reward_func"


def _registered() -> dict[str, str]:
    return {
        entry.name: entry.value.target_path
        for entry in trainer_bindings()
        if entry.owner.distribution == "rewardkit-bindings"
    }


def _paths_given_to_trainers() -> set[str]:
    """Every ``module:function`` of ``rewardkit_bindings`` that a snippet of the document hands a trainer."""
    found: set[str] = set()
    for block in blocks(DOC):
        if block.lang == "python":
            for node in ast.walk(ast.parse(block.text)):
                if not isinstance(node, ast.ImportFrom):
                    continue
                module = node.module or ""
                # rewardkit_bindings.loading is the bindings' cache (forget_rewards), not a trainer's entry
                if module.startswith("rewardkit_bindings.") and module != "rewardkit_bindings.loading":
                    found.update(f"{module}:{alias.name}" for alias in node.names)
        elif block.lang in ("bash", "sh"):
            modules = re.findall(r"import (rewardkit_bindings\.\w+) as m", block.text)
            names = re.findall(r"custom_reward_function\.name=(\w+)", block.text)
            if "--remote_rm_url" in block.text:
                names.append(OPENRLHF_FUNCTION)
            assert len(set(modules)) == 1 and names, f"{block.where}: cannot tell the path it gives"
            found.update(f"{modules[0]}:{name}" for name in names)
    return found


def test_every_path_the_docs_give_a_trainer_is_a_registered_target_and_every_target_is_documented():
    registered = _registered()
    assert _paths_given_to_trainers() == set(registered.values())
    table = dict(
        re.findall(r"^\| `([\w-]+)` \| `([\w.:]+)` \|", (Path(__file__).parents[3] / DOC).read_text(), re.M)
    )
    assert table == registered


@pytest.mark.parametrize("name", sorted(_registered()))
def test_get_imports_the_registered_target(name: str):
    assert rewardkit.bindings.get(name) is import_module_attribute(_registered()[name])


def test_get_names_the_registered_bindings_for_an_unknown_one():
    with pytest.raises(UnknownNameError, match="trainer binding 'verl2'") as error:
        rewardkit.bindings.get("verl2")
    assert "verl" in str(error.value)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_plugins: None) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for module in [name for name in sys.modules if name.startswith("fake_")]:
        del sys.modules[module]


PLUGIN = """
from rewardkit import TrainerBindingSpec, hookimpl

@hookimpl
def register_trainer_bindings(register):
    register(TrainerBindingSpec("acme-trainer", "fake_acme_trainer:reward_fn", "Acme's trainer"))
    register(TrainerBindingSpec("acme-broken", "fake_acme_missing:reward_fn", "not installed"))
"""
TRAINER = """
def reward_fn(samples):
    return [1.0 for _ in samples]
"""


def test_a_plugin_binding_is_imported_only_when_asked_for(site: Path):
    fake_distribution(
        site,
        "acme-bind",
        {"acme-bind": "fake_acme_bind"},
        {"fake_acme_bind": PLUGIN, "fake_acme_trainer": TRAINER},
    )
    rows = {row["name"]: row for row in rewardkit.bindings.describe()}
    assert rows["acme-trainer"] == {
        "name": "acme-trainer",
        "distribution": "acme-bind",
        "version": "1.0",
        "plugin": "acme-bind",
        "builtin": False,
        "target": "fake_acme_trainer:reward_fn",
        "description": "Acme's trainer",
    }
    assert "fake_acme_trainer" not in sys.modules
    assert rewardkit.bindings.get("acme-trainer")(["a", "b"]) == [1.0, 1.0]
    with pytest.raises(PluginLoadError, match=r"'acme-broken' of plugin 'acme-bind' \(acme-bind 1.0\).*"
                       r"'fake_acme_missing:reward_fn' does not import"):  # fmt: skip
        rewardkit.bindings.get("acme-broken")


def test_the_bindings_verb_lists_name_distribution_target_and_description(capsys: pytest.CaptureFixture):
    assert main(["bindings", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert {name: row["target"] for name, row in rows.items()} == _registered()
    assert (
        rows["verl"]["distribution"] == "rewardkit-bindings"
        and rows["verl"]["plugin"] == "bindings"
        and not rows["verl"]["builtin"]
    )
    assert main(["bindings"]) == 0
    table = capsys.readouterr().out
    assert "rewardkit_bindings.trl:reward_funcs" in table and "TRL GRPOTrainer" in table
