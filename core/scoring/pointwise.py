"""``map_candidates``: lift a pointwise scorer into a group-native provider (candidates in order)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter
from typing import Any

from rewardkit.contracts import (
    RewardCandidate,
    RewardContext,
    RewardGroupRequest,
    RewardGroupResult,
    RewardProviderResult,
    build_candidate_result,
    build_group_result,
)
from rewardkit.contracts.errors import RequestCancelled, RewardContractError

Scorer = Callable[..., RewardProviderResult]
_trajectory_id = attrgetter("trajectory_id")
_PROBE_CANDIDATE = RewardCandidate("probe", "")
_PROBE_CONTEXT = RewardContext()


class MappedProvider:
    """A group provider that applies a pointwise scorer to each candidate independently."""

    __slots__ = ("params", "scorer")

    def __init__(self, scorer: Scorer, params: dict[str, Any]) -> None:
        self.scorer = scorer
        self.params = params

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        candidates = request.candidates
        results = score_candidates(self.scorer, self.params, request.group_id, candidates, request.context)
        items = tuple(map(build_candidate_result, map(_trajectory_id, candidates), results))
        return build_group_result(request.group_id, items)

    def __repr__(self) -> str:
        return f"MappedProvider({getattr(self.scorer, '__qualname__', self.scorer)!r}, {self.params!r})"


def score_candidates(
    scorer: Scorer,
    params: Mapping[str, Any],
    group_id: str,
    candidates: Sequence[RewardCandidate],
    context: RewardContext,
) -> list[RewardProviderResult]:
    """``scorer``'s result for each candidate, in order (every path that runs a pointwise scorer
    calls this). A crash fails that candidate only, with the error as its reason; a
    ``RewardContractError`` (naming the group and candidate) and a cancellation propagate."""
    results: list[RewardProviderResult] = []
    append = results.append
    for candidate in candidates:
        try:
            # Without params, a plain call: `**{}` still builds a keyword dict per call.
            append(scorer(candidate, context, **params) if params else scorer(candidate, context))
        except RewardContractError as error:
            raise _located(error, group_id, candidate)  # noqa: B904 - it chains the error itself
        except RequestCancelled:
            raise  # the batch is stopping: not this candidate's fault, and not to be hidden
        except Exception as error:
            append(RewardProviderResult.fail(f"{type(error).__name__}: {error}"))
    return results


def _located(error: RewardContractError, group_id: str, candidate: RewardCandidate) -> RewardContractError:
    """A scorer's contract error, naming the group and candidate unless it already names a group."""
    if error.group_id is not None:
        return error
    wrapped = RewardContractError(
        error.message, group_id=group_id, trajectory_id=candidate.trajectory_id, rule=error.rule
    )
    wrapped.__cause__ = error
    return wrapped


def map_candidates(scorer: Scorer, /, **params: Any) -> MappedProvider:
    """A provider scoring each candidate with ``scorer(candidate, context, **params)``;
    ``functools.partial(map_candidates, scorer)`` is a valid ``RewardProviderSpec.factory``. Raises
    ``TypeError`` naming the scorer and the bad parameter when ``params`` do not fit the signature:
    here, so that a misspelt option fails in preflight, not mid-training."""
    if not callable(scorer):
        raise TypeError(f"map_candidates needs a callable scorer, got {scorer!r}")
    signature = inspect.signature(scorer)
    try:
        signature.bind(_PROBE_CANDIDATE, _PROBE_CONTEXT, **params)
    except TypeError as error:
        accepted = [
            name
            for name, parameter in list(signature.parameters.items())[2:]
            if parameter.kind in (parameter.KEYWORD_ONLY, parameter.POSITIONAL_OR_KEYWORD)
        ]
        raise TypeError(
            f"scorer {getattr(scorer, '__qualname__', scorer)!r} does not accept params "
            f"{sorted(params)}: {error}; it accepts {accepted}"
        ) from None
    return MappedProvider(scorer, dict(params))
