"""The typed, frozen values that cross the boundary between rewardkit and a reward provider.

A provider receives one ``RewardGroupRequest`` holding every ordered candidate of one group and
returns one ``RewardGroupResult`` with one ``RewardCandidateResult`` per candidate, in order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType, MemberDescriptorType
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel

from rewardkit.contracts.errors import RegistrationError
from rewardkit.contracts.frozen import NotJSONError, freeze

KNOWN_NEEDS: tuple[str, ...] = ("prompt", "reference")
# Fields of each candidate a provider may need (what the rollout engine recorded): a candidate
# without one is refused with an error naming the field, unless the spec lists it in
# ``skip_when_absent`` (then the provider sees ``None`` and says itself why it skips).
CANDIDATE_NEEDS: tuple[str, ...] = ("completion_token_count", "finish_reason")
# Needs only an in-process caller can meet: ``media`` is an opaque per-candidate object (a latent
# tensor) handed over in memory; it is never serialised into JSONL, HTTP or an identity.
IN_PROCESS_NEEDS: tuple[str, ...] = ("media",)
Status = Literal["scored", "skipped", "error"]
Charge = Literal["deterministic", "nondeterministic"]

# Names become metric path segments (train/reward_provider/<provider>/<diagnostic>) and CLI words.
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")

LENGTH_VERDICT = "length"
# Diagnostic names the framework writes itself under reward_provider/<provider>/.
RESERVED_DIAGNOSTICS = frozenset({"sample_count"})
# Notes are shown beside a component's breakdown entry (``breakdown.<component>.<note>``), so a note
# may not take the name of a field the framework writes there.
RESERVED_NOTES = frozenset(
    {"status", "value", "weight", "contribution", "reason", "gate", "passed", "term", "terms"}
)
# A note is text derived from the candidate (the answer it gave): cut to this many characters, so
# a candidate that floods its answer cannot flood the results with it.
NOTE_MAX_CHARS = 200
_CUT_MARK = "…"


def is_length_verdict(finish_reason: str | None) -> bool:
    """True only when the engine said it cut the completion at its token budget (``None``, no
    verdict recorded, reads as "not known to be truncated", never as "stopped")."""
    return finish_reason == LENGTH_VERDICT


def check_name(kind: str, name: object) -> str:
    """Return ``name`` if it is a valid path segment, else raise ``RegistrationError``."""
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise RegistrationError(
            f"invalid {kind} name {name!r}: use 1-64 characters of lower-case letters, digits, "
            "'_', '-' or '.', starting with a letter or digit"
        )
    return name


@dataclass(frozen=True, slots=True)
class RewardCandidate:
    """One completion of a group and how the rollout engine said it ended. ``media`` (for providers needing
    ``"media"``, e.g. a video's final latent) is opaque: never frozen, compared or serialised."""

    trajectory_id: str
    completion: str
    completion_token_count: int | None = None
    finish_reason: str | None = None
    media: Any = field(default=None, compare=False, repr=False)

    @property
    def is_length_truncated(self) -> bool:
        """Whether the engine's verdict is exactly ``"length"`` (cut at the token budget)."""
        return is_length_verdict(self.finish_reason)


@dataclass(frozen=True, slots=True)
class RewardContext:
    """The inputs common to a whole group, deep-frozen; only the ones the provider declared."""

    prompt: Any = None
    reference: Any = None


@dataclass(frozen=True, slots=True)
class RewardGroupRequest:
    """Every ordered candidate of exactly one group, and the group's common inputs."""

    group_id: str
    candidates: tuple[RewardCandidate, ...]
    context: RewardContext = field(default_factory=RewardContext)


@dataclass(frozen=True, slots=True)
class MetricContribution:
    """A reporting-only value, never in the reward or the advantage; merged by weighted mean."""

    name: str
    value: float
    weight: float = 1.0


@dataclass(frozen=True, slots=True, init=False)
class RewardProviderResult:
    """What a provider says about one candidate: ``status`` ``scored`` (``terms`` holds every declared term),
    ``skipped`` (the reward does not apply to it; not an error) or ``error`` (it applies but could not be
    computed; the spec's ``onError`` decides); ``reason`` explains a skip or an error. ``charge`` marks a
    verdict for what the candidate's own text caused (see ``charged``). ``notes`` (declared names -> text,
    such as the answer a verifier extracted) are for people reading results: shown beside the
    component's breakdown entry, never read by a rule, never part of a reward or a metric; each text is
    cut to ``NOTE_MAX_CHARS`` characters."""

    terms: Mapping[str, float] = field(default_factory=dict)
    diagnostics: tuple[MetricContribution, ...] = ()
    status: Status = "scored"
    reason: str | None = None
    charge: Charge | None = None
    notes: Mapping[str, str] = field(default_factory=dict)

    def __init__(
        self,
        terms: Mapping[str, float] | None = None,
        diagnostics: tuple[MetricContribution, ...] = (),
        status: Status = "scored",
        reason: str | None = None,
        charge: Charge | None = None,
        notes: Mapping[str, str] | None = None,
    ) -> None:
        # By hand: the generated __init__ (object.__setattr__ per field) costs about twice as much,
        # once per candidate. The terms are copied (the caller's dict could still change), so a
        # result checked once stays valid.
        _set_terms(self, MappingProxyType(dict(terms or {})))
        _set_diagnostics(self, diagnostics if type(diagnostics) is tuple else tuple(diagnostics))
        _set_status(self, status)
        _set_reason(self, reason)
        _set_charge(self, charge)
        _set_notes(self, _NO_NOTES if not notes else MappingProxyType(_bounded_notes(notes)))

    @classmethod
    def skip(cls, reason: str, diagnostics: tuple[MetricContribution, ...] = ()) -> RewardProviderResult:
        """A result saying the reward does not apply to this candidate."""
        return cls(terms={}, diagnostics=diagnostics, status="skipped", reason=reason)

    @classmethod
    def fail(cls, reason: str, diagnostics: tuple[MetricContribution, ...] = ()) -> RewardProviderResult:
        """A result saying the reward applies but could not be computed (e.g. ``timeout``)."""
        return cls(terms={}, diagnostics=diagnostics, status="error", reason=reason)

    @classmethod
    def charged(
        cls,
        reason: str,
        diagnostic: str,
        worst: Mapping[str, float],
        *,
        deterministic: bool = True,
        diagnostics: tuple[MetricContribution, ...] = (),
    ) -> RewardProviderResult:
        """A verdict on the candidate for what its own text caused (a candidate can only hurt itself):
        ``scored``, every term at its ``worst`` value, ``reason`` set and diagnostic ``diagnostic`` = 1 added.
        An ``error`` is infrastructure: charge only on evidence the candidate caused the fault.
        ``deterministic`` evidence (a guard refused the text, a verdict its text asked for) stands as
        it is; a fault that could be the infrastructure's (a timeout, a crash, an unreadable verdict)
        is charged only once it reproduced beside a healthy canary (``rewardkit.scoring.reproduction``, whose
        ``Charged.result`` builds this result with the evidence)."""
        return cls(
            terms=worst,
            diagnostics=(*diagnostics, MetricContribution(diagnostic, 1.0)),
            reason=reason,
            charge="deterministic" if deterministic else "nondeterministic",
        )


def _slot_setters(cls: type, *names: str) -> tuple[Callable[[Any, Any], None], ...]:
    """The ``__set__`` of each named slot of ``cls``: writes that field even on a frozen value (read
    from ``__dict__``: a type checker sees ``cls.name`` as the field's value, not its slot)."""
    slots: list[MemberDescriptorType] = [cls.__dict__[name] for name in names]
    return tuple(slot.__set__ for slot in slots)


_set_terms, _set_diagnostics, _set_status, _set_reason, _set_charge, _set_notes = _slot_setters(
    RewardProviderResult, "terms", "diagnostics", "status", "reason", "charge", "notes"
)
_NO_NOTES: Mapping[str, str] = MappingProxyType({})


def _bounded_notes(notes: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``notes`` with every text cut to ``NOTE_MAX_CHARS`` characters (a cut text ends in
    ``…``); anything not a string is kept as given, for the bound adapter to refuse by name."""
    bounded = dict(notes)
    for name, text in bounded.items():
        if type(text) is str and len(text) > NOTE_MAX_CHARS:
            bounded[name] = text[: NOTE_MAX_CHARS - len(_CUT_MARK)] + _CUT_MARK
    return bounded


@dataclass(frozen=True, slots=True)
class RewardCandidateResult:
    """A provider result explicitly correlated with the candidate it scores."""

    trajectory_id: str
    result: RewardProviderResult


@dataclass(frozen=True, slots=True)
class RewardGroupResult:
    """One result per candidate of the request, in the request's order."""

    group_id: str
    items: tuple[RewardCandidateResult, ...]


@runtime_checkable
class RewardProvider(Protocol):
    """Anything with a synchronous, group-native ``evaluate``."""

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult: ...


@dataclass(frozen=True)
class RewardProviderSpec:
    """A catalog entry: how to build a provider and what it promises to return (every field is described in
    docs/writing_providers.md). ``factory(**params)`` must be deterministic, light, CPU-only and free of side
    effects (no network, no model loading): it runs in preflight, before any scoring. ``sandboxed`` declares a
    provider that runs candidate code in a sandbox (``rewardkit audit`` sends it destructive payloads); like
    ``cheap``, it changes neither scores nor identity. ``notes`` names the text notes its results may carry
    (``RewardProviderResult.notes``); they are shown in results and change neither scores nor identity."""

    name: str
    factory: Callable[..., RewardProvider]
    needs: tuple[str, ...]
    revision: str
    terms: tuple[str, ...]
    diagnostics: tuple[str, ...] = ()
    semantic_identity: Any = None
    description: str = ""
    params_schema: type[BaseModel] | None = None
    scoring_packages: tuple[str, ...] = ()
    runtime: tuple[str, ...] = ()
    runtime_identity: Callable[[Mapping[str, Any]], Any] | None = None
    cheap: bool = False
    sandboxed: bool = False
    skip_when_absent: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    # Top-level modules of an optional extra that scoring imports and registering does not, and what
    # installs them ("rewardkit-rl[rm]"): `rewardkit providers` says "needs <extra>" while one is missing.
    extra_modules: tuple[str, ...] = ()
    extra: str = ""
    # Whether a candidate's result depends only on its own answer and the group's prompt and reference,
    # the same every time, so that equal candidates are scored once and share a copy of the result
    # (docs/writing_providers.md#equal-answers-scored-once): True, or a callable that decides from the
    # built provider (a judge: only at temperature 0). Changes neither scores nor identity.
    cacheable: bool | Callable[[Any], bool] = False

    def __post_init__(self) -> None:
        check_name("provider", self.name)
        where = f"provider {self.name!r}"
        if type(self.cacheable) is not bool and not callable(self.cacheable):
            raise RegistrationError(
                f"{where}: cacheable must be True, False or a callable deciding from the built provider, "
                f"got {self.cacheable!r}"
            )
        for flag in ("cheap", "sandboxed"):
            if type(getattr(self, flag)) is not bool:
                raise RegistrationError(f"{where}: {flag} must be True or False, got {getattr(self, flag)!r}")
        if not callable(self.factory):
            raise RegistrationError(f"{where}: factory {self.factory!r} is not callable")
        schema = self.params_schema
        if schema is not None and not (isinstance(schema, type) and issubclass(schema, BaseModel)):
            raise RegistrationError(f"{where}: params_schema must be a pydantic model class, got {schema!r}")
        lists = ("needs", "terms", "diagnostics", "scoring_packages", "runtime", "skip_when_absent", "notes")
        for attr in lists:
            value = getattr(self, attr)
            if isinstance(value, str) or not isinstance(value, (tuple, list)):
                raise RegistrationError(f"{where}: {attr} must be a tuple of names, got {value!r}")
            object.__setattr__(self, attr, tuple(value))
        if not all(isinstance(item, str) and item.strip() for item in self.scoring_packages):
            raise RegistrationError(
                f"{where}: scoring_packages must be distribution names, got {self.scoring_packages!r}"
            )
        possible = KNOWN_NEEDS + CANDIDATE_NEEDS + IN_PROCESS_NEEDS
        unknown = [need for need in self.needs if need not in possible]
        if unknown:
            raise RegistrationError(f"{where}: unknown needs {unknown}; a provider may need {list(possible)}")
        lenient = [
            name for name in self.skip_when_absent if name not in self.needs or name not in CANDIDATE_NEEDS
        ]
        if lenient:
            raise RegistrationError(
                f"{where}: skip_when_absent {lenient} must be candidate fields it needs "
                f"({list(CANDIDATE_NEEDS)})"
            )
        if not isinstance(self.extra, str) or (self.extra_modules and not self.extra.strip()):
            raise RegistrationError(
                f"{where}: extra_modules {list(self.extra_modules)} need extra, what installs them "
                "(such as 'rewardkit-rl[rm]')"
            )
        if isinstance(self.extra_modules, str) or not all(
            isinstance(module, str) and module.isidentifier() for module in self.extra_modules
        ):
            raise RegistrationError(
                f"{where}: extra_modules must be a tuple of top-level module names, "
                f"got {self.extra_modules!r}"
            )
        object.__setattr__(self, "extra_modules", tuple(self.extra_modules))
        if self.runtime_identity is not None and not callable(self.runtime_identity):
            raise RegistrationError(
                f"{where}: runtime_identity must be callable, got {self.runtime_identity!r}"
            )
        if not isinstance(self.revision, str) or not self.revision.strip():
            raise RegistrationError(f"{where}: revision must be a non-empty string")
        if not self.terms:
            raise RegistrationError(f"{where}: declare at least one term")
        for attr in ("needs", "terms", "diagnostics", "runtime", "notes"):
            names = getattr(self, attr)
            for item in names:
                check_name(f"{where} {attr.removesuffix('s')} name", item)
            if len(set(names)) != len(names):
                raise RegistrationError(f"{where}: duplicate entries in {attr}: {names}")
        reserved = sorted(RESERVED_DIAGNOSTICS.intersection(self.diagnostics))
        if reserved:
            raise RegistrationError(f"{where}: diagnostic names {reserved} are reserved for the framework")
        taken = sorted(RESERVED_NOTES.intersection(self.notes))
        if taken:
            raise RegistrationError(
                f"{where}: note names {taken} are fields of the breakdown entry the notes are shown in; "
                f"choose other names (reserved: {sorted(RESERVED_NOTES)})"
            )
        try:
            freeze(self.semantic_identity, "$")
        except NotJSONError as error:
            raise RegistrationError(
                f"{where}: semantic_identity is not JSON at {error.path}: {error.reason} "
                "(use CredentialRef(...).identity() for credentials)"
            ) from None

    @property
    def default_term(self) -> str:
        """The term a composition reads when a component does not name one."""
        return self.terms[0]


# Hot-loop constructors for values the framework has already checked: writing the slots through
# their descriptors builds the same object in about half the time of the generated ``__init__``
# (one ``object.__setattr__`` per field). Never for values a provider hands in.
_new = object.__new__
_set_result_id, _set_result = _slot_setters(RewardCandidateResult, "trajectory_id", "result")


class _OpenCandidate(RewardCandidate):
    """A ``RewardCandidate`` under construction, its slots written as plain attributes; then made a
    ``RewardCandidate`` (same layout, so CPython allows the class change): half the cost of five
    descriptor writes. Both dunders must be the plain ones to get C-level attribute writes."""

    __slots__ = ()
    __setattr__ = object.__setattr__
    __delattr__ = object.__delattr__
    if TYPE_CHECKING:  # writable while it is open (the frozen class declares them read-only)
        trajectory_id: str
        completion: str
        completion_token_count: int | None
        finish_reason: str | None
        media: Any


def build_candidate(
    trajectory_id: str, completion: str, token_count: int | None, finish_reason: str | None, media: Any
) -> RewardCandidate:
    """``RewardCandidate(...)`` for fields already validated (the bound adapter's hot loop)."""
    candidate = _new(_OpenCandidate)
    candidate.trajectory_id = trajectory_id
    candidate.completion = completion
    candidate.completion_token_count = token_count
    candidate.finish_reason = finish_reason
    candidate.media = media
    frozen: RewardCandidate = candidate
    frozen.__class__ = RewardCandidate
    return frozen


def build_candidate_result(trajectory_id: str, result: RewardProviderResult) -> RewardCandidateResult:
    item = _new(RewardCandidateResult)
    _set_result_id(item, trajectory_id)
    _set_result(item, result)
    return item


_set_prompt, _set_reference = _slot_setters(RewardContext, "prompt", "reference")
_set_request_group, _set_request_candidates, _set_request_context = _slot_setters(
    RewardGroupRequest, "group_id", "candidates", "context"
)
_set_result_group, _set_result_items = _slot_setters(RewardGroupResult, "group_id", "items")


def build_context(prompt: Any, reference: Any) -> RewardContext:
    context = _new(RewardContext)
    _set_prompt(context, prompt)
    _set_reference(context, reference)
    return context


def build_request(
    group_id: str, candidates: tuple[RewardCandidate, ...], prompt: Any, reference: Any
) -> RewardGroupRequest:
    """``RewardGroupRequest(group_id, candidates, RewardContext(prompt, reference))``, values checked."""
    request = _new(RewardGroupRequest)
    _set_request_group(request, group_id)
    _set_request_candidates(request, candidates)
    _set_request_context(request, build_context(prompt, reference))
    return request


def build_group_result(group_id: str, items: tuple[RewardCandidateResult, ...]) -> RewardGroupResult:
    result = _new(RewardGroupResult)
    _set_result_group(result, group_id)
    _set_result_items(result, items)
    return result
