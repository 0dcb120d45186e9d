"""OpenAI grader templates: ``{{ item.answer }}``, ``{{ sample.output_text }}``, ``{{sample.output_json.a}}``.

A template is parsed once, when the grader is loaded: every variable is checked there (namespace,
field, path syntax), so a typo fails at ``rewardkit.load`` naming the field that holds it, never
mid-training. Rendering reads a ``Variables`` (the item of the row, the candidate's text and,
when a template asks for it, the candidate's text read as JSON).

What each namespace is here:
- ``item`` is the row. A reference that is an object is the row's fields (``item.answer`` is
  ``reference["answer"]``); ``item.prompt`` is the prompt and ``item.reference`` the whole reference
  unless the object has fields of those names. A reference that is not an object is one field: the
  one ``reference_field`` names (by default the one non-prompt field the grader's templates read).
- ``sample.output_text`` is the candidate's completion (normalised once, as every rule reads it);
  ``sample.output_json`` is that text parsed as JSON. Nothing else of ``sample`` exists for a text
  completion (``output_tools``, ``choices``, ``output_audio`` are refused at load).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.plugin import thaw

# ``{{ namespace.path }}``: spaces inside the braces are optional (the guide writes both).
_VARIABLE = re.compile(r"\{\{\s*(.*?)\s*\}\}")
_SEGMENT = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[\"([^\"]*)\"\]|\['([^']*)'\]")
_HEAD = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)")
SAMPLE_FIELDS = ("output_text", "output_json")
# What OpenAI's sample has and a text completion does not: named in the refusal.
_SAMPLE_ELSEWHERE = ("output_tools", "choices", "output_audio")


class TemplateError(ValueError):
    """A template names a variable this import cannot supply, or is malformed."""


class VariableError(Exception):
    """A variable has no value for this row or candidate. ``candidate``: the candidate's own text lacks
    it (not JSON, no such field), a verdict on the candidate; otherwise the row lacks it."""

    def __init__(self, message: str, *, candidate: bool) -> None:
        super().__init__(message)
        self.candidate = candidate


@dataclass(frozen=True)
class Variable:
    """One ``{{ ... }}``: its namespace, its path below it (names and indexes) and its text as written."""

    namespace: str
    path: tuple[str | int, ...]
    text: str

    @property
    def item_field(self) -> str | None:
        """The row field an ``item`` variable reads (its first name), None for ``sample``."""
        return str(self.path[0]) if self.namespace == "item" and self.path else None


def parse_variable(text: str, where: str) -> Variable:
    """``namespace.path`` checked: ``item.<field>...``, ``sample.output_text``, ``sample.output_json...``."""
    head = _HEAD.match(text)
    if head is None:
        raise TemplateError(f"{where}: {{{{ {text} }}}} is not a variable (namespace.field)")
    namespace, rest = head.group(1), text[head.end() :]
    path: list[str | int] = []
    while rest:
        step = _SEGMENT.match(rest)
        if step is None:
            raise TemplateError(f"{where}: cannot read {rest!r} in {{{{ {text} }}}}; use .name or [index]")
        name, index, double, single = step.groups()
        path.append(
            int(index) if index is not None else next(p for p in (name, double, single) if p is not None)
        )
        rest = rest[step.end() :]
    if namespace == "item":
        if not path or not isinstance(path[0], str):
            raise TemplateError(f"{where}: {{{{ {text} }}}} must name a field of the item (item.answer)")
    elif namespace == "sample":
        field = path[0] if path else None
        if field in _SAMPLE_ELSEWHERE:
            raise TemplateError(
                f"{where}: {{{{ {text} }}}} is not supported: a completion scored here is text, so "
                f"sample has only {list(SAMPLE_FIELDS)}"
            )
        if field not in SAMPLE_FIELDS or (field == "output_text" and len(path) > 1):
            raise TemplateError(
                f"{where}: unknown variable {{{{ {text} }}}}; sample has {list(SAMPLE_FIELDS)}"
            )
    else:
        raise TemplateError(
            f"{where}: unknown namespace {namespace!r} in {{{{ {text} }}}}; use item or sample"
        )
    return Variable(namespace, tuple(path), text)


@dataclass(frozen=True)
class Template:
    """A string with variables; ``render`` fills them (strings as they are, anything else as JSON)."""

    source: str
    variables: tuple[Variable, ...]

    @classmethod
    def parse(cls, source: str, where: str) -> Template:
        if not isinstance(source, str):
            raise TemplateError(f"{where}: expected a string template, got {type(source).__name__}")
        unclosed = source.count("{{") != len(_VARIABLE.findall(source))
        if unclosed:
            raise TemplateError(f"{where}: a '{{{{' is not closed by '}}}}'")
        return cls(source, tuple(parse_variable(text, where) for text in _VARIABLE.findall(source)))

    def render(self, variables: Variables) -> str:
        values = iter([as_text(variables.value(variable)) for variable in self.variables])
        # One pass, values computed first: a value holding ``{{ ... }}`` is never read again.
        return _VARIABLE.sub(lambda _match: next(values), self.source)

    @property
    def reads_candidate(self) -> bool:
        return any(variable.namespace == "sample" for variable in self.variables)

    @property
    def whole_output_text(self) -> bool:
        """The template is exactly ``{{ sample.output_text }}``: the candidate's text, not rendered."""
        return (
            len(self.variables) == 1
            and _VARIABLE.fullmatch(self.source.strip()) is not None
            and (self.variables[0].path == ("output_text",))
        )


def as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


class Variables:
    """The values of one candidate of one row: ``item`` and ``sample``."""

    def __init__(self, item: Mapping[str, Any], output_text: str) -> None:
        self.item = item
        self.output_text = output_text
        self._json: Any = _UNPARSED

    def value(self, variable: Variable) -> Any:
        if variable.namespace == "item":
            return _walk(self.item, variable.path, variable.text, candidate=False)
        if variable.path == ("output_text",):
            return self.output_text
        return _walk(self.output_json(), variable.path[1:], variable.text, candidate=True)

    def output_json(self) -> Any:
        if self._json is _UNPARSED:
            try:
                self._json = json.loads(self.output_text)
            except (ValueError, RecursionError):
                self._json = _NOT_JSON
        if self._json is _NOT_JSON:
            raise VariableError("sample.output_json: the completion is not valid JSON", candidate=True)
        return self._json

    def sample(self, wanted: bool) -> dict[str, Any]:
        """The ``sample`` a python grader reads: ``output_text``, and ``output_json`` when it parses."""
        sample: dict[str, Any] = {"output_text": self.output_text}
        if wanted:
            try:
                sample["output_json"] = self.output_json()
            except VariableError:
                sample["output_json"] = None
        return sample


_UNPARSED = object()
_NOT_JSON = object()


def _walk(value: Any, path: Sequence[str | int], text: str, *, candidate: bool) -> Any:
    for step in path:
        if isinstance(step, int) and isinstance(value, Sequence) and not isinstance(value, str):
            if step >= len(value):
                raise VariableError(f"{{{{ {text} }}}}: index {step} is past the end", candidate=candidate)
            value = value[step]
        elif isinstance(step, str) and isinstance(value, Mapping):
            if step not in value:
                raise VariableError(f"{{{{ {text} }}}}: no field {step!r}", candidate=candidate)
            value = value[step]
        else:
            raise VariableError(
                f"{{{{ {text} }}}}: cannot read {step!r} of a {type(value).__name__}", candidate=candidate
            )
    return value


def build_item(prompt: Any, reference: Any, reference_field: str | None) -> dict[str, Any]:
    """The OpenAI ``item`` of a row (see the module docstring). Thawed: plain dicts and lists."""
    reference = thaw(reference)
    prompt = thaw(prompt)
    if isinstance(reference, Mapping):
        item = dict(reference)
        item.setdefault("prompt", prompt)
        item.setdefault("reference", reference)
        return item
    item = {"prompt": prompt, "reference": reference}
    if reference_field is not None:
        item[reference_field] = reference
    return item


def item_fields(templates: Sequence[Template]) -> set[str]:
    """Every row field the templates read."""
    return {
        field for template in templates for v in template.variables if (field := v.item_field) is not None
    }
