"""Import paths that moved in 0.2 (``MOVED``: out of the core, or renamed) keep working for a while.

An old path imports the very same module object (so ``isinstance`` and monkeypatching behave) with a
``DeprecationWarning`` naming the new path and the version that removes the old one; a distribution
that is not installed fails naming its install line. Functions that moved out of a core module
(``MOVED_ATTRIBUTES``: ``rewardkit.audit``) are found the same way by that module's ``__getattr__``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from rewardkit.seam.extras import DISTRIBUTIONS, MODULES, import_optional, install_line

__all__ = ["MOVED", "MOVED_ATTRIBUTES", "REGROUPED", "REMOVED_IN", "install", "moved_attribute"]

REMOVED_IN = "0.3"

# old dotted path -> (the distribution it moved to, the module inside that distribution's package, ""
# for the package itself): the core names distributions, never their modules (``Distribution.package``)
MOVED_OUT: dict[str, tuple[str, str]] = {
    "rewardkit.remote": ("rewardkit-service", "client"),
    "rewardkit.service.process": ("rewardkit-service", "testing"),
    "rewardkit.service": ("rewardkit-service", ""),
    "rewardkit.distributed.ray": ("rewardkit-ray", "backend"),
    "rewardkit.distributed": ("rewardkit-ray", ""),
    "rewardkit.checkpoints": ("rewardkit-checkpoints", ""),
    "rewardkit.media.reference": ("rewardkit-media", "testing"),
    "rewardkit.media": ("rewardkit-media", ""),
    # the trainer bindings; the package rewardkit.bindings (get, describe) stays in the core
    "rewardkit.bindings.trl": ("rewardkit-bindings", "trl"),
    "rewardkit.bindings.verl": ("rewardkit-bindings", "verl"),
    "rewardkit.bindings.verl_manager": ("rewardkit-bindings", "verl_manager"),
    "rewardkit.bindings.openrlhf": ("rewardkit-bindings", "openrlhf"),
    "rewardkit.bindings.loading": ("rewardkit-bindings", "loading"),
    "rewardkit.bindings.truncation": ("rewardkit-bindings", "truncation"),
    "rewardkit.bindings.sample_groups": ("rewardkit-bindings", "sample_groups"),
    "rewardkit.bindings.groups": ("rewardkit-bindings", "sample_groups"),
    "rewardkit.bindings.plugin": ("rewardkit-bindings", "plugin"),
    "rewardkit.stats": ("rewardkit-stats", ""),
    "rewardkit.supervise": ("rewardkit-supervise", ""),
    # test tooling: the conformance kit and the shared composition vectors
    "rewardkit.testing": ("rewardkit-testing", ""),
    "rewardkit.composition_vectors": ("rewardkit-testing", "composition_vectors"),
}

# old dotted name of a function -> (the distribution it moved to, ``module:attribute`` inside that
# distribution's package, the module "" for the package itself)
MOVED_ATTRIBUTES: dict[str, tuple[str, str]] = {
    "rewardkit.audit": ("rewardkit-audit", ":audit"),
    "rewardkit.testing.assert_attacks_hold": ("rewardkit-audit", "testing:assert_attacks_hold"),
    # names of the plugin API of 0.1 whose subsystems became shared libraries
    "rewardkit.plugin.ProcessTree": ("rewardkit-supervise", ":ProcessTree"),
    "rewardkit.plugin.RegressionGate": ("rewardkit-stats", ":RegressionGate"),
    "rewardkit.plugin.paired_interval": ("rewardkit-stats", ":paired_interval"),
    "rewardkit.plugin.incomplete_beta": ("rewardkit-stats", "distributions:incomplete_beta"),
}

# the flat modules of the core, regrouped into folders by concern in 0.2: old name -> its folder
REGROUPED: dict[str, tuple[str, ...]] = {
    "seam": (
        "hookspecs",
        "plugins",
        "registry",
        "extensions",
        "protocols",
        "catalog",
        "moved",
        "extras",
        "attacks",
    ),
    "contracts": (
        "errors",
        "identity",
        "params",
        "credentials",
        "frozen",
        "text",
        "text_tables",
    ),
    "scoring": (
        "bound_provider",
        "composition",
        "function_providers",
        "pointwise",
        "pointwise_batch",
        "advantages",
        "metrics",
        "split_batch",
        "worker",
        "reward",
        "stream",
        "shared_results",
        "reproduction",
        "cancellation",
        "backpressure",
        "capacity",
        "collector",
        "observers",
        "batch_input",
        "scored",
        "scored_columns",
        "recent",
    ),
    "job": (
        "score_job",
        "score_plot",
        "score_progress",
        "data",
        "answer_journal",
        "tables",
        "provenance",
    ),
}

# old dotted path (a module or a package prefix) -> new dotted path; the longest prefix wins
MOVED: dict[str, str] = {
    **{
        old: ".".join(filter(None, (DISTRIBUTIONS[distribution].package, module)))
        for old, (distribution, module) in MOVED_OUT.items()
    },
    # renamed inside the core, so that no two modules' names say the same thing
    "rewardkit.binding": "rewardkit.scoring.bound_provider",
    "rewardkit.serving": "rewardkit.checkpoint_serving",
    "rewardkit.groups": "rewardkit.scoring.batch_input",
    "rewardkit.batch_report": "rewardkit.scoring.metrics",
    **{
        f"rewardkit.{name}": f"rewardkit.{group}.{name}"
        for group, names in REGROUPED.items()
        for name in names
    },
    "rewardkit.config_keys": "rewardkit.config.keys",
}


def moved_attribute(module: str, name: str) -> Any:
    """``module.name`` from where it moved (``MOVED_ATTRIBUTES``), with the ``DeprecationWarning`` naming its
    new path; the one-line install error when its distribution is missing; ``AttributeError`` when
    ``module`` never had ``name``. For a core module's ``__getattr__``."""
    old = f"{module}.{name}"
    if old not in MOVED_ATTRIBUTES:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    distribution, where = MOVED_ATTRIBUTES[old]
    inner, _, attribute = where.partition(":")
    target_module = ".".join(filter(None, (DISTRIBUTIONS[distribution].package, inner)))
    value = import_optional(target_module, attribute, old)
    warnings.warn(
        f"{old} moved to {target_module}.{attribute}; the old path is removed in rewardkit {REMOVED_IN}",
        DeprecationWarning,
        stacklevel=3,  # the line that reached for the old name, past the module's __getattr__
    )
    return value


def new_path(old: str) -> str | None:
    """Where ``old`` lives now, or ``None`` when it did not move."""
    if not old.startswith("rewardkit."):
        return None
    for prefix in sorted(MOVED, key=len, reverse=True):
        if old == prefix or old.startswith(prefix + "."):
            return MOVED[prefix] + old[len(prefix) :]
    return None


class _Alias(importlib.abc.Loader):
    """Hands out the already-imported new module under the old name."""

    def __init__(self, module: ModuleType) -> None:
        self.module = module
        self.original_spec = module.__spec__

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return self.module

    def exec_module(self, module: ModuleType) -> None:
        # The import system set the old name's spec on the shared module: give it back its own.
        module.__spec__ = self.original_spec


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        target_name = new_path(fullname)
        if target_name is None:
            return None
        top = target_name.split(".")[0]
        try:
            module = importlib.import_module(target_name)
        except ModuleNotFoundError as error:
            if error.name is not None and error.name.split(".")[0] == top and top in MODULES:
                distribution, _ = MODULES[top]
                raise ModuleNotFoundError(
                    f"{fullname} moved to {target_name} in the distribution {distribution}, which is not "
                    f"installed: {install_line(distribution)}",
                    name=fullname,
                ) from error
            raise
        warnings.warn(
            f"{fullname} moved to {target_name}; the old path is removed in rewardkit {REMOVED_IN}",
            DeprecationWarning,
            stacklevel=2,
        )
        is_package = hasattr(module, "__path__")
        return importlib.machinery.ModuleSpec(fullname, _Alias(module), is_package=is_package)


_FINDER = _MovedFinder()


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once; ``rewardkit/__init__`` calls it). First, as the
    old package's alias carries the new package's ``__path__``: the path finder would otherwise load
    ``rewardkit.media.spool`` from that folder as a second copy of the module."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
