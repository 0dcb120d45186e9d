"""The declared seams: what each plugin hook is handed, and what every reward backend offers.

Each ``register_*`` hook receives a ``register`` callback of the registrar type named in its spec
(``ProviderRegistrar`` for ``register_reward_providers``, ...); a plugin may annotate with them.
``RewardLike`` is the surface the backends share (``rewardkit.Reward``, the Reward Service's
``RemoteReward``, rewardkit-ray's ``RayReward``): the score job and the trainer bindings use
nothing else, so a fourth backend needs only to implement it.
"""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, Protocol, overload, runtime_checkable

if TYPE_CHECKING:
    from rewardkit.config import RewardkitConfig, RewardSelection
    from rewardkit.contracts import RewardProviderSpec
    from rewardkit.job.provenance import ProviderRecord
    from rewardkit.scoring.composition import RewardSpec
    from rewardkit.scoring.worker import GroupLike, ScoredBatch
    from rewardkit.seam.attacks import AttackFamily, AttackSpec
    from rewardkit.seam.catalog import Catalog
    from rewardkit.seam.extensions import (
        CatalogSpec,
        ConfigSectionSpec,
        RewardBackendSpec,
        RewardExpansionSpec,
        ServingStrategySpec,
        TrainerBindingSpec,
    )

__all__ = [
    "CatalogRegistrar",
    "CommandRegistrar",
    "CommandRunner",
    "ConfigSectionRegistrar",
    "ProviderRegistrar",
    "RewardAttackRegistrar",
    "RewardBackendRegistrar",
    "RewardExpansionRegistrar",
    "RewardLike",
    "ServingStrategyRegistrar",
    "TrainerBindingRegistrar",
    "protocol_gaps",
]


class ProviderRegistrar(Protocol):
    """``register`` of ``register_reward_providers``: one call per provider."""

    def __call__(self, spec: RewardProviderSpec, /) -> None: ...


class CatalogRegistrar(Protocol):
    """``register`` of ``register_catalogs``: one ``CatalogSpec`` per catalog. The 0.1 form, a name and a
    zero-argument factory of provider specs, is still taken."""

    @overload
    def __call__(self, spec: CatalogSpec, /) -> None: ...

    @overload
    def __call__(self, name: str, factory: Callable[[], Iterable[RewardProviderSpec]], /) -> None: ...


class ServingStrategyRegistrar(Protocol):
    """``register`` of ``register_serving_strategies``: one call per strategy."""

    def __call__(self, spec: ServingStrategySpec, /) -> None: ...


class TrainerBindingRegistrar(Protocol):
    """``register`` of ``register_trainer_bindings``: one call per binding."""

    def __call__(self, spec: TrainerBindingSpec, /) -> None: ...


class RewardAttackRegistrar(Protocol):
    """``register`` of ``register_reward_attacks``: one call per attack family or attack."""

    def __call__(self, item: AttackFamily | AttackSpec, /) -> None: ...


class ConfigSectionRegistrar(Protocol):
    """``register`` of ``register_config_sections``: one call per section the plugin owns."""

    def __call__(self, spec: ConfigSectionSpec, /) -> None: ...


class RewardBackendRegistrar(Protocol):
    """``register`` of ``register_reward_backends``: one call per backend."""

    def __call__(self, spec: RewardBackendSpec, /) -> None: ...


class RewardExpansionRegistrar(Protocol):
    """``register`` of ``register_reward_expansions``: one call per key of a reward selection."""

    def __call__(self, spec: RewardExpansionSpec, /) -> None: ...


# What a verb runs: its parsed arguments in, the exit status out.
CommandRunner = Callable[[argparse.Namespace], int]


class CommandRegistrar(Protocol):
    """``cli`` of ``register_commands``: adds verbs to the ``rewardkit`` command (argparse)."""

    def add(
        self,
        name: str,
        run: CommandRunner | str,
        *,
        about: str,
        description: str | None = None,
        show_defaults: bool = False,
    ) -> argparse.ArgumentParser:
        """Add ``rewardkit NAME`` and return its parser, to which the plugin adds its arguments.
        ``run`` is the function or its ``module:function`` path, imported only when the verb runs (so
        ``rewardkit --help`` imports nothing heavy); ``about`` is its line in ``rewardkit --help``;
        ``show_defaults`` appends each option's default to its help. A name taken by the core or by
        another plugin is refused, naming both owners."""


@runtime_checkable
class RewardLike(Protocol):
    """A resolved, preflighted reward, whichever backend scores it. Read-only members are properties
    here so that a backend may hold them as plain attributes."""

    @property
    def config(self) -> RewardkitConfig: ...

    @property
    def selection(self) -> RewardSelection: ...  # ``rl.reward``, a routed or a validation selection

    @property
    def namespace(self) -> str: ...  # the metric namespace: ``train``, or ``val`` for the held-out reward

    @property
    def spec(self) -> RewardSpec: ...  # the composed spec, with every component's term resolved

    @property
    def spec_identity(self) -> dict[str, Any]: ...  # the JSON a run records of the spec, compared on resume

    @property
    def providers(self) -> tuple[ProviderRecord, ...]: ...  # every selected provider's record

    @property
    def needs(self) -> tuple[str, ...]: ...  # the canonical inputs the selected providers read

    @property
    def catalog(self) -> Catalog | None: ...  # None where it is resolved in another process (a service)

    def score(
        self,
        groups: Iterable[GroupLike],
        *,
        deadline_s: float | None = None,
        timeout_s: float | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> ScoredBatch: ...  # score complete groups: per-candidate ``final``, breakdown, advantage; metrics

    async def ascore(
        self, groups: Iterable[GroupLike], *, deadline_s: float | None = None, timeout_s: float | None = None
    ) -> ScoredBatch: ...  # ``score`` for asyncio callers

    def process(
        self, groups: Iterable[GroupLike], *, deadline_s: float | None = None, timeout_s: float | None = None
    ) -> ScoredBatch: ...  # score, and write ``reward``/``advantage`` into the trajectories (all or nothing)

    def validation(self) -> RewardLike: ...  # the held-out reward (``rl.validation.reward``), built once

    def close(self) -> None: ...  # release what the reward holds; idempotent

    def __enter__(self) -> RewardLike: ...

    def __exit__(self, *exc: object) -> None: ...


def protocol_gaps(candidate: object, protocol: type = RewardLike) -> list[str]:
    """How ``candidate`` (an instance) falls short of ``protocol``: one line per missing member and
    per method not callable as promised (a parameter missing, of another kind or without its default,
    an extra one without a default, sync where async is promised). ``isinstance`` against a runtime
    protocol only checks that the names exist; a backend's tests assert this is empty."""
    gaps: list[str] = []
    for name, promised in _members(protocol).items():
        if not hasattr(candidate, name):
            gaps.append(f"{name}: missing")
            continue
        if not inspect.isfunction(promised):
            continue
        given = getattr(type(candidate), name, None)
        if not inspect.isfunction(given):
            gaps.append(f"{name}: not a method")
            continue
        if inspect.iscoroutinefunction(promised) != inspect.iscoroutinefunction(given):
            gaps.append(f"{name}: {'async' if inspect.iscoroutinefunction(promised) else 'sync'} expected")
        gaps.extend(f"{name}: {gap}" for gap in _signature_gaps(promised, given))
    return gaps


def _members(protocol: type) -> dict[str, Any]:
    """The protocol's own members (and its protocol bases'), by name; dunders only for ``with``."""
    return {
        name: value
        for klass in reversed(protocol.__mro__)
        if klass not in (object, Protocol, Generic)
        for name, value in vars(klass).items()
        if name in ("__enter__", "__exit__") or not name.startswith("_")
    }


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_KEYWORD = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _signature_gaps(promised: Callable[..., Any], given: Callable[..., Any]) -> list[str]:
    expected = list(inspect.signature(promised).parameters.values())[1:]  # past self
    actual = dict(list(inspect.signature(given).parameters.items())[1:])
    kinds = {parameter.kind for parameter in actual.values()}
    takes_args = inspect.Parameter.VAR_POSITIONAL in kinds
    takes_kwargs = inspect.Parameter.VAR_KEYWORD in kinds
    gaps = []
    for parameter in expected:
        match = actual.pop(parameter.name, None)
        if match is None:
            if not (
                (takes_args and parameter.kind in _POSITIONAL)
                or (takes_kwargs and parameter.kind in _KEYWORD)
            ):
                gaps.append(f"no parameter {parameter.name!r}")
        elif match.kind != parameter.kind:
            gaps.append(
                f"parameter {parameter.name!r} is {match.kind.description}, not {parameter.kind.description}"
            )
        elif parameter.default is not inspect.Parameter.empty and match.default is inspect.Parameter.empty:
            gaps.append(f"parameter {parameter.name!r} has no default")
    for extra in actual.values():
        variadic = extra.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        if extra.default is inspect.Parameter.empty and not variadic:
            gaps.append(f"extra parameter {extra.name!r} has no default")
    return gaps
