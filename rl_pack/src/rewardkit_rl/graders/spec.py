"""OpenAI grader specs read and checked: the six types, their fields, their templates.

Fields follow openai-python's ``types/graders`` and the graders guide (notes: reward-protocols.md,
section 3). Every field a type does not take is an error naming it and where it is
(``grader.graders.email_ok: unsupported field(s) ['foo'] ...``); so is every variable or value this
import cannot honour. Two fields OpenAI's evals add and rewardkit has no use for are accepted and
recorded only: ``pass_threshold`` (an evals pass mark, not a grade) and ``image_tag`` (OpenAI's
python image; here the grader runs on the sandbox's Python). ``sampling_params.seed`` and
``reasoning_effort`` are kept in the identity but not sent: the judge's API settings have neither.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardkit_rl.graders.formula import Formula, FormulaError, compile_formula
from rewardkit_rl.graders.similarity import METRICS, REFUSED
from rewardkit_rl.graders.templates import Template, TemplateError, item_fields

MAX_PYTHON_SOURCE_BYTES = 256 * 1024  # the guide's limit on a python grader's code
STRING_OPERATIONS = ("eq", "ne", "like", "ilike")
ROLES = ("user", "assistant", "system", "developer")
# The names of the provider each type becomes.
PROVIDERS = {
    "string_check": "openai-string-check",
    "text_similarity": "openai-text-similarity",
    "score_model": "openai-score-model",
    "label_model": "openai-label-model",
    "python": "openai-python",
    "multi": "openai-multi",
}
_SAMPLING = ("temperature", "top_p", "seed", "max_completions_tokens", "reasoning_effort")


class GraderSpecError(ValueError):
    """A grader spec this import refuses; the message names the field and where it is."""


@dataclass(frozen=True)
class StringCheck:
    name: str
    input: Template
    reference: Template
    operation: str


@dataclass(frozen=True)
class TextSimilarity:
    name: str
    input: Template
    reference: Template
    metric: str


@dataclass(frozen=True)
class Message:
    role: str
    content: Template


@dataclass(frozen=True)
class ScoreModel:
    name: str
    model: str
    messages: tuple[Message, ...]
    range: tuple[float, float]
    temperature: float | None
    max_tokens: int | None


@dataclass(frozen=True)
class LabelModel:
    name: str
    model: str
    messages: tuple[Message, ...]
    labels: tuple[str, ...]
    passing_labels: tuple[str, ...]


@dataclass(frozen=True)
class PythonGrader:
    name: str
    source: str


@dataclass(frozen=True)
class Multi:
    name: str
    graders: dict[str, Grader]
    formula: Formula


Grader = StringCheck | TextSimilarity | ScoreModel | LabelModel | PythonGrader | Multi
ModelGrader = ScoreModel | LabelModel


def _fields(raw: Any, where: str, kind: str, required: Sequence[str], optional: Sequence[str] = ()) -> None:
    if not isinstance(raw, Mapping):
        raise GraderSpecError(f"{where}: a {kind} grader is a JSON object, got {type(raw).__name__}")
    takes = ["type", *required, *optional]
    unknown = sorted(str(key) for key in raw if key not in takes)
    if unknown:
        raise GraderSpecError(
            f"{where}: unsupported field(s) {unknown} in a {kind} grader (it takes {takes})"
        )
    missing = [field for field in required if field not in raw]
    if missing:
        raise GraderSpecError(f"{where}: a {kind} grader needs {missing}")


def _text(raw: Mapping[str, Any], field: str, where: str) -> str:
    value = raw[field]
    if not isinstance(value, str):
        raise GraderSpecError(f"{where}.{field}: expected a string, got {type(value).__name__}")
    return value


def _template(raw: Mapping[str, Any], field: str, where: str) -> Template:
    try:
        return Template.parse(_text(raw, field, where), f"{where}.{field}")
    except TemplateError as error:
        raise GraderSpecError(str(error)) from None


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise GraderSpecError(f"{where}: expected a finite number, got {value!r}")
    return float(value)


def _name(raw: Mapping[str, Any], where: str) -> str:
    return _text(raw, "name", where) if "name" in raw else ""


def parse_grader(raw: Any, where: str = "grader", *, inside_multi: bool = False) -> Grader:
    """``raw`` (a grader spec as JSON) checked and parsed; ``GraderSpecError`` names what is wrong."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("type"), str):
        raise GraderSpecError(f"{where}: a grader is a JSON object with a 'type' (one of {list(PROVIDERS)})")
    kind = raw["type"]
    if kind == "string_check":
        _fields(raw, where, kind, ("input", "reference", "operation"), ("name",))
        operation = raw["operation"]
        if operation == "neq":  # the guide's prose spelling of the schema's ``ne``
            operation = "ne"
        if operation not in STRING_OPERATIONS:
            raise GraderSpecError(f"{where}.operation: {operation!r} is not one of {list(STRING_OPERATIONS)}")
        return StringCheck(
            _name(raw, where), _template(raw, "input", where), _template(raw, "reference", where), operation
        )
    if kind == "text_similarity":
        _fields(raw, where, kind, ("input", "reference", "evaluation_metric"), ("name", "pass_threshold"))
        metric = raw["evaluation_metric"]
        if metric in REFUSED:
            raise GraderSpecError(
                f"{where}.evaluation_metric: {metric!r} is not supported: {REFUSED[metric]}; supported: "
                f"{list(METRICS)}"
            )
        if metric not in METRICS:
            raise GraderSpecError(
                f"{where}.evaluation_metric: unknown metric {metric!r}; supported: {list(METRICS)}"
            )
        return TextSimilarity(
            _name(raw, where), _template(raw, "input", where), _template(raw, "reference", where), metric
        )
    if kind == "score_model":
        _fields(raw, where, kind, ("model", "input"), ("name", "range", "sampling_params", "pass_threshold"))
        lo, hi = _range(raw.get("range", [0, 1]), f"{where}.range")
        temperature, max_tokens = _sampling(raw.get("sampling_params", {}), f"{where}.sampling_params")
        return ScoreModel(
            _name(raw, where), _text(raw, "model", where), _messages(raw["input"], f"{where}.input"),
            (lo, hi), temperature, max_tokens,
        )  # fmt: skip
    if kind == "label_model":
        _fields(raw, where, kind, ("model", "input", "labels", "passing_labels"), ("name",))
        labels = _labels(raw["labels"], f"{where}.labels", at_least=2)
        passing = _labels(raw["passing_labels"], f"{where}.passing_labels", at_least=1)
        strangers = [label for label in passing if label not in labels]
        if strangers:
            raise GraderSpecError(f"{where}.passing_labels: {strangers} are not among labels {list(labels)}")
        return LabelModel(
            _name(raw, where),
            _text(raw, "model", where),
            _messages(raw["input"], f"{where}.input"),
            labels,
            passing,
        )
    if kind == "python":
        _fields(raw, where, kind, ("source",), ("name", "image_tag", "pass_threshold"))
        source = _text(raw, "source", where)
        if len(source.encode("utf-8")) > MAX_PYTHON_SOURCE_BYTES:
            raise GraderSpecError(f"{where}.source: more than {MAX_PYTHON_SOURCE_BYTES} bytes")
        try:
            compile(source, f"{where}.source", "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as error:
            raise GraderSpecError(f"{where}.source does not compile: {error}") from None
        return PythonGrader(_name(raw, where), source)
    if kind == "multi":
        if inside_multi:
            raise GraderSpecError(f"{where}: a multi grader cannot hold another multi grader")
        _fields(raw, where, kind, ("graders", "calculate_output"), ("name",))
        graders = raw["graders"]
        if isinstance(graders, Mapping) and "type" in graders:
            # openai-python types ``graders`` as one grader; the guide keys them by name. One grader is
            # named by its own name (which the formula then uses).
            graders = {_name(graders, f"{where}.graders") or "grader": graders}
        if not isinstance(graders, Mapping) or not graders:
            raise GraderSpecError(f"{where}.graders: expected an object of graders keyed by name")
        parsed = {
            str(key): parse_grader(value, f"{where}.graders.{key}", inside_multi=True)
            for key, value in graders.items()
        }
        try:
            formula = compile_formula(raw["calculate_output"], parsed, f"{where}.calculate_output")
        except FormulaError as error:
            raise GraderSpecError(str(error)) from None
        return Multi(_name(raw, where), parsed, formula)
    raise GraderSpecError(f"{where}.type: unknown grader type {kind!r}; supported: {list(PROVIDERS)}")


def _range(value: Any, where: str) -> tuple[float, float]:
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != 2:
        raise GraderSpecError(f"{where}: expected [lo, hi], got {value!r}")
    lo, hi = _number(value[0], f"{where}[0]"), _number(value[1], f"{where}[1]")
    if lo >= hi:
        raise GraderSpecError(f"{where}: lo ({lo:g}) must be below hi ({hi:g})")
    return lo, hi


def _sampling(value: Any, where: str) -> tuple[float | None, int | None]:
    if not isinstance(value, Mapping):
        raise GraderSpecError(f"{where}: expected an object, got {type(value).__name__}")
    unknown = sorted(str(key) for key in value if key not in _SAMPLING)
    if unknown:
        raise GraderSpecError(f"{where}: unsupported field(s) {unknown} (it takes {list(_SAMPLING)})")
    top_p = value.get("top_p")
    if top_p is not None and _number(top_p, f"{where}.top_p") != 1.0:
        raise GraderSpecError(
            f"{where}.top_p: only 1 is supported (the judge samples the whole distribution)"
        )
    temperature = value.get("temperature")
    tokens = value.get("max_completions_tokens")
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1):
        raise GraderSpecError(f"{where}.max_completions_tokens: expected a positive integer, got {tokens!r}")
    return (None if temperature is None else _number(temperature, f"{where}.temperature")), tokens


def _labels(value: Any, where: str, at_least: int) -> tuple[str, ...]:
    if (
        not isinstance(value, Sequence)
        or isinstance(value, str)
        or not all(isinstance(v, str) and v for v in value)
    ):
        raise GraderSpecError(f"{where}: expected a list of non-empty strings, got {value!r}")
    if len(value) < at_least or len(set(value)) != len(value):
        raise GraderSpecError(f"{where}: expected at least {at_least} distinct labels, got {list(value)}")
    return tuple(value)


def _messages(value: Any, where: str) -> tuple[Message, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str) or not value:
        raise GraderSpecError(f"{where}: expected a list of messages ({{role, content}})")
    messages = []
    for index, raw in enumerate(value):
        at = f"{where}[{index}]"
        if not isinstance(raw, Mapping):
            raise GraderSpecError(f"{at}: a message is an object with role and content")
        unknown = sorted(str(key) for key in raw if key not in ("role", "content", "type"))
        if unknown:
            raise GraderSpecError(
                f"{at}: unsupported field(s) {unknown} (a message takes role, content, type)"
            )
        if raw.get("type", "message") != "message":
            raise GraderSpecError(f"{at}.type: only 'message' is supported, got {raw.get('type')!r}")
        if raw.get("role") not in ROLES:
            raise GraderSpecError(f"{at}.role: expected one of {list(ROLES)}, got {raw.get('role')!r}")
        content = _content(raw.get("content"), f"{at}.content")
        try:
            template = Template.parse(content, f"{at}.content")
        except TemplateError as error:
            raise GraderSpecError(str(error)) from None
        for variable in template.variables:
            if variable.namespace == "sample" and variable.path != ("output_text",):
                raise GraderSpecError(
                    f"{at}.content: {{{{ {variable.text} }}}} is not supported in a model grader's messages: "
                    "the judge reads the sample only as {{ sample.output_text }}, fenced as untrusted text"
                )
        messages.append(Message(raw["role"], template))
    if not any(message.content.reads_candidate for message in messages):
        raise GraderSpecError(f"{where}: no message shows the sample ({{{{ sample.output_text }}}})")
    return tuple(messages)


def _content(value: Any, where: str) -> str:
    """A message's content: a string, or parts of which only text parts are supported."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, Sequence) or not value:
        raise GraderSpecError(f"{where}: expected a string or a list of text parts")
    texts = []
    for index, part in enumerate(value):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind not in ("input_text", "output_text") or not isinstance(part.get("text"), str):
            raise GraderSpecError(
                f"{where}[{index}]: content part of type {kind!r} is not supported (only input_text and "
                "output_text with a 'text')"
            )
        texts.append(part["text"])
    return "\n".join(texts)


def templates_of(grader: Grader) -> list[Template]:
    """Every template of ``grader`` (a multi's sub-graders' included)."""
    if isinstance(grader, (StringCheck, TextSimilarity)):
        return [grader.input, grader.reference]
    if isinstance(grader, (ScoreModel, LabelModel)):
        return [message.content for message in grader.messages]
    if isinstance(grader, Multi):
        return [template for sub in grader.graders.values() for template in templates_of(sub)]
    return []


def default_reference_field(grader: Grader) -> str | None:
    """The item field a reference that is not an object stands for: the one row field the templates
    read besides ``prompt`` and ``reference``, when there is exactly one."""
    fields = item_fields(templates_of(grader)) - {"prompt", "reference"}
    return next(iter(fields)) if len(fields) == 1 else None


def needs_judge(grader: Grader) -> bool:
    if isinstance(grader, Multi):
        return any(needs_judge(sub) for sub in grader.graders.values())
    return isinstance(grader, (ScoreModel, LabelModel))


def needs_sandbox(grader: Grader) -> bool:
    if isinstance(grader, Multi):
        return any(needs_sandbox(sub) for sub in grader.graders.values())
    return isinstance(grader, PythonGrader)


def read_grader(value: Any, base_dir: Path | None, where: str = "grader") -> Any:
    """A grader as given: a JSON object, JSON text, or the path of a JSON file (relative to ``base_dir``,
    the configuration file's folder, else the working directory)."""
    if isinstance(value, Mapping):
        return value
    if not isinstance(value, str) or not value.strip():
        raise GraderSpecError(f"{where}: expected a grader spec (a JSON object, JSON text or a file path)")
    text = value.strip()
    if not text.startswith("{"):
        path = Path(text).expanduser()
        path = path if path.is_absolute() or base_dir is None else base_dir / path
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise GraderSpecError(f"{where}: cannot read the grader file {path}: {error}") from None
        where = f"{where} ({path})"
    try:
        return json.loads(text)
    except ValueError as error:
        raise GraderSpecError(f"{where}: not valid JSON: {error}") from None
