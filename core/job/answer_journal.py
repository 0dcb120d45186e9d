"""The answer journal: what slow providers already answered inside a chunk the score job has not
journaled yet, kept so that a Ctrl-C or a crash does not lose it.

``rewardkit score`` journals whole chunks (``rewardkit.job.score_job``). A chunk of a judge, a sandbox
or a reward model can take minutes and its calls may be paid for, so losing the chunk being scored
would lose every answer in it. While the job scores a chunk, the worker appends each non-cheap
provider's checked result for each group to ``<out>.answers`` (one JSON line, flushed: a killed
process keeps it; only the operating system's crash can lose the last lines). A resumed job scores
those groups again, and the worker takes each group's answer from the journal instead of asking
the provider again. A group is journaled once every candidate has an answer that is not an error
(an infrastructure failure is asked again). The file is emptied when its chunk is journaled and
removed with the chunk journal.

Entries are keyed by the provider's configuration and the group's exact input rows; the file names
the run it belongs to, so a journal of another run is never read.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import IO, Any

from rewardkit.contracts import (
    MetricContribution,
    RewardCandidateResult,
    RewardGroupResult,
    RewardProviderResult,
)

VERSION = 1


def answers_path(out: Path) -> Path:
    """Where the answer journal of the run writing ``out`` lives."""
    return out.with_name(out.name + ".answers")


def _key(provider_key: str, group_id: str, rollouts: Sequence[Mapping[str, Any]]) -> str:
    document = json.dumps([provider_key, group_id, list(rollouts)], sort_keys=True, default=repr)
    return hashlib.sha256(document.encode("utf-8")).hexdigest()


def _result_json(result: RewardProviderResult) -> dict[str, Any]:
    return {
        "terms": dict(result.terms),
        "diagnostics": [[item.name, item.value, item.weight] for item in result.diagnostics],
        "status": result.status,
        "reason": result.reason,
        "charge": result.charge,
        "notes": dict(result.notes),
    }


def _result_from_json(data: Mapping[str, Any]) -> RewardProviderResult:
    return RewardProviderResult(
        terms={str(name): float(value) for name, value in data["terms"].items()},
        diagnostics=tuple(MetricContribution(str(n), float(v), float(w)) for n, v, w in data["diagnostics"]),
        status=data["status"],
        reason=data["reason"],
        charge=data["charge"],
        notes={str(name): str(text) for name, text in data.get("notes", {}).items()},
    )


def _group_from_json(data: Mapping[str, Any]) -> RewardGroupResult:
    items = tuple(RewardCandidateResult(str(tid), _result_from_json(result)) for tid, result in data["items"])
    return RewardGroupResult(str(data["group"]), items)


def _read(path: Path, run: str) -> dict[str, dict[str, Any]]:
    """The whole entries of ``path`` if it belongs to ``run`` (a torn last line is left out)."""
    entries: dict[str, dict[str, Any]] = {}
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return entries
    with handle:
        try:
            head = json.loads(handle.readline())
        except ValueError:
            return entries
        if not (isinstance(head, dict) and head.get("answers") == VERSION and head.get("run") == run):
            return entries
        for line in handle:
            if not line.endswith(b"\n"):
                break  # torn by the interruption
            try:
                entry = json.loads(line)
                _group_from_json(entry)  # readable, or not kept
                entries[str(entry["key"])] = entry
            except (ValueError, KeyError, TypeError):
                break
    return entries


def kept_groups(out: Path, run: str | None) -> int:
    """How many group answers of ``run`` the journal beside ``out`` holds."""
    return len(_read(answers_path(out), run or "")) if run else 0


class AnswerJournal:
    """The answers of the chunk being scored: read back on resume, appended to as groups finish.
    The file is written only once there is an answer to keep. Thread-safe (the worker scores a
    chunk's groups on several threads)."""

    def __init__(self, path: Path, run: str, *, keep: bool) -> None:
        self.path = path
        self.run = run
        self._lock = threading.Lock()
        self._entries = _read(path, run) if keep else {}
        self._handle: IO[bytes] | None = None
        self._closed = False
        if not self._entries:
            path.unlink(missing_ok=True)  # another run's, or nothing whole in it

    def __len__(self) -> int:
        return len(self._entries)

    def _open(self) -> IO[bytes]:
        """The file rewritten with the entries kept (a torn last line is cut off), open to append."""
        if self._handle is None:
            temporary = self.path.with_name(self.path.name + ".tmp")
            with temporary.open("wb") as stream:
                stream.write(json.dumps({"answers": VERSION, "run": self.run}).encode() + b"\n")
                for entry in self._entries.values():
                    stream.write(json.dumps(entry, separators=(",", ":")).encode() + b"\n")
            os.replace(temporary, self.path)
            self._handle = self.path.open("ab")
        return self._handle

    def get(
        self, provider_key: str, group_id: str, rollouts: Sequence[Mapping[str, Any]]
    ) -> RewardGroupResult | None:
        """The answer journaled for this provider and these exact rows, if any."""
        with self._lock:
            entry = self._entries.get(_key(provider_key, group_id, rollouts))
        return None if entry is None else _group_from_json(entry)

    def put(
        self,
        provider_key: str,
        group_id: str,
        rollouts: Sequence[Mapping[str, Any]],
        result: RewardGroupResult,
    ) -> None:
        """Journal a provider's checked answer for a group, unless a candidate's answer is an error."""
        if any(item.result.status == "error" for item in result.items):
            return
        key = _key(provider_key, group_id, rollouts)
        entry = {
            "key": key,
            "group": result.group_id,
            "items": [[item.trajectory_id, _result_json(item.result)] for item in result.items],
        }
        line = json.dumps(entry, separators=(",", ":")).encode() + b"\n"
        with self._lock:
            if self._closed:
                return  # the job is over
            handle = self._open()
            self._entries[key] = entry
            handle.write(line)
            handle.flush()  # a killed process keeps it; an fsync per group would cost too much

    def clear(self) -> None:
        """Forget every answer and remove the file (their chunk is journaled now)."""
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None
            self._entries.clear()
            self.path.unlink(missing_ok=True)

    def close(self) -> None:
        """Stop recording; what is journaled stays for a resume."""
        with self._lock:
            self._closed = True
            if self._handle is not None:
                self._handle.close()
                self._handle = None


_CURRENT: ContextVar[AnswerJournal | None] = ContextVar("rewardkit_answer_journal", default=None)


def current() -> AnswerJournal | None:
    """The journal the worker records answers in; ``None`` outside ``rewardkit score``."""
    return _CURRENT.get()


@contextmanager
def recording(journal: AnswerJournal) -> Iterator[AnswerJournal]:
    """Within the block (and the worker threads it starts), answers go to ``journal``."""
    token = _CURRENT.set(journal)
    try:
        yield journal
    finally:
        _CURRENT.reset(token)
