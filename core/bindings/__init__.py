"""Trainer bindings: rewardkit rewards in the shapes TRL, verl and OpenRLHF call (docs/bindings.md);
``get(name)`` returns the entry function of any registered one (``rewardkit bindings`` lists them).
The bindings themselves are a distribution of their own (plugins/bindings in a checkout); the core keeps
the registry, this lookup, and what other distributions share with them (``rewardkit.plugin``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["describe", "get"]


def get(name: str) -> Callable[..., Any]:
    """The entry function of the binding registered as ``name``, imported on first use when given by path."""
    from rewardkit.contracts.errors import PluginLoadError
    from rewardkit.seam.catalog import trainer_bindings
    from rewardkit.seam.extras import KNOWN_BINDINGS
    from rewardkit.seam.plugins import import_module_attribute
    from rewardkit.seam.registry import owner_label

    registry = trainer_bindings()
    # a plugin that failed may be the one providing it: then the registry's error names the failure
    if name not in registry and name in KNOWN_BINDINGS and not registry.failures:
        raise KNOWN_BINDINGS[name].missing(f"trainer binding {name!r}")
    registered = registry.get(name)
    target = registered.value.target
    if not isinstance(target, str):
        return target
    where = f"trainer binding {name!r} of {owner_label(registered.owner)}"
    try:
        found = import_module_attribute(target)
    except (ImportError, AttributeError) as error:
        why = f"{type(error).__name__}: {error}"
        raise PluginLoadError(f"{where}: its target {target!r} does not import: {why}") from error
    if not callable(found):
        raise PluginLoadError(f"{where}: {target!r} is a {type(found).__name__}, not a function")
    return found


def describe() -> list[dict[str, Any]]:
    """What ``rewardkit bindings --json`` prints: every registered binding, by name."""
    from rewardkit.seam.catalog import trainer_bindings

    return [
        {
            "name": entry.name,
            "distribution": entry.owner.distribution,
            "version": entry.owner.version,
            "plugin": entry.owner.name,
            "builtin": entry.owner.builtin,
            "target": entry.value.target_path,
            "description": entry.value.description,
        }
        for entry in trainer_bindings()
    ]
