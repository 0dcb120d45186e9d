"""Registry entries for the extension points other than reward providers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rewardkit.contracts import check_name
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
