"""Name-unique registries that remember which plugin registered each entry."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from rewardkit.contracts.errors import NameConflictError, RegistrationError, RewardkitError, UnknownNameError
from rewardkit.seam.plugins import PluginInfo

T = TypeVar("T")
# The version of the owner standing for a run-bound catalog (``PluginInfo(ref, "catalog <ref>", "-")``).
CATALOG_VERSION = "-"


def owner_label(owner: PluginInfo) -> str:
    kind = "built-in plugin" if owner.builtin else "plugin"
    return f"{kind} {owner.name!r} ({owner.distribution} {owner.version})"


class UnavailableNameError(UnknownNameError):
    """A name is not registered and some plugin failed to load or register: the failed one may provide
    it, so the message names every failed plugin rather than guess a near name among those loaded."""

    def __init__(self, kind: str, name: str, known: Iterable[str], failed: Sequence[str]) -> None:
        super().__init__(kind, name, known)
        self.failed = tuple(failed)
        shown = ", ".join(self.known) if self.known else "(none)"
        RewardkitError.__init__(
            self,
            f"{kind} {name!r} is not available: {'; '.join(self.failed)}. A plugin that failed may be "
            f"the one that provides it: fix it (`rewardkit plugins` shows the failure) or install the "
            f"plugin that provides {name!r} (loaded {kind}s: {shown})",
        )


@dataclass(frozen=True)
class Registered(Generic[T]):
    name: str
    value: T
    owner: PluginInfo


class Registry(Generic[T]):
    """Entries of one extension point. A name is registered once; built-ins cannot be overridden."""

    def __init__(self, kind: str, value_type: type | tuple[type, ...]) -> None:
        self.kind = kind
        self.value_type = value_type
        self._entries: dict[str, Registered[T]] = {}
        # Plugins that failed to import or register here, one line each: named when a name is not found.
        self.failures: tuple[str, ...] = ()

    def add(
        self, name: str, value: T, owner: PluginInfo, on_override: Callable[[str], None] | None = None
    ) -> None:
        """Register ``value`` as ``name``. A non-built-in entry named like a built-in is refused: with
        ``on_override`` (installed plugins outside strict mode) it is skipped and ``on_override(message)``
        told, so the built-in keeps working and so does every command; without, it is fatal."""
        if not isinstance(value, self.value_type):
            raise RegistrationError(
                f"{owner_label(owner)} registered {value!r} as a {self.kind}; "
                f"expected {getattr(self.value_type, '__name__', self.value_type)}"
            )
        existing = self._entries.get(name)
        if existing is not None:
            if existing.owner.builtin and not owner.builtin:
                message = (
                    f"{owner_label(owner)} tries to override the built-in {self.kind} {name!r} "
                    f"of {owner_label(existing.owner)}; custom entries may add names but never "
                    "override a built-in: choose another name"
                )
                if owner.version != CATALOG_VERSION:  # an installed plugin, which a user can switch off
                    message += (
                        f" in entry point {owner.name!r} of distribution {owner.distribution}, or disable "
                        f"it with REWARDKIT_DISABLE_PLUGINS={owner.name}"
                    )
                if on_override is None:
                    raise NameConflictError(message)
                on_override(message)
                return
            raise NameConflictError(
                f"{self.kind} {name!r} is registered twice: by {owner_label(existing.owner)} and by "
                f"{owner_label(owner)}; uninstall or disable one of them "
                "(REWARDKIT_DISABLE_PLUGINS)"
            )
        self._entries[name] = Registered(name, value, owner)

    def registrar(
        self,
        owner: PluginInfo,
        name_of: Callable[[T], str],
        on_override: Callable[[str], None] | None = None,
    ) -> Callable[[T], None]:
        """The ``register`` callback handed to one plugin's hook implementation (``on_override``: see
        ``add``)."""
        return lambda value: self.add(
            name_of(value) if isinstance(value, self.value_type) else "?", value, owner, on_override
        )

    def drop_owner(self, owner: PluginInfo) -> list[str]:
        """Forget every entry ``owner`` registered (its hook failed part-way); their names."""
        dropped = [name for name, entry in self._entries.items() if entry.owner == owner]
        for name in dropped:
            del self._entries[name]
        return dropped

    def get(self, name: str) -> Registered[T]:
        try:
            return self._entries[name]
        except KeyError:
            if self.failures:
                raise UnavailableNameError(self.kind, name, self._entries, self.failures) from None
            raise UnknownNameError(self.kind, name, self._entries) from None

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[Registered[T]]:
        return iter(sorted(self._entries.values(), key=lambda entry: entry.name))

    def __len__(self) -> int:
        return len(self._entries)

    def copy(self) -> Registry[T]:
        clone: Registry[T] = Registry(self.kind, self.value_type)
        clone._entries = dict(self._entries)
        clone.failures = self.failures
        return clone
