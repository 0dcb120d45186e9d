"""The processes of a distributed trainer, as a binding sees them: this rank, the world, one collective.

Every rank must call ``gather`` the same number of times in the same order, or the ranks deadlock
(or, in TRL, pair it with the trainer's own gather), so bindings call it always and carry errors as data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


class Ranks(Protocol):
    """This process's place among the trainer's processes, and the one collective bindings use."""

    @property
    def rank(self) -> int:
        """This process's rank, from 0."""

    @property
    def world(self) -> int:
        """How many processes the trainer runs."""

    def gather(self, item: Any) -> list[Any]:
        """Every rank's ``item``, in rank order (a collective: every rank calls it)."""


@dataclass(frozen=True)
class CollectiveRanks:
    """``Ranks`` over a ``gather_object``-style function (a list in, every rank's lists joined out)."""

    rank: int
    world: int
    gather_list: Callable[[list[Any]], list[Any]]

    def gather(self, item: Any) -> list[Any]:
        gathered = list(self.gather_list([item]))
        if len(gathered) != self.world:
            raise RuntimeError(f"gather returned {len(gathered)} items for {self.world} ranks")
        return gathered
