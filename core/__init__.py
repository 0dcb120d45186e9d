"""rewardkit: the reward layer for RL post-training.
Providers score whole groups of candidate completions behind one contract; plugins contribute
them through entry points of group ``rewardkit``; the catalog resolves them by name with
revision and identity hash."""

from __future__ import annotations

from typing import Any

from rewardkit.config import load_config
from rewardkit.contracts import (
    MetricContribution,
    RewardCandidate,
    RewardCandidateResult,
    RewardContext,
    RewardGroupRequest,
    RewardGroupResult,
    RewardProvider,
    RewardProviderResult,
    RewardProviderSpec,
    is_length_verdict,
)
from rewardkit.contracts.credentials import CredentialRef
from rewardkit.contracts.errors import (
    ConfigError,
    DataError,
    IdentityMismatchError,
    PluginLoadError,
    PreflightError,
    ProviderError,
    RegistrationError,
    RewardContractError,
    RewardkitError,
    UnknownNameError,
)
from rewardkit.scoring.bound_provider import BoundProvider
from rewardkit.scoring.composition import CompositionError, RewardSpec, compose
from rewardkit.scoring.function_providers import provider
from rewardkit.scoring.pointwise import map_candidates
from rewardkit.scoring.reward import Reward, load
from rewardkit.scoring.worker import RewardWorker, ScoredBatch
from rewardkit.seam.catalog import Catalog, ProviderEntry, resolve_catalog
from rewardkit.seam.extensions import (
    CatalogSpec,
    ConfigSectionSpec,
    RewardBackendSpec,
    RewardExpansionSpec,
    ServingStrategySpec,
    TrainerBindingSpec,
)
from rewardkit.seam.hookspecs import hookimpl
from rewardkit.seam.moved import install as _install_moved_paths
from rewardkit.seam.plugins import DEFAULT_PLUGINS, load_plugins, reset_plugins

_install_moved_paths()


def __getattr__(name: str) -> Any:
    # ``rewardkit.audit`` moved to the audit distribution: found through the moved-paths table until 0.3.
    from rewardkit.seam.moved import moved_attribute

    return moved_attribute(__name__, name)


__all__ = [
    "DEFAULT_PLUGINS",
    "BoundProvider",
    "Catalog",
    "CatalogSpec",
    "CompositionError",
    "ConfigError",
    "ConfigSectionSpec",
    "CredentialRef",
    "DataError",
    "IdentityMismatchError",
    "MetricContribution",
    "PluginLoadError",
    "PreflightError",
    "ProviderEntry",
    "ProviderError",
    "RegistrationError",
    "Reward",
    "RewardBackendSpec",
    "RewardCandidate",
    "RewardCandidateResult",
    "RewardContext",
    "RewardContractError",
    "RewardExpansionSpec",
    "RewardGroupRequest",
    "RewardGroupResult",
    "RewardProvider",
    "RewardProviderResult",
    "RewardProviderSpec",
    "RewardSpec",
    "RewardWorker",
    "RewardkitError",
    "ScoredBatch",
    "ServingStrategySpec",
    "TrainerBindingSpec",
    "UnknownNameError",
    "compose",
    "hookimpl",
    "is_length_verdict",
    "load",
    "load_config",
    "load_plugins",
    "map_candidates",
    "provider",
    "reset_plugins",
    "resolve_catalog",
]
