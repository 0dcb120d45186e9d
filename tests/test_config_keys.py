"""The dotted-key engine (``rewardkit.config.keys``) is general: it reads any ``Section`` model, learns
what is particular to a section only through the section's hooks, and never imports the schema."""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import Field, ValidationError

from rewardkit.config import keys as config_keys
from rewardkit.config.keys import Section, apply_override, nest, validation_error
from rewardkit.contracts.errors import ConfigError


class Column(Section):
    """A section with two names for one key and a key it takes beyond its fields."""

    SAME_KEY: ClassVar[tuple[tuple[str, ...], ...]] = (("left", "right"),)
    left: str | None = None
    right: str | None = None
    extras: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def takes_key(cls, name: str) -> bool:
        return name == "shortcut"

    @classmethod
    def misplaced_key(cls, parts: Sequence[str], source: str | None) -> ConfigError | None:
        if parts[-1] != "elsewhere":
            return None
        return ConfigError("elsewhere lives at the top", key=".".join(parts), source=source)


class Root(Section):
    MISSING_HINTS: ClassVar[Mapping[str, str]] = {"column": "; give column.left"}
    column: Column
    size: int = 1


def test_the_engine_imports_no_schema() -> None:
    source = Path(config_keys.__file__).read_text(encoding="utf-8")
    imported = {
        node.module
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rewardkit")
    }
    assert imported == {"rewardkit.contracts.errors"}
    named = {node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name)}
    assert not named & {"RewardSelection", "DataConfig", "RLConfig", "RewardkitConfig"}


def test_dotted_and_nested_keys_mix_and_a_key_given_twice_is_refused() -> None:
    tree = nest({"column.left": "a", "column": {"extras": {"x.y": 1}}}, "file", Root)
    assert tree == {"column": {"left": "a", "extras": {"x.y": 1}}}
    with pytest.raises(ConfigError, match="given twice") as caught:
        nest({"column.left": "a", "column": {"left": "b"}}, "file", Root)
    assert caught.value.key == "column.left"


def test_an_override_of_one_name_replaces_the_file_value_under_every_name_of_its_key() -> None:
    tree = nest({"column": {"left": "a"}}, "file", Root)
    apply_override(tree, "column.right=b", Root)
    assert tree == {"column": {"right": "b"}}


def test_a_section_s_hooks_decide_extra_keys_and_misplaced_ones() -> None:
    assert nest({"column.shortcut": {"k": 1}}, None, Root) == {"column": {"shortcut": {"k": 1}}}
    with pytest.raises(ConfigError, match="elsewhere lives at the top"):
        nest({"column.elsewhere": 1}, None, Root)
    with pytest.raises(ConfigError, match=r"did you mean column\.left\?") as caught:
        nest({"column.lefft": "a"}, None, Root)
    assert caught.value.key == "column.lefft"


def test_a_missing_key_carries_its_section_s_hint() -> None:
    with pytest.raises(ValidationError) as caught:
        Root.model_validate({})
    error = validation_error(caught.value, "file", Root)
    assert error.key == "column"
    assert "required key is missing; give column.left" in str(error)
