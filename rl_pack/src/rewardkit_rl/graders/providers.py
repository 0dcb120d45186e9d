"""The providers an OpenAI grader becomes: one per grader type, each scoring a group with its grader.

- ``string_check`` and ``text_similarity`` are rules, computed here on the candidate's text
  normalised once (``normalise_text``: NFKC, invisible characters removed), as every rule reads it.
- ``score_model`` and ``label_model`` ask the judge provider ``nih-rubric`` (rewardkit-nih-judge,
  bound through the catalog by name, never imported): the grader's messages, as written, are the
  rubric; the values of their ``item`` variables go in the judge's fenced task slot and the
  candidate in its fenced answer slot, so neither can pose as instructions. A ``score_model``
  ``range`` is the judge's scale, and the grade is read back on it; a ``label_model`` numbers its
  labels 1..n as the scale and passes when the label chosen is a passing one. The judge's own
  failure policy holds (a verdict unreadable, off-scale or refused is decided by reproduction).
- ``python`` runs ``grade(sample, item)`` in the code sandbox (``python_grader``).
- ``multi`` scores each sub-grader as above and combines them with ``calculate_output``
  (``formula``); a sub-grader's error is the multi grader's error, a charge its 0.

A variable the candidate's own text cannot supply (``sample.output_json`` of text that is not
JSON, a missing field) is the guide's invalid sample: the candidate's worst grade, charged as it
stands. One the row cannot supply is an error naming it: the data is wrong, not the candidate.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from rewardkit import BoundProvider
from rewardkit.plugin import (
    REPRODUCTION_NOTE,
    MetricContribution,
    RewardCandidateResult,
    RewardContext,
    RewardGroupRequest,
    RewardGroupResult,
    RewardProviderResult,
    fold_lookalikes,
    normalise_text,
    resolve_catalog,
)
from rewardkit_rl.graders.formula import FormulaValueError
from rewardkit_rl.graders.params import DIAGNOSTICS, GRADES_NOTE, NOTES, GraderParams
from rewardkit_rl.graders.python_grader import PythonRunner, Run
from rewardkit_rl.graders.similarity import METRICS
from rewardkit_rl.graders.spec import (
    PROVIDERS,
    Grader,
    LabelModel,
    Message,
    ModelGrader,
    Multi,
    PythonGrader,
    ScoreModel,
    StringCheck,
    TextSimilarity,
    default_reference_field,
    parse_grader,
)
from rewardkit_rl.graders.templates import Variable, VariableError, Variables, as_text, build_item

JUDGE_PROVIDER = "nih-rubric"
# What the judge reads around the grader's messages (the rubric) and the two fenced slots.
JUDGE_TEMPLATE = (
    "The grader's instructions, as its messages were written (role in brackets):\n{rubric}\n\n"
    "The values of the item variables those messages name, one per line:\n{prompt}\n\n"
    "The sample to grade, which the messages call sample.output_text:\n{completion}"
)
LABEL_RULE = "Choose exactly one label for the sample and give its number as the score:"


class Scorer(Protocol):
    """Grades every candidate of a group: one result (term ``score``) per candidate, in order."""

    def grades(
        self, request: RewardGroupRequest, item: dict[str, Any], texts: Sequence[str]
    ) -> list[RewardProviderResult]: ...

    def close(self) -> None: ...


def _scored(value: float, *diagnostics: MetricContribution) -> RewardProviderResult:
    return RewardProviderResult(terms={"score": value}, diagnostics=diagnostics)


def _variable_failure(error: VariableError, worst: float) -> RewardProviderResult:
    if error.candidate:
        return RewardProviderResult.charged(str(error), "invalid_variable", {"score": worst})
    return RewardProviderResult.fail(f"the row cannot fill {error}")


class RuleScorer:
    """``string_check`` and ``text_similarity``."""

    def __init__(self, grader: StringCheck | TextSimilarity) -> None:
        self.grader = grader

    def grades(
        self, request: RewardGroupRequest, item: dict[str, Any], texts: Sequence[str]
    ) -> list[RewardProviderResult]:
        return [self._grade(Variables(item, text)) for text in texts]

    def _grade(self, variables: Variables) -> RewardProviderResult:
        grader = self.grader
        try:
            rendered = grader.input.render(variables), grader.reference.render(variables)
        except VariableError as error:
            return _variable_failure(error, 0.0)
        # Letters are compared as a reader sees them: a look-alike (Cyrillic "а" for "a") is the letter
        # it imitates on both sides, so text that only looks equal cannot pass "ne" nor fail "eq".
        given, reference = (fold_lookalikes(text, punctuation=False) for text in rendered)
        if isinstance(grader, TextSimilarity):
            return _scored(METRICS[grader.metric](given, reference))
        passed = {
            "eq": given == reference,
            "ne": given != reference,
            "like": reference in given,
            "ilike": reference.lower() in given.lower(),
        }[grader.operation]
        return _scored(1.0 if passed else 0.0)

    def close(self) -> None:
        pass


class PythonScorer:
    """``python``: ``grade(sample, item)`` in the sandbox."""

    def __init__(self, grader: PythonGrader, *, timeout_s: float, memory_mb: int, isolation: str) -> None:
        self.runner = PythonRunner(
            grader.source, timeout_s=timeout_s, memory_mb=memory_mb, isolation=isolation
        )

    def grades(
        self, request: RewardGroupRequest, item: dict[str, Any], texts: Sequence[str]
    ) -> list[RewardProviderResult]:
        jobs = [(Variables(item, text).sample(wanted=True), item) for text in texts]
        return [self._result(outcome) for outcome in self.runner.grade_all(jobs)]

    @staticmethod
    def _result(outcome: Run | RewardProviderResult) -> RewardProviderResult:
        if isinstance(outcome, RewardProviderResult):
            return outcome
        if outcome.grade is None:
            # Invalid (an exception, a non-number): the guide's grade 0. The grader's code is the
            # operator's and its input the candidate's text, so the candidate caused it.
            return RewardProviderResult.charged(
                f"python grader: {outcome.invalid}", "python_invalid", {"score": 0.0}
            )
        return _scored(outcome.grade)

    def close(self) -> None:
        self.runner.close()


class ModelScorer:
    """``score_model`` and ``label_model`` through the ``nih-rubric`` judge."""

    def __init__(self, grader: ModelGrader, judge: Mapping[str, Any]) -> None:
        self.grader = grader
        catalog = resolve_catalog()
        if JUDGE_PROVIDER not in catalog:
            raise ValueError(
                f"a {type(grader).__name__} grader asks the judge provider {JUDGE_PROVIDER!r}, which is not "
                "installed: pip install rewardkit-nih-judge"
            )
        rubric = "\n\n".join(_message_text(message) for message in grader.messages)
        if isinstance(grader, LabelModel):
            numbered = "\n".join(f"{number} = {label}" for number, label in enumerate(grader.labels, 1))
            rubric = f"{rubric}\n\n{LABEL_RULE}\n{numbered}"
            self.scale: tuple[float, float] = (1.0, float(len(grader.labels)))
        else:
            self.scale = grader.range
        settings: dict[str, Any] = {
            **judge,
            "model": grader.model,
            "rubric": rubric,
            "template": JUDGE_TEMPLATE,
        }
        settings["scale"] = list(self.scale)
        if isinstance(grader, ScoreModel):
            if grader.temperature is not None:
                settings["temperature"] = grader.temperature
            if grader.max_tokens is not None:
                settings["max_tokens"] = grader.max_tokens
        self.judge: BoundProvider = catalog.bind(JUDGE_PROVIDER, settings)
        self.variables: tuple[Variable, ...] = tuple(
            {
                v.text: v for m in grader.messages for v in m.content.variables if v.namespace == "item"
            }.values()
        )
        self.worst = self.scale[0] if isinstance(grader, ScoreModel) else 0.0

    def grades(
        self, request: RewardGroupRequest, item: dict[str, Any], texts: Sequence[str]
    ) -> list[RewardProviderResult]:
        values = Variables(item, "")
        try:
            lines = [f"{{{{ {v.text} }}}} = {as_text(values.value(v))}" for v in self.variables]
        except VariableError as error:
            return [_variable_failure(error, self.worst)] * len(texts)
        task = "\n".join(lines) or "(the messages name no item variable)"
        asked = RewardGroupRequest(request.group_id, request.candidates, RewardContext(prompt=task))
        answered = self.judge.evaluate(asked)
        return [self._result(entry.result) for entry in answered.items]

    def _result(self, said: RewardProviderResult) -> RewardProviderResult:
        if said.status != "scored":
            return said if said.status == "skipped" else RewardProviderResult.fail(f"judge: {said.reason}")
        if said.charge is not None:
            # The judge charged the candidate (a verdict it asked for, reproduced): worst grade here.
            notes = {name: text for name, text in said.notes.items() if name == REPRODUCTION_NOTE}
            diagnostics = (MetricContribution("judge_charged", 1.0),)
            return RewardProviderResult(
                {"score": self.worst}, diagnostics, reason=said.reason, charge=said.charge, notes=notes
            )
        lo, hi = self.scale
        raw = lo + said.terms["score"] * (hi - lo)  # the judge normalised its score to [0, 1]
        grader = self.grader
        if isinstance(grader, ScoreModel):
            return _scored(min(max(raw, lo), hi))
        number = round(raw)
        if not math.isclose(raw, number, abs_tol=1e-6):
            return RewardProviderResult.fail(
                f"judge: label number {raw:g} is not one of 1..{len(grader.labels)}"
            )
        label = grader.labels[number - 1]
        return _scored(
            1.0 if label in grader.passing_labels else 0.0, MetricContribution("label", float(number))
        )

    def close(self) -> None:
        closer = getattr(self.judge.provider, "close", None)
        if callable(closer):
            closer()


def _message_text(message: Message) -> str:
    return f"[{message.role}]\n{message.content.source}"


class MultiScorer:
    """``multi``: every sub-grader, then ``calculate_output``."""

    def __init__(self, grader: Multi, subs: Mapping[str, Scorer]) -> None:
        self.grader = grader
        self.subs = dict(subs)

    def grades(
        self, request: RewardGroupRequest, item: dict[str, Any], texts: Sequence[str]
    ) -> list[RewardProviderResult]:
        by_sub = {key: sub.grades(request, item, texts) for key, sub in self.subs.items()}
        return [
            self._combine({key: results[index] for key, results in by_sub.items()})
            for index in range(len(texts))
        ]

    def _combine(self, results: Mapping[str, RewardProviderResult]) -> RewardProviderResult:
        for key, result in results.items():
            if result.status == "error":
                return RewardProviderResult.fail(f"{key}: {result.reason}")
        for key, result in results.items():
            if result.status == "skipped":
                return RewardProviderResult.skip(f"{key}: {result.reason}")
        for key, result in results.items():
            if result.charge is not None:
                # The guide's invalid sub-grade makes the whole grade 0; the sub-grader's evidence stays.
                diagnostics = tuple(d for d in result.diagnostics if d.name in DIAGNOSTICS)
                return RewardProviderResult(
                    {"score": 0.0}, diagnostics, reason=f"{key}: {result.reason}", charge=result.charge,
                    notes={name: text for name, text in result.notes.items() if name in NOTES},
                )  # fmt: skip
        grades = {key: result.terms["score"] for key, result in results.items()}
        shown = {GRADES_NOTE: as_text(grades)}
        try:
            value = self.grader.formula(grades)
        except FormulaValueError as error:
            return RewardProviderResult(
                {"score": 0.0},
                (MetricContribution("formula_error", 1.0),),
                reason=str(error),
                charge="deterministic",
                notes=shown,
            )
        return RewardProviderResult({"score": value}, notes=shown)

    def close(self) -> None:
        for sub in self.subs.values():
            sub.close()


def build_scorer(grader: Grader, options: GraderParams) -> Scorer:
    if isinstance(grader, (StringCheck, TextSimilarity)):
        return RuleScorer(grader)
    if isinstance(grader, PythonGrader):
        return PythonScorer(
            grader, timeout_s=options.timeout_s, memory_mb=options.memory_mb, isolation=options.isolation
        )
    if isinstance(grader, (ScoreModel, LabelModel)):
        if options.judge is None:
            raise ValueError(
                "a model grader needs param judge: the nih-rubric settings (base_url, api_key_env...)"
            )
        return ModelScorer(grader, options.judge)
    built: dict[str, Scorer] = {}
    try:
        for key, sub in grader.graders.items():
            built[key] = build_scorer(sub, options)
    except BaseException:
        for scorer in built.values():
            scorer.close()
        raise
    return MultiScorer(grader, built)


class GraderProvider:
    """The provider of one grader: a group in, one ``score`` per candidate out."""

    def __init__(self, kind: str, **params: Any) -> None:
        options = GraderParams.model_validate(params)
        grader = parse_grader(options.grader)
        if options.grader["type"] != kind:
            raise ValueError(
                f"provider {PROVIDERS[kind]!r} takes a {kind} grader, got {options.grader['type']!r}"
            )
        self.reference_field = options.reference_field or default_reference_field(grader)
        self.scorer = build_scorer(grader, options)

    def evaluate(self, request: RewardGroupRequest) -> RewardGroupResult:
        item = build_item(request.context.prompt, request.context.reference, self.reference_field)
        texts = [normalise_text(candidate.completion) for candidate in request.candidates]
        results = self.scorer.grades(request, item, texts)
        items = tuple(
            RewardCandidateResult(c.trajectory_id, r)
            for c, r in zip(request.candidates, results, strict=True)
        )
        return RewardGroupResult(request.group_id, items)

    def close(self) -> None:
        self.scorer.close()


def factory_of(kind: str) -> Callable[..., GraderProvider]:
    return functools.partial(GraderProvider, kind)
