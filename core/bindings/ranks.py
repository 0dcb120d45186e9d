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


def _torch_gather(world: int) -> Callable[[list[Any]], list[Any]]:
    import torch.distributed as dist

    def gather_list(items: list[Any]) -> list[Any]:
        out: list[Any] = [None] * world
        dist.all_gather_object(out, items)
        return [item for part in out for item in part]

    return gather_list


def current_ranks() -> Ranks | None:
    """The trainer's ranks when this is one of several processes (``torch.distributed`` is up), else None."""
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    if not (dist.is_available() and dist.is_initialized()):
        return None
    world = dist.get_world_size()
    if world < 2:
        return None
    try:
        from accelerate.utils import gather_object
    except ImportError:
        gather_list = _torch_gather(world)
    else:
        gather_list = gather_object
    return CollectiveRanks(dist.get_rank(), world, gather_list)
