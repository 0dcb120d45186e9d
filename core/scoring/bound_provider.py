"""The framework-owned bound adapter: the only path by which rewardkit calls provider code.

Before the provider runs it builds an immutable ``RewardGroupRequest`` from a trainer's rollouts
and rejects anything malformed; after the provider returns it checks the result against the spec.
Every failure is a ``RewardContractError`` naming the group, the candidate and the rule broken.
For a provider that declares ``cacheable``, it asks the provider only about answers the batch has
not met yet, and gives equal candidates copies of that result (``rewardkit.scoring.shared_results``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from operator import attrgetter
from typing import Any

from rewardkit.contracts import (
    CANDIDATE_NEEDS,
    MetricContribution,
    RewardCandidate,
    RewardCandidateResult,
    RewardContext,
    RewardGroupRequest,
    RewardGroupResult,
    RewardProvider,
    RewardProviderResult,
    RewardProviderSpec,
    build_candidate,
    build_request,
)
from rewardkit.contracts.errors import ProviderError, RewardContractError
from rewardkit.contracts.frozen import NotJSONError, freeze, strictly_equal, thaw
from rewardkit.scoring import cancellation, shared_results
from rewardkit.scoring.batch_input import Rollouts
from rewardkit.scoring.recent import LastTwo
from rewardkit.scoring.reproduction import REPRODUCTION_NOTE

_trajectory_id = attrgetter("trajectory_id")

_STATUSES = ("scored", "skipped", "error")
isfinite = math.isfinite  # a module global: the per-result check calls it for every term


def _group_label(group_id: object) -> str:
    return group_id if isinstance(group_id, str) else repr(group_id)


def _refusal(problem: str, group_id: str, trajectory_id: str, rule: str) -> RewardContractError:
    return RewardContractError(problem, group_id=group_id, trajectory_id=trajectory_id, rule=rule)


class BoundProvider:
    """A constructed provider bound to its spec, parameters and identity."""

    __slots__ = (
        "_declared_diagnostics",
        "_declared_notes",
        "_declared_terms",
        "_needs_media",
        "_needs_prompt",
        "_needs_reference",
        "_required_fields",
        "identity",
        "params",
        "provider",
        "shares_equal_answers",
        "spec",
    )

    def __init__(
        self, spec: RewardProviderSpec, provider: RewardProvider, params: Mapping[str, Any], identity: str
    ) -> None:
        self.spec = spec
        self.provider = provider
        self.params = dict(params)
        self.identity = identity
        self._declared_terms = frozenset(spec.terms)
        self._declared_diagnostics = frozenset(spec.diagnostics)
        self._declared_notes = frozenset(spec.notes) | {REPRODUCTION_NOTE}  # the core's own note
        self._needs_media = "media" in spec.needs
        self._required_fields = tuple(
            need for need in CANDIDATE_NEEDS if need in spec.needs and need not in spec.skip_when_absent
        )
        self._needs_prompt = "prompt" in spec.needs
        self._needs_reference = "reference" in spec.needs
        # Media is opaque (never compared), so a provider reading it never shares a result.
        cacheable = spec.cacheable
        declared = cacheable(provider) if callable(cacheable) else cacheable
        self.shares_equal_answers = declared is True and not self._needs_media
        if self.shares_equal_answers:
            self._declared_diagnostics |= {shared_results.SHARED_DIAGNOSTIC}  # the core's own

    @property
    def name(self) -> str:
        return self.spec.name

    # -- before the provider -------------------------------------------------------------------

    def prepare(
        self, group_id: str, rollouts: Rollouts, expected_size: int | None = None
    ) -> RewardGroupRequest:
        """Build the frozen request for one complete group of rollouts: mappings with
        ``trajectory_id``, ``completion`` and optionally ``group_id``, ``prompt``, ``reference``,
        ``completion_token_count``, ``finish_reason`` and ``media`` (an in-process object, as it is)."""
        candidates = self.candidates(group_id, rollouts, expected_size)
        prompt, reference = self.common_inputs(group_id, rollouts, candidates)
        return build_request(group_id, tuple(candidates), prompt, reference)

    def candidates(
        self, group_id: str, rollouts: Rollouts, expected_size: int | None = None
    ) -> list[RewardCandidate]:
        """The checked candidates of one complete group (``prepare``'s first half)."""
        if not isinstance(group_id, str) or not group_id:
            problem = f"group_id must be a non-empty string, got {group_id!r}"
            raise RewardContractError(problem, group_id=_group_label(group_id), rule="group-id")
        if type(rollouts) is not list and (
            isinstance(rollouts, (str, bytes, Mapping)) or not isinstance(rollouts, Sequence)
        ):
            problem = f"rollouts must be a sequence of mappings, got {type(rollouts).__name__}"
            raise RewardContractError(problem, group_id=group_id, rule="group-shape")
        count = len(rollouts)
        if count == 0:
            problem = "the group has no candidates"
            raise RewardContractError(problem, group_id=group_id, rule="incomplete-group")
        if expected_size is not None and count != expected_size:
            problem = f"the group has {count} candidates, expected {expected_size}"
            raise RewardContractError(problem, group_id=group_id, rule="incomplete-group")
        candidates: list[RewardCandidate] = []
        append = candidates.append
        for index, rollout in enumerate(rollouts):
            if type(rollout) is dict:
                # The usual rollout, checked inline; any other goes to _candidate, which checks the
                # same in order and names the first rule it breaks.
                get = rollout.get
                trajectory_id = get("trajectory_id")
                completion = get("completion")
                token_count = get("completion_token_count")
                finish_reason = get("finish_reason")
                if (
                    type(trajectory_id) is str
                    and trajectory_id
                    and not (get("group_id", group_id) != group_id)  # noqa: SIM202 - _candidate's test
                    and type(completion) is str
                    and (token_count is None or (type(token_count) is int and token_count >= 0))
                    and (finish_reason is None or type(finish_reason) is str)
                ):
                    media = get("media")
                    append(build_candidate(trajectory_id, completion, token_count, finish_reason, media))
                    continue
            append(_candidate(group_id, index, rollout))
        if count > 1 and len(set(map(_trajectory_id, candidates))) != count:
            _duplicate_id(group_id, candidates)
        self.check_fields(group_id, candidates)
        return candidates

    def check_fields(self, group_id: str, candidates: Sequence[RewardCandidate]) -> None:
        """Refuse a candidate without a per-candidate field this provider needs (media, a token
        count, a finish reason), naming the field."""
        if self._needs_media:
            for candidate in candidates:
                if candidate.media is None:
                    problem = (
                        f"provider {self.name!r} needs in-process media (e.g. the final latent) on "
                        "every candidate, and this candidate has none"
                    )
                    raise _refusal(problem, group_id, candidate.trajectory_id, "missing-media")
        for field in self._required_fields:
            for candidate in candidates:
                if getattr(candidate, field) is None:
                    problem = (
                        f"provider {self.name!r} needs {field!r} on every candidate (what the rollout "
                        "engine recorded), and this candidate has none"
                    )
                    raise _refusal(problem, group_id, candidate.trajectory_id, "missing-candidate-field")

    def common_inputs(
        self, group_id: str, rollouts: Rollouts, candidates: list[RewardCandidate]
    ) -> tuple[Any, Any]:
        """The group's frozen prompt and reference, each only if this provider needs it, else ``None``."""
        prompt = reference = None
        if self._needs_prompt:
            prompt = self._common_input(group_id, "prompt", rollouts, candidates)
        if self._needs_reference:
            reference = self._common_input(group_id, "reference", rollouts, candidates)
        return prompt, reference

    def _common_input(
        self, group_id: str, need: str, rollouts: Rollouts, candidates: list[RewardCandidate]
    ) -> Any:
        first = rollouts[0].get(need)
        try:
            frozen = freeze(first, f"${need}")
        except NotJSONError as error:
            problem = f"{need!r} is not JSON-compatible at {error.path}: {error.reason}"
            raise _refusal(problem, group_id, candidates[0].trajectory_id, "json-input") from None
        if type(first) is str:  # the usual case (a prompt, a gold answer) without a call per rollout
            for rollout in rollouts:
                value = rollout.get(need)
                if value is not first and (type(value) is not str or value != first):
                    break
            else:
                return frozen
        for candidate, rollout in zip(candidates, rollouts):
            value = rollout.get(need)
            if value is None:
                problem = f"provider {self.name!r} needs {need!r} but this candidate has none"
                raise _refusal(problem, group_id, candidate.trajectory_id, "missing-input")
            if not strictly_equal(value, first):
                problem = (
                    f"{need!r} differs from the group's first candidate "
                    f"({candidates[0].trajectory_id!r}); common inputs must be identical in "
                    "value and JSON type (1, 1.0 and true differ)"
                )
                raise _refusal(problem, group_id, candidate.trajectory_id, "inconsistent-common-input")
        return frozen

    # -- calling the provider --------------------------------------------------------------------

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        """Call the provider on an already prepared request and check what it returns (for a
        ``cacheable`` provider, only about the answers the batch has not met yet)."""
        if self.shares_equal_answers:
            return self._evaluate_shared(request)
        return self._evaluate_alone(request)

    def _evaluate_alone(self, request: RewardGroupRequest) -> RewardGroupResult:
        try:
            result = self.provider.evaluate(request)
        except RewardContractError:
            raise
        except Exception as error:
            problem = f"provider {self.name!r} raised {type(error).__name__}: {error}"
            raise ProviderError(problem, group_id=request.group_id) from error
        return self.check_result(request, result)

    def _evaluate_shared(self, request: RewardGroupRequest) -> RewardGroupResult:
        """``evaluate`` sharing results between equal answers of the batch (``shared_results``):
        the provider is asked, in one request of this group, about the answers met first here; the
        other candidates wait for the result of their equal answer and get a copy of it. Answers
        this call claimed are settled before it waits for anyone's, so two groups never wait on
        each other; a claim whose scoring failed is abandoned, and its waiters score it alone."""
        shared = shared_results.current()
        context = _context_key(request.context)
        candidates = request.candidates
        keys = [
            (
                self.identity,
                context,
                candidate.completion,
                candidate.completion_token_count,
                candidate.finish_reason,
            )
            for candidate in candidates
        ]
        claims = shared.claim(keys)
        mine = [index for index, (first, _) in enumerate(claims) if first]
        if mine:
            asked = request
            if len(mine) < len(candidates):
                asked = RewardGroupRequest(
                    request.group_id, tuple(candidates[i] for i in mine), request.context
                )
            try:
                answered = self._evaluate_alone(asked)
            except BaseException:
                for index in mine:
                    shared.abandon(keys[index], claims[index][1])
                raise
            for index, item in zip(mine, answered.items):
                claims[index][1].set_result(item.result)
        items = []
        for candidate, (first, future) in zip(candidates, claims):
            try:
                result = shared_results.marked(future.result(), shared=not first)
            except shared_results.Abandoned:
                # The candidate that was scoring this answer failed: score it here, unshared, unless
                # it failed because this request was cancelled (a run started now would outlive it).
                cancellation.current().raise_if_cancelled()
                alone = RewardGroupRequest(request.group_id, (candidate,), request.context)
                result = shared_results.marked(self._evaluate_alone(alone).items[0].result, shared=False)
            items.append(RewardCandidateResult(candidate.trajectory_id, result))
        return RewardGroupResult(request.group_id, tuple(items))

    def score_group(
        self, group_id: str, rollouts: Rollouts, expected_size: int | None = None
    ) -> RewardGroupResult:
        """Prepare, evaluate and check one group."""
        return self.evaluate(self.prepare(group_id, rollouts, expected_size))

    # -- after the provider ----------------------------------------------------------------------

    def check_result(self, request: RewardGroupRequest, result: object) -> RewardGroupResult:
        group_id = request.group_id
        if not isinstance(result, RewardGroupResult):
            problem = f"provider {self.name!r} returned {type(result).__name__}, not a RewardGroupResult"
            raise RewardContractError(problem, group_id=group_id, rule="result-type")
        if result.group_id != group_id:
            problem = f"provider {self.name!r} answered for group {result.group_id!r}"
            raise RewardContractError(problem, group_id=group_id, rule="result-group-id")
        items = result.items
        candidates = request.candidates
        if not isinstance(items, (tuple, list)) or len(items) != len(candidates):
            count = len(items) if isinstance(items, (tuple, list)) else type(items).__name__
            problem = f"provider {self.name!r} returned {count} items for {len(candidates)} candidates"
            raise RewardContractError(problem, group_id=group_id, rule="result-cardinality")
        declared, diagnostics = self._declared_terms, self._declared_diagnostics
        for position, (item, candidate) in enumerate(zip(items, candidates)):
            expected_id = candidate.trajectory_id
            if (
                type(item) is RewardCandidateResult
                and item.trajectory_id == expected_id
                and plainly_valid(item.result, declared, diagnostics, self._declared_notes)
            ):
                continue
            if getattr(item, "trajectory_id", None) != expected_id:
                problem = (
                    f"result at position {position} is for "
                    f"{getattr(item, 'trajectory_id', None)!r}; results must repeat the "
                    "request's trajectory ids in order"
                )
                raise _refusal(problem, group_id, expected_id, "result-order")
            self._check_provider_result(group_id, expected_id, getattr(item, "result", None))
        if not isinstance(items, tuple):
            result = RewardGroupResult(group_id=group_id, items=tuple(items))
        return result

    def check_provider_results(
        self,
        group_id: str,
        candidates: Sequence[RewardCandidate],
        results: Sequence[object],
        recent: LastTwo[object, bool] | None = None,
    ) -> None:
        """Check a pointwise scorer's results, one per candidate in order, as ``check_result`` checks
        each item. ``recent`` (``results_memo()``, one per provider across calls) spares a yes/no
        rule's two shared results being checked again for every candidate."""
        plain = (self.results_memo() if recent is None else recent).map(results)
        if False in plain:
            for candidate, result, valid in zip(candidates, results, plain):
                if not valid:
                    self._check_provider_result(group_id, candidate.trajectory_id, result)

    def results_memo(self) -> LastTwo[object, bool]:
        """The memo ``check_provider_results`` takes: whether each result is plainly valid."""
        declared, diagnostics, notes = self._declared_terms, self._declared_diagnostics, self._declared_notes
        return LastTwo(lambda result: plainly_valid(result, declared, diagnostics, notes))

    def _check_provider_result(self, group_id: str, trajectory_id: str, result: object) -> None:
        def fail(message: str, rule: str) -> RewardContractError:
            return _refusal(f"provider {self.name!r}: {message}", group_id, trajectory_id, rule)

        if not isinstance(result, RewardProviderResult):
            raise fail(f"result is {type(result).__name__}, not a RewardProviderResult", "result-type")
        if result.status not in _STATUSES:
            raise fail(f"status {result.status!r} is not one of {_STATUSES}", "result-status")
        terms = result.terms
        if result.status == "scored":
            if terms.keys() != self._declared_terms:
                missing = sorted(self._declared_terms - terms.keys())
                extra = sorted(terms.keys() - self._declared_terms)
                # What to change is the declaration when the provider returns names it never declared.
                fix = (
                    f"; if the provider means to return {list(terms)}, declare them: terms="
                    f"{tuple(terms)!r} in @rewardkit.provider(...) or in its RewardProviderSpec"
                    if extra
                    else ""
                )
                raise fail(
                    f"scored result must carry exactly the declared terms {sorted(self._declared_terms)}; "
                    f"missing {missing}, undeclared {extra}{fix}",
                    "declared-terms",
                )
            for term, value in terms.items():
                if not _finite(value):
                    raise fail(
                        f"term {term!r} is {value!r} ({type(value).__name__}); terms must be finite "
                        "Python floats or ints",
                        "finite-terms",
                    )
        elif terms:
            raise fail(f"a {result.status} result must not carry terms", "declared-terms")
        if result.reason is not None and type(result.reason) is not str:
            problem = f"reason must be a string or None, got {type(result.reason).__name__}"
            raise fail(problem, "result-reason")
        for contribution in result.diagnostics:
            name = getattr(contribution, "name", None)
            if name not in self._declared_diagnostics:
                raise fail(
                    f"undeclared diagnostic {name!r}; declared: {sorted(self._declared_diagnostics)}",
                    "declared-diagnostics",
                )
            if not _finite(contribution.value) or not _finite(contribution.weight) or contribution.weight < 0:
                raise fail(
                    f"diagnostic {name!r} has value {contribution.value!r} and weight "
                    f"{contribution.weight!r}; both must be finite numbers and the weight non-negative",
                    "finite-diagnostics",
                )
        for name, text in result.notes.items():
            if name not in self._declared_notes:
                raise fail(
                    f"undeclared note {name!r}; declared: {sorted(self._declared_notes)} (name it in the "
                    "spec's notes=)",
                    "declared-notes",
                )
            if type(text) is not str:
                raise fail(f"note {name!r} is {type(text).__name__}; a note is text (str)", "note-type")


def plainly_valid(
    result: object,
    declared: frozenset[str],
    diagnostics: frozenset[str],
    notes: frozenset[str] = frozenset(),
) -> bool:
    """Whether a result is the usual valid one (scored with finite float terms, or skipped or failed
    without terms; a string reason; declared finite float diagnostics; declared text notes), checked in
    a few operations. ``False`` says only "not plainly": the full check decides, and names the rule broken."""
    if type(result) is not RewardProviderResult:
        return False
    said = result.notes
    if said and not (said.keys() <= notes and all(type(text) is str for text in said.values())):
        return False
    reason = result.reason
    if reason is not None and type(reason) is not str:
        return False
    status = result.status
    if status == "scored":
        terms = result.terms
        if terms.keys() != declared:
            return False
        for value in terms.values():
            if type(value) is not float or not isfinite(value):
                return False
    elif (status != "skipped" and status != "error") or result.terms:
        return False
    for contribution in result.diagnostics:
        if (
            type(contribution) is not MetricContribution
            or contribution.name not in diagnostics
            or type(contribution.value) is not float
            or not isfinite(contribution.value)
            or type(contribution.weight) is not float
            or not isfinite(contribution.weight)
            or contribution.weight < 0
        ):
            return False
    return True


def _context_key(context: RewardContext) -> str:
    """The group's prompt and reference as canonical, type-strict JSON (1, 1.0 and true differ)."""
    return json.dumps([thaw(context.prompt), thaw(context.reference)], sort_keys=True, separators=(",", ":"))


def _finite(value: object) -> bool:
    """A finite Python float or int (not bool); ints too large for a float are not finite."""
    if type(value) is not float and type(value) is not int:
        return False
    try:
        return math.isfinite(float(value))  # type: ignore[arg-type]
    except OverflowError:
        return False


def _duplicate_id(group_id: str, candidates: list[RewardCandidate]) -> None:
    seen: set[str] = set()
    for index, candidate in enumerate(candidates):
        if candidate.trajectory_id in seen:
            problem = f"trajectory_id appears twice in the group (again at position {index})"
            raise _refusal(problem, group_id, candidate.trajectory_id, "duplicate-trajectory-id")
        seen.add(candidate.trajectory_id)


def _candidate(group_id: str, index: int, rollout: object) -> RewardCandidate:
    if type(rollout) is not dict and not isinstance(rollout, Mapping):
        problem = f"rollout at position {index} is a {type(rollout).__name__}, not a mapping"
        raise RewardContractError(problem, group_id=group_id, rule="rollout-type")
    trajectory_id = rollout.get("trajectory_id")
    if not isinstance(trajectory_id, str) or not trajectory_id:
        problem = f"rollout at position {index} has no trajectory_id (got {trajectory_id!r})"
        raise RewardContractError(problem, group_id=group_id, rule="missing-trajectory-id")
    rollout_group = rollout.get("group_id", group_id)
    completion = rollout.get("completion")
    token_count = rollout.get("completion_token_count")
    finish_reason = rollout.get("finish_reason")
    if rollout_group != group_id:
        message, rule = f"rollout says it belongs to group {rollout_group!r}", "group-id-disagreement"
    elif type(completion) is not str:
        message, rule = f"completion must be a string, got {type(completion).__name__}", "missing-completion"
    elif token_count is not None and (type(token_count) is not int or token_count < 0):
        message = f"completion_token_count must be a non-negative integer or null, got {token_count!r}"
        rule = "token-count"
    elif finish_reason is not None and type(finish_reason) is not str:
        message, rule = f"finish_reason must be a string or null, got {finish_reason!r}", "finish-reason"
    else:
        return build_candidate(trajectory_id, completion, token_count, finish_reason, rollout.get("media"))
    raise _refusal(message, group_id, trajectory_id, rule)
