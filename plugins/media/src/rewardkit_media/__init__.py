"""Decoded media for remote reward services: spool files, the service protocol, the uint8 transform.

Shared by the decoded-media adapters (``rewardkit-dancegrpo`` for video, ``rewardkit-t2i`` for
images): ``spool`` (private spool files, capacity checks), ``service`` (the enqueue/pull client),
``decoded`` (decoder attestation, checks and the transform; needs torch when called), ``scorer``
(one candidate, one deadline), ``config`` (the shared value contract), ``ranks`` (the trainer's
rank loop: failures converged, the report merged, global advantage telemetry; torch.distributed
when called), ``record`` (the run record naming the deployed scorer revision) and ``testing`` (a
reference server with fault injection, for tests and benchmarks).
"""

from __future__ import annotations

from rewardkit_media.config import REVISION_SENTINEL, UINT8_TRANSFORM, MediaServiceConfig
from rewardkit_media.decoded import OUTPUT_RANGE, DecodedMediaError, DecoderAttestation
from rewardkit_media.ranks import RankScores, RankScoringError, score_on_ranks
from rewardkit_media.record import run_record, scorer_revisions
from rewardkit_media.scorer import DIAGNOSTICS, MediaScorer
from rewardkit_media.service import (
    EnqueueError,
    MediaServiceClient,
    MediaServiceError,
    ServiceDeadlineError,
    ServiceProtocolError,
    ServiceScores,
)
from rewardkit_media.spool import Spool, SpoolError, check_capacity, spooled

__all__ = [
    "DIAGNOSTICS",
    "OUTPUT_RANGE",
    "REVISION_SENTINEL",
    "UINT8_TRANSFORM",
    "DecodedMediaError",
    "DecoderAttestation",
    "EnqueueError",
    "MediaScorer",
    "MediaServiceClient",
    "MediaServiceConfig",
    "MediaServiceError",
    "RankScores",
    "RankScoringError",
    "ServiceDeadlineError",
    "ServiceProtocolError",
    "ServiceScores",
    "Spool",
    "SpoolError",
    "check_capacity",
    "run_record",
    "score_on_ranks",
    "scorer_revisions",
    "spooled",
]
