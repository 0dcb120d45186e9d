"""What the judge is told: the default templates, how a template is filled, the judge-content hash.

A template names its slots in braces (``{prompt}``, ``{completion}``, ...); only the known slot
names are replaced, so a template may show literal JSON (``{"score": 7}``) without escaping. The
system message states the output contract and is fixed per judge kind; a custom ``template``
replaces the user message only. Everything the judge reads besides the candidates (system
message, template, rubric, scale, the re-ask message) is hashed into ``judge_content_sha256``,
which is part of the provider's identity.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

RUBRIC_SYSTEM = (
    "You grade one answer to a task against a rubric. Weigh the rubric's criteria as it says and "
    "combine them into one score from {lo} (worst) to {hi} (best). Reply with only a JSON object: "
    '{"score": <a number from {lo} to {hi}>, "rationale": "<one or two sentences>"}'
)
RUBRIC_TEMPLATE = "Rubric:\n{rubric}\n\nTask:\n{prompt}\n\nAnswer to grade:\n{completion}"

PAIR_SYSTEM = (
    "You compare two answers to the same task by the criteria given and say which is better. "
    'Reply with only a JSON object: {"winner": "A" or "B" or "tie", "rationale": "<one or two '
    'sentences>"}'
)
PAIR_TEMPLATE = "Criteria:\n{rubric}\n\nTask:\n{prompt}\n\nAnswer A:\n{first}\n\nAnswer B:\n{second}"

LIST_SYSTEM = (
    "You rank answers to the same task by the criteria given, best first. Reply with only a JSON "
    'object: {"ranking": [every answer\'s letter exactly once, best first], "rationale": "<one or '
    'two sentences>"}'
)
LIST_TEMPLATE = "Criteria:\n{rubric}\n\nTask:\n{prompt}\n\n{answers}"

COMPARE_CRITERIA = "Which answer solves the task more correctly, completely and clearly?"

REASK = "Your reply could not be read: {why}. Reply again with only the JSON object described above."

# Slots a custom template must contain, per judge kind.
REQUIRED_SLOTS: Mapping[str, tuple[str, ...]] = {
    "rubric": ("completion",),
    "pairwise": ("first", "second"),
    "listwise": ("answers",),
}
SLOTS = ("prompt", "completion", "rubric", "lo", "hi", "first", "second", "answers", "why")
_SLOT = re.compile(r"\{(" + "|".join(SLOTS) + r")\}")


def fill(template: str, values: Mapping[str, str]) -> str:
    """``template`` with each known ``{slot}`` replaced in one pass (inserted text is not re-read)."""
    return _SLOT.sub(lambda match: values.get(match.group(1), match.group(0)), template)


def missing_slots(template: str, kind: str) -> list[str]:
    present = set(_SLOT.findall(template))
    return [slot for slot in REQUIRED_SLOTS[kind] if slot not in present]


def number_text(value: float) -> str:
    """``10.0`` as ``10``, ``0.5`` as ``0.5``: how the scale is shown to the judge."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def prompt_text(prompt: Any) -> str:
    """The task as text: a string as is, chat messages as ``role: content`` lines, other JSON as JSON."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Sequence) and all(isinstance(item, Mapping) for item in prompt):
        lines = []
        for message in prompt:
            content = message.get("content")
            text = content if isinstance(content, str) else _json(content)
            lines.append(f"{message.get('role', 'user')}: {text}")
        return "\n".join(lines)
    return _json(prompt)


def _json(value: Any) -> str:
    def plain(item: Any) -> Any:
        if isinstance(item, Mapping):
            return {str(key): plain(inner) for key, inner in item.items()}
        if isinstance(item, (list, tuple)):
            return [plain(inner) for inner in item]
        return item

    return json.dumps(plain(value), ensure_ascii=False, sort_keys=True)


def label(index: int) -> str:
    """Answer labels: A..Z, then AA, AB, ..."""
    text = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        text = chr(65 + rest) + text
    return text


def content_sha256(kind: str, system: str, template: str, rubric: str, scale: Sequence[float] | None) -> str:
    """SHA-256 of everything the judge reads besides the candidates."""
    document = {
        "kind": kind,
        "system": system,
        "template": template,
        "rubric": rubric,
        "scale": [float(value) for value in scale] if scale is not None else None,
        "reask": REASK,
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
