"""Loading plugins: entry points of group ``rewardkit`` one by one, then the built-ins.

A plugin that fails to import, or whose ``register_*`` hook raises or registers something invalid,
is recorded with its distribution, entry point and exception, and the others still load; under
``REWARDKIT_STRICT_PLUGINS=1`` it is fatal (``PluginLoadError``). The other environment switches
(``REWARDKIT_LOAD_PLUGINS``, ``REWARDKIT_DISABLE_PLUGINS``, ``REWARDKIT_TRACE_PLUGINS``) are in
docs/plugins.md.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from types import ModuleType
from typing import Any

import importlib_metadata
import pluggy

from rewardkit.contracts.errors import NameConflictError, PluginLoadError
from rewardkit.seam import hookspecs

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "rewardkit"
DEFAULT_PLUGINS: tuple[str, ...] = (
    "rewardkit.builtin.rules",
    "rewardkit.builtin.answer_rules",
    "rewardkit.checkpoint_serving.endpoint",
)
CORE_DISTRIBUTION = "rewardkit-core"


@dataclass(frozen=True)
class PluginInfo:
    """Where a loaded plugin came from."""

    name: str
    distribution: str
    version: str
    builtin: bool


@dataclass(frozen=True)
class PluginFailure:
    """A plugin that could not be loaded, and why."""

    name: str
    distribution: str
    version: str
    error: str


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _env_list(name: str) -> set[str] | None:
    raw = os.environ.get(name)
    return None if raw is None else {item.strip() for item in raw.split(",") if item.strip()}


def strict_plugins() -> bool:
    return _env_flag("REWARDKIT_STRICT_PLUGINS")


def _core_version() -> str:
    try:
        return importlib_metadata.version(CORE_DISTRIBUTION)
    except importlib_metadata.PackageNotFoundError:
        return "0+unknown"


class PluginManager:
    """A typed wrapper over pluggy's manager: callers never touch ``pm.hook`` directly."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        self.infos: dict[int, PluginInfo] = {}
        self.failures: list[PluginFailure] = []
        # Plugins that imported but whose register_* hook raised: plugin name -> what failed.
        self.hook_failures: dict[str, list[str]] = {}
        # Registrations refused because they reuse a built-in's name: plugin name -> why.
        self.refusals: dict[str, list[str]] = {}
        self._entry_point_owners: dict[str, str] = {}
        self._loaded = False
        self.tracing = False
        self._lock = threading.Lock()
        # Registries built from this manager's plugins, kept by the catalog module.
        self.cache: dict[str, object] = {}

    def load(self) -> PluginManager:
        """Load entry-point plugins, then built-ins; idempotent and thread-safe."""
        with self._lock:
            if self._loaded:
                return self
            self._load_entry_points()
            version = _core_version()
            for name in DEFAULT_PLUGINS:
                self.add(importlib.import_module(name), name, CORE_DISTRIBUTION, version, builtin=True)
            self.pm.check_pending()
            self.tracing = _env_flag("REWARDKIT_TRACE_PLUGINS")
            self._loaded = True
            return self

    def add(self, plugin: object, name: str, distribution: str, version: str, builtin: bool = False) -> None:
        """Register a plugin object (a module or an instance with ``@hookimpl`` methods)."""
        self.pm.register(plugin, name=name)
        self.infos[id(plugin)] = PluginInfo(name, distribution, version, builtin)

    def _load_entry_points(self) -> None:
        allow = _env_list("REWARDKIT_LOAD_PLUGINS")
        block = _env_list("REWARDKIT_DISABLE_PLUGINS") or set()
        strict = strict_plugins()
        found = importlib_metadata.entry_points(group=ENTRY_POINT_GROUP)
        for entry_point in sorted(found, key=lambda ep: ep.name):
            dist = entry_point.dist
            dist_name = dist.name if dist is not None else "?"
            dist_version = dist.version if dist is not None else "?"
            wanted = {entry_point.name, dist_name}
            if (allow is not None and not wanted & allow) or wanted & block:
                continue
            owner = self._entry_point_owners.get(entry_point.name)
            if owner == dist_name:
                continue  # the same distribution seen twice on sys.path
            try:
                if owner is not None:
                    raise PluginLoadError(
                        f"entry point name {entry_point.name!r} is already taken by distribution {owner}"
                    )
                plugin = entry_point.load()
                self.add(plugin, entry_point.name, dist_name, dist_version)
                self._entry_point_owners[entry_point.name] = dist_name
                self._check_hooks(plugin)
            except Exception as error:
                said = f"{type(error).__name__}: {error}"
                failure = PluginFailure(entry_point.name, dist_name, dist_version, said)
                where = f"rewardkit plugin {entry_point.name!r} from distribution {dist_name} {dist_version}"
                message = f"{where} failed to load: {said}"
                if strict:
                    raise PluginLoadError(message) from error
                log.warning("%s (set REWARDKIT_STRICT_PLUGINS=1 to make this fatal)", message)
                self.failures.append(failure)

    def _check_hooks(self, plugin: object) -> None:
        """Refuse (unregistering it) a plugin implementing a hook rewardkit does not define, or one
        wrapping a hook: each plugin's hook is called alone, so a wrapper would wrap only itself."""
        callers = self.pm.get_hookcallers(plugin) or []
        unknown = sorted(caller.name for caller in callers if caller.spec is None)
        wrapping = sorted(
            caller.name
            for caller in callers
            for impl in caller.get_hookimpls()
            if impl.plugin is plugin and (impl.wrapper or impl.hookwrapper)
        )
        if unknown or wrapping:
            self.pm.unregister(plugin)
        if unknown:
            hooks = ", ".join(hook_names())
            raise PluginLoadError(
                f"implements hooks rewardkit does not define: {unknown} (misspelt? the hooks are {hooks})"
            )
        if wrapping:
            raise PluginLoadError(
                f"implements {wrapping} as a wrapper; rewardkit calls each plugin's register_* hook on "
                "its own, so there is nothing to wrap: drop wrapper=True / hookwrapper=True"
            )

    def info(self, plugin: object) -> PluginInfo:
        return self.infos[id(plugin)]

    def impls(self, hook_name: str) -> list[tuple[PluginInfo, pluggy.HookImpl]]:
        """Each implementation of a hook with its owner, in the order rewardkit calls them
        (``call_order``): never dependent on install order, and no installed plugin before a built-in."""
        caller: pluggy.HookCaller = getattr(self.pm.hook, hook_name)
        pairs = [(self.info(impl.plugin), impl) for impl in caller.get_hookimpls()]
        return sorted(pairs, key=lambda pair: call_order(*pair))

    def call_each(
        self,
        hook_name: str,
        make_register: Callable[[PluginInfo], object],
        on_failure: Callable[[PluginInfo], object] | None = None,
        arguments: Mapping[str, object] | None = None,
        handed_as: str = "register",
    ) -> None:
        """Call every implementation of a ``register_*`` hook alone, with a ``register`` bound to its owner,
        so a registry can name the plugin behind every entry (and both owners of a duplicate); ``arguments``
        are the spec's arguments beyond ``register`` (pluggy passes each implementation those it names, so a
        spec may grow). A hook that raises fails its plugin alone: ``on_failure(owner)`` withdraws what it
        registered; the failure is logged and listed by ``describe``. A ``NameConflictError`` is fatal.
        ``handed_as``: the spec's name for what ``make_register`` makes (``cli`` in ``register_commands``)."""
        plugins = self.pm.get_plugins()
        for owner, impl in self.impls(hook_name):
            if self.tracing:
                sys.stderr.write(f"rewardkit-trace: {hook_name} -> {owner.name} ({owner.distribution})\n")
            alone = self.pm.subset_hook_caller(hook_name, plugins - {impl.plugin})
            try:
                alone(**{handed_as: make_register(owner)}, **(arguments or {}))
            except NameConflictError:
                raise
            except Exception as error:
                if on_failure is not None:
                    on_failure(owner)
                self._hook_failed(owner, hook_name, error)

    def override_refuser(self, owner: PluginInfo) -> Callable[[str], None] | None:
        """What a registry does when ``owner`` registers a built-in's name: outside strict mode, skip
        that one registration with a warning and list it (``describe``), so one wrong plugin cannot
        break every command, ``rewardkit plugins`` included; ``None`` (fatal) under strict mode."""
        if strict_plugins():
            return None

        def refuse(message: str) -> None:
            log.warning(
                "%s; the built-in is kept (set REWARDKIT_STRICT_PLUGINS=1 to make this fatal)", message
            )
            with self._lock:
                self.refusals.setdefault(owner.name, []).append(message)

        return refuse

    def _hook_failed(self, owner: PluginInfo, hook_name: str, error: Exception) -> None:
        kind = "built-in plugin" if owner.builtin else "rewardkit plugin"
        failure = f"{hook_name} raised {type(error).__name__}: {error}"
        where = f"{kind} {owner.name!r} from distribution {owner.distribution} {owner.version}"
        message = f"{where} failed: {failure}; what it registered there is ignored"
        if strict_plugins():
            raise PluginLoadError(message) from error
        log.warning("%s (set REWARDKIT_STRICT_PLUGINS=1 to make this fatal)", message)
        with self._lock:
            self.hook_failures.setdefault(owner.name, []).append(failure)

    def describe(self) -> list[dict[str, Any]]:
        """What ``rewardkit plugins`` prints: every loaded plugin with its hooks, and failures; a plugin
        with a registration refused for taking a built-in's name has status ``refused`` and says why under
        ``refused`` (its other registrations stand)."""
        rows: list[dict[str, Any]] = []
        for name, plugin in sorted(self.pm.list_name_plugin(), key=lambda pair: pair[0]):
            info = self.info(plugin)
            hooks = sorted(caller.name for caller in self.pm.get_hookcallers(plugin) or [])
            row: dict[str, Any] = {**asdict(info), "hooks": hooks, "status": "loaded"}
            refused = self.refusals.get(name)
            if refused:
                row.update(status="refused", refused=list(refused))
            failed = self.hook_failures.get(name)
            if failed:
                row.update(status="failed", error="; ".join(failed))
            rows.append(row)
        for failure in self.failures:
            info = PluginInfo(failure.name, failure.distribution, failure.version, builtin=False)
            rows.append({**asdict(info), "hooks": [], "status": "failed", "error": failure.error})
        return rows


def call_order(owner: PluginInfo, impl: pluggy.HookImpl) -> tuple[bool, int, str]:
    """Where an implementation comes in a hook call: built-ins, then installed plugins; within each,
    ``tryfirst``, unmarked, ``trylast``; then by plugin name."""
    rank = 0 if impl.tryfirst else 2 if impl.trylast else 1
    return (not owner.builtin, rank, owner.name)


def hook_names() -> list[str]:
    marker = f"{hookspecs.PROJECT_NAME}_spec"
    return sorted(name for name, value in vars(hookspecs).items() if hasattr(value, marker))


_manager: PluginManager | None = None
_manager_lock = threading.Lock()


def load_plugins() -> PluginManager:
    """The process-wide plugin manager, loaded on first use."""
    global _manager
    with _manager_lock:
        if _manager is None:
            _manager = PluginManager()
        manager = _manager
    return manager.load()


def reset_plugins() -> None:
    """Forget loaded plugins (tests, or after installing a distribution in a running process)."""
    global _manager
    with _manager_lock:
        _manager = None


def import_module_attribute(path: str) -> object:
    """Import ``package.module:attribute`` (the attribute may be dotted)."""
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"{path!r} is not a 'package.module:attribute' path")
    target: ModuleType | object = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    return target
