"""Finishing a batch scored in parts, so that it reports what the whole batch scored in one call would.

A batch is scored in parts when it is too large for one request (the Reward Service client), when
it is journaled chunk by chunk (``rewardkit score``), or when each process of a distributed
trainer scores its own samples (TRL ranks, a media rank helper). Each part is a ``ScoredBatch``; a
part may hold a piece of a group (a trainer's rank slice), under the group's own id. The finisher
puts the parts back together with three rules, each written once:

* metrics: ``rewardkit.metrics.merge_metrics``: counts add up, and each mean (``infra_error_rate``
  of the reward and of each component included) is weighted by what it averaged in each part,
  the part's ``metric_weights``;
* advantages: ``rewardkit.advantages.group_advantages`` over whole groups: the pieces of a group
  are joined first, and a ``batch`` scale is that of every total of the batch;
* ``*/advantage/abs_mean``: ``rewardkit.metrics.advantage_abs_mean`` over those advantages.

What a part decided about its own candidates (totals, breakdowns, diagnostics) stands as it is.
The Ray backend needs no finisher: its actors stage whole groups and the driver finishes the whole
batch in one ``RewardWorker.finish`` call, as in-process scoring does.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from rewardkit.advantages import EPSILON, Scaling, StdKind, group_advantages, mean_std
from rewardkit.errors import RewardkitError
from rewardkit.metrics import ADVANTAGE_MEAN_SUFFIX, advantage_abs_mean, merge_metrics
from rewardkit.scored import ScoredBatch, ScoredCandidate, ScoredGroup

if TYPE_CHECKING:
    from rewardkit.config import RLConfig

__all__ = ["SplitBatchFinisher", "finish_split_batch"]

_new_tuple = tuple.__new__


class SplitBatchFinisher:
    """The finisher of one batch scored in parts.

    ``finish(parts)`` finishes parts held in memory. A caller that cannot hold the whole batch
    (the score job streams its journal) feeds the same rules piece by piece: ``add_report`` per
    part, ``scale_by_batch`` with every total first under ``batch`` scaling, ``advantages`` per
    run of whole groups, then ``report``.
    """

    def __init__(self, scaling: Scaling = "group", *, std: StdKind = "sample", eps: float = EPSILON) -> None:
        self.scaling: Scaling = scaling
        self.std: StdKind = std
        self.eps = eps
        self._reports: list[tuple[Mapping[str, float], Mapping[str, float]]] = []
        self._default_weights: list[float | None] = []
        self._batch_std: float | None = None
        self._advantages = array("d")  # 8 bytes each: the score job's runs are long

    @classmethod
    def for_config(cls, rl: RLConfig) -> SplitBatchFinisher:
        """The finisher under ``rl.advantage_scaling``, ``rl.advantage_std`` and ``rl.advantage_eps``."""
        eps = rl.advantage_eps if rl.advantage_eps is not None else EPSILON
        return cls(rl.advantage_scaling, std=rl.advantage_std, eps=eps)

    def add_report(
        self,
        metrics: Mapping[str, float],
        weights: Mapping[str, float],
        *,
        default_weight: float | None = None,
    ) -> None:
        """One part's report; ``default_weight`` weighs the means the part gives no weight for
        (a part written before weights were reported: its rollouts). Without it such a mean is
        an error: nothing says how much it counts."""
        self._reports.append((metrics, weights))
        self._default_weights.append(default_weight)

    def scale_by_batch(self, totals: Iterable[float | None]) -> None:
        """Set the ``batch`` scale from every total of the batch, before advantages are asked for
        group by group (nulls are left out)."""
        present = array("d", (total for total in totals if total is not None))
        self._batch_std = mean_std(present, self.std)[1]

    def advantages(self, totals_by_group: Sequence[Sequence[float | None]]) -> list[list[float]]:
        """The advantages of whole groups, kept for the batch's ``abs_mean``.

        Under ``batch`` scaling the scale is the one ``scale_by_batch`` set, else that of the
        totals given here (which must then be the whole batch).
        """
        advantages = group_advantages(
            totals_by_group, self.scaling, std=self.std, eps=self.eps, batch_std=self._batch_std
        )
        for group in advantages:
            self._advantages.extend(group)
        return advantages

    def report(self) -> tuple[dict[str, float], dict[str, float]]:
        """The whole batch's ``(metrics, metric_weights)``: the parts' reports merged, and each
        ``*/advantage/abs_mean`` from the advantages given out (kept as merged when none were)."""
        metrics, weights = merge_metrics(self._reports, self._default_weights)
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
        (default: as they first appear), advantages over whole groups, the merged report.

        ``default_weights`` gives, per part, the weight of a mean it has no weight for.
        """
        if self._reports or self._advantages:
            raise RewardkitError("this SplitBatchFinisher has finished a batch already; use one per batch")
        pieces: dict[str, list[ScoredCandidate]] = {}
        for index, part in enumerate(parts):
            for group in part.groups:
                pieces.setdefault(group.group_id, []).extend(group.candidates)
            weight = default_weights[index] if index < len(default_weights) else None
            self.add_report(part.metrics, part.metric_weights, default_weight=weight)
        order = list(pieces) if group_order is None else list(group_order)
        problems = []
        missing = [group_id for group_id in order if group_id not in pieces]
        if missing:
            problems.append(f"groups {missing[:8]} are in no part")
        extra = sorted(pieces.keys() - set(order))
        if extra:
            problems.append(f"groups {extra[:8]} of the parts are not in the batch")
        if len(set(order)) != len(order):
            problems.append("the batch names a group twice")
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
