"""Trainer bindings: rewardkit rewards in the shapes TRL, verl and OpenRLHF call.

- ``rewardkit.bindings.trl``: ``reward_funcs(config) -> (funcs, weights)`` for ``GRPOTrainer``.
- ``rewardkit.bindings.verl``: ``compute_score`` / ``compute_score_batch`` for verl's
  ``custom_reward_function``.
- ``rewardkit.bindings.openrlhf``: ``reward_func`` for OpenRLHF's ``--remote_rm_url file.py``.

Each is registered as a built-in trainer binding: ``rewardkit bindings`` lists every registered one
(a plugin may add more) and ``get(name)`` returns its entry function. None imports its trainer,
so they load without torch. Errors follow the reward spec's ``onError``: none of them turns an error
into a reward of 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["describe", "get"]


def get(name: str) -> Callable[..., Any]:
    """The entry function of the trainer binding registered as ``name`` (``rewardkit bindings``).

    A binding registered by path is imported here, on first use (its module may need the trainer).
    An unknown name raises ``UnknownNameError`` listing the registered ones; a target that does not
    import raises ``PluginLoadError`` naming the binding, the plugin that registered it and the path.
    """
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
