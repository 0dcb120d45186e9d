"""The configuration a trainer binding scores with (``config=`` or ``$REWARDKIT_CONFIG``), and one
``Reward`` per (configuration, selection, group size) and process: building one resolves plugins and
preflights providers. Rewards are built by ``rewardkit.scoring.reward.build_reward``, as ``rewardkit.load``
does.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from rewardkit.plugin import (
    BatchObserver,
    BindingError,
    RewardkitConfig,
    RewardLike,
    RewardSelection,
    build_reward,
    canonical_json,
    load_config,
    observer_for,
)

CONFIG_ENV = "REWARDKIT_CONFIG"

ConfigSource = RewardkitConfig | Mapping[str, Any] | str | os.PathLike[str]

_rewards: dict[tuple[str, str | None, int | None, float | None], RewardLike] = {}
_configs: dict[str, RewardkitConfig] = {}
_observers: dict[str, BatchObserver | None] = {}
_lock = threading.Lock()
_Cached = TypeVar("_Cached")


def plain(value: Any) -> Any:
    """A deep copy made of dicts and lists (OmegaConf ``DictConfig``/``ListConfig`` become plain)."""
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray)):
        return [plain(item) for item in value]
    return value


def _once(store: dict[Any, _Cached], key: Any, build: Callable[[], _Cached]) -> _Cached:
    """``store[key]``, built outside the lock when missing; a copy a racing thread built too is closed."""
    with _lock:
        if key in store:
            return store[key]
    built = build()
    with _lock:
        kept = store.setdefault(key, built)
    if kept is not built and hasattr(built, "close"):
        built.close()
    return kept


def _key_of(source: ConfigSource) -> str:
    if isinstance(source, RewardkitConfig):
        return f"object:{id(source)}"
    if isinstance(source, Mapping):
        try:
            return "mapping:" + canonical_json(plain(source))
        except Exception as error:  # any non-JSON value: say where it came from
            raise BindingError(f"config= mapping is not JSON-compatible: {error}") from error
    return "path:" + str(Path(os.fspath(source)).expanduser().resolve())


def config_source(given: ConfigSource | None, binding: str) -> ConfigSource:
    """The ``config=`` a trainer passed, else ``$REWARDKIT_CONFIG``; a clear error when neither is set."""
    if given is not None:
        if isinstance(given, (str, os.PathLike)) and not str(given).strip():
            raise BindingError(f"{binding}: config= is an empty path")
        return given
    from_env = os.environ.get(CONFIG_ENV, "").strip()
    if not from_env:
        raise BindingError(
            f"{binding}: no rewardkit configuration; pass config= (a YAML/TOML path or a mapping, e.g. "
            f"through the trainer's reward kwargs) or set the environment variable {CONFIG_ENV}"
        )
    return from_env


def resolve_config(source: ConfigSource) -> RewardkitConfig:
    """The validated configuration behind ``source`` (read once per path or mapping)."""
    if isinstance(source, RewardkitConfig):
        return source
    key = _key_of(source)
    return _once(_configs, key, lambda: load_config(plain(source) if isinstance(source, Mapping) else source))


def selection_for(config: RewardkitConfig, data_source: str | None) -> RewardSelection:
    """``rl.reward.by_data_source[data_source]`` when listed (inheriting the catalog), else ``rl.reward``."""
    top = config.rl.reward
    if data_source is None or data_source not in top.by_data_source:
        return top
    chosen = top.by_data_source[data_source]
    if chosen.catalog is None and top.catalog is not None:
        chosen = chosen.model_copy(update={"catalog": top.catalog})
    return chosen


def reward_for(
    source: ConfigSource,
    *,
    data_source: str | None = None,
    group_size: int | None = None,
    advantage_eps: float | None = None,
) -> RewardLike:
    """The (cached) reward for ``source``, the selection ``data_source`` picks, and ``group_size``;
    ``advantage_eps`` is the trainer's default for an unset ``rl.advantage_eps``."""
    config = resolve_config(source)
    if advantage_eps is not None and config.rl.advantage_eps is None:
        rl = config.rl.model_copy(update={"advantage_eps": advantage_eps})
        config = config.model_copy(update={"rl": rl})
    selection = selection_for(config, data_source)
    routed = selection is not config.rl.reward
    cache_key = (_key_of(source), data_source if routed else "", group_size, config.rl.advantage_eps)
    return _once(_rewards, cache_key, lambda: build_reward(config, selection, group_size=group_size))


def monitor_for(source: ConfigSource) -> BatchObserver | None:
    """The ``rl.monitor`` observer for ``source``, one per configuration and process (None when unset);
    closed at exit, which finishes the run's last step (no trainer tells a reward function it ended)."""
    return _once(_observers, _key_of(source), lambda: observer_for(resolve_config(source)))


@atexit.register
def _close_observers() -> None:
    for observer in [observer for observer in list(_observers.values()) if observer is not None]:
        observer.close()


def selections(config: RewardkitConfig) -> list[RewardSelection]:
    """``rl.reward`` and every ``rl.reward.by_data_source`` selection, in configuration order."""
    return [config.rl.reward, *(selection_for(config, name) for name in config.rl.reward.by_data_source)]


def forget_rewards() -> None:
    """Drop cached configurations and rewards (tests, or after a config file changed on disk)."""
    with _lock:
        closables: list[RewardLike | BatchObserver] = list(_rewards.values())
        closables += [observer for observer in _observers.values() if observer is not None]
        _rewards.clear()
        _configs.clear()
        _observers.clear()
    for closable in closables:
        closable.close()
