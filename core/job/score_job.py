"""The main job, ``rewardkit score CONFIG [key=value ...] --out results.jsonl``.

Rollouts are read one group at a time and scored in chunks (``score.chunk_rollouts`` at most,
sized by time to about ``score.chunk_seconds``: ``ChunkSizer``), each scored, journaled and dropped,
so memory does not grow with the run and a crash loses at most the chunk in flight. Beside
``--out`` sit the run manifest ``<out>.run.json`` (catalog, providers, identities, normalised spec,
job settings; ``pending`` until the output is in place, then ``complete``) and the journal
``<out>.journal`` (each chunk's output lines, then its fsynced record: number, SHA-256 of its input
rows, metrics, summary sums; a chunk counts once its record is whole). Inside the chunk being
scored, slow providers' answers go to ``<out>.answers`` group by group (``rewardkit.job.answer_journal``),
so a stop inside a chunk loses no paid judge call. The output is written from
the journal to a temporary file (``advantage_scaling: batch`` recomputes the advantages over the
whole run) and renamed into place.

``--resume`` finishes a ``pending`` run under the same provider identities, spec and job settings
(anything else is refused), rescoring only chunks not journaled or whose input changed; with nothing
journaled (no manifest) it runs the job from the start. Replacing a run needs ``--overwrite``. A
Ctrl-C ends the job with one line naming the ``--resume`` command (exit code 130).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shlex
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import IO, Any

from rewardkit.config import RewardkitConfig, load_config
from rewardkit.contracts.errors import (
    ConfigError,
    DataError,
    IdentityMismatchError,
    PreflightError,
    RewardkitError,
)
from rewardkit.contracts.identity import canonical_json, sha256_hex
from rewardkit.job.answer_journal import AnswerJournal, answers_path, kept_groups, recording
from rewardkit.job.data import RESTART, RolloutGroup, iter_rollout_groups
from rewardkit.job.provenance import (
    ProviderRecord,
    RevisionNotBumpedWarning,
    check_resume_all,
    unbumped_code_changes,
)
from rewardkit.job.score_progress import ProgressLine
from rewardkit.job.tables import format_table
from rewardkit.scoring.metrics import STATUSES, zero_variance_groups
from rewardkit.scoring.reward import load, optimised_term_note
from rewardkit.scoring.split_batch import SplitBatchFinisher
from rewardkit.scoring.worker import ScoredBatch, ScoredCandidate
from rewardkit.seam.catalog import resolve_catalog
from rewardkit.seam.protocols import RewardLike

CHUNK_ROLLOUTS = 4096  # the most rollouts scored, journaled and fsynced together (score.chunk_rollouts)
FIRST_CHUNK_ROLLOUTS = 64  # a time-sized run starts here: nothing is known of the provider's speed yet
CHUNK_GROWTH = 8  # a time-sized chunk is at most this many times the last: one fast chunk may be luck
JOURNAL_VERSION = 1
_ROW_PREFIX = b'{"group_id":'
_RECORD_PREFIX = b'{"chunk":'
ERRORS_SHOWN = 5  # errored candidates the summary prints with their reasons (the rest are counted)
_COMPONENT_SUMS = ("n", "sum", "sumsq", *STATUSES, "gated")
_FINAL_SUMS = ("n", "sum", "sumsq", "nulls", "gated", "errored")  # errored: candidates with an error


def _umask() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # no way to read it without setting it elsewhere
    os.umask(mask)
    return mask


def write_atomically(path: Path, lines: Iterable[str | bytes]) -> None:
    """Write ``lines`` to ``path`` via a temporary file, fsync and a rename, with the permissions a
    plain ``open`` would give (not a temporary file's private mode)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(handle, 0o666 & ~_umask())
        with os.fdopen(handle, "wb") as stream:
            for line in lines:
                stream.write(line.encode("utf-8") if isinstance(line, str) else line)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def manifest_path(out: Path) -> Path:
    return out.with_name(out.name + ".run.json")


def journal_path(out: Path) -> Path:
    return out.with_name(out.name + ".journal")


def check_out_path(out: Path) -> None:
    """Refuse an ``--out`` that cannot take the results, before anything is scored."""
    named = {
        out: "--out",
        manifest_path(out): "the run manifest",
        journal_path(out): "the journal",
        answers_path(out): "the answer journal",
    }
    for path, what in named.items():
        if path.is_dir():
            problem = f"{what} {path} is a folder; --out names the results file, e.g. {out / 'results.jsonl'}"
            raise PreflightError(problem)
    existing = out.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise PreflightError(f"--out {out}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PreflightError(f"--out {out}: cannot write in {existing}")


def _job_settings(config: RewardkitConfig) -> dict[str, Any]:
    """Settings besides providers and spec that shape the output lines (checked on resume)."""
    rl = config.rl
    return {
        "group_size": rl.group_size,
        "advantage_scaling": rl.advantage_scaling,
        "advantage_std": rl.advantage_std,
        "advantage_eps": rl.advantage_eps,
        "prompt_column": rl.data.prompt_column,
        "reference_column": rl.data.reference_column,  # one canonical key, whichever name was given
    }


# Recorded by manifests written before chunks were sized by time; chunking does not shape the output
# (a resume follows the journaled chunks' boundaries), so it is not compared.
_NOT_COMPARED = frozenset({"chunk_rollouts"})


def _chunking(config: RewardkitConfig) -> dict[str, Any]:
    """The chunk settings this run uses (recorded in the manifest; a resume may change them)."""
    most = config.score.chunk_rollouts or CHUNK_ROLLOUTS
    return {"chunk_rollouts": most, "chunk_seconds": config.score.chunk_seconds}


@dataclass
class ChunkSizer:
    """How many rollouts the next chunk holds. With ``seconds`` unset, ``most``. Otherwise the first
    chunk holds at most ``FIRST_CHUNK_ROLLOUTS``; after each, the next is sized to take about
    ``seconds`` at the rate just measured, at most ``CHUNK_GROWTH`` times the last and ``most``: a
    fast provider reaches ``most`` in a few chunks, a slow one (a judge) gets chunks whose loss to
    a crash costs about ``seconds``. A chunk is whole groups, so at least one group whatever this says."""

    most: int
    seconds: float | None
    target: int = 0

    def __post_init__(self) -> None:
        self.target = self.most if self.seconds is None else min(self.most, FIRST_CHUNK_ROLLOUTS)

    def scored(self, rollouts: int, elapsed: float) -> None:
        """A chunk of ``rollouts`` took ``elapsed`` seconds (scored and journaled)."""
        if self.seconds is None or rollouts <= 0:
            return
        fits = int(self.seconds * rollouts / max(elapsed, 1e-9))
        self.target = max(1, min(self.most, CHUNK_GROWTH * rollouts, fits))


def _manifest(
    config: RewardkitConfig, reward: RewardLike, status: str, run: str, started: str, **extra: Any
) -> dict:
    return {
        "status": status,
        "run": run,
        "started": started,
        "config": str(config.source_path) if config.source_path else None,
        "rollouts": config.rl.data.rollouts_path,
        "catalog": reward.selection.catalog,
        "service": config.rl.reward.service,
        "backend": config.rewards.backend,
        "spec": reward.spec_identity,
        "job": _job_settings(config),
        "chunking": _chunking(config),
        "providers": [record.to_json() for record in reward.providers],
        **extra,
    }


def _write_manifest(out: Path, document: dict[str, Any]) -> None:
    write_atomically(manifest_path(out), [json.dumps(document, indent=2) + "\n"])


def _read_manifest(out: Path) -> tuple[dict[str, Any] | None, bytes | None]:
    path = manifest_path(out)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, None
    try:
        previous = json.loads(raw)
        if not isinstance(previous, dict) or not isinstance(previous.get("providers"), list):
            raise ValueError("not a run manifest")
    except ValueError as error:
        raise PreflightError(f"cannot read the run manifest {path}: {error}") from None
    return previous, raw


def _pending_summary(out: Path, previous: dict[str, Any]) -> str:
    journal = Journal.scan(journal_path(out), previous.get("run"))
    providers = ", ".join(
        f"{row.get('provider')} ({str(row.get('identity'))[:12]})" for row in previous.get("providers", [])
    )
    return (
        f"{manifest_path(out)} records a run that did not finish: started "
        f"{previous.get('started') or '(unknown)'} "
        f"with config {previous.get('config')}, rollouts {previous.get('rollouts')}, providers {providers}; "
        f"{journal.rollouts} rollouts in {len(journal.chunks)} chunks are journaled"
        + _answers_kept(out, previous)
    )


def _check_resume(
    out: Path, previous: dict[str, Any], reward: RewardLike, config: RewardkitConfig, allow_code_change: bool
) -> list[dict[str, Any]]:
    """Refuse a resume that would mix scores of two rewards; returns the code changes it allows
    (a provider's code changed under the same revision, with ``--allow-code-change``)."""
    path = manifest_path(out)
    try:
        records = [ProviderRecord.from_json(row) for row in previous["providers"]]
    except (ValueError, KeyError, TypeError) as error:
        raise PreflightError(f"cannot read the run manifest {path}: {error}") from None
    try:
        check_resume_all(records, reward.providers, strict=not allow_code_change)
    except IdentityMismatchError as error:
        if "bump the revision" not in str(error):
            raise
        raise IdentityMismatchError(
            f"{error}: resuming would mix the two versions' scores in one output; start over with "
            "--overwrite, or pass --allow-code-change to finish it anyway (both fingerprints are "
            "then recorded in the manifest)"
        ) from None
    current = {record.provider: record for record in reward.providers}
    changes = [
        {
            "provider": record.provider,
            "revision": record.revision,
            "code_fingerprints": [record.code_fingerprint, current[record.provider].code_fingerprint],
        }
        for record in records
        if record.code_fingerprint != current[record.provider].code_fingerprint
    ]
    changes.extend(previous.get("code_changes") or [])
    recorded_spec, current_spec = previous.get("spec"), reward.spec_identity
    if canonical_json(recorded_spec) != canonical_json(current_spec):
        raise IdentityMismatchError(
            f"the pending run in {path} composed its reward with spec "
            f"{sha256_hex(canonical_json(recorded_spec))[:16]} but this configuration gives "
            f"{sha256_hex(canonical_json(current_spec))[:16]} (weights, gates, floor, onError, clip or "
            "params changed); finish it with the recorded spec, or start over with --overwrite"
        )
    recorded_job, current_job = previous.get("job") or {}, _job_settings(config)
    recorded_job = {key: value for key, value in recorded_job.items() if key not in _NOT_COMPARED}
    changed = sorted(
        key
        for key in current_job.keys() | recorded_job.keys()
        if recorded_job.get(key) != current_job.get(key)
    )
    if changed:
        shown = "; ".join(
            f"{key}: {recorded_job.get(key)!r} then, {current_job.get(key)!r} now" for key in changed
        )
        raise IdentityMismatchError(
            f"the pending run in {path} was scored with other job settings ({shown}); finish it with "
            "the recorded settings, or start over with --overwrite"
        )
    return changes


@dataclass
class Chunk:
    """A journaled chunk: where its output lines are in the journal, and its record."""

    offset: int
    length: int
    record: dict[str, Any]


@dataclass
class Journal:
    """The journal of one run: its chunks by number (a later record of a number wins)."""

    path: Path
    run: str
    chunks: dict[int, Chunk] = field(default_factory=dict)
    end: int = 0  # bytes of whole records; anything after is a torn write and is cut off

    @property
    def rollouts(self) -> int:
        return sum(chunk.record["rollouts"] for chunk in self.chunks.values())

    @classmethod
    def scan(cls, path: Path, run: str | None) -> Journal:
        """The whole chunks of ``path`` if it belongs to ``run``, else an empty journal."""
        journal = cls(path, run or "")
        try:
            handle = path.open("rb")
        except FileNotFoundError:
            return journal
        with handle:
            header = handle.readline()
            try:
                head = json.loads(header)
            except ValueError:
                return journal
            if not (
                isinstance(head, dict) and head.get("journal") == JOURNAL_VERSION and head.get("run") == run
            ):
                return journal
            offset = journal.end = len(header)
            start, rows = offset, 0
            for line in handle:
                if not line.endswith(b"\n"):
                    break  # torn
                if line.startswith(_ROW_PREFIX):
                    rows += 1
                elif line.startswith(_RECORD_PREFIX):
                    try:
                        record = json.loads(line)
                        number = int(record["chunk"])
                        if record["rollouts"] != rows:
                            break
                    except (ValueError, KeyError, TypeError):
                        break
                    journal.chunks[number] = Chunk(start, offset - start, record)
                    journal.end = offset + len(line)
                    start, rows = journal.end, 0
                else:
                    break
                offset += len(line)
        return journal

    def open_for_append(self, fresh: bool) -> IO[bytes]:
        """The journal, cut to its whole records (or new, for a fresh run), positioned at the end."""
        if fresh or not self.path.exists() or self.end == 0:
            self.chunks.clear()
            handle: IO[bytes] = self.path.open("wb")
            header = json.dumps({"journal": JOURNAL_VERSION, "run": self.run}).encode() + b"\n"
            handle.write(header)
            handle.flush()
            os.fsync(handle.fileno())
            self.end = len(header)
            return handle
        handle = self.path.open("r+b")
        handle.truncate(self.end)
        handle.seek(self.end)
        return handle

    def append(self, handle: IO[bytes], number: int, lines: list[bytes], record: dict[str, Any]) -> None:
        """Append one chunk durably: its output lines, then its record; flush and fsync."""
        body = b"".join(lines)
        handle.write(body)
        handle.write(json.dumps({"chunk": number, **record}, separators=(",", ":")).encode() + b"\n")
        handle.flush()
        os.fsync(handle.fileno())
        self.chunks[number] = Chunk(self.end, len(body), {"chunk": number, **record})
        self.end = handle.tell()


def _error_example(
    reward: RewardLike, group_id: str, candidate: ScoredCandidate, component: str, entry: dict[str, Any]
) -> dict[str, Any]:
    """One errored component of one candidate: where, why, and its provider's diagnostics."""
    provider = next((c.provider for c in reward.spec.components if c.name == component), None)
    return {
        "group_id": group_id,
        "trajectory_id": candidate.trajectory_id,
        "component": component,
        "reason": entry.get("reason"),
        "diagnostics": candidate.diagnostics.get(provider or "", {}),
    }


def result_lines(batch: ScoredBatch, groups: Sequence[RolloutGroup]) -> list[bytes]:
    """The output lines of one scored chunk: each candidate's row, ending with its ``completion`` (the
    text it was scored on, so a surprising reward can be read against it)."""
    texts = [rollout["completion"] for group in groups for rollout in group.rollouts]
    rows = batch.to_jsonl_rows()
    if len(rows) != len(texts):  # scoring returns every candidate once, in order
        raise RewardkitError(f"scored {len(rows)} candidates for {len(texts)} rollouts")
    return [
        json.dumps({**row, "completion": text}, separators=(",", ":")).encode() + b"\n"
        for row, text in zip(rows, texts)
    ]


def _chunk_sums(reward: RewardLike, batch: ScoredBatch) -> dict[str, Any]:
    """The summary sums of one chunk per component and for the final total, and its first errors."""
    components = {component.name: dict.fromkeys(_COMPONENT_SUMS, 0.0) for component in reward.spec.components}
    final = dict.fromkeys(_FINAL_SUMS, 0.0)
    errors: list[dict[str, Any]] = []
    for group_id, candidate in batch.candidates():
        for name, entry in candidate.breakdown.items():
            sums = components.get(name)
            if sums is None:
                continue
            status = entry["status"]
            sums[status] += 1
            if status == "error" and len(errors) < ERRORS_SHOWN:
                errors.append(_error_example(reward, group_id, candidate, name, entry))
            if status == "scored":
                _add_value(sums, entry["value"])
            if entry.get("gate") and not entry.get("passed", True):
                sums["gated"] += 1
        if candidate.final is None:
            final["nulls"] += 1
        else:
            _add_value(final, candidate.final)
        final["gated"] += candidate.gated
        final["errored"] += any(entry["status"] == "error" for entry in candidate.breakdown.values())
    zero = zero_variance_groups([candidate.final for candidate in group.candidates] for group in batch.groups)
    return {
        "components": components,
        "final": final,
        "errors": errors,
        "groups": len(batch.groups),
        "zero_variance_groups": zero,
    }


def _add_value(sums: dict[str, float], value: float) -> None:
    sums["n"] += 1
    sums["sum"] += value
    sums["sumsq"] += value * value


def _added(keys: Sequence[str], parts: Iterable[dict[str, float]]) -> dict[str, float]:
    sums = dict.fromkeys(keys, 0.0)
    for part in parts:
        for key, value in part.items():
            sums[key] += value
    return sums


def _shown_mean_std(sums: dict[str, float]) -> tuple[str, str]:
    """The mean and standard deviation of summed values as the summary shows them (``nan`` for none)."""
    count = sums["n"]
    if not count:
        return f"{math.nan:.4f}", f"{math.nan:.4f}"
    mean = sums["sum"] / count
    return f"{mean:.4f}", f"{math.sqrt(max(0.0, sums['sumsq'] / count - mean * mean)):.4f}"


def summary_rows(reward: RewardLike, chunks: Sequence[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Per component (with its provider and term) and for the final total: mean, std and counts."""
    rows: list[tuple[Any, ...]] = []
    for component in reward.spec.components:
        sums = _added(_COMPONENT_SUMS, (chunk["components"].get(component.name, {}) for chunk in chunks))
        counts = (int(sums["scored"]), int(sums["skipped"]), int(sums["error"]), int(sums["gated"]))
        rows.append(
            (component.name, f"{component.provider}:{component.term}", *_shown_mean_std(sums), *counts)
        )
    final = _added(_FINAL_SUMS, (chunk["final"] for chunk in chunks))
    counts = (int(final["n"]), 0, int(final["nulls"]), int(final["gated"]))
    rows.append(("final", "-", *_shown_mean_std(final), *counts))
    return rows


def zero_variance_line(chunks: Sequence[dict[str, Any]]) -> str | None:
    """The summary's count of groups whose final rewards are all equal; ``None`` when a chunk was
    journaled before the count was kept (a resumed older run)."""
    if not chunks or any("zero_variance_groups" not in chunk for chunk in chunks):
        return None
    zero = sum(int(chunk["zero_variance_groups"]) for chunk in chunks)
    groups = sum(int(chunk["groups"]) for chunk in chunks)
    share = zero / groups if groups else 0.0
    return (
        f"zero-variance groups: {zero} of {groups} ({share:.1%}) have final rewards that are all equal "
        "(no learning signal for GRPO)"
    )


ALL_ERRORED_EXIT = 3  # the output is written, but no candidate was scored without an error


def all_errored_line(reward: RewardLike, chunks: Sequence[dict[str, Any]], allowed: bool) -> str | None:
    """The warning for a run under ``onError: none`` in which every candidate had an errored
    component: its rewards are nulls (or the floor of a failed gate), a dead judge or a broken
    sandbox rather than a measurement, yet such a run would otherwise finish like any other.
    ``None`` for any other run (under ``raise`` the batch fails; ``zero`` asks to score through)."""
    if reward.spec.on_error != "none":
        return None
    final = _added(_FINAL_SUMS, (chunk["final"] for chunk in chunks))
    candidates = int(final["n"] + final["nulls"])
    if not candidates or int(final["errored"]) != candidates:
        return None
    what = (
        "exit 0, as asked"
        if allowed
        else f"exit {ALL_ERRORED_EXIT}; fix the cause, or pass --allow-all-errored to exit 0 on such a run"
    )
    return (
        f"rewardkit: warning: every one of the {candidates} candidates had an errored component "
        "(onError: none scores them through: no candidate has a reward of its own; the first errors "
        f"are listed above): {what}"
    )


def resume_command(config_source: str, overrides: Sequence[str], out: str) -> str:
    """The command line that finishes this run: the same configuration, overrides and --out."""
    return shlex.join(["rewardkit", "score", config_source, *overrides, "--out", out, "--resume"])


def error_lines(chunks: Sequence[dict[str, Any]]) -> list[str]:
    """The run's first ``ERRORS_SHOWN`` errors with their reasons and diagnostics, for the summary."""
    total = sum(int(sums.get("error", 0)) for chunk in chunks for sums in chunk["components"].values())
    if not total:
        return []
    # Journals written before errors were kept have none: the count still shows.
    shown = [example for chunk in chunks for example in chunk.get("errors", ())][:ERRORS_SHOWN]
    lines = [f"errors: {total}" + (f" (the first {len(shown)}):" if shown else "")]
    for example in shown:
        diagnostics = ", ".join(f"{name}={value:g}" for name, value in example["diagnostics"].items())
        lines.append(
            f"  group {example['group_id']!r}, candidate {example['trajectory_id']!r}, "
            # repr: a reason may quote the completion, and a completion may hold terminal escapes
            f"component {example['component']!r}: {example['reason']!r}"
            + (f" [{diagnostics}]" if diagnostics else "")
        )
    return lines


def _copy_range(source: IO[bytes], offset: int, length: int) -> Iterator[bytes]:
    source.seek(offset)
    while length > 0:
        piece = source.read(min(length, 1 << 20))
        if not piece:
            raise RewardkitError("the journal is shorter than its records say; start over with --overwrite")
        length -= len(piece)
        yield piece


def _chunk_rows(source: IO[bytes], chunk: Chunk) -> Iterator[dict[str, Any]]:
    data = b"".join(_copy_range(source, chunk.offset, chunk.length))
    yield from map(json.loads, data.splitlines())


def _output_pieces(journal: Journal, count: int, finisher: SplitBatchFinisher) -> Iterator[bytes]:
    """The output, chunk by chunk from the journal; ``batch`` advantages are recomputed over the run
    (a chunk holds whole groups, so under ``group`` or ``none`` scaling its lines are final)."""
    with journal.path.open("rb") as source:
        if finisher.scaling != "batch":
            for number in range(count):
                chunk = journal.chunks[number]
                yield from _copy_range(source, chunk.offset, chunk.length)
            return
        finisher.scale_by_batch(
            row["final"] for number in range(count) for row in _chunk_rows(source, journal.chunks[number])
        )
        for number in range(count):
            lines: list[bytes] = []
            for _, rows in groupby(_chunk_rows(source, journal.chunks[number]), lambda row: row["group_id"]):
                group = list(rows)
                (advantages,) = finisher.advantages([[candidate["final"] for candidate in group]])
                for candidate, advantage in zip(group, advantages):
                    candidate["advantage"] = advantage
                    lines.append(json.dumps(candidate, separators=(",", ":")).encode() + b"\n")
            yield b"".join(lines)


def _count_lines(path: str) -> int | None:
    try:
        with open(path, "rb") as handle:
            return sum(piece.count(b"\n") for piece in iter(lambda: handle.read(1 << 20), b""))
    except OSError:
        return None


def _term_note(config: RewardkitConfig, reward: RewardLike) -> str | None:
    """Which term of a multi-term provider is optimised; ``None`` when moot or not installed here."""
    try:
        return optimised_term_note(
            config.rl.reward, reward.spec, reward.catalog or resolve_catalog(config.rl.reward.catalog)
        )
    except RewardkitError:
        return None


def _chunks(
    groups: Iterator[Any], sizer: ChunkSizer, journal: Journal
) -> Iterator[tuple[int, list[RolloutGroup], str] | None]:
    """Numbered chunks with the SHA-256 of their input rows; ``None`` when the reader starts over.
    A chunk the journal holds keeps its number of groups (its boundaries may have come from another
    run's timing: a resume must cut the file where that run did to find its chunks unchanged); any
    other closes at ``sizer.target`` rollouts or more (the loop scores and journals each chunk
    before this generator reads on, so the target has seen every chunk before)."""
    members: list[RolloutGroup] = []
    number, digest, size = 0, hashlib.sha256(), 0
    for item in groups:
        if item is RESTART:
            number, members, digest, size = 0, [], hashlib.sha256(), 0
            yield None
            continue
        group, group_digest = item
        members.append(group)
        digest.update(group_digest)
        size += len(group.rollouts)
        known = journal.chunks.get(number)
        journaled = known.record.get("groups") if known is not None else None
        if isinstance(journaled, int) and journaled > 0:
            full = len(members) >= journaled
        else:
            full = size >= sizer.target
        if full:
            yield number, members, digest.hexdigest()
            number, members, digest, size = number + 1, [], hashlib.sha256(), 0
    if members:
        yield number, members, digest.hexdigest()


def interrupted_line(config_source: str, overrides: Sequence[str], out: str) -> str:
    """The one line a Ctrl-C ends the job with: what is journaled and how to finish the run."""
    out_path = Path(out)
    try:
        previous, _ = _read_manifest(out_path)
    except PreflightError:
        previous = None
    if previous is None or previous.get("status") != "pending":
        return f"rewardkit: interrupted before anything was journaled; nothing to resume at {out_path}"
    journal = Journal.scan(journal_path(out_path), previous.get("run"))
    return (
        f"rewardkit: interrupted: {journal.rollouts} rollouts in {len(journal.chunks)} chunks are journaled "
        f"in {journal.path}{_answers_kept(out_path, previous)}; finish the run with: "
        f"{resume_command(config_source, overrides, out)}"
    )


def _answers_kept(out: Path, previous: dict[str, Any]) -> str:
    """What the answer journal keeps of the chunk that was being scored, as a clause ('' if nothing)."""
    count = kept_groups(out, previous.get("run"))
    if not count:
        return ""
    return (
        f", and {count} group answer{'s' if count != 1 else ''} of slow providers in the chunk that was "
        f"being scored in {answers_path(out)} (a resume does not ask for them again)"
    )


@dataclass
class _Plan:
    """What the plan phase settled before anything is scored: the command (for the lines that say how
    to resume), where the run writes, what ``--out`` held, and which run this is (a new one, or the
    pending one it resumes, with the code changes ``--allow-code-change`` let through)."""

    config_source: str
    overrides: Sequence[str]
    out: str
    config: RewardkitConfig
    rollouts_path: str
    out_path: Path
    previous: dict[str, Any] | None  # the manifest --out's last run left, if any
    previous_raw: bytes | None
    pending: dict[str, Any] | None  # that manifest when its run is unfinished
    resume: bool
    run: str
    started: str
    journal: Journal
    changed: dict[str, Any]  # {"code_changes": [...]} when a resume scores with changed code, else {}

    def resume_line(self) -> str:
        return resume_command(self.config_source, self.overrides, self.out)


@dataclass
class _Scored:
    """What the run phase scored over the whole file (chunks journaled by an earlier run included)."""

    chunks: int = 0
    reused: int = 0  # chunks found journaled with the same input
    reused_rollouts: int = 0
    groups: int = 0
    rollouts: int = 0
    seconds: float = 0.0


@dataclass
class _Finished:
    """What the finish phase wrote: the chunks' summaries, and the zero-variance groups when any."""

    summaries: list[dict[str, Any]]
    zero_variance: int
    zero_line: str | None


def run_score(
    config_source: str,
    overrides: Sequence[str],
    out: str,
    *,
    resume: bool = False,
    overwrite: bool = False,
    allow_code_change: bool = False,
    allow_all_errored: bool = False,
    plot: str | None = None,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
    on_chunk: Callable[[int], None] | None = None,
) -> int:
    """Run the main job; returns the exit code (0 ok, 1 the scoring failed, 2 a data error after
    some chunks were journaled, 3 every candidate errored under ``onError: none`` and
    ``allow_all_errored`` is false (the output is written), 130 Ctrl-C). ``on_chunk(n)`` is called
    after chunk ``n`` is journaled (tests stop a job with it); ``plot`` names a picture of the reward
    distributions. Four phases: plan (what to score and where), run (score and journal chunk by
    chunk), finish (the output and the complete manifest), report (the summary)."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    try:
        if plot is not None:
            from rewardkit.job.score_plot import require_matplotlib

            require_matplotlib()  # before anything is scored
        if resume and overwrite:
            problem = "--resume and --overwrite exclude each other: finish the pending run, or discard it"
            raise PreflightError(problem)
        config = load_config(config_source, overrides)
        rollouts_path = config.rl.data.rollouts_path
        if rollouts_path is None:
            raise ConfigError(
                "rl.data.rollouts_path is not set: `rewardkit score` needs a JSONL file of rollouts "
                "(group_id, completion, and the prompt/reference columns)",
                key="rl.data.rollouts_path",
            )
        out_path = Path(out)
        check_out_path(out_path)
        with load(config) as reward:
            note = _term_note(config, reward)
            if note is not None:
                print(f"rewardkit: {note}", file=stderr)
            plan = _plan(
                (config_source, overrides, out),
                config,
                rollouts_path,
                reward,
                resume=resume,
                overwrite=overwrite,
                allow_code_change=allow_code_change,
                stderr=stderr,
            )
            scored = _run(plan, reward, stderr, on_chunk)
            if isinstance(scored, int):
                return scored
            finished = _finish(plan, reward, scored)
            return _report(plan, reward, scored, finished, plot, allow_all_errored, stdout, stderr)
    except KeyboardInterrupt:
        print(interrupted_line(config_source, overrides, out), file=stderr)
        return 130


def _plan(
    command: tuple[str, Sequence[str], str],
    config: RewardkitConfig,
    rollouts_path: str,
    reward: RewardLike,
    *,
    resume: bool,
    overwrite: bool,
    allow_code_change: bool,
    stderr: IO[str],
) -> _Plan:
    """Read what ``--out`` holds, refuse what would lose a run, and open this run's journal and its
    ``pending`` manifest: a new run, or the pending one resumed under the same identities."""
    config_source, overrides, out = command
    out_path = Path(out)
    previous, previous_raw = _read_manifest(out_path)
    pending = previous if previous is not None and previous.get("status") == "pending" else None
    if resume and previous is None:
        # Nothing was journaled (a stop in the first second leaves no manifest): the job
        # from the start is what finishing it means, so the `--resume` line always works.
        print(
            f"rewardkit: --resume: nothing is journaled for {out_path} (no run manifest at "
            f"{manifest_path(out_path)}); scoring it from the start",
            file=stderr,
        )
        resume = False
    if resume and pending is None:
        raise PreflightError(
            f"--resume: the run recorded in {manifest_path(out_path)} is complete; nothing to resume "
            "(run without --resume to score again)"
        )
    if previous is not None and pending is None and not overwrite and out_path.exists():
        raise PreflightError(
            f"--out {out_path} holds the complete result of an earlier run (started "
            f"{previous.get('started') or '(unknown)'}, config {previous.get('config')}, "
            f"{previous.get('rollouts_scored', '?')} rollouts; manifest {manifest_path(out_path)}): "
            "pass --overwrite to replace it, or choose another --out"
        )
    if pending is not None and not resume and not overwrite:
        raise PreflightError(
            f"{_pending_summary(out_path, pending)}. Pass --resume to finish it under the same "
            "provider identities, or --overwrite to discard it and start over"
        )
    code_changes: list[dict[str, Any]] = []
    if resume and pending is not None:  # a resume without a pending run was refused above
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RevisionNotBumpedWarning)  # said below, once, plainly
            code_changes = _check_resume(out_path, pending, reward, config, allow_code_change)
        for change in code_changes:
            old, new = change["code_fingerprints"]
            print(
                f"rewardkit: warning: --allow-code-change: provider {change['provider']!r} "
                f"(revision {change['revision']!r}) scored the journaled chunks with code {old[:12]} "
                f"and scores the rest with {new[:12]}; the manifest records both",
                file=stderr,
            )
        run, started = str(pending.get("run") or ""), str(pending.get("started") or "")
        journal = Journal.scan(journal_path(out_path), run)
    else:
        if previous is not None:  # a fresh run over a recorded one: say what changed unbumped
            for line in unbumped_code_changes(previous.get("providers"), reward.providers):
                where = manifest_path(out_path)
                print(f"rewardkit: warning: {line} (run recorded in {where})", file=stderr)
        run, started = uuid.uuid4().hex, time.strftime("%Y-%m-%dT%H:%M:%S%z")
        journal = Journal(journal_path(out_path), run)
    changed = {"code_changes": code_changes} if code_changes else {}
    _write_manifest(out_path, _manifest(config, reward, "pending", run, started, **changed))
    return _Plan(
        config_source,
        overrides,
        out,
        config,
        rollouts_path,
        out_path,
        previous,
        previous_raw,
        pending,
        resume,
        run,
        started,
        journal,
        changed,
    )


def _run(
    plan: _Plan, reward: RewardLike, stderr: IO[str], on_chunk: Callable[[int], None] | None
) -> _Scored | int:
    """Score the file chunk by chunk, each journaled (fsynced) before the next is read; a chunk the
    journal holds with the same input is reused. A scoring failure is its exit code (1, or 2 for a
    data error after some chunks were journaled), with ``--out``'s files left as they were when
    nothing was journaled; a configuration error propagates."""
    config, journal, out_path = plan.config, plan.journal, plan.out_path
    # Slow providers' answers inside the chunk being scored (``rewardkit.job.answer_journal``).
    answers = AnswerJournal(answers_path(out_path), plan.run, keep=plan.resume)
    with journal.open_for_append(fresh=not plan.resume) as handle, recording(answers):
        groups = iter_rollout_groups(
            plan.rollouts_path,
            prompt_column=config.rl.data.prompt_column,
            response_column=config.rl.data.response_column,
            needs=reward.needs,
            group_size=config.rl.group_size,
        )
        bar = ProgressLine(_count_lines(plan.rollouts_path) if stderr.isatty() else None, stderr)
        start = time.perf_counter()
        scored = _Scored()

        def discard_if_empty() -> None:
            """Nothing journaled: leave --out's files as they were. The file decides, not
            ``journal.chunks``: an interrupt can land between a chunk's write and its count."""
            answers.close()
            if journal.chunks or Journal.scan(journal.path, plan.run).chunks or len(answers):
                return
            if plan.previous_raw is not None and plan.pending is None:
                write_atomically(manifest_path(out_path), [plan.previous_raw])
            else:
                manifest_path(out_path).unlink(missing_ok=True)
            journal.path.unlink(missing_ok=True)
            answers.path.unlink(missing_ok=True)

        try:
            chunking = _chunking(config)
            sizer = ChunkSizer(chunking["chunk_rollouts"], chunking["chunk_seconds"])
            if len(answers):
                # The answers kept from the chunk a stop cut short are dropped once the next
                # chunk is journaled: that chunk must reach as far as the stopped one did.
                sizer.target = sizer.most
            for item in _chunks(groups, sizer, journal):
                if item is None:  # the reader starts over: what came before is void
                    scored = _Scored()
                    continue
                number, members, digest = item
                scored.chunks = number + 1
                scored.groups += len(members)
                rollouts = sum(len(group.rollouts) for group in members)
                scored.rollouts += rollouts
                known = journal.chunks.get(number)
                if known is not None and known.record.get("input") == digest:
                    scored.reused += 1
                    scored.reused_rollouts += rollouts
                    bar.skip(rollouts)
                    continue
                began = time.perf_counter()
                batch = reward.score(members, progress=bar.update)
                lines = result_lines(batch, members)
                record = {
                    "input": digest,
                    "groups": len(members),
                    "rollouts": len(lines),
                    "first": members[0].group_id,
                    "metrics": batch.metrics,
                    "weights": batch.metric_weights,
                    "summary": _chunk_sums(reward, batch),
                }
                journal.append(handle, number, lines, record)
                sizer.scored(len(lines), time.perf_counter() - began)  # sizes the next chunk
                answers.clear()  # the chunk's answers are in the journal now
                if on_chunk is not None:
                    on_chunk(number)
        except KeyboardInterrupt:
            bar.clear()
            discard_if_empty()
            raise
        except RewardkitError as error:
            bar.close()
            discard_if_empty()
            journaled = sum(
                chunk.record["rollouts"] for n, chunk in journal.chunks.items() if n < scored.chunks
            )
            if isinstance(error, DataError) and journal.chunks:
                print(
                    f"rewardkit: error: {error} ({journaled} rollouts in the chunks before it are "
                    f"journaled: fix the file, then finish the run with: {plan.resume_line()})",
                    file=stderr,
                )
                return 2
            if not isinstance(error, (ConfigError, DataError)):
                print(
                    f"rewardkit: the batch failed, nothing was written to {out_path}: {error}"
                    + (
                        f" ({journaled} rollouts are journaled: finish the run with: {plan.resume_line()})"
                        if journal.chunks or len(answers)
                        else ""
                    ),
                    file=stderr,
                )
                return 1
            raise
        scored.seconds = time.perf_counter() - start
        bar.close()
    return scored


def _finish(plan: _Plan, reward: RewardLike, scored: _Scored) -> _Finished:
    """Write the output from the journal (advantages finished over the whole run), then the complete
    manifest with the run's tally; the journal and the answers go once the output is in place."""
    journal, out_path = plan.journal, plan.out_path
    records = [journal.chunks[number].record for number in range(scored.chunks)]
    summaries = [record["summary"] for record in records]
    zero_line = zero_variance_line(summaries)
    zero = sum(int(summary.get("zero_variance_groups", 0)) for summary in summaries)
    kept = {"zero_variance_groups": zero} if zero_line is not None else {}
    finisher = SplitBatchFinisher.for_config(plan.config.rl)
    for done in records:  # a chunk journaled without weights weighs its means by its rollouts
        finisher.add_report(
            done["metrics"], done.get("weights") or {}, default_weight=float(done["rollouts"])
        )
    write_atomically(out_path, _output_pieces(journal, scored.chunks, finisher))
    metrics, _ = finisher.report()
    tally: dict[str, Any] = dict(
        rollouts_scored=scored.rollouts, groups=scored.groups, seconds=scored.seconds
    )
    tally.update(chunks=scored.chunks, chunks_reused=scored.reused, metrics=metrics, **kept, **plan.changed)
    _write_manifest(out_path, _manifest(plan.config, reward, "complete", plan.run, plan.started, **tally))
    journal.path.unlink(missing_ok=True)
    answers_path(out_path).unlink(missing_ok=True)
    return _Finished(summaries, zero, zero_line)


def _report(
    plan: _Plan,
    reward: RewardLike,
    scored: _Scored,
    finished: _Finished,
    plot: str | None,
    allow_all_errored: bool,
    stdout: IO[str],
    stderr: IO[str],
) -> int:
    """Print the summary table, the zero-variance and error lines and the totals, draw the plot, and
    return the exit code (``ALL_ERRORED_EXIT`` when every candidate errored and that is not allowed)."""
    out_path, summaries = plan.out_path, finished.summaries
    headers = ("component", "provider:term", "mean", "std", "scored", "skipped", "errors", "gated")
    print(format_table(summary_rows(reward, summaries), headers), file=stdout)
    if finished.zero_line is not None:
        print(finished.zero_line, file=stdout)
    errors = error_lines(summaries)
    if errors:
        print("\n" + "\n".join(errors), file=stdout)
    again = f"; {scored.reused} of {scored.chunks} chunks were journaled already" if scored.reused else ""
    scored_now = scored.rollouts - scored.reused_rollouts  # the rate counts only what this run scored
    print(
        f"\n{scored.rollouts} rollouts in {scored.groups} groups scored in {scored.seconds:.3f}s "
        f"({scored_now / max(scored.seconds, 1e-9):,.0f} rollouts/s){again}; wrote {out_path} "
        f"and its run manifest {manifest_path(out_path)}",
        file=stdout,
    )
    if plot is not None:
        from rewardkit.job.score_plot import plot_distribution

        names = [component.name for component in reward.spec.components]
        title = f"rewardkit score {out_path.name}: {scored.rollouts} rollouts, {scored.groups} groups"
        plot_distribution(
            out_path, Path(plot), names, title=title, zero_variance=(finished.zero_variance, scored.groups)
        )
        print(f"wrote the reward distribution plot to {plot}", file=stdout)
    all_errored = all_errored_line(reward, summaries, allow_all_errored)
    if all_errored is not None:
        print(all_errored, file=stderr)
        if not allow_all_errored:
            return ALL_ERRORED_EXIT
    return 0
