"""Decoded media scored on every rank of a distributed trainer: one collective, one outcome.

The decoded-media adapters score rank-locally: each training rank loads its own reward with its
own decoder (``rewardkit.load(config, runtime={"decoder": decoder})``) and scores the rollouts it
generated. A group's trajectories may sit on several ranks (in the WFM topology every rank holds
one trajectory of each group), each rank passing its piece under the group's own id.
``score_on_ranks(reward, groups)`` is the step of the trainer's rank loop that turns those local
scores into the batch's:

1. this rank scores its groups with ``reward``;
2. one ``all_gather_object`` carries every rank's outcome: its ``ScoredBatch``, or its failure.
   Every rank reaches it whatever happened in 1, so a failing rank never leaves the others
   waiting in a collective; when any rank failed, every rank raises the same
   ``RankScoringError`` (the first failing rank, its error's type and message) and returns
   nothing;
3. every rank checks that all ranks scored with the same providers (their identities: params,
   decoder attestation and deployed scorer revision), then finishes the gathered parts with the
   core's split-batch finisher (``rewardkit.scoring.split_batch``): the pieces of a group are joined in
   rank order, advantages are computed over whole groups, the providers' report is merged
   exactly, and each ``*/advantage/abs_mean`` is taken over every advantage of the batch. The
   parts are the same on every rank, so the result is too: the same metrics everywhere, equal to
   the report of the whole batch scored in one process.

The ranks are ``torch.distributed``'s (the default group, or ``process_group``), imported only
when this runs; without an initialised process group the batch is this process's alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rewardkit.plugin import (
    CollectiveRanks,
    Ranks,
    RewardkitError,
    ScoredBatch,
    ScoredGroup,
    as_batch,
    finish_split_batch,
)
from rewardkit_media.record import run_record, scorer_revisions

if TYPE_CHECKING:
    from rewardkit.plugin import GroupLike, Reward

__all__ = ["RankScores", "RankScoringError", "score_on_ranks", "torch_ranks"]


class RankScoringError(RewardkitError):
    """Scoring failed on at least one rank; every rank raises this same error (``rank``: the first)."""

    def __init__(self, message: str, *, rank: int, kind: str) -> None:
        super().__init__(message)
        self.rank = rank
        self.kind = kind


@dataclass(frozen=True)
class RankScores:
    """What every rank gets back: its own groups, and the whole batch (the same on every rank)."""

    rank: int
    world: int
    # This rank's groups as it passed them, each candidate with its whole group's advantage.
    groups: tuple[ScoredGroup, ...]
    # Every rank's groups joined (in rank order), the merged report, the providers' records.
    batch: ScoredBatch
    # Provider name -> the deployed scorer revision its params set (decoded-media providers).
    scorer_revisions: Mapping[str, str] = field(default_factory=dict)
    # reward.providers as JSON, each decoded-media provider's with its ``scorer_revision``.
    run_record: tuple[Mapping[str, Any], ...] = ()

    @property
    def metrics(self) -> dict[str, float]:
        """The global telemetry: the whole batch's report, advantages included, equal on every rank."""
        return self.batch.metrics


def torch_ranks(process_group: Any = None) -> Ranks | None:
    """The ranks of ``process_group`` (default: torch's default group), or None when not distributed."""
    try:
        import torch.distributed as dist
    except ImportError:
        dist = None
    if dist is None or not (dist.is_available() and dist.is_initialized()):
        if process_group is not None:
            raise RewardkitError("a process group was given, but torch.distributed is not initialised")
        return None
    world = dist.get_world_size(process_group)

    def gather_list(items: list[Any]) -> list[Any]:
        out: list[Any] = [None] * world
        dist.all_gather_object(out, items, group=process_group)
        return [item for part in out for item in part]

    return CollectiveRanks(dist.get_rank(process_group), world, gather_list)


def score_on_ranks(
    reward: Reward,
    groups: Iterable[GroupLike],
    *,
    process_group: Any = None,
    ranks: Ranks | None = None,
    group_size: int | None = None,
) -> RankScores:
    """Score this rank's groups, converge failures across the ranks, and finish the whole batch.

    A collective: every rank of the group calls it once per batch, in the same order as its other
    collectives. ``ranks`` replaces ``torch.distributed`` (any ``rewardkit.bindings.ranks.Ranks``);
    ``group_size`` checks every whole group after the join (a rank's reward sees pieces only, so
    its own ``rl.group_size`` is that of a piece, or unset).
    """
    if ranks is None:
        ranks = torch_ranks(process_group)
    rank, world = (ranks.rank, ranks.world) if ranks is not None else (0, 1)
    local: Exception | None = None
    sent: tuple[str, Any]
    try:
        batch = as_batch(groups)
        sent = ("ok", reward.score(batch) if batch else ScoredBatch((), {}, reward.providers))
    except Exception as error:
        local, sent = error, ("error", (rank, type(error).__name__, str(error)))
    gathered: list[tuple[str, Any]] = ranks.gather(sent) if ranks is not None else [sent]
    _raise_failures(gathered, world, local)
    parts: list[ScoredBatch] = [part for _, part in gathered]
    _check_same_providers(parts)
    whole = finish_split_batch(parts, reward.config.rl)
    if group_size is not None:
        _check_group_size(whole, group_size, world)
    return RankScores(
        rank=rank,
        world=world,
        groups=_groups_of(rank, parts, whole),
        batch=whole,
        scorer_revisions=scorer_revisions(reward),
        run_record=tuple(run_record(reward)),
    )


def _raise_failures(gathered: Sequence[tuple[str, Any]], world: int, local: Exception | None) -> None:
    failures = [payload for status, payload in gathered if status == "error"]
    if not failures:
        return
    rank, kind, message = failures[0]
    others = f"; {len(failures) - 1} other rank(s) failed as well" if len(failures) > 1 else ""
    raise RankScoringError(
        f"rank {rank} of {world} failed while scoring its groups: {kind}: {message}{others}. "
        "Every rank stops with this error",
        rank=rank,
        kind=kind,
    ) from local


def _check_same_providers(parts: Sequence[ScoredBatch]) -> None:
    """The parts of one batch must be scored by the same providers (decoder and scorer revisions
    are in the identity): parts scored apart would not add up to one batch."""
    first = parts[0].providers
    for rank, part in enumerate(parts):
        if part.providers != first:
            ours = [f"{record.provider} {record.identity[:16]}" for record in first]
            theirs = [f"{record.provider} {record.identity[:16]}" for record in part.providers]
            raise RewardkitError(
                f"the ranks scored with different providers: rank 0 with {ours}, rank {rank} with "
                f"{theirs}; every rank must load the same reward config (and an equally attested decoder)"
            )


def _check_group_size(whole: ScoredBatch, group_size: int, world: int) -> None:
    wrong = [(group.group_id, len(group.candidates)) for group in whole.groups]
    wrong = [(group_id, size) for group_id, size in wrong if size != group_size]
    if wrong:
        raise RewardkitError(
            f"across the {world} rank(s), groups (id, candidates) {wrong[:8]} do not hold "
            f"group_size={group_size} candidates"
        )


def _groups_of(rank: int, parts: Sequence[ScoredBatch], whole: ScoredBatch) -> tuple[ScoredGroup, ...]:
    """This rank's pieces, cut out of the whole groups (the finisher joins pieces in part order)."""
    by_id = {group.group_id: group for group in whole.groups}
    taken: dict[str, int] = {}
    mine = []
    for index, part in enumerate(parts):
        for piece in part.groups:
            start = taken.get(piece.group_id, 0)
            stop = start + len(piece.candidates)
            taken[piece.group_id] = stop
            if index == rank:
                mine.append(ScoredGroup(piece.group_id, by_id[piece.group_id].candidates[start:stop]))
    return tuple(mine)
