"""``LastTwo``: a function over a run of immutable items, remembering the last two answers.

A yes/no rule returns one of two shared results for every candidate, and what is read from a result
is the same each time it comes back: remembering the last two answers by identity (the items are
immutable, and an identity test costs nothing) turns a batch's worth of calls into a few."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

Item = TypeVar("Item")
Answer = TypeVar("Answer")

# The memo before its first item: not None, or a scorer's missing `return` would get an earlier answer.
_NOTHING = object()


class LastTwo(Generic[Item, Answer]):
    """``map(items)`` is ``[function(item) for item in items]``, remembering the answers for the last
    two distinct items seen (across calls, so one per column or provider serves a whole batch)."""

    __slots__ = ("_function", "_state")

    def __init__(self, function: Callable[[Item], Answer]) -> None:
        self._function = function
        # (last item, its answer, the item before it, its answer): one attribute, read and written
        # once per call, since a call is often for a single item.
        self._state: tuple[object, Answer | None, object, Answer | None] = (_NOTHING, None, _NOTHING, None)

    def map(self, items: Iterable[Item]) -> list[Answer]:
        last, last_answer, before, before_answer = self._state
        out: list[Answer] = []
        append = out.append
        for item in items:
            if item is last:
                append(last_answer)  # type: ignore[arg-type]
            elif item is before:
                append(before_answer)  # type: ignore[arg-type]
            else:
                answer = self._function(item)
                before, before_answer, last, last_answer = last, last_answer, item, answer
                append(answer)
        self._state = (last, last_answer, before, before_answer)
        return out
