"""Hooks are called through pluggy, by argument name, one plugin at a time, in a documented order:
an implementation may leave out a parameter, a spec may grow without breaking an old plugin,
``tryfirst``/``trylast`` order plugins within their tier, and a wrapper is refused at load."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import fake_distribution

from rewardkit import hookimpl, load_plugins, resolve_catalog
from rewardkit.seam import hookspecs, protocols
from rewardkit.seam.hookspecs import hookspec
from rewardkit.seam.plugins import PluginInfo, PluginManager, hook_names

DOCS = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_plugins: None) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for module in [name for name in sys.modules if name.startswith("fake_")]:
        del sys.modules[module]


def test_an_implementation_without_register_is_called_and_contributes_nothing(site: Path) -> None:
    source = """
from rewardkit import hookimpl

CALLS = []

@hookimpl
def register_reward_providers():
    CALLS.append("called")
"""
    fake_distribution(site, "acme-quiet", {"quiet": "fake_quiet"}, {"fake_quiet": source})
    before = set(resolve_catalog().names())
    import fake_quiet

    assert fake_quiet.CALLS == ["called"]
    rows = {row["name"]: row for row in load_plugins().describe()}
    assert rows["quiet"]["status"] == "loaded" and rows["quiet"]["hooks"] == ["register_reward_providers"]
    assert "error" not in rows["quiet"]
    assert before == set(resolve_catalog().names())


class GrownSpecs:
    """A hook whose spec gained ``context`` after plugins were written against ``(register)``."""

    @hookspec
    def register_widgets(self, register: Callable[[str], None], context: dict[str, Any]) -> None:
        """Contribute widgets."""


class OldPlugin:
    @hookimpl
    def register_widgets(self, register: Callable[[str], None]) -> None:
        register("old")


class NewPlugin:
    @hookimpl
    def register_widgets(self, context: dict[str, Any], register: Callable[[str], None]) -> None:
        register(f"new for {context['trainer']}")


def _manager_with(*plugins: tuple[object, str, bool]) -> PluginManager:
    manager = PluginManager()
    manager.pm.add_hookspecs(GrownSpecs)
    for plugin, name, builtin in plugins:
        manager.add(plugin, name, f"dist-{name}", "1.0", builtin)
    return manager


def _collect(manager: PluginManager, hook: str, **arguments: Any) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []

    def registrar(owner: PluginInfo) -> Callable[[str], None]:
        return lambda widget: seen.append((owner.name, widget))

    manager.call_each(hook, registrar, arguments=arguments)
    return seen


def test_a_spec_that_gained_a_parameter_still_calls_an_old_implementation() -> None:
    manager = _manager_with((OldPlugin(), "old", False), (NewPlugin(), "new", False))
    seen = _collect(manager, "register_widgets", context={"trainer": "verl"})
    # every entry still names the plugin behind it; each got only the arguments it names
    assert seen == [("new", "new for verl"), ("old", "old")]


def _ordered(name: str, **marks: bool) -> object:
    class Plugin:
        @hookimpl(**marks)
        def register_widgets(self, register: Callable[[str], None]) -> None:
            register(name)

    return Plugin()


def test_call_order_is_built_ins_then_plugins_each_by_tryfirst_plain_trylast_then_name() -> None:
    manager = _manager_with(
        (_ordered("zeta", tryfirst=True), "zeta", False),
        (_ordered("beta", trylast=True), "beta", False),
        (_ordered("mid"), "mid", False),
        (_ordered("alpha"), "alpha", False),
        (_ordered("core-late", trylast=True), "core-late", True),
        (_ordered("core"), "core", True),
        (_ordered("omega", tryfirst=True), "omega", False),
    )
    order = [name for name, _ in _collect(manager, "register_widgets", context={})]
    # tryfirst never puts an installed plugin ahead of a built-in
    assert order == ["core", "core-late", "omega", "zeta", "alpha", "mid", "beta"]


def test_a_plugin_whose_hook_raises_fails_alone_when_called_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("REWARDKIT_STRICT_PLUGINS", raising=False)

    class Failing:
        @hookimpl
        def register_widgets(self, register: Callable[[str], None]) -> None:
            register("half")
            raise RuntimeError("lost its config")

    manager = _manager_with((Failing(), "failing", False), (OldPlugin(), "old", False))
    dropped: list[str] = []
    seen: list[tuple[str, str]] = []
    manager.call_each(
        "register_widgets",
        lambda owner: lambda widget: seen.append((owner.name, widget)),
        lambda owner: dropped.append(owner.name),
        arguments={"context": {}},
    )
    assert seen == [("failing", "half"), ("old", "old")]
    assert dropped == ["failing"]
    assert manager.hook_failures == {"failing": ["register_widgets raised RuntimeError: lost its config"]}


def test_a_wrapper_implementation_is_refused_at_load(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REWARDKIT_STRICT_PLUGINS", raising=False)
    source = """
from rewardkit import hookimpl

@hookimpl(wrapper=True)
def register_reward_providers(register):
    return (yield)
"""
    fake_distribution(site, "acme-wrap", {"wrap": "fake_wrap"}, {"fake_wrap": source})
    rows = {row["name"]: row for row in load_plugins().describe()}
    assert rows["wrap"]["status"] == "failed"
    assert "implements ['register_reward_providers'] as a wrapper" in rows["wrap"]["error"]
    assert "wrap" not in dict(load_plugins().pm.list_name_plugin())


@pytest.mark.parametrize("hook", hook_names())
def test_each_hook_types_register_with_a_registrar_protocol_the_docs_list(hook: str) -> None:
    (parameter,) = inspect.signature(getattr(hookspecs, hook)).parameters.values()  # register, or cli
    annotation = parameter.annotation
    registrar = getattr(protocols, annotation)
    assert getattr(registrar, "_is_protocol", False) and annotation in protocols.__all__
    assert f"| `{hook}` | `{annotation}`" in DOCS.read_text()
