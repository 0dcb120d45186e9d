"""The reward actor: one process that resolves the run's catalog and stages groups for the driver.

The actor never trusts the driver's providers: it resolves the same persisted catalog reference
itself, builds its own ``RewardWorker`` (preflight included) and compares every provider record
with the driver's. On any difference it refuses to score, with both identity hashes in the
message, so a node running other provider code cannot silently change the reward.

This module does not import Ray: ``rewardkit_ray.backend`` wraps ``RewardActor`` with
``ray.remote``; a plain instance is also what the unit of work looks like without Ray.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence
from typing import Any

from rewardkit.plugin import (
    IdentityMismatchError,
    ProviderRecord,
    RewardkitError,
    RewardSpec,
    RewardWorker,
    Scaling,
    compose,
    resolve_catalog,
)
from rewardkit_ray.wire import WireGroup, staged_to_wire


def identity_problems(
    driver: Sequence[ProviderRecord], actor: Sequence[ProviderRecord], where: str
) -> tuple[list[str], list[str]]:
    """Refusals (identity differs) and warnings (code differs under the same revision) for one actor."""
    refusals: list[str] = []
    warnings: list[str] = []
    mine = {record.provider: record for record in actor}
    for wanted in driver:
        got = mine.pop(wanted.provider, None)
        if got is None:
            refusals.append(
                f"{where} has no provider {wanted.provider!r} (driver identity {wanted.identity})"
            )
            continue
        if (got.identity, got.revision, got.catalog) != (wanted.identity, wanted.revision, wanted.catalog):
            refusals.append(
                f"{where} resolved provider {wanted.provider!r} from catalog {got.catalog!r} as revision "
                f"{got.revision!r} identity {got.identity}, but the driver has revision "
                f"{wanted.revision!r} identity {wanted.identity} (catalog {wanted.catalog!r})"
            )
        elif got.code_fingerprint != wanted.code_fingerprint:
            warnings.append(
                f"{where}: the code of provider {wanted.provider!r} differs from the driver's "
                f"(fingerprint {got.code_fingerprint[:12]} vs {wanted.code_fingerprint[:12]}) under the "
                f"same revision {wanted.revision!r}; bump the revision when code changes what it scores"
            )
    for extra in mine.values():
        refusals.append(f"{where} has provider {extra.provider!r} that the driver did not select")
    return refusals, warnings


class RewardActor:
    """Stages groups (score and compose) for a driver after checking it scores what the driver would."""

    def __init__(
        self,
        index: int,
        catalog_ref: str | None,
        spec: Mapping[str, Any],
        driver_records: Sequence[Mapping[str, Any]],
        *,
        group_size: int | None,
        namespace: str,
        scaling: Scaling,
        available_inputs: Sequence[str],
    ) -> None:
        self.index = index
        self.where = f"reward actor {index} (host {socket.gethostname()}, pid {os.getpid()})"
        self._driver_records = tuple(ProviderRecord.from_json(record) for record in driver_records)
        self._refusal: str | None = None
        self._warnings: list[str] = []
        self._records: tuple[ProviderRecord, ...] = ()
        self._worker: RewardWorker | None = None
        try:
            self._worker = RewardWorker(
                RewardSpec.parse(spec),
                resolve_catalog(catalog_ref),
                group_size=group_size,
                namespace=namespace,
                scaling=scaling,
                available_inputs=available_inputs,
            )
        except RewardkitError as error:
            # Kept, not raised: a constructor that raises kills the actor and the driver would
            # only see that it died, not why.
            self._refusal = f"{self.where} failed its own preflight: {type(error).__name__}: {error}"
            return
        self._records = self._worker.records
        refusals, self._warnings = identity_problems(self._driver_records, self._records, self.where)
        if refusals:
            self._refusal = "; ".join(refusals)

    def handshake(self) -> dict[str, Any]:
        """What the driver checks before sending work: this actor's records and verdict."""
        return {
            "index": self.index,
            "where": self.where,
            "records": [record.to_json() for record in self._records],
            "refusal": self._refusal,
            "warnings": list(self._warnings),
        }

    def _checked_worker(self) -> RewardWorker:
        if self._refusal is not None or self._worker is None:
            raise IdentityMismatchError(f"refusing to score: {self._refusal}")
        return self._worker

    def stage(self, group_id: str, rollouts: Sequence[Mapping[str, Any]]) -> WireGroup:
        """Score and compose one group; the driver annotates and reports the whole batch."""
        composed, results = self._checked_worker().stage_group(group_id, rollouts)
        return staged_to_wire(composed, results)

    def compose(self, spec: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
        """Compose one candidate's outcomes with this actor's code (the shared vectors run through it)."""
        return compose(spec, components).to_json()

    def pid(self) -> int:
        return os.getpid()
