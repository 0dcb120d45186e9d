"""Composition of several reward components into one number: ``RewardSpec`` and ``compose``.

A ``RewardSpec`` lists components (a provider, its params, the term read from it, a weight and an
optional gate) and spec-wide rules (``floor``, ``onError``, ``clip``), which ``compose`` applies to
one candidate's per-component outcomes in this order (docs/composition.md tells them at length):

1. Under ``onError: raise`` (the default) any errored component fails the batch, before gates are
   looked at: a reward that silently trained as 0 during an outage would teach the wrong thing.
2. A gate that scored below its threshold, was skipped, or errored makes the total ``floor`` and
   ``gated`` true. The floor does not depend on any other component, so it wins over rule 4.
3. Every scored component adds ``weight * value`` (gates too); skipped components add nothing.
4. Errored components add nothing under ``zero``; under ``none`` they make the total ``None``.
5. ``clip`` bounds the total last (the floor included).

The per-component breakdown is always returned: reward hacking shows up there first.
``testdata/reward_vectors.json`` pins these rules for every implementation (in-process, service, Ray).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import add, itemgetter
from typing import Annotated, Any, Literal, NamedTuple, cast

from pydantic import (
    AllowInfNan,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from rewardkit.contracts import NAME_PATTERN, RewardProviderResult, check_name
from rewardkit.contracts.errors import RegistrationError, RewardkitError, nearest
from rewardkit.contracts.frozen import NotJSONError, freeze
from rewardkit.scoring.recent import LastTwo
from rewardkit.scoring.reproduction import DEFAULT_RERUNS_PER_BATCH

OnError = Literal["raise", "zero", "none"]
STATUSES: tuple[str, ...] = ("scored", "skipped", "error")
_OUTCOME_KEYS = frozenset(("status", "value", "reason"))
Outcome = tuple[str, Any, "str | None"]  # a checked (status, value, reason), what composition reads
_Breakdown = dict[str, dict[str, Any]]  # component name -> what it said and contributed


class CompositionError(RewardkitError):
    """Composition refused a spec or a candidate's component outcomes. ``component`` names the
    offending component, if any; ``breakdown`` holds the per-component breakdown when the outcomes
    were well-formed (``onError: raise``), so a failed batch still shows what every component said."""

    def __init__(
        self, message: str, *, component: str | None = None, breakdown: _Breakdown | None = None
    ) -> None:
        super().__init__(message)
        self.component = component
        self.breakdown = breakdown


class CompositionRowError(CompositionError):
    """A ``CompositionError`` from ``compose_rows``; ``position`` is the failing row's index."""

    def __init__(
        self,
        position: int,
        message: str,
        *,
        component: str | None = None,
        breakdown: _Breakdown | None = None,
    ) -> None:
        super().__init__(message, component=component, breakdown=breakdown)
        self.position = position


class RewardSpecError(CompositionError, ValueError):
    """A reward spec is invalid; the message lists every problem with its field path."""

    def __init__(self, message: str, *, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.problems = tuple(problems)


def _real_number(value: object) -> object:
    # pydantic's lax float would take True and "1.5"; a weight written as a string is a typo to report.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number, got {type(value).__name__} {value!r}")
    return value


FiniteNumber = Annotated[float, AllowInfNan(False), BeforeValidator(_real_number)]


class ComponentSpec(BaseModel):
    """One component of a reward: its provider, term and how it counts. ``name`` defaults to ``provider`` (two
    components on one provider need their own); ``RewardSpec.with_terms`` fills a ``None`` ``term``. A gate
    counts like any component and sends the total to the floor unless it scores at least ``threshold``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = ""
    provider: str
    params: dict[str, Any] = Field(default_factory=dict)
    term: str | None = None
    weight: FiniteNumber = 1.0
    gate: StrictBool = False
    threshold: FiniteNumber = 1.0

    @model_validator(mode="before")
    @classmethod
    def _default_name(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data.get("name") is None:
            data = {key: value for key, value in data.items() if key != "name"}
            provider = data.get("provider")
            # A bad provider name is reported once, under 'provider', not again under 'name'.
            if isinstance(provider, str) and NAME_PATTERN.match(provider):
                data["name"] = provider
        return data

    @field_validator("name", "provider", "term")
    @classmethod
    def _valid_names(cls, value: str | None, info: ValidationInfo) -> str | None:
        kind = "component" if info.field_name == "name" else str(info.field_name)
        try:
            return None if value is None else check_name(kind, value)
        except RegistrationError as error:
            raise ValueError(str(error)) from None

    @field_validator("params")
    @classmethod
    def _json_params(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            freeze(value, "params")
        except NotJSONError as error:
            raise ValueError(f"params must be JSON-compatible: {error}") from None
        return value


@dataclass(frozen=True, slots=True)
class _Plan:
    """What ``compose`` needs from a spec, precomputed once so the hot path skips pydantic."""

    names: tuple[str, ...]
    name_set: frozenset[str]
    floor: float
    on_error: str
    clip: tuple[float, float] | None
    columns: tuple[tuple[str, float, bool, float], ...]  # (name, weight, gate, threshold) per component


BREAKER_DEPRECATED = (
    "the reward spec's 'breaker' field is deprecated and ignored: a charge now stands only when its "
    "fault reproduced beside a healthy canary (see 'reruns' and docs/composition.md); remove it, "
    "it is refused from 0.3"
)


class RerunSpec(BaseModel):
    """How many candidates one batch may score again to see whether a fault reproduces before it is
    charged (``rewardkit.scoring.reproduction``); past it, a canary alone decides. Operator-owned."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    per_batch: int = Field(default=DEFAULT_RERUNS_PER_BATCH, ge=0)


class RewardSpec(BaseModel):
    """How components combine into one reward; validate once, then ``compose`` per candidate. Takes
    ``onError`` or ``on_error``; ``clip`` is ``[lo, hi]``, ``lo <= hi``. ``parse(data)`` raises
    ``RewardSpecError`` listing every problem with its path; ``model_validate`` pydantic's ``ValidationError``
    (full paths in a larger pydantic config)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    components: tuple[ComponentSpec, ...]
    floor: FiniteNumber = 0.0
    on_error: OnError = Field(default="raise", alias="onError")
    clip: tuple[FiniteNumber, FiniteNumber] | None = None
    reruns: RerunSpec = Field(default_factory=RerunSpec)

    _plan: _Plan = PrivateAttr()

    @model_validator(mode="before")
    @classmethod
    def _one_spelling(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "onError" in data and "on_error" in data:
            raise ValueError("give either 'onError' or 'on_error', not both")
        if isinstance(data, Mapping) and "breaker" in data:
            # Charges are decided by reproduction beside a canary now, never voided by their share
            # of a batch (a share the candidates control); removed in 0.3.
            warnings.warn(BREAKER_DEPRECATED, FutureWarning, stacklevel=2)
            data = {key: value for key, value in data.items() if key != "breaker"}
        return data

    @field_validator("components")
    @classmethod
    def _not_empty(cls, value: tuple[ComponentSpec, ...]) -> tuple[ComponentSpec, ...]:
        if not value:
            raise ValueError("a reward spec needs at least one component")
        return value

    @field_validator("clip", mode="before")
    @classmethod
    def _pair(cls, value: Any) -> Any:
        if value is not None and (isinstance(value, (str, Mapping)) or not isinstance(value, Sequence)):
            raise ValueError(f"clip must be a list [lo, hi], got {value!r}")
        if value is not None and len(value) != 2:
            raise ValueError(f"clip must be a list of two numbers [lo, hi], got {list(value)!r}")
        return value

    @field_validator("clip")
    @classmethod
    def _ordered_clip(cls, value: tuple[float, float] | None) -> tuple[float, float] | None:
        if value is not None and value[0] > value[1]:
            raise ValueError(f"clip lower bound {value[0]!r} is above upper bound {value[1]!r}")
        return value

    @model_validator(mode="after")
    def _unique_names(self) -> RewardSpec:
        seen: dict[str, int] = {}
        for index, component in enumerate(self.components):
            if component.name in seen:
                raise ValueError(
                    f"duplicate component name {component.name!r} (components[{seen[component.name]}] "
                    f"and components[{index}]); give each component on the same provider its own 'name'"
                )
            seen[component.name] = index
        return self

    def model_post_init(self, context: Any, /) -> None:
        names = tuple(c.name for c in self.components)
        self._plan = _Plan(
            names=names,
            name_set=frozenset(names),
            floor=float(self.floor),
            on_error=self.on_error,
            clip=None if self.clip is None else (float(self.clip[0]), float(self.clip[1])),
            columns=tuple((c.name, float(c.weight), c.gate, float(c.threshold)) for c in self.components),
        )

    @classmethod
    def parse(cls, data: RewardSpec | Mapping[str, Any]) -> RewardSpec:
        """Return ``data`` as a validated spec, or raise ``RewardSpecError`` naming every problem."""
        if isinstance(data, RewardSpec):
            return data
        if not isinstance(data, Mapping):
            raise RewardSpecError(
                f"a reward spec must be a mapping or a RewardSpec, got {type(data).__name__}"
            )
        try:
            return cls.model_validate(dict(data))
        except ValidationError as error:
            problems = _describe_validation_error(error)
            raise RewardSpecError("invalid reward spec: " + "; ".join(problems), problems=problems) from None

    @classmethod
    def single(
        cls, provider: str, params: Mapping[str, Any] | None = None, term: str | None = None
    ) -> RewardSpec:
        """A spec of one component: the provider's term, weight 1, no gate, no clip."""
        component: dict[str, Any] = {"provider": provider, "params": dict(params or {}), "term": term}
        return cls.parse({"components": [component]})

    @property
    def names(self) -> tuple[str, ...]:
        """Component names in spec order (the order totals are summed in)."""
        return self._plan.names

    def with_terms(self, resolver: Callable[[str], str]) -> RewardSpec:
        """A spec with each unset ``term`` set to ``resolver(provider)``, the provider's default term."""
        if all(c.term is not None for c in self.components):
            return self
        data = self.to_json()
        for component in data["components"]:
            if component["term"] is None:
                term = resolver(component["provider"])
                if not isinstance(term, str) or not term:
                    raise RewardSpecError(
                        f"component {component['name']!r}: the term resolver returned {term!r} "
                        f"for provider {component['provider']!r}; expected a term name"
                    )
                component["term"] = term
        return RewardSpec.parse(data)

    def to_json(self) -> dict[str, Any]:
        """The spec as JSON (with ``onError`` spelt as in config files; ``reruns`` only when it is
        not the default, so a spec's JSON and every identity built on it stay what they were)."""
        data = self.model_dump(mode="json", by_alias=True)
        if self.reruns == RerunSpec():
            del data["reruns"]
        return data


def _describe_validation_error(error: ValidationError) -> list[str]:
    problems = []
    for item in error.errors(include_url=False):
        path = _path(item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = f"unknown field {item['loc'][-1]!r}" + _suggest(item["loc"])
            path = _path(item["loc"][:-1]) or "spec"
        elif item["type"] in ("finite_number", "bool_type", "literal_error", "string_type"):
            message += f", got {item['input']!r}"
        problems.append(f"{path}: {message}" if path else message)
    return problems


def _path(loc: Sequence[int | str]) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).removeprefix(".")


def _suggest(loc: Sequence[int | str]) -> str:
    unknown = str(loc[-1])
    model: type[BaseModel] = ComponentSpec if "components" in loc else RewardSpec
    known = [f.alias or name for name, f in model.model_fields.items()]
    if model is RewardSpec:
        known.append("on_error")
    close = nearest(unknown, known)
    hint = f"; did you mean {close!r}?" if close is not None else ""
    return f"{hint} (known fields: {', '.join(sorted(known))})"


@dataclass(frozen=True, slots=True)
class ComponentOutcome:
    """What one component said about one candidate: ``scored`` with a value, ``skipped`` or ``error``."""

    status: Literal["scored", "skipped", "error"]
    value: float | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        _check_outcome("?", self.status, self.value, self.reason)

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "value": self.value, "reason": self.reason}


def _check_outcome(name: str, status: object, value: object, reason: object) -> None:
    problem = None
    if status not in STATUSES:
        problem = f"status {status!r} is not one of {', '.join(STATUSES)}"
    elif status != "scored":
        if value is not None:
            problem = f"a {status} outcome carries no value, got {value!r}"
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        problem = f"a scored outcome needs a numeric 'value', got {value!r}"
    elif not math.isfinite(value):
        problem = f"scored value {value!r} is not finite"
    if problem is None and reason is not None and not isinstance(reason, str):
        problem = f"reason must be a string, got {reason!r}"
    if problem is not None:
        raise CompositionError(f"component {name!r}: {problem}", component=name)


class Composition(NamedTuple):
    """One candidate's composed reward: ``total`` (``None`` under ``onError: none`` with an error), whether a
    gate sent it to the floor, and what each component said and contributed (a named tuple: one per rollout,
    several times faster to build than a frozen dataclass)."""

    total: float | None
    gated: bool
    breakdown: _Breakdown

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "gated": self.gated,
            "breakdown": {name: dict(entry) for name, entry in self.breakdown.items()},
        }


_new_tuple = tuple.__new__


def compose(
    spec: RewardSpec | Mapping[str, Any], components: Mapping[str, ComponentOutcome | Mapping[str, Any]]
) -> Composition:
    """Compose one candidate's component outcomes under ``spec`` (rules in the module docstring):
    ``components`` maps each component name to a ``ComponentOutcome`` or a dict ``{"status":
    "scored"|"skipped"|"error", "value"?: number, "reason"?: str}``. Pass a ``RewardSpec`` in hot paths (a
    dict spec is validated each call). ``CompositionError``: a bad spec (``RewardSpecError``), unknown or
    missing components, a malformed outcome, an error under ``onError: raise``, an overflow."""
    # Straight to pydantic's private store: `model._plan` goes through BaseModel.__getattr__, which
    # costs microseconds per call (measured with benchmarks/compose_speed.py).
    parsed = spec if type(spec) is RewardSpec else RewardSpec.parse(spec)
    plan: _Plan = parsed.__pydantic_private__["_plan"]  # type: ignore[index]
    if not isinstance(components, Mapping):
        raise CompositionError(
            f"component outcomes must be a mapping of component name to outcome, "
            f"got {type(components).__name__}"
        )
    if len(components) != len(plan.names) or not plan.name_set.issuperset(components):
        _mismatched_names(plan, components)
    checked: list[Outcome] = []
    for name in plan.names:
        outcome = components[name]
        if type(outcome) is ComponentOutcome:
            checked.append((outcome.status, outcome.value, outcome.reason))
        elif isinstance(outcome, Mapping):
            if not _OUTCOME_KEYS.issuperset(outcome):
                extra = sorted(set(outcome) - _OUTCOME_KEYS)
                raise CompositionError(
                    f"component {name!r}: unknown outcome fields {extra}; an outcome has "
                    "'status', 'value' and 'reason'",
                    component=name,
                )
            status, value, reason = outcome.get("status"), outcome.get("value"), outcome.get("reason")
            _check_outcome(name, status, value, reason)  # so status is a known str, reason one or None
            checked.append((cast(str, status), value, cast("str | None", reason)))
        else:
            raise CompositionError(
                f"component {name!r}: outcome must be a mapping or ComponentOutcome, "
                f"got {type(outcome).__name__}",
                component=name,
            )
    return compose_rows(parsed, (checked,))[0]


isfinite = math.isfinite  # a module global: read for every candidate
_GATED, _ERRORED, _UNKNOWN = 1, 2, 4  # the marks an outcome may put on its candidate
_Said = tuple[dict[str, Any], float, int]  # an outcome's breakdown entry, contribution and marks
_NOTHING_SAID: _Said = ({}, 0.0, _UNKNOWN)


def _said(status: str, value: Any, reason: str | None, weight: float, gate: bool, threshold: float) -> _Said:
    """One checked outcome under its component: the breakdown entry, the contribution to the total and its
    marks (``_GATED``, ``_ERRORED``; ``_UNKNOWN`` for a status none of the three, which says nothing else)."""
    if status == "scored":
        value = float(value)
        contribution = weight * value
    elif status == "skipped" or status == "error":
        value = None
        contribution = 0.0
    else:
        return _NOTHING_SAID
    entry: dict[str, Any] = {
        "status": status,
        "value": value,
        "weight": weight,
        "contribution": contribution,
        "reason": reason,
        "gate": gate,
    }
    marks = _ERRORED if status == "error" else 0
    if gate:
        passed = value is not None and value >= threshold
        entry["passed"] = passed
        if not passed:
            marks |= _GATED
    return entry, contribution, marks


def _finished(
    plan: _Plan, position: int, total: float, gated: bool, errored: bool, breakdown: _Breakdown
) -> float | None:
    """One candidate's total from its weighted sum and marks under rules 1, 2, 4 and 5 (and a sum
    that overflowed), as every composition path ends a row. Raises ``CompositionRowError``."""
    on_error = plan.on_error
    if errored and on_error == "raise":
        errors = [name for name, entry in breakdown.items() if entry["status"] == "error"]
        details = ", ".join(f"{n!r} ({breakdown[n]['reason'] or 'no reason given'})" for n in errors)
        raise CompositionRowError(
            position,
            f"component {details} errored and onError is 'raise', so the batch fails; "
            f"to score through component errors set the spec's onError to 'zero' or 'none' (rl.reward.spec.onError; a config with rl.reward.provider has none: write it as rl.reward.spec: {{components: [{{provider: {errors[0]}}}], onError: zero}}, params and term going in the component)",  # noqa: E501
            component=errors[0],
            breakdown=breakdown,
        )
    if gated:
        result = plan.floor
    elif errored and on_error == "none":
        return None
    elif isfinite(total):
        result = total
    else:
        raise CompositionRowError(
            position,
            f"the weighted sum is not finite ({total!r}): it overflowed; contributions: "
            + ", ".join(f"{n}={e['contribution']!r}" for n, e in breakdown.items()),
            breakdown=breakdown,
        )
    if plan.clip is not None:
        low, high = plan.clip
        result = low if result < low else high if result > high else result
    return result


def compose_rows(spec: RewardSpec, rows: Iterable[Sequence[Outcome]]) -> list[Composition]:
    """Compose many candidates: a row of checked outcomes per candidate, one per component in spec order
    (``compose`` checks its input, then comes here); raises ``CompositionRowError`` naming the row."""
    plan: _Plan = spec.__pydantic_private__["_plan"]  # type: ignore[index]
    columns = plan.columns
    out: list[Composition] = []
    for position, outcomes in enumerate(rows):
        breakdown: _Breakdown = {}
        total = 0.0
        marked = 0
        for (status, value, reason), (name, weight, gate, threshold) in zip(outcomes, columns, strict=True):
            entry, contribution, marks = _said(status, value, reason, weight, gate, threshold)
            if marks & _UNKNOWN:
                raise CompositionRowError(
                    position, f"component {name!r}: status {status!r} is not one of {', '.join(STATUSES)}"
                )
            total += contribution  # 0.0 unless scored: a total that starts at 0.0 never changes by it
            marked |= marks
            breakdown[name] = entry
        gated = bool(marked & _GATED)
        result = _finished(plan, position, total, gated, bool(marked & _ERRORED), breakdown)
        out.append(_new_tuple(Composition, (result, gated, breakdown)))
    return out


def compose_columns(spec: RewardSpec, columns: Sequence[Sequence[Outcome]]) -> list[Composition]:
    """``compose_rows`` over transposed rows (a column of checked outcomes per component, as batch paths
    collect them), a component at a time; totals still add left to right and end in ``_finished``, so equal
    ``compose_rows``'s. An unknown status goes to ``compose_rows``, naming the first failing row."""
    totals, gated, breakdowns = compose_parts(spec, columns)
    return [_new_tuple(Composition, row) for row in zip(totals, gated, breakdowns)]


class ComposedParts(NamedTuple):
    """A batch's compositions as three columns (what ``compose_parts`` returns), in batch order."""

    totals: list[float | None]
    gated: list[bool]
    breakdowns: list[_Breakdown]

    @classmethod
    def of(cls, composed: Sequence[Composition]) -> ComposedParts:
        return cls([c.total for c in composed], [c.gated for c in composed], [c.breakdown for c in composed])


def _saying(weight: float, gate: bool, threshold: float) -> Callable[[Outcome], _Said]:
    def say(outcome: Outcome) -> _Said:
        return _said(*outcome, weight, gate, threshold)

    return say


_entry, _contribution, _marks = itemgetter(0), itemgetter(1), itemgetter(2)


def compose_parts(spec: RewardSpec, columns: Sequence[Sequence[Outcome]]) -> ComposedParts:
    """``compose_columns`` without a ``Composition`` per candidate: the totals, gated flags and
    breakdowns as columns, for a caller that builds its own per-candidate records from them."""
    plan: _Plan = spec.__pydantic_private__["_plan"]  # type: ignore[index]
    if len(columns) != len(plan.columns):
        raise CompositionError(f"expected {len(plan.columns)} component columns, got {len(columns)}")
    count = len(columns[0]) if columns else 0
    if any(len(column) != count for column in columns):
        raise CompositionError(f"component columns differ in length: {[len(column) for column in columns]}")
    sums = [0.0] * count
    entry_columns: list[list[dict[str, Any]]] = []
    marked: dict[int, int] = {}  # row -> the marks its outcomes put on it
    for (_, weight, gate, threshold), column in zip(plan.columns, columns):
        # A yes/no rule's column holds two immutable outcomes many times: each is worked out once,
        # and every row gets its own copy of the breakdown entry.
        said = LastTwo(_saying(weight, gate, threshold)).map(column)
        entry_columns.append(list(map(dict.copy, map(_entry, said))))
        sums = list(map(add, sums, map(_contribution, said)))
        marks = list(map(_marks, said))
        if any(marks):
            for position, mark in enumerate(marks):
                if mark:
                    marked[position] = marked.get(position, 0) | mark
    if any(mark & _UNKNOWN for mark in marked.values()):
        return ComposedParts.of(compose_rows(spec, zip(*columns)))  # raises, naming the first failing row
    if len(entry_columns) == 1:
        (name,), (entries,) = plan.names, entry_columns
        breakdowns = [{name: entry} for entry in entries]
    else:
        breakdowns = [dict(zip(plan.names, row)) for row in zip(*entry_columns)]
    totals: list[float | None] = list(sums)
    gated_flags = [False] * count
    # Only a marked row, an overflowed sum or a clip can make a total other than its sum.
    if plan.clip is not None:
        rows: Iterable[int] = range(count)
    elif not all(map(isfinite, sums)):
        rows = sorted({*marked, *(position for position, total in enumerate(sums) if not isfinite(total))})
    else:
        rows = sorted(marked)
    for position in rows:
        mark = marked.get(position, 0)
        gated = bool(mark & _GATED)
        totals[position] = _finished(
            plan, position, sums[position], gated, bool(mark & _ERRORED), breakdowns[position]
        )
        gated_flags[position] = gated
    return ComposedParts(totals, gated_flags, breakdowns)


def read_outcomes(results: Iterable[RewardProviderResult], term: str) -> list[Outcome]:
    """What one component says about each of its provider's (checked) results: ``(status, value, reason)``,
    the value of ``term`` as a float when scored; what every batch path builds its columns from."""

    def outcome(result: RewardProviderResult) -> Outcome:
        status = result.status
        if status == "scored":
            value = result.terms[term]
            return (status, value if type(value) is float else float(value), result.reason)
        return (status, None, result.reason)

    # A yes/no rule's results are two shared objects: each is read once.
    return LastTwo(outcome).map(results)


def _mismatched_names(plan: _Plan, components: Mapping[str, Any]) -> None:
    unknown = sorted(str(name) for name in components if name not in plan.name_set)
    missing = [name for name in plan.names if name not in components]
    parts = []
    if unknown:
        parts.append(f"unknown component(s) {unknown}")
    if missing:
        parts.append(f"missing outcome for component(s) {missing}")
    raise CompositionError(
        f"component outcomes do not match the spec: {'; '.join(parts)} (the spec has {list(plan.names)})",
        component=next(iter(unknown or missing), None),
    )


__all__ = [
    "ComponentOutcome",
    "ComponentSpec",
    "ComposedParts",
    "Composition",
    "CompositionError",
    "RewardSpec",
    "RewardSpecError",
    "compose",
    "compose_columns",
    "compose_parts",
    "compose_rows",
    "read_outcomes",
]
