"""Meta-tests: every hookspec is documented, tested, and shaped ``register_<things>(register)`` (or
``register_commands(cli)``, handed a registrar object)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from rewardkit.seam import hookspecs

ROOT = Path(__file__).resolve().parents[1]
HOOKS = sorted(
    name for name, value in vars(hookspecs).items() if callable(value) and hasattr(value, "rewardkit_spec")
)


# The one argument each hook is handed: ``register`` everywhere but the verbs' registrar.
HANDED = {"register_commands": "cli"}


def test_there_are_nine_extension_points():
    assert HOOKS == [
        "register_catalogs",
        "register_commands",
        "register_config_sections",
        "register_reward_attacks",
        "register_reward_backends",
        "register_reward_expansions",
        "register_reward_providers",
        "register_serving_strategies",
        "register_trainer_bindings",
    ]


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_is_shaped_and_documented_in_code(hook: str):
    function = getattr(hookspecs, hook)
    handed = HANDED.get(hook, "register")
    assert list(inspect.signature(function).parameters) == [handed]
    doc = inspect.getdoc(function) or ""
    assert "Called" in doc and "Since" in doc and (f"{handed}(" in doc or f"{handed}." in doc), (
        f"{hook} must say when, how and since when"
    )
    assert hook in hookspecs.__all__


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_has_a_section_in_the_plugin_docs(hook: str):
    docs = (ROOT / "docs" / "plugins.md").read_text()
    assert re.search(rf"^## {hook}$", docs, re.MULTILINE), f"docs/plugins.md lacks a '## {hook}' section"


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_is_exercised_by_a_test(hook: str):
    """A hook counts as tested when a test module, or the test distribution the core's tests install
    (``tests/seam_plugin``), registers an implementation of it."""
    paths = [*(ROOT / "tests").glob("test_*.py"), *(ROOT / "tests" / "seam_plugin").rglob("*.py")]
    sources = "\n".join(path.read_text() for path in paths if path.name != Path(__file__).name)
    handed = HANDED.get(hook, "register")
    assert re.search(rf"def {hook}\({handed}\b", sources), f"no test implements {hook}"
