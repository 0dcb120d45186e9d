"""The command line: providers, show, plugins."""

from __future__ import annotations

import json

import pytest

from rewardkit.cli import main


def test_providers_table(capsys: pytest.CaptureFixture):
    assert main(["providers"]) == 0
    out = capsys.readouterr().out
    header, _rule, *rows = out.splitlines()
    assert header.split() == ["name", "distribution", "revision", "identity", "needs", "terms"]
    assert any(row.startswith("exact-match") and "reference" in row for row in rows)


def test_providers_json(capsys: pytest.CaptureFixture):
    assert main(["providers", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = [row["name"] for row in rows]
    assert names == sorted(names) and "constant" in names
    for row in rows:
        assert len(row["identity"]) == 64
        assert isinstance(row["needs"], list) and isinstance(row["terms"], list)


def test_show_and_unknown_name(capsys: pytest.CaptureFixture):
    assert main(["show", "nonempty", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "nonempty"
    assert main(["show", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown provider 'nope'" in err and "installed" in err


def test_plugins_lists_builtins_with_hooks(capsys: pytest.CaptureFixture):
    assert main(["plugins", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    rules = next(row for row in rows if row["name"] == "rewardkit.builtin.rules")
    assert rules["status"] == "loaded" and "register_reward_providers" in rules["hooks"]
