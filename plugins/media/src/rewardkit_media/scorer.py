"""``MediaScorer``: one candidate's decoded media scored by the reward service, within one deadline.

The decoded-media adapters (``rewardkit-dancegrpo``, ``rewardkit-t2i``) are this scorer lifted with
``map_candidates``: each candidate is scored alone (one service request per candidate; no batching
and no claim of comparative group scoring). For a candidate it

1. takes the candidate's in-process ``media`` (the final latent), decodes it with the injected
   decoder under ``torch.no_grad()`` and checks the result (``rewardkit_media.decoded``);
2. converts it to CPU uint8 with the fixed fp32 transform;
3. streams it to the service through a private spool file, enqueued once, polled until scored
   (``rewardkit_media.service``).

Everything runs inside one absolute deadline taken when the candidate starts. A decoder that
overruns it cannot be interrupted (it runs in a daemon thread); its result is then discarded and
nothing is sent. A remote failure is the candidate's ``error`` result (the composition's
``onError`` decides what it means for the batch); a broken decoder or malformed media is a
``RewardContractError`` that fails the batch before any network call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from rewardkit.plugin import (
    MetricContribution,
    RewardCandidate,
    RewardContext,
    RewardContractError,
    RewardProviderResult,
    run_sync,
)
from rewardkit_media.config import MediaServiceConfig
from rewardkit_media.decoded import DecoderAttestation, Layout, attest, check_decoded, decode, to_uint8
from rewardkit_media.service import (
    MediaServiceClient,
    MediaServiceError,
    ScoringTrace,
    ServiceDeadlineError,
    in_daemon_thread,
)
from rewardkit_media.spool import SpoolError

# Diagnostics every decoded-media provider declares (reporting only; never in the reward).
DIAGNOSTICS = ("service_seconds", "pending_polls", "upload_mib")
Metadata = Callable[[np.ndarray, RewardContext], Mapping[str, Any]]


def prompt_text(prompt: Any) -> str | None:
    """The text of a canonical prompt: a string, or the last user message of a chat."""
    if prompt is None or isinstance(prompt, str):
        return prompt
    if isinstance(prompt, (list, tuple)):
        for message in reversed(prompt):
            if isinstance(message, Mapping) and message.get("role") == "user":
                content = message.get("content")
                if isinstance(content, str):
                    return content
    raise RewardContractError(
        f"the prompt is {type(prompt).__name__}; expected a string or chat messages with a user turn",
        rule="prompt-text",
    )


class MediaScorer:
    """A pointwise scorer ``(candidate, context) -> RewardProviderResult`` for decoded media."""

    def __init__(
        self,
        config: MediaServiceConfig,
        decoder: Any,
        layout: Layout,
        metadata: Metadata,
    ) -> None:
        self.config = config
        self.layout = layout
        self.metadata = metadata
        self.decoder = decoder
        self.attestation: DecoderAttestation = attest(decoder)
        self.client = MediaServiceClient(
            enqueue_url=config.enqueue_url,
            pull_url=config.pull_url,
            token_env=config.token_env,
            reward_types=config.reward_types,
            enqueue_timeout_s=config.enqueue_timeout_s,
            pull_timeout_s=config.pull_timeout_s,
            poll_interval_s=config.poll_interval_s,
            max_poll_interval_s=config.max_poll_interval_s,
            spool_dir=config.spool_dir,
            active_ranks=config.active_ranks,
        )
        self.terms = config.score_keys()

    def __repr__(self) -> str:
        return f"MediaScorer({self.layout!r}, decoder={self.attestation.name!r}, {self.client!r})"

    def __call__(self, candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
        deadline = time.monotonic() + self.config.deadline_s
        return run_sync(lambda: self.ascore(candidate, context, deadline))

    async def ascore(
        self, candidate: RewardCandidate, context: RewardContext, deadline: float
    ) -> RewardProviderResult:
        """Score one candidate before ``deadline`` (``time.monotonic()`` seconds)."""
        latent = getattr(candidate, "media", None)
        if latent is None:
            raise RewardContractError(
                "the candidate carries no media (the final latent); decoded-media providers score "
                "in-process only, with media on each candidate",
                trajectory_id=candidate.trajectory_id,
                rule="missing-media",
            )
        trace = ScoringTrace(stage="decode")
        try:
            sample = await in_daemon_thread(lambda: self._pixels(latent), deadline - time.monotonic())
        except asyncio.TimeoutError:
            return self._failed(
                ServiceDeadlineError(
                    f"no score by the deadline: the decoder {self.attestation.name!r} had not finished "
                    f"after {self.config.deadline_s:g} s; nothing was enqueued"
                ),
                trace,
            )
        metadata = self.metadata(sample, context)
        try:
            scored = await self.client.score(sample, metadata, deadline, trace)
        except (MediaServiceError, SpoolError) as error:
            return self._failed(error, trace)
        terms = {term: scored.scores[term] for term in self.terms}
        return RewardProviderResult(terms=terms, diagnostics=self._diagnostics(trace, scored.seconds))

    def _pixels(self, latent: Any) -> np.ndarray:
        decoded = decode(self.decoder, latent)
        check_decoded(decoded, self.layout, self.config.range_tolerance)
        return to_uint8(decoded, self.layout)

    def _diagnostics(self, trace: ScoringTrace, seconds: float | None) -> tuple[MetricContribution, ...]:
        out = [
            MetricContribution("pending_polls", float(trace.pending_answers)),
            MetricContribution("upload_mib", trace.uploaded_bytes / 2**20),
        ]
        if seconds is not None:
            out.append(MetricContribution("service_seconds", seconds))
        return tuple(out)

    def _failed(self, error: Exception, trace: ScoringTrace) -> RewardProviderResult:
        return RewardProviderResult.fail(f"{type(error).__name__}: {error}", self._diagnostics(trace, None))
