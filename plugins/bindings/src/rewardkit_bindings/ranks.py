"""The ranks of the running trainer, read from ``torch.distributed`` (and accelerate's gather when it is
installed, as TRL pairs its own gathers with it); ``rewardkit.plugin.Ranks`` says what a binding needs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rewardkit.plugin import CollectiveRanks, Ranks


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
