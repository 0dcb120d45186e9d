"""The ``reward-model`` and ``reward-model-ensemble`` providers.

A factory only validates its params (``RewardModelParams``: the folder is checked and hashed,
nothing is loaded). The tokenizer and the model, or the HTTP backend, are made on the first
``evaluate``. Groups scored at the same time by several threads share forward passes (or
requests): each ``ModelScorer`` has one ``Coalescer`` in front of its backend, which packs
every queued sequence into token-budget buckets.

A score is ``(raw - score_mean) / score_std``, then length-normalised; both are fixed params,
never running statistics, so a candidate's score never depends on what was scored before
(the in-process, service, Ray and resumed paths agree). Per candidate, a problem that stops
scoring (a prompt that fills the limit under right truncation, a non-finite output) is an
``error`` result naming the cause; an empty completion is the candidate's own doing, so it is a
charged verdict at ``empty_completion_score`` (an error would score what ``onError`` gives, often
above what the model gives real answers); an unreachable or failing server fails the group with
the server's reason.
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Sequence
from typing import Any, cast

from rewardkit.plugin import (
    MetricContribution,
    RewardCandidateResult,
    RewardGroupRequest,
    RewardGroupResult,
    RewardProviderResult,
    validate_params,
)
from rewardkit_rl.reward_models.batching import Coalescer, token_budget_batches
from rewardkit_rl.reward_models.params import EnsembleParams, RewardModelParams
from rewardkit_rl.reward_models.text import CandidateProblem, EmptyCompletion, Encoded, Formatter

TERMS = ("score",)
DIAGNOSTICS = (
    "raw_score",
    "input_tokens",
    "completion_tokens",
    "truncated",
    "truncated_tokens",
    "empty_completion",
)
ENSEMBLE_DIAGNOSTICS = ("disagreement", "member_min", "member_max", "truncated", "empty_completion")


class ModelScorer:
    """One reward model behind any backend: encodes candidates and returns their raw scores."""

    def __init__(self, settings: RewardModelParams) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._formatter: Formatter | None = None
        self._backend: Any = None
        self._coalescer: Coalescer[tuple[int, ...], float] | None = None

    def _ready(self) -> tuple[Formatter, Coalescer[tuple[int, ...], float]]:
        with self._lock:
            if self._formatter is None or self._coalescer is None:
                from rewardkit_rl.reward_models.local import load_tokenizer

                settings = self.settings
                tokenizer = load_tokenizer(settings.model)
                formatter = Formatter(
                    tokenizer,
                    template=settings.template,
                    separator=settings.separator,
                    max_tokens=settings.max_tokens,
                    truncation=settings.truncation,
                )
                if settings.backend == "local":
                    from rewardkit_rl.reward_models.local import LocalModel

                    pad = tokenizer.pad_token_id
                    if pad is None:
                        pad = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else 0
                    backend: Any = LocalModel(settings, str(getattr(tokenizer, "padding_side", "right")), pad)
                    run = self._local_runner(backend)
                else:
                    from rewardkit_rl.reward_models.remote import RemoteModel

                    backend = RemoteModel(settings, formatter.decode)
                    run = backend.score
                self._backend = backend
                self._formatter = formatter
                self._coalescer = Coalescer(run)
            return self._formatter, self._coalescer

    def _local_runner(self, model: Any) -> Any:
        budget = self.settings.batch_tokens

        def run(sequences: list[tuple[int, ...]]) -> list[float]:
            scores = [0.0] * len(sequences)
            for bucket in token_budget_batches([len(ids) for ids in sequences], budget):
                for index, value in zip(bucket, model.score([sequences[i] for i in bucket])):
                    scores[index] = value
            return scores

        return run

    def encode(self, request: RewardGroupRequest) -> list[Encoded | CandidateProblem]:
        """Per candidate, what the model reads, or why it cannot be scored."""
        formatter, _ = self._ready()
        prompt = request.context.prompt
        encoded: list[Encoded | CandidateProblem] = []
        for candidate in request.candidates:
            try:
                encoded.append(formatter.encode(prompt, candidate.completion))
            except CandidateProblem as problem:
                encoded.append(problem)
        return encoded

    def raw_scores(self, encoded: Sequence[Encoded]) -> list[float]:
        _, coalescer = self._ready()
        return coalescer.submit([item.ids for item in encoded])

    def finish(self, raw: float, item: Encoded) -> float:
        """The fixed normalisation, then the length normalisation."""
        settings = self.settings
        value = (raw - settings.score_mean) / settings.score_std
        if settings.length_normalisation == "per_token":
            value /= max(1, item.completion_tokens)
        elif settings.length_normalisation == "linear":
            value -= settings.length_penalty * item.completion_tokens / 1000.0
        return value

    def close(self) -> None:
        with self._lock:
            backend, self._backend = self._backend, None
            self._formatter = self._coalescer = None
        if backend is not None:
            backend.close()


def _diagnostics(raw: float, item: Encoded) -> tuple[MetricContribution, ...]:
    return (
        MetricContribution("raw_score", raw),
        MetricContribution("input_tokens", float(len(item.ids))),
        MetricContribution("completion_tokens", float(item.completion_tokens)),
        MetricContribution("truncated", float(item.truncated)),
        MetricContribution("truncated_tokens", float(item.dropped)),
    )


def empty_verdict(reason: str, score: float) -> RewardProviderResult:
    """An empty completion's verdict: the term at ``score``, charged to the candidate (diagnostic
    ``empty_completion``), whatever the model would say of the prompt alone."""
    return RewardProviderResult.charged(reason, "empty_completion", {"score": score})


class RewardModelProvider:
    """``reward-model``: one trained reward model's scalar score per candidate (term ``score``)."""

    def __init__(self, **params: Any) -> None:
        settings = validate_params(RewardModelParams, params)
        assert isinstance(settings, RewardModelParams)
        self.settings = settings
        self.scorer = ModelScorer(settings)
        weakref.finalize(self, self.scorer.close)

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        encoded = self.scorer.encode(request)
        ready = [item for item in encoded if isinstance(item, Encoded)]
        raws = iter(self.scorer.raw_scores(ready))
        items = []
        for candidate, item in zip(request.candidates, encoded):
            if isinstance(item, EmptyCompletion):
                result = empty_verdict(f"reward-model: {item}", self.settings.empty_completion_score)
            elif isinstance(item, CandidateProblem):
                result = RewardProviderResult.fail(f"reward-model: {item}")
            else:
                raw = next(raws)
                result = self._result(raw, item)
            items.append(RewardCandidateResult(candidate.trajectory_id, result))
        return RewardGroupResult(request.group_id, tuple(items))

    def _result(self, raw: float, item: Encoded) -> RewardProviderResult:
        diagnostics = _diagnostics(raw, item) if math.isfinite(raw) else ()
        value = self.scorer.finish(raw, item) if math.isfinite(raw) else raw
        if not math.isfinite(value):
            return RewardProviderResult.fail(f"reward-model: the model gave a non-finite score ({raw})")
        return RewardProviderResult(terms={"score": value}, diagnostics=diagnostics)

    def close(self) -> None:
        """Free the model (or the HTTP backend); a later ``evaluate`` loads it again."""
        self.scorer.close()


class EnsembleProvider:
    """``reward-model-ensemble``: several reward models combined by mean, min or mean - k * std.

    Diagnostics show reward hacking: ``disagreement`` is the population std across members,
    ``member_min`` and ``member_max`` their extremes, ``truncated`` whether any member cut it.
    """

    def __init__(self, **params: Any) -> None:
        settings = validate_params(EnsembleParams, params)
        assert isinstance(settings, EnsembleParams)
        self.settings = settings
        self.scorers = [ModelScorer(member) for member in settings.members]
        for scorer in self.scorers:
            weakref.finalize(self, scorer.close)

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        per_member = [scorer.encode(request) for scorer in self.scorers]
        count = len(request.candidates)
        # The completion is the same text for every member: empty for one, it is empty for all.
        empty = [isinstance(per_member[0][p], EmptyCompletion) for p in range(count)]
        problems = [
            next(
                (
                    f"member {m}: {enc[p]}"
                    for m, enc in enumerate(per_member)
                    if isinstance(enc[p], CandidateProblem)
                ),
                None,
            )
            for p in range(count)
        ]
        ok = [position for position in range(count) if problems[position] is None]
        scores: dict[int, list[float]] = {position: [] for position in ok}
        truncated = dict.fromkeys(ok, False)
        for scorer, encoded in zip(self.scorers, per_member):
            chosen = [cast(Encoded, encoded[position]) for position in ok]
            for position, item, raw in zip(ok, chosen, scorer.raw_scores(chosen)):
                scores[position].append(scorer.finish(raw, item))
                truncated[position] = truncated[position] or item.truncated
        items = []
        for position, candidate in enumerate(request.candidates):
            problem = problems[position]
            if empty[position]:
                reason = f"reward-model-ensemble: {per_member[0][position]}"
                result = empty_verdict(reason, self.settings.empty_completion_score)
            elif problem is not None:
                result = RewardProviderResult.fail(f"reward-model-ensemble: {problem}")
            else:
                result = self._combined(scores[position], truncated[position])
            items.append(RewardCandidateResult(candidate.trajectory_id, result))
        return RewardGroupResult(request.group_id, tuple(items))

    def _combined(self, scores: list[float], truncated: bool) -> RewardProviderResult:
        if not all(math.isfinite(value) for value in scores):
            return RewardProviderResult.fail(
                f"reward-model-ensemble: a member gave a non-finite score {scores}"
            )
        mean = sum(scores) / len(scores)
        std = math.sqrt(sum((value - mean) ** 2 for value in scores) / len(scores))
        if self.settings.combine == "mean":
            value = mean
        elif self.settings.combine == "min":
            value = min(scores)
        else:
            value = mean - self.settings.k * std
        diagnostics = (
            MetricContribution("disagreement", std),
            MetricContribution("member_min", min(scores)),
            MetricContribution("member_max", max(scores)),
            MetricContribution("truncated", float(truncated)),
        )
        return RewardProviderResult(terms={"score": value}, diagnostics=diagnostics)

    def close(self) -> None:
        for scorer in self.scorers:
            scorer.close()
