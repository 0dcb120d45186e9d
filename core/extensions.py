"""Registry entries for the extension points other than reward providers."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from rewardkit.contracts import RewardProviderSpec, check_name
from rewardkit.errors import RegistrationError


@dataclass(frozen=True)
class ServingStrategySpec:
    """A way to serve a checkpoint: ``factory(**params)`` returns a ``ServingStrategy`` (see
    ``rewardkit.checkpoint_serving``). The factory is light: servers start in ``serve``."""

    name: str
    factory: Callable[..., Any]
    description: str = ""

    def __post_init__(self) -> None:
        check_name("serving strategy", self.name)
        if not callable(self.factory):
            raise RegistrationError(f"serving strategy {self.name!r}: factory is not callable")


@dataclass(frozen=True)
class TrainerBindingSpec:
    """An adapter that hands a resolved reward to a trainer. ``target`` is its entry function or a
    ``module:attribute`` path, imported only when used (trainers are heavy, optional dependencies)."""

    name: str
    target: Callable[..., Any] | str
    description: str = ""

    @property
    def target_path(self) -> str:
        """The ``module:attribute`` path of the target (a callable's own module and qualified name)."""
        if isinstance(self.target, str):
            return self.target
        return f"{self.target.__module__}:{self.target.__qualname__}"

    def __post_init__(self) -> None:
        check_name("trainer binding", self.name)
        if not (callable(self.target) or (isinstance(self.target, str) and ":" in self.target)):
            raise RegistrationError(
                f"trainer binding {self.name!r}: target must be callable or 'module:attribute'"
            )


@dataclass(frozen=True)
class CatalogSpec:
    """A named run-bound catalog (``rl.reward.catalog: NAME``): ``factory()`` returns the provider specs
    it adds. The factory is deterministic, light, CPU-only and free of side effects."""

    name: str
    factory: Callable[[], Iterable[RewardProviderSpec]]
    description: str = ""

    def __post_init__(self) -> None:
        check_name("catalog", self.name)
        if not callable(self.factory):
            raise RegistrationError(f"catalog {self.name!r}: factory is not callable")


@dataclass(frozen=True)
class RewardBackendSpec:
    """Where a reward is scored when not in this process. ``rewards.backend: NAME`` selects a backend;
    one registered with ``by_service_url`` is chosen instead by a Reward Service URL (``rl.reward.service``
    or a selection's ``service``) and is no value of ``rewards.backend``. ``target`` is a class or a
    ``module:attribute`` path, imported only when a reward is built there (a backend's libraries are
    heavy): called as ``target(config, selection, group_size=...)``, it returns a ``RewardLike``."""

    name: str
    target: Callable[..., Any] | str
    description: str = ""
    by_service_url: bool = False

    def __post_init__(self) -> None:
        check_name("reward backend", self.name)
        if self.name == LOCAL_BACKEND:
            raise RegistrationError(f"reward backend {LOCAL_BACKEND!r} is the core's in-process scoring")
        if not (callable(self.target) or (isinstance(self.target, str) and ":" in self.target)):
            raise RegistrationError(
                f"reward backend {self.name!r}: target must be callable or 'module:attribute'"
            )


# ``rewards.backend``'s default: scoring in this process, the core's own and never a plugin's.
LOCAL_BACKEND = "local"
# Where a plugin's section may sit: at the top level, or inside one of these sections of the core.
SECTION_PARENTS = ("", "rl", "rewards")


@dataclass(frozen=True)
class ConfigSectionSpec:
    """A configuration section a distribution owns: ``path`` is its dotted key (``checkpoints``,
    ``rl.monitor``, ``rewards.ray``), ``schema`` the pydantic model validating it (unknown keys get the
    core's did-you-mean when the model forbids extras, as ``rewardkit.config.Section`` does).
    ``always``: the section is present with the schema's defaults when not configured (every field needs
    a default); otherwise it is ``None`` until configured. ``path_keys`` are keys inside it holding file
    paths, resolved against a configuration file's folder like ``rl.data.path``."""

    path: str
    schema: type[BaseModel]
    description: str = ""
    always: bool = False
    path_keys: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        parent, _, name = self.path.rpartition(".")
        if parent not in SECTION_PARENTS or not name.isidentifier():
            raise RegistrationError(
                f"config section {self.path!r}: a plugin's section is a key at the top level or directly "
                "under rl or rewards (e.g. 'acme', 'rl.acme', 'rewards.acme')"
            )
        if not (isinstance(self.schema, type) and issubclass(self.schema, BaseModel)):
            raise RegistrationError(f"config section {self.path!r}: schema must be a pydantic model class")
