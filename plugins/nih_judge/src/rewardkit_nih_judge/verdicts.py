"""Reading a judge's reply: a score, a pairwise winner or a ranking, and the rationale.

The reply should be one JSON object. Judges wrap it in code fences, write text around it or give
a worked example first, so every JSON object in the text is found and the *last* one holding the
wanted key is read. Without one, a trailing ``Score: N`` (``Winner: A``, ``Ranking: B > A``) line
is read instead. A reply that holds none of these raises ``Unreadable`` (the judge is asked
again); a score outside the scale raises ``OffScale`` (an error outcome at once: the judge read
the format and ignored the scale, asking again at temperature 0 would change nothing).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

RATIONALE_LIMIT = 2000


class Unreadable(ValueError):
    """The reply holds no verdict in the expected form; the message says what was missing."""


class OffScale(ValueError):
    """The reply holds a score outside the scale."""


@dataclass(frozen=True)
class Verdict:
    value: Any
    rationale: str | None


_DECODER = json.JSONDecoder(parse_constant=lambda name: _reject_constant(name))


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number a judge may give")


def json_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in ``text``, in order (objects inside objects are not repeated)."""
    found: list[dict[str, Any]] = []
    position = text.find("{")
    while position != -1:
        try:
            value, end = _DECODER.raw_decode(text, position)
        except ValueError:
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
        position = text.find("{", end)
    return found


def _last_with(text: str, key: str) -> dict[str, Any] | None:
    for item in reversed(json_objects(text)):
        if key in item:
            return item
    return None


def _rationale(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.strip()
    if not text:
        return None
    return text if len(text) <= RATIONALE_LIMIT else text[: RATIONALE_LIMIT - 3] + "..."


def _line_fallback(text: str, key: str, value_pattern: str) -> tuple[str, str | None] | None:
    """The value of the last ``Key: value`` line, and the text before that line as the rationale."""
    pattern = re.compile(rf"^[\s*#_>`-]*{key}[\s*_`]*[:=][\s*_`]*(?P<value>{value_pattern})[\s*_`.]*$",
                         re.IGNORECASE | re.MULTILINE)  # fmt: skip
    matches = list(pattern.finditer(text))
    if not matches:
        return None
    last = matches[-1]
    return last.group("value"), _rationale(text[: last.start()])


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


def parse_score(text: str, scale: tuple[float, float]) -> Verdict:
    """The score on ``scale`` and the rationale; ``Unreadable`` or ``OffScale`` otherwise."""
    found = _last_with(text, "score")
    if found is not None:
        score, rationale = _number(found["score"]), _rationale(found.get("rationale"))
    else:
        line = _line_fallback(text, "score", _NUMBER + r"(?:\s*/\s*" + _NUMBER + ")?")
        if line is None:
            raise Unreadable('no JSON object with "score" and no "Score: N" line')
        score, rationale = _number(line[0]), line[1]
    lo, hi = scale
    if not lo <= score <= hi:
        raise OffScale(f"score {score:g} is off the scale [{lo:g}, {hi:g}]")
    return Verdict(score, rationale)


_WINNERS = {"A": "A", "B": "B", "TIE": "tie", "EQUAL": "tie", "DRAW": "tie", "NEITHER": "tie", "BOTH": "tie"}


def _winner(value: Any) -> str:
    if not isinstance(value, str):
        raise Unreadable(f"the winner is {json.dumps(value)[:60]}, not A, B or tie")
    word = re.sub(r"^(ANSWER|RESPONSE)\s+", "", value.strip().strip("[]()*\"'` .").upper())
    if word not in _WINNERS:
        raise Unreadable(f"the winner is {value[:60]!r}, not A, B or tie")
    return _WINNERS[word]


def parse_winner(text: str) -> Verdict:
    """``A``, ``B`` or ``tie`` and the rationale; ``Unreadable`` otherwise."""
    found = _last_with(text, "winner")
    if found is not None:
        return Verdict(_winner(found["winner"]), _rationale(found.get("rationale")))
    line = _line_fallback(text, "winner", r"[\[(]*(?:answer\s+)?[A-Za-z]+[\])]*")
    if line is None:
        raise Unreadable('no JSON object with "winner" and no "Winner: A" line')
    return Verdict(_winner(line[0]), line[1])


def parse_ranking(text: str, labels: Sequence[str]) -> Verdict:
    """A permutation of ``labels``, best first, and the rationale; ``Unreadable`` otherwise."""
    found = _last_with(text, "ranking")
    if found is not None:
        ranking, rationale = found["ranking"], _rationale(found.get("rationale"))
        if isinstance(ranking, str):
            ranking = re.split(r"\s*[>,]\s*", ranking.strip())
        if not isinstance(ranking, list):
            raise Unreadable(f"the ranking is {json.dumps(ranking)[:60]}, not a list of letters")
    else:
        line = _line_fallback(text, "ranking", r"[A-Za-z]+(?:\s*[>,]\s*[A-Za-z]+)*")
        if line is None:
            raise Unreadable('no JSON object with "ranking" and no "Ranking: B > A" line')
        ranking, rationale = re.split(r"\s*[>,]\s*", line[0].strip()), line[1]
    order = []
    for item in ranking:
        if not isinstance(item, str):
            raise Unreadable(f"the ranking holds {json.dumps(item)[:40]}, not a letter")
        order.append(re.sub(r"^(ANSWER|RESPONSE)\s+", "", item.strip().strip("[]()*\"'` .").upper()))
    if sorted(order) != sorted(labels):
        raise Unreadable(f"the ranking {order} is not {list(labels)} each exactly once")
    return Verdict(tuple(order), rationale)
