"""Reading a batch of groups: the shapes a group may take, the checks every path makes on them
before any provider runs, and cutting a batch into chunks."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from operator import methodcaller
from typing import Any, Protocol, cast

from rewardkit.contracts.errors import RewardContractError, RewardkitError
from rewardkit.contracts.frozen import strictly_equal
from rewardkit.scoring.composition import CompositionError, CompositionRowError

_get_prompt = methodcaller("get", "prompt")

Rollouts = Sequence[Mapping[str, Any]]


class HasRollouts(Protocol):
    """A group object such as ``rewardkit.job.data.RolloutGroup``: an id and its rollouts."""

    @property
    def group_id(self) -> str: ...

    @property
    def rollouts(self) -> Rollouts: ...


# What a batch may hold: ``(group_id, rollouts)``, ``{"group_id": ..., "rollouts": [...]}`` or an
# object with both attributes. A group's rollouts may be any iterable (``as_batch`` reads it once).
GroupLike = tuple[str, Iterable[Mapping[str, Any]]] | Mapping[str, Any] | HasRollouts


def group_parts(group: GroupLike) -> tuple[str, Rollouts]:
    """The group id and rollouts of any accepted group shape (of a batch read by ``as_batch``, whose
    one-shot rollout iterables are lists by then)."""
    if type(group) is tuple and len(group) == 2:  # the usual shape, before the slower checks
        return group[0], cast(Rollouts, group[1])
    if isinstance(group, Mapping):
        try:
            return group["group_id"], group["rollouts"]
        except KeyError as error:
            problem = f"a group mapping needs 'group_id' and 'rollouts'; missing {error}"
            raise RewardkitError(problem) from None
    if isinstance(group, tuple) and len(group) == 2:
        return group[0], cast(Rollouts, group[1])
    if hasattr(group, "group_id") and hasattr(group, "rollouts"):
        return group.group_id, group.rollouts
    raise RewardkitError(
        f"cannot read a group from {type(group).__name__}; pass RolloutGroup, (group_id, rollouts) "
        "or {'group_id': ..., 'rollouts': [...]}"
    )


def as_batch(groups: Iterable[GroupLike]) -> Sequence[GroupLike]:
    """A batch read once into a list: any iterable of groups. A group whose rollouts are a one-shot
    iterable becomes ``(group_id, [rollouts...])`` holding the same objects, for every later pass."""
    if isinstance(groups, (str, bytes, Mapping)) or not isinstance(groups, Iterable):
        raise RewardkitError(
            f"a batch is an iterable of groups (RolloutGroup, (group_id, rollouts) or "
            f"{{'group_id': ..., 'rollouts': [...]}}), not {type(groups).__name__}"
        )
    batch = groups if isinstance(groups, (list, tuple)) else list(groups)
    fixed: list[GroupLike] | None = None
    for index, group in enumerate(batch):
        if type(group) is tuple and len(group) == 2 and type(group[1]) is list:
            continue  # the usual shape, without a call per group
        group_id, rollouts = group_parts(group)
        if (
            type(rollouts) is list
            or isinstance(rollouts, (list, tuple, str, bytes, Mapping, Sequence))
            or not isinstance(rollouts, Iterable)
        ):
            continue  # a sequence is read as it is; a bad shape is reported by the adapter
        if fixed is None:
            fixed = list(batch)
        fixed[index] = (group_id, list(rollouts))
    return batch if fixed is None else fixed


def batch_parts(groups: Sequence[GroupLike]) -> list[tuple[str, Sequence[Mapping[str, Any]]]]:
    """Every group's id and rollouts; a group id may appear once per batch."""
    # A (group_id, rollouts) tuple is its own parts: no call and no new tuple per group.
    parts = cast(
        "list[tuple[str, Rollouts]]",
        [group if type(group) is tuple and len(group) == 2 else group_parts(group) for group in groups],
    )
    if len({group_id for group_id, _ in parts}) != len(parts):
        seen: set[str] = set()
        for group_id, _ in parts:
            if group_id in seen:
                raise RewardkitError(
                    f"group {group_id!r} appears twice in the batch; a group must be complete in one place"
                )
            seen.add(group_id)
    return parts


def check_one_prompt(group_id: str, rollouts: Sequence[Mapping[str, Any]]) -> None:
    """A group is one prompt: a rollout may carry no ``prompt``, but two that carry one must carry
    the same (type-strictly), whatever the providers need; mixed prompts corrupt the advantages."""
    if type(rollouts) is list:
        if len(rollouts) < 2:
            return  # one rollout has no other prompt to differ from
        # The usual group, checked at C speed: every rollout has a str prompt, all equal. Any other
        # (a missing prompt, another type, a rollout that is not a dict) is the loop's below. `get`,
        # not `[]`: a defaultdict must not grow a prompt by being looked at.
        try:
            prompts = list(map(_get_prompt, rollouts))
        except Exception:
            prompts = None
        if (
            prompts is not None
            and type(prompts[0]) is str
            and len(set(map(type, prompts))) == 1
            and prompts.count(prompts[0]) == len(prompts)  # only exact strs compared: cannot raise
        ):
            return
    elif isinstance(rollouts, (str, bytes)) or not isinstance(rollouts, Sequence):
        return  # the shape is the adapter's to report
    prompt: Any = None
    for position, rollout in enumerate(rollouts):
        if type(rollout) is not dict and not isinstance(rollout, Mapping):
            return
        other = rollout.get("prompt")
        if other is None or other is prompt:
            continue
        if prompt is None:
            prompt, first = other, position
            continue
        if type(other) is str and type(prompt) is str:  # the usual case, without a call
            if other == prompt:
                continue
        elif strictly_equal(other, prompt):
            continue
        where = f" (line {rollout['row']})" if isinstance(rollout.get("row"), int) else ""
        raise RewardContractError(
            f"the rollout at position {position}{where} has a prompt different from the one at "
            f"position {first}; a group is the completions of one prompt (types count: 1, 1.0 and "
            "true differ)",
            group_id=str(group_id),
            trajectory_id=str(rollout.get("trajectory_id")),
            rule="mixed-prompts",
        )


def located(
    error: CompositionRowError, groups: Sequence[tuple[str, int]], ids: Sequence[str]
) -> CompositionError:
    """The error for a row that failed to compose, naming its group and candidate (``groups``: each
    group's id and candidate count, in the order of the composed rows)."""
    group_id, passed = groups[0][0], 0
    for group_id, count in groups:  # noqa: B007 - the group the failing row is in
        if error.position < passed + count:
            break
        passed += count
    problem = f"[group {group_id!r}, candidate {ids[error.position]!r}] {error}"
    return CompositionError(problem, component=error.component, breakdown=error.breakdown)


def chunks(
    parts: list[tuple[str, Sequence[Mapping[str, Any]]]], count: int, max_weight: int | None
) -> Iterator[tuple[list[tuple[str, Sequence[Mapping[str, Any]]]], int]]:
    """Consecutive runs of about ``len(parts) / count`` groups, each with its rollout count, cut
    earlier where the next group would take a run past ``max_weight`` rollouts."""
    size = max(1, -(-len(parts) // count))
    chunk: list[tuple[str, Sequence[Mapping[str, Any]]]] = []
    weight = 0
    for part in parts:
        rollouts = part[1]
        part_weight = len(rollouts) if type(rollouts) is list or hasattr(rollouts, "__len__") else 1
        if chunk and (len(chunk) >= size or (max_weight is not None and weight + part_weight > max_weight)):
            yield chunk, weight
            chunk, weight = [], 0
        chunk.append(part)
        weight += part_weight
    if chunk:
        yield chunk, weight
