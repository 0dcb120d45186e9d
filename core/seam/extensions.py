"""Registry entries for the extension points other than reward providers."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from rewardkit.contracts import RewardProviderSpec, check_name
from rewardkit.contracts.errors import RegistrationError


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
    paths, resolved against a configuration file's folder like ``rl.data.path``. ``observer``: what the
    section configures when it is a batch observer of the bindings and the Reward Service (the reward
    monitor's ``rl.monitor``): called as ``observer(config)`` when the section is set, it returns a
    ``rewardkit.scoring.observers.BatchObserver``; a ``module:attribute`` path is imported only then."""

    path: str
    schema: type[BaseModel]
    description: str = ""
    always: bool = False
    path_keys: tuple[str, ...] = ()
    observer: Callable[..., Any] | str | None = None

    def __post_init__(self) -> None:
        parent, _, name = self.path.rpartition(".")
        if parent not in SECTION_PARENTS or not name.isidentifier():
            raise RegistrationError(
                f"config section {self.path!r}: a plugin's section is a key at the top level or directly "
                "under rl or rewards (e.g. 'acme', 'rl.acme', 'rewards.acme')"
            )
        if not (isinstance(self.schema, type) and issubclass(self.schema, BaseModel)):
            raise RegistrationError(f"config section {self.path!r}: schema must be a pydantic model class")
        observer = self.observer
        if not (observer is None or callable(observer) or (isinstance(observer, str) and ":" in observer)):
            raise RegistrationError(
                f"config section {self.path!r}: observer must be callable or 'module:attribute'"
            )


@dataclass(frozen=True)
class RewardExpansionSpec:
    """A key of a reward selection that a distribution owns (``rl.reward.grader``; also in
    ``rl.validation.reward`` and ``by_data_source`` entries): ``expand(value, base_dir)`` returns the
    composed spec the key stands for (the mapping ``rl.reward.spec`` would hold, its components naming
    providers), which replaces the key before the selection is validated; it raises ``ValueError``
    saying what is wrong and where. ``base_dir`` is the configuration file's folder (``None`` for a
    mapping), against which a relative path in ``value`` is read. Expanding is deterministic, light,
    CPU-only and offline, like a provider factory."""

    name: str
    expand: Callable[[Any, Path | None], Mapping[str, Any]]
    description: str = ""

    def __post_init__(self) -> None:
        if not (isinstance(self.name, str) and self.name.isidentifier()):
            raise RegistrationError(f"reward expansion {self.name!r}: the key must be an identifier")
        if not callable(self.expand):
            raise RegistrationError(f"reward expansion {self.name!r}: expand is not callable")


def expand_selection(data: Any, own_keys: Collection[str], base_dir: Path | None) -> Any:
    """``data`` (a reward selection as written) with a registered expansion's key replaced by the
    ``spec`` it expands to; unchanged when it holds none (an unknown key is left for validation to
    name, with the nearest known one). The key stands for a whole spec, so it comes alone."""
    if not isinstance(data, Mapping):
        return data
    foreign = [key for key in data if key not in own_keys]
    if not foreign:
        return data
    from rewardkit.seam.catalog import reward_expansions

    expansions = reward_expansions()
    chosen = [key for key in foreign if isinstance(key, str) and key in expansions]
    if not chosen:
        return data
    rivals = sorted({*chosen[1:], *(key for key in ("provider", "spec", "params", "term") if key in data)})
    if rivals:
        raise ValueError(f"{chosen[0]!r} stands for a whole composed spec; give it without {rivals}")
    try:
        spec = expansions.get(chosen[0]).value.expand(data[chosen[0]], base_dir)
    except (TypeError, KeyError) as error:  # an expansion's bug or a malformed value, said as one
        raise ValueError(f"{chosen[0]}: {type(error).__name__}: {error}") from error
    return {**{key: value for key, value in data.items() if key != chosen[0]}, "spec": dict(spec)}


def is_expansion_key(key: str) -> bool:
    """Whether a plugin registered ``key`` of a reward selection (``rl.reward.grader``)."""
    from rewardkit.seam.catalog import reward_expansions

    return key in reward_expansions()
