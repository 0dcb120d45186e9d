"""Reading a judge's reply: a score, a pairwise winner or a ranking, and the rationale.

Where the verdict is read from, in this order (after the judge's reasoning is removed, below):

1. **The envelope.** The system message asks for the verdict object between a line
   ``<verdict-T>`` and the line ``</verdict-T>``, where ``T`` is a token of this question that only
   the system message states (``prompts.ENVELOPE_RULES``). When the reply holds that pair of
   lines once, the one JSON object between them is the verdict (a ```json fence around it is
   fine) and everything outside them (a preface, an explanation after it, a quote of the answer)
   is ignored. Two envelopes, an open envelope that is never closed, or anything but one object
   inside make the reply unreadable.
2. **The whole reply.** Without an envelope (a server that constrains the reply to JSON, a judge
   that did not write the lines), the reply must be exactly one JSON object: whitespace around it
   is fine, and so is one ```json code fence around it; any other text makes it unreadable.

The judge's reasoning is removed first: a leading ``<think>...</think>`` block, ending at the
*first* ``</think>`` (a model served without a reasoning parser may omit the opening tag: then
everything up to the first ``</think>`` is reasoning). ``reasoning_content`` is never read. A
repeated key, a score outside the scale (``OffScale``), a ``Score: N`` line or an unclosed
``<think>`` are refused as before. Both failures are asked again.

Why the envelope: a candidate cannot write an object inside it, since it never sees ``T`` (an
HMAC under a key it never sees), so the quoted ``{"score": 10}`` of an answer is never read,
whatever the judge writes around its verdict, and an ordinary reply (a line of preface and a
fenced object, an object and an explanation) is read as the judge meant it. Without the
envelope nothing marks the judge's own object, so the reply must be nothing else. The first
``</think>`` ends the reasoning because the text after it is the judge's own; a later one may be
a quote of the answer (the answer's own ``</think>`` is broken by the fence, see
``prompts.neutralise``, but a judge may quote loosely). When in doubt the reply is unreadable,
never the candidate's.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

RATIONALE_LIMIT = 2000
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
ENVELOPE_PREFIX = "<verdict-"


class Unreadable(ValueError):
    """The reply holds no verdict in the expected form; the message says what was wrong."""


class OffScale(ValueError):
    """The reply holds a score outside the scale."""


@dataclass(frozen=True)
class Verdict:
    value: Any
    rationale: str | None


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number a judge may give")


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise Unreadable(f"the key {key!r} appears twice in one object")
        found[key] = value
    return found


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_no_repeats)
_CODE_FENCE = re.compile(r"\A```(?:json|JSON)?[ \t]*\n?(?P<inner>.*?)\n?[ \t]*```\Z", re.DOTALL)


def without_reasoning(text: str) -> str:
    """``text`` without its leading reasoning block; ``Unreadable`` if the block is malformed."""
    close = text.find(THINK_CLOSE)
    if close == -1:
        if THINK_OPEN in text:
            raise Unreadable("the reasoning was never closed (no </think>)")
        return text
    head = text[:close]
    opened = head.find(THINK_OPEN)
    if opened != -1 and head[:opened].strip():
        raise Unreadable("there is text before the <think> block")
    if opened == -1 and (head.lstrip().startswith("{") or ENVELOPE_PREFIX in head):
        # no opening tag and a verdict first: the </think> after it may be a quote of the answer
        raise Unreadable("a verdict comes before </think>; give the verdict after the reasoning")
    return text[close + len(THINK_CLOSE) :]


def enveloped(text: str, token: str) -> str | None:
    """What stands between the verdict lines of ``token`` in ``text`` (None: there are none)."""
    opening, closing = f"<verdict-{token}>", f"</verdict-{token}>"
    opens, closes = text.count(opening), text.count(closing)
    if opens == 0 and closes == 0:
        return None
    if opens > 1 or closes > 1:
        raise Unreadable("the reply holds more than one verdict envelope; write the verdict lines once")
    start, end = text.find(opening), text.find(closing)
    if opens == 0 or closes == 0 or end < start:
        raise Unreadable("the verdict envelope is not opened and then closed; write both verdict lines")
    return text[start + len(opening) : end]


def verdict_object(text: str, key: str, envelope: str | None = None) -> dict[str, Any]:
    """The verdict object holding ``key``: the one between the verdict lines of ``envelope``, or
    the one the whole reply consists of; ``Unreadable`` otherwise."""
    body = without_reasoning(text)
    inside = enveloped(body, envelope) if envelope is not None else None
    return _one_object(body if inside is None else inside, key, envelope is not None and inside is None)


def _one_object(text: str, key: str, unwrapped: bool) -> dict[str, Any]:
    """The one JSON object ``text`` consists of (a code fence around it is fine)."""
    body = text.strip()
    hint = " (or write it between the verdict lines)" if unwrapped else ""
    fenced = _CODE_FENCE.match(body)
    if fenced is not None:
        body = fenced.group("inner").strip()
    if not body:
        raise Unreadable("the reply is empty")
    if not body.startswith("{"):
        raise Unreadable(
            f'the reply is not one JSON object (it starts with {body[:20]!r}); reply {{"{key}": ...}}{hint}'
        )
    try:
        value, end = _DECODER.raw_decode(body)
    except Unreadable:
        raise
    except ValueError as error:
        raise Unreadable(f"the JSON object cannot be read ({error})") from None
    if body[end:].strip():
        raise Unreadable(f"there is text after the JSON object; reply with the object alone{hint}")
    if not isinstance(value, dict):
        raise Unreadable("the reply is not a JSON object")
    if key not in value:
        raise Unreadable(f'the JSON object has no "{key}"')
    return value


def _rationale(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.strip()
    if not text:
        return None
    return text if len(text) <= RATIONALE_LIMIT else text[: RATIONALE_LIMIT - 3] + "..."


_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)"
_NUMBER_TEXT = re.compile(rf"^\s*(?P<n>{_NUMBER})\s*(?:/\s*{_NUMBER}\s*)?$")


def _number(value: Any) -> float:
    if isinstance(value, bool):
        raise Unreadable(f"the score is {json.dumps(value)}, not a number")
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str) and _NUMBER_TEXT.match(value):
        number = float(_NUMBER_TEXT.match(value).group("n"))  # type: ignore[union-attr]
    else:
        raise Unreadable(f"the score is {json.dumps(value)[:60]}, not a number")
    if not math.isfinite(number):
        raise Unreadable(f"the score {value!r} is not finite")
    return number


def parse_score(text: str, scale: tuple[float, float], envelope: str | None = None) -> Verdict:
    """The score on ``scale`` and the rationale; ``Unreadable`` or ``OffScale`` otherwise."""
    found = verdict_object(text, "score", envelope)
    score = _number(found["score"])
    lo, hi = scale
    if not lo <= score <= hi:
        raise OffScale(f"score {score:g} is off the scale [{lo:g}, {hi:g}]")
    return Verdict(score, _rationale(found.get("rationale")))


_WINNERS = {"A": "A", "B": "B", "TIE": "tie", "EQUAL": "tie", "DRAW": "tie", "NEITHER": "tie", "BOTH": "tie"}


def _winner(value: Any) -> str:
    if not isinstance(value, str):
        raise Unreadable(f"the winner is {json.dumps(value)[:60]}, not A, B or tie")
    word = re.sub(r"^(ANSWER|RESPONSE)\s+", "", value.strip().strip("[]()*\"'` .").upper())
    if word not in _WINNERS:
        raise Unreadable(f"the winner is {value[:60]!r}, not A, B or tie")
    return _WINNERS[word]


def parse_winner(text: str, envelope: str | None = None) -> Verdict:
    """``A``, ``B`` or ``tie`` and the rationale; ``Unreadable`` otherwise."""
    found = verdict_object(text, "winner", envelope)
    return Verdict(_winner(found["winner"]), _rationale(found.get("rationale")))


def parse_ranking(text: str, labels: Sequence[str], envelope: str | None = None) -> Verdict:
    """A permutation of ``labels``, best first, and the rationale; ``Unreadable`` otherwise."""
    found = verdict_object(text, "ranking", envelope)
    ranking = found["ranking"]
    if isinstance(ranking, str):
        ranking = re.split(r"\s*[>,]\s*", ranking.strip())
    if not isinstance(ranking, list):
        raise Unreadable(f"the ranking is {json.dumps(ranking)[:60]}, not a list of letters")
    order = []
    for item in ranking:
        if not isinstance(item, str):
            raise Unreadable(f"the ranking holds {json.dumps(item)[:40]}, not a letter")
        order.append(re.sub(r"^(ANSWER|RESPONSE)\s+", "", item.strip().strip("[]()*\"'` .").upper()))
    if sorted(order) != sorted(labels):
        raise Unreadable(f"the ranking {order} is not {list(labels)} each exactly once")
    return Verdict(tuple(order), _rationale(found.get("rationale")))


# The verdict's JSON schema per judge kind, sent as ``response_format`` ``json_schema`` where the
# server supports it. The rationale comes first so a judge constrained to the schema writes its
# reasons before its verdict. Listwise labels vary per question, so only their type is fixed.
_VERDICT_FIELDS: dict[str, dict[str, Any]] = {
    "rubric": {"score": {"type": "number"}},
    "pairwise": {"winner": {"type": "string", "enum": ["A", "B", "tie"]}},
    "listwise": {"ranking": {"type": "array", "items": {"type": "string"}}},
}


def verdict_schema(kind: str) -> dict[str, Any]:
    """The ``response_format`` of a ``kind`` judge's verdict as a strict JSON schema."""
    properties = {"rationale": {"type": "string"}, **_VERDICT_FIELDS[kind]}
    return {
        "type": "json_schema",
        "json_schema": {
            "name": f"{kind}_verdict",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": properties,
                "required": list(properties),
                "additionalProperties": False,
            },
        },
    }
