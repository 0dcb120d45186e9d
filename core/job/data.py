"""The data contract: prompt rows and rollouts, mapped onto the canonical ``prompt`` and ``reference``.

``rl.data.prompt_column`` and ``rl.data.reference_column`` (also spelt ``response_column``: it names
the gold reference) map the customer's column names onto ``prompt`` and the opaque ``reference``.
Unmapped, fields named ``prompt`` and ``reference`` are read where present and required only when
the provider needs them; a column mapped under another name must be on every row (a misspelt mapping
is an error listing the row's columns). Values are checked present, non-null when needed, and
JSON-compatible; never interpreted. A JSONL file keeps only the mapped fields (and the ``keep``
columns, in ``PreparedRow.kept``). A ``datasets`` source (a ``save_to_disk`` folder or a local data
file, never the hub) may rewrite values with ``items_fn`` but must keep each row's keys; unmapped
columns go to ``representations``. Rollouts (the input of ``rewardkit score``) are JSONL rows with
``group_id``, optional ``trajectory_id``, the mapped columns, ``completion`` and optionally
``completion_token_count`` and ``finish_reason``, grouped by ``group_id`` in order of first
appearance (not necessarily adjacent), candidates in file order. Every violation raises
``DataError`` naming the file, the row and the column.
"""

from __future__ import annotations

import hashlib
import json
from array import array
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, count
from pathlib import Path
from typing import IO, Any

from rewardkit.config import DataConfig
from rewardkit.contracts.errors import DataError
from rewardkit.contracts.frozen import NotJSONError, freeze, strictly_equal
from rewardkit.seam.plugins import import_module_attribute

__all__ = [
    "PreparedRow",
    "RolloutGroup",
    "check_group_sizes",
    "iter_rollout_groups",
    "load_prompt_rows",
    "parse_json_line",
    "read_rollouts",
]

# Local data files ``datasets`` reads with a packaged builder (no hub access needed).
_HF_BUILDERS = {".json": "json", ".jsonl": "json", ".txt": "text"}
_HF_BUILDERS.update({f".{builder}": builder for builder in ("csv", "parquet", "arrow")})


@dataclass(frozen=True, slots=True)
class PreparedRow:
    """One prompt row in canonical form. ``index``: 0-based position in the source (blank JSONL lines
    not counted); ``reference``: ``None`` when not mapped; ``representations``: a datasets row's
    unmapped columns (empty for JSONL); ``kept``: the columns asked for by ``keep``, by column name."""

    index: int
    prompt: Any
    reference: Any = None
    representations: Mapping[str, Any] = field(default_factory=dict)
    kept: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RolloutGroup:
    """Every rollout of one group, in file order; ``first_row`` is the line where the group first appears."""

    group_id: str
    rollouts: tuple[dict[str, Any], ...]
    first_row: int


def _check_needs(needs: Sequence[str], path: str | None) -> frozenset[str]:
    if isinstance(needs, str):
        raise TypeError(f"needs must be a sequence of names such as ('prompt', 'reference'), not {needs!r}")
    unknown = sorted(set(needs) - {"prompt", "reference"})
    if unknown:
        problem = f"unknown needs {unknown}; a provider may need 'prompt' and/or 'reference'"
        raise DataError(problem, path=path)
    return frozenset(needs)


def reference_column_of(response_column: str | None) -> str:
    """The column read as the reference: the mapped one, else the field named ``reference``."""
    return response_column if response_column is not None else "reference"


# The key (in its data section) that maps each canonical input, named in errors about its column.
_KEYS = {"prompt": "prompt_column", "reference": "reference_column"}


def _json_value(value: Any, *, path: str | None, row: int, column: str, label: str) -> Any:
    """``value`` if it is JSON-compatible (finite numbers, string keys), else a ``DataError`` saying where."""
    try:
        freeze(value, "$")
        return value
    except NotJSONError as error:
        problem = f"value is not JSON-compatible at {error.path}: {error.reason}"
    except RecursionError:
        problem = "value is nested too deeply to use"
    raise DataError(problem, path=path, row=row, column=column, row_label=label) from None


def _missing_column(canonical: str, column: str, holder: str, shown: str, section: str = "rl.data") -> str:
    """Why ``holder`` (a line, a row, the dataset) lacks ``column``, naming the key that maps it."""
    key = f"{section}.{_KEYS[canonical]}"
    if column == canonical:
        return (
            f"missing {canonical} column {column!r}: {key} is not set, so the {canonical} is read from "
            f"a column named {column!r}, which {holder} does not have (columns: {shown}). Set {key} "
            f"to the column that holds the {canonical}"
        )
    return f"missing {canonical} column {column!r}, mapped by {key} ({holder} has columns: {shown})"


def _mapped(
    record: Mapping[str, Any],
    column: str,
    canonical: str,
    needed: bool,
    path: str | None,
    row: int,
    label: str,
    section: str = "rl.data",
) -> Any:
    """The value of ``column`` as the ``canonical`` input, or ``None`` when it may be left out: the
    column must be there when needed or mapped (named other than ``canonical``); null only when not needed."""
    if column not in record:
        if not needed and column == canonical:
            return None
        shown = ", ".join(sorted(map(str, record))) or "(none)"
        problem = _missing_column(canonical, column, f"the {label}", shown, section)
        raise DataError(problem, path=path, row=row, column=column, row_label=label)
    value = record[column]
    if value is None and needed:
        raise DataError(f"the {canonical} is null", path=path, row=row, column=column, row_label=label)
    return _json_value(value, path=path, row=row, column=column, label=label)


def _json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(1-based line number, object) for each non-blank line; a bad line is a ``DataError`` naming it."""
    where = str(path)
    with _open(path, "r") as handle:
        for line_number in count(1):
            try:
                line = handle.readline()
            except UnicodeDecodeError as error:
                raise DataError(f"not UTF-8 text: {error}", path=where, row=line_number) from error
            if not line:
                return
            if line.strip():
                yield line_number, parse_json_line(line, where, line_number)


class _NonJSONConstant(ValueError):
    pass


_fast_loads: Callable[[str | bytes], Any] | None
try:  # a C parser ~3x faster than json's on rollout rows; json decides whatever it refuses
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - orjson comes with rewardkit-service
    _fast_loads = None


def parse_json_line(line: str | bytes, where: str, line_number: int) -> dict[str, Any]:
    """One JSONL line as an object, or a ``DataError`` naming the line: invalid JSON, NaN or
    Infinity, an integer of more digits than Python converts (4300), nesting too deep to read."""
    if _fast_loads is not None:
        try:
            record = _fast_loads(line)
        except ValueError:
            record = _slow_loads(line, where, line_number)  # big integers, or to word the error
    else:
        record = _slow_loads(line, where, line_number)
    if not isinstance(record, dict):
        raise DataError(f"expected a JSON object, got {type(record).__name__}", path=where, row=line_number)
    return record


def _slow_loads(line: str | bytes, where: str, line_number: int) -> Any:
    try:
        return json.loads(line, parse_constant=_reject_constant)
    except (json.JSONDecodeError, _NonJSONConstant) as error:
        raise DataError(f"not valid JSON: {error}", path=where, row=line_number) from None
    except RecursionError:
        raise DataError("not readable: the JSON is nested too deeply", path=where, row=line_number) from None
    except UnicodeDecodeError as error:
        raise DataError(f"not UTF-8 text: {error}", path=where, row=line_number) from None
    except ValueError as error:  # e.g. an integer longer than 4300 digits
        raise DataError(f"not readable: {error}", path=where, row=line_number) from None


def _reject_constant(name: str) -> float:
    # Python's json accepts NaN/Infinity; JSON does not, and a NaN reference would poison scoring.
    raise _NonJSONConstant(f"{name} is not a JSON value")


# -- Prompt rows --------------------------------------------------------------------------------


def load_prompt_rows(
    data: DataConfig, needs: Sequence[str] = ("prompt",), *, keep: Mapping[str, str] | None = None
) -> list[PreparedRow]:
    """Read ``rl.data`` (or another data section, ``checkpoints.prompts``) into canonical rows; ``keep``
    maps further columns to keep (``PreparedRow.kept``, required on every row) to the key naming each."""
    if data.path is None:
        raise DataError(f"{data.SECTION}.path is not set; point it at a JSONL file or a datasets folder/file")
    wanted = _check_needs(needs, data.path)
    kept = dict(keep or {})
    rows = _jsonl_rows(data, wanted, kept) if data.source == "jsonl" else _hf_rows(data, wanted, kept)
    if not rows:
        raise DataError("no rows: the data source is empty", path=data.path)
    return rows


def _prompt_and_reference(
    record: Mapping[str, Any], data: DataConfig, needs: frozenset[str], where: str, row: int, label: str
) -> tuple[Any, Any]:
    """The prompt (always required) and the reference (required when needed or mapped)."""
    reference_column = reference_column_of(data.response_column)
    return (
        _mapped(record, data.prompt_column, "prompt", True, where, row, label, data.SECTION),
        _mapped(record, reference_column, "reference", "reference" in needs, where, row, label, data.SECTION),
    )


def _kept(
    record: Mapping[str, Any], keep: Mapping[str, str], where: str, row: int, label: str
) -> dict[str, Any]:
    """The values of the columns in ``keep`` (column -> the key naming it), each required."""
    values: dict[str, Any] = {}
    for column, key in keep.items():
        if column not in record:
            shown = ", ".join(sorted(map(str, record))) or "(none)"
            problem = f"missing column {column!r}, named by {key} (the {label} has columns: {shown})"
            raise DataError(problem, path=where, row=row, column=column, row_label=label)
        values[column] = _json_value(record[column], path=where, row=row, column=column, label=label)
    return values


def _jsonl_rows(data: DataConfig, needs: frozenset[str], keep: Mapping[str, str]) -> list[PreparedRow]:
    path = Path(data.path or "")
    where = str(path)
    rows: list[PreparedRow] = []
    for line, record in _json_lines(path):
        prompt, reference = _prompt_and_reference(record, data, needs, where, line, "line")
        kept = _kept(record, keep, where, line, "line")
        rows.append(PreparedRow(index=len(rows), prompt=prompt, reference=reference, kept=kept))
    return rows


def _open_dataset(data: DataConfig) -> Any:
    """The ``datasets.Dataset`` that ``rl.data`` names, read from local disk only."""
    try:
        import datasets
    except ImportError as error:
        problem = f"{data.SECTION}.source: hf needs the 'datasets' library: pip install datasets"
        raise DataError(problem) from error
    path = Path(data.path or "")
    where = str(path)
    if path.is_file():
        builder = _HF_BUILDERS.get(path.suffix.lower())
        if builder is None:
            known = ", ".join(sorted(_HF_BUILDERS))
            problem = f"cannot read {path.suffix or 'a file without suffix'!r} with datasets; use {known}"
            raise DataError(problem, path=where)
        try:
            return datasets.load_dataset(builder, data_files=where, split=data.split or "train")
        except Exception as error:
            raise DataError(f"datasets could not read the file: {error}", path=where) from error
    if not path.is_dir():
        raise DataError("file or folder not found", path=where)
    try:
        loaded = datasets.load_from_disk(where)
    except (FileNotFoundError, ValueError) as error:
        raise DataError(f"not a folder written by Dataset.save_to_disk: {error}", path=where) from error
    if isinstance(loaded, datasets.DatasetDict):
        splits = sorted(loaded)
        if data.split is None:
            if len(splits) != 1:
                problem = f"the folder holds splits {splits}; choose one with {data.SECTION}.split"
                raise DataError(problem, path=where)
            return loaded[splits[0]]
        if data.split not in loaded:
            raise DataError(f"no split {data.split!r}; the folder holds {splits}", path=where)
        return loaded[data.split]
    if data.split is not None:
        problem = f"{data.SECTION}.split is {data.split!r} but the folder holds one dataset, not splits"
        raise DataError(problem, path=where)
    return loaded


def _items_fn(dotted: str, section: str) -> Callable[[dict[str, Any]], Mapping[str, Any]]:
    try:
        function = import_module_attribute(dotted)
    except (ImportError, AttributeError, ValueError) as error:
        raise DataError(f"{section}.items_fn {dotted!r} cannot be imported: {error}") from error
    if not callable(function):
        raise DataError(f"{section}.items_fn {dotted!r} is not callable")
    return function


def _apply_items_fn(
    function: Callable[[dict[str, Any]], Mapping[str, Any]], data: DataConfig, row: dict[str, Any], index: int
) -> dict[str, Any]:
    """``row`` as ``data.items_fn`` rewrites it: a mapping with the row's keys, or a ``DataError``."""

    def fail(problem: str) -> DataError:
        message = f"{data.SECTION}.items_fn {data.items_fn!r} {problem}"
        return DataError(message, path=data.path, row=index, row_label="row")

    try:
        rewritten = function(dict(row))
    except Exception as error:
        raise fail(f"raised {error!r}") from error
    if not isinstance(rewritten, Mapping):
        raise fail(f"returned {type(rewritten).__name__}, not a row mapping")
    added = sorted(set(rewritten) - set(row))
    removed = sorted(set(row) - set(rewritten))
    if added or removed:
        raise fail(
            f"must keep the row's keys; it added {added} and removed {removed}. Rewrite values only; "
            f"map columns with {data.SECTION}.prompt_column/reference_column"
        )
    return dict(rewritten)


def _hf_rows(data: DataConfig, needs: frozenset[str], keep: Mapping[str, str]) -> list[PreparedRow]:
    dataset = _open_dataset(data)
    where = str(data.path)
    columns = list(dataset.column_names)
    shown = ", ".join(map(str, columns)) or "(none)"
    reference_column = reference_column_of(data.response_column)
    checked = ((data.prompt_column, "prompt", True), (reference_column, "reference", "reference" in needs))
    for column, canonical, needed in checked:
        if (needed or column != canonical) and column not in columns:
            problem = _missing_column(canonical, column, "the dataset", shown, data.SECTION)
            raise DataError(problem, path=where, column=column)
    for column, key in keep.items():
        if column not in columns:
            problem = f"missing column {column!r}, named by {key} (the dataset has columns: {shown})"
            raise DataError(problem, path=where, column=column)
    function = _items_fn(data.items_fn, data.SECTION) if data.items_fn else None
    mapped = {data.prompt_column} | ({reference_column} & set(columns))
    rows: list[PreparedRow] = []
    for index, raw in enumerate(dataset):
        record = _apply_items_fn(function, data, raw, index) if function else raw
        prompt, reference = _prompt_and_reference(record, data, needs, where, index, "row")
        representations = {key: value for key, value in record.items() if key not in mapped}
        kept = _kept(record, keep, where, index, "row")
        rows.append(PreparedRow(index, prompt, reference, representations, kept))
    return rows


# -- Rollouts -----------------------------------------------------------------------------------


def _identifier(record: Mapping[str, Any], key: str, *, where: str, line: int) -> str | None:
    """A group or trajectory id: a non-empty string, or an integer (read as its decimal string)."""
    value = record.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        problem = f"{key} must be a string (or an integer), got {type(value).__name__} {value!r}"
        raise DataError(problem, path=where, row=line, column=key)
    text = str(value)
    if not text.strip():
        raise DataError(f"{key} is empty", path=where, row=line, column=key)
    return text


def _optional_fields(record: Mapping[str, Any], out: dict[str, Any], *, where: str, line: int) -> None:
    count = record.get("completion_token_count")
    if count is not None:
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            problem = f"completion_token_count must be a non-negative integer, got {count!r}"
            raise DataError(problem, path=where, row=line, column="completion_token_count")
        out["completion_token_count"] = count
    reason = record.get("finish_reason")
    if reason is not None:
        if not isinstance(reason, str):
            problem = f"finish_reason must be a string such as 'stop' or 'length', got {reason!r}"
            raise DataError(problem, path=where, row=line, column="finish_reason")
        out["finish_reason"] = reason


def read_rollouts(
    path: str | Path,
    *,
    prompt_column: str = "prompt",
    response_column: str | None = None,
    needs: Sequence[str] = (),
) -> list[RolloutGroup]:
    """Read a rollouts JSONL file into groups, in order of each group's first appearance. Each rollout
    holds the canonical keys present plus ``row``, its 1-based line; a missing ``trajectory_id`` is
    ``f"{group_id}/{k}"`` (``k``: its position in the group). The prompt and reference are required,
    non-null and equal across a group when in ``needs``, else carried along where present (a mapped
    column must still be on every row); a group never mixes prompts."""
    where = str(path)
    columns = (prompt_column, reference_column_of(response_column), _check_needs(needs, where), where)
    by_group: dict[str, list[dict[str, Any]]] = {}
    for line, record in _json_lines(Path(path)):
        group_id = _group_id(record, where, line)
        members = by_group.setdefault(group_id, [])
        members.append(_rollout(record, group_id, len(members), line, columns))
    if not by_group:
        raise DataError("no rollouts: the file has no rows", path=where)
    groups = [
        RolloutGroup(group_id=group_id, rollouts=tuple(members), first_row=members[0]["row"])
        for group_id, members in by_group.items()
    ]
    for group in groups:
        _check_group(group, columns)
    return groups


def _group_id(record: Mapping[str, Any], where: str, line: int) -> str:
    group_id = _identifier(record, "group_id", where=where, line=line)
    if group_id is None:
        problem = "missing group_id: every rollout row names its group"
        raise DataError(problem, path=where, row=line, column="group_id")
    return group_id


def _rollout(
    record: Mapping[str, Any], group_id: str, position: int, line: int, columns: tuple
) -> dict[str, Any]:
    """The canonical rollout of one row (the ``position``-th of its group), checked; ``columns``: the
    prompt column, the reference column, the needs and the file's name."""
    prompt_column, reference_column, wanted, where = columns
    completion = record.get("completion")
    if not isinstance(completion, str):
        problem = "missing" if "completion" not in record else f"not a string ({type(completion).__name__})"
        raise DataError(f"completion is {problem}", path=where, row=line, column="completion")
    rollout: dict[str, Any] = {"group_id": group_id}
    given_id = _identifier(record, "trajectory_id", where=where, line=line)
    rollout["trajectory_id"] = given_id if given_id is not None else f"{group_id}/{position}"
    rollout["completion"] = completion
    for column, canonical in ((prompt_column, "prompt"), (reference_column, "reference")):
        value = _mapped(record, column, canonical, canonical in wanted, where, line, "line")
        if value is not None:
            rollout[canonical] = value
    _optional_fields(record, rollout, where=where, line=line)
    rollout["row"] = line
    return rollout


# -- Rollouts, streamed: for jobs larger than memory ---------------------------------------------


class RestartGroups:
    """Yielded by ``iter_rollout_groups`` when it has to start again from the first group."""


RESTART = RestartGroups()


def iter_rollout_groups(
    path: str | Path,
    *,
    prompt_column: str = "prompt",
    response_column: str | None = None,
    needs: Sequence[str] = (),
    group_size: int | None = None,
) -> Iterator[tuple[RolloutGroup, bytes] | RestartGroups]:
    """``read_rollouts`` one group at a time, each with the SHA-256 of its rows' bytes. Contiguous
    groups (the usual layout) are read in one pass holding one group, plus the ids seen. When a group
    turns out not to be (its id comes back, or it ends short of ``group_size``), this yields
    ``RESTART``, voiding the groups before it, and starts over with an index pass: each row's offset
    (8 bytes a row, 16 with line numbers and groups) and the group sizes, checked before the first
    group; each group's rows are then read by offset."""
    where = str(path)
    wanted = _check_needs(needs, where)
    if group_size is not None:
        check_group_sizes((), group_size, path=where)
    columns = (prompt_column, reference_column_of(response_column), wanted, where)
    if not (yield from _contiguous_groups(Path(path), columns, group_size)):
        yield RESTART
        yield from _indexed_groups(Path(path), columns, group_size)


def _lines(handle: IO[bytes]) -> Iterator[tuple[int, int, bytes]]:
    """(1-based line number, byte offset, raw line) of each non-blank line."""
    offset = 0
    for number, raw in enumerate(handle, 1):
        start = offset
        offset += len(raw)
        if raw.strip():
            yield number, start, raw


def _open(path: Path, mode: str = "rb") -> IO[Any]:
    try:
        return path.open(mode, encoding=None if "b" in mode else "utf-8")
    except FileNotFoundError:
        raise DataError("file not found", path=str(path)) from None
    except OSError as error:
        raise DataError(f"cannot open: {error}", path=str(path)) from error


def _finish_group(
    group_id: str, rows: list[dict[str, Any]], digest: Any, columns: tuple
) -> tuple[RolloutGroup, bytes]:
    group = RolloutGroup(group_id=group_id, rollouts=tuple(rows), first_row=rows[0]["row"])
    _check_group(group, columns)
    return group, digest.digest()


def _contiguous_groups(
    path: Path, columns: tuple, group_size: int | None
) -> Generator[tuple[RolloutGroup, bytes], None, bool]:
    """The groups of a file whose groups are contiguous, in one pass; ``False`` once they are not."""
    where = columns[3]
    seen: set[str] = set()
    current: str | None = None
    rows: list[dict[str, Any]] = []
    digest = hashlib.sha256()
    with _open(path) as handle:
        for line, _, raw in _lines(handle):
            record = parse_json_line(raw, where, line)
            group_id = _group_id(record, where, line)
            if group_id != current:
                if current is not None:
                    if group_size is not None and len(rows) != group_size:
                        return False  # short: the rest may come later, or it is an error
                    yield _finish_group(current, rows, digest, columns)
                if group_id in seen:
                    return False
                seen.add(group_id)
                current, rows, digest = group_id, [], hashlib.sha256()
            digest.update(raw)
            rows.append(_rollout(record, group_id, len(rows), line, columns))
    if current is None:
        raise DataError("no rollouts: the file has no rows", path=where)
    if group_size is not None and len(rows) != group_size:
        return False
    yield _finish_group(current, rows, digest, columns)
    return True


def _indexed_groups(
    path: Path, columns: tuple, group_size: int | None
) -> Iterator[tuple[RolloutGroup, bytes]]:
    where = columns[3]
    ids: dict[str, int] = {}
    row_group, row_line, row_offset = array("l"), array("l"), array("q")
    with _open(path) as handle:
        for line, offset, raw in _lines(handle):
            group_id = _group_id(parse_json_line(raw, where, line), where, line)
            row_group.append(ids.setdefault(group_id, len(ids)))
            row_line.append(line)
            row_offset.append(offset)
    if not ids:
        raise DataError("no rollouts: the file has no rows", path=where)
    counts = array("l", bytes(array("l").itemsize * len(ids)))
    for index in row_group:
        counts[index] += 1
    starts = array("l", accumulate(counts, initial=0))  # where each group begins in ``order``
    order = array("l", bytes(array("l").itemsize * len(row_group)))  # row numbers, grouped, in file order
    filled = array("l", starts)
    for row, index in enumerate(row_group):
        order[filled[index]] = row
        filled[index] += 1
    del row_group, filled
    names = list(ids)
    if group_size is not None:
        for index, count in enumerate(counts):
            if count != group_size:
                lines = [row_line[order[starts[index] + k]] for k in range(min(count, 8))]
                raise _size_error(names[index], count, group_size, lines, lines[0], where)
    del ids
    with _open(path) as handle:
        for index, group_id in enumerate(names):
            rows: list[dict[str, Any]] = []
            digest = hashlib.sha256()
            for k in range(counts[index]):
                row = order[starts[index] + k]
                handle.seek(row_offset[row])
                raw = handle.readline()
                line = row_line[row]
                digest.update(raw)
                rows.append(_rollout(parse_json_line(raw, where, line), group_id, k, line, columns))
            yield _finish_group(group_id, rows, digest, columns)


def _check_group(group: RolloutGroup, columns: tuple) -> None:
    """Unique trajectory ids and one common prompt/reference per group, named by row before scoring."""
    prompt_column, reference_column, needs, where = columns
    seen: dict[str, int] = {}
    for rollout in group.rollouts:
        previous = seen.setdefault(rollout["trajectory_id"], rollout["row"])
        if previous != rollout["row"]:
            problem = (
                f"trajectory_id {rollout['trajectory_id']!r} of group {group.group_id!r} "
                f"was already used on line {previous}"
            )
            raise DataError(problem, path=where, row=rollout["row"], column="trajectory_id")
    for canonical, column in (("prompt", prompt_column), ("reference", reference_column)):
        # A GRPO group is one prompt: mixed prompts corrupt its advantages, whatever the provider
        # needs. A prompt that is not needed may be left out of a row, but not be another one.
        if canonical not in needs and canonical != "prompt":
            continue
        carrying = [rollout for rollout in group.rollouts if canonical in rollout]
        for rollout in carrying[1:]:
            first = carrying[0]
            if not strictly_equal(rollout[canonical], first[canonical]):
                problem = (
                    f"the {canonical} differs from the one on line {first['row']} of group "
                    f"{group.group_id!r}; a group shares one {canonical} "
                    "(types count: 1, 1.0 and true differ)"
                )
                raise DataError(problem, path=where, row=rollout["row"], column=column)


def check_group_sizes(
    groups: Iterable[RolloutGroup], group_size: int | None, *, path: str | None = None
) -> None:
    """Every group must hold exactly ``group_size`` rollouts (``rl.group_size``); ``None`` checks nothing."""
    if group_size is None:
        return
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
        raise DataError(f"group size must be a positive integer, got {group_size!r}", path=path)
    for group in groups:
        if len(group.rollouts) != group_size:
            rows = [rollout["row"] for rollout in group.rollouts[:8]]
            raise _size_error(group.group_id, len(group.rollouts), group_size, rows, group.first_row, path)


def _size_error(
    group_id: str, size: int, group_size: int, rows: Sequence[int], first_row: int, path: str | None
) -> DataError:
    """A group of ``size`` rollouts where ``rl.group_size`` is ``group_size``; ``rows``: its first 8 lines."""
    shown = ", ".join(map(str, rows)) + (", ..." if size > 8 else "")
    return DataError(
        f"group {group_id!r} has {size} rollout(s) but rl.group_size is {group_size} (its rows: {shown})",
        path=path,
        row=first_row,
        column="group_id",
    )
