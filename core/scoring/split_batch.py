"""Finishing a batch scored in parts, so that it reports what the whole batch scored in one call would.

The parts come from split service requests, the score job's journaled chunks or a distributed
trainer's ranks; a part may hold a piece of a group, under the group's id. Metrics are merged;
advantages (and ``*/advantage/abs_mean``) are recomputed over whole groups, a ``batch`` scale over
every total. What a part decided about its own candidates (totals, breakdowns, diagnostics) stands.
The Ray backend needs no finisher: its actors stage whole groups.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from rewardkit.contracts.errors import RewardkitError
from rewardkit.scoring.advantages import EPSILON, Scaling, StdKind, group_advantages, mean_std
from rewardkit.scoring.metrics import ADVANTAGE_MEAN_SUFFIX, MetricsMerge, advantage_abs_mean
from rewardkit.scoring.scored import ScoredBatch, ScoredCandidate, ScoredGroup

if TYPE_CHECKING:
    from rewardkit.config import RLConfig

__all__ = ["SplitBatchFinisher", "finish_split_batch"]

_new_tuple = tuple.__new__


class SplitBatchFinisher:
    """The finisher of one batch scored in parts: ``finish(parts)``, or for a caller that streams
    them (the score job) ``add_report`` per part, ``scale_by_batch`` first under ``batch`` scaling,
    ``advantages`` per run of whole groups (or ``add_advantages``, given), then ``report``."""

    def __init__(self, scaling: Scaling = "group", *, std: StdKind = "sample", eps: float = EPSILON) -> None:
        self.scaling: Scaling = scaling
        self.std: StdKind = std
        self.eps = eps
        self._merged = MetricsMerge()  # merged as each part comes, so report() costs no pass over parts
        self._batch_std: float | None = None
        self._advantages = array("d")  # 8 bytes each: the score job's runs are long

    @classmethod
    def for_config(cls, rl: RLConfig) -> SplitBatchFinisher:
        eps = rl.advantage_eps if rl.advantage_eps is not None else EPSILON
        return cls(rl.advantage_scaling, std=rl.advantage_std, eps=eps)

    def add_report(
        self,
        metrics: Mapping[str, float],
        weights: Mapping[str, float],
        *,
        default_weight: float | None = None,
    ) -> None:
        """One part's report; ``default_weight`` weighs the means it gives no weight for (without it
        such a mean is an error: nothing says how much it counts)."""
        self._merged.add(metrics, weights, default_weight)

    def scale_by_batch(self, totals: Iterable[float | None]) -> None:
        """Set the ``batch`` scale from every total of the batch (nulls left out)."""
        present = array("d", (total for total in totals if total is not None))
        self._batch_std = mean_std(present, self.std)[1]

    def advantages(self, totals_by_group: Sequence[Sequence[float | None]]) -> list[list[float]]:
        """The advantages of whole groups, kept for the batch's ``abs_mean``; under ``batch`` scaling
        without ``scale_by_batch`` the totals given must be the whole batch."""
        advantages = group_advantages(
            totals_by_group, self.scaling, std=self.std, eps=self.eps, batch_std=self._batch_std
        )
        for group in advantages:
            self._advantages.extend(group)
        return advantages

    def add_advantages(self, advantages: Iterable[float]) -> None:
        """Advantages given out elsewhere (a stream's groups, each scored alone under ``group`` or
        ``none`` scaling), kept for the batch's ``abs_mean``."""
        self._advantages.extend(advantages)

    def report(self) -> tuple[dict[str, float], dict[str, float]]:
        """The parts' reports merged, each ``*/advantage/abs_mean`` from the advantages given out."""
        metrics, weights = self._merged.result()
        if self._advantages:
            value, count = advantage_abs_mean(self._advantages), float(len(self._advantages))
            for name in metrics:
                if name.endswith(ADVANTAGE_MEAN_SUFFIX):
                    metrics[name], weights[name] = value, count
        return metrics, weights

    def finish(
        self,
        parts: Sequence[ScoredBatch],
        *,
        group_order: Sequence[str] | None = None,
        default_weights: Sequence[float | None] = (),
    ) -> ScoredBatch:
        """The whole batch from its parts: groups (pieces joined in part order) in ``group_order``
        (default: as they first appear), advantages over whole groups, the merged report;
        ``default_weights`` gives, per part, the weight of a mean it has no weight for."""
        if self._merged.parts or self._advantages:
            raise RewardkitError("this SplitBatchFinisher has finished a batch already; use one per batch")
        pieces: dict[str, list[ScoredCandidate]] = {}
        for index, part in enumerate(parts):
            for group in part.groups:
                pieces.setdefault(group.group_id, []).extend(group.candidates)
            weight = default_weights[index] if index < len(default_weights) else None
            self.add_report(part.metrics, part.metric_weights, default_weight=weight)
        order = list(pieces) if group_order is None else list(group_order)
        missing = [group_id for group_id in order if group_id not in pieces]
        extra = sorted(pieces.keys() - set(order))
        problems = [f"groups {missing[:8]} are in no part"] if missing else []
        problems += [f"groups {extra[:8]} of the parts are not in the batch"] if extra else []
        problems += ["the batch names a group twice"] if len(set(order)) != len(order) else []
        if problems:
            raise RewardkitError("the parts do not make up the batch: " + "; ".join(problems))
        groups = [pieces[group_id] for group_id in order]
        advantages = self.advantages([[candidate.final for candidate in group] for group in groups])
        finished = []
        for group_id, candidates, group_advantages_ in zip(order, groups, advantages):
            rebuilt = tuple(
                _new_tuple(ScoredCandidate, (*candidate[:4], advantage, candidate.diagnostics))
                for candidate, advantage in zip(candidates, group_advantages_)
            )  # every field as the part gave it but the advantage
            finished.append(_new_tuple(ScoredGroup, (group_id, rebuilt)))
        metrics, weights = self.report()
        providers = next((part.providers for part in parts if part.providers), ())
        return ScoredBatch(tuple(finished), metrics, providers, weights)


def finish_split_batch(
    parts: Sequence[ScoredBatch],
    rl: RLConfig,
    *,
    group_order: Sequence[str] | None = None,
    default_weights: Sequence[float | None] = (),
) -> ScoredBatch:
    """``SplitBatchFinisher.for_config(rl).finish(parts, ...)``: the whole batch, as one call scores it."""
    return SplitBatchFinisher.for_config(rl).finish(
        parts, group_order=group_order, default_weights=default_weights
    )
