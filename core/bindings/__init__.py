"""Trainer bindings: rewardkit rewards in the shapes TRL (``rewardkit.bindings.trl``), verl
(``rewardkit.bindings.verl``) and OpenRLHF (``rewardkit.bindings.openrlhf``) call.

Each is a built-in trainer binding: ``rewardkit bindings`` lists every registered one (plugins may
add more) and ``get(name)`` returns its entry function. None imports its trainer (they load without
torch), and none turns an error into a reward of 0: errors follow the spec's ``onError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["describe", "get"]


def get(name: str) -> Callable[..., Any]:
    """The entry function of the trainer binding registered as ``name`` (``rewardkit bindings``),
    imported on first use when registered by path (its module may need the trainer)."""
    from rewardkit.catalog import trainer_bindings
    from rewardkit.errors import PluginLoadError
    from rewardkit.plugins import import_module_attribute
    from rewardkit.registry import owner_label

    registered = trainer_bindings().get(name)
    target = registered.value.target
    if not isinstance(target, str):
        return target
    try:
        found = import_module_attribute(target)
    except (ImportError, AttributeError) as error:
        raise PluginLoadError(
            f"trainer binding {name!r} of {owner_label(registered.owner)}: its target {target!r} does "
            f"not import: {type(error).__name__}: {error}"
        ) from error
    if not callable(found):
        raise PluginLoadError(
            f"trainer binding {name!r} of {owner_label(registered.owner)}: {target!r} is a "
            f"{type(found).__name__}, not a function"
        )
    return found


def describe() -> list[dict[str, Any]]:
    """What ``rewardkit bindings --json`` prints: every registered binding, by name."""
    from rewardkit.catalog import trainer_bindings

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
