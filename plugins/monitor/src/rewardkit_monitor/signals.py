"""The monitor's signals as pure functions of one step's rollouts (numpy arrays), and the few
pieces of run state some signals need (the highest reward so far, the hashes of earlier steps).

Conventions: ``groups`` is an int array of group ids, one per rollout, or None when the batch has
no groups (per-sample managers); a missing reward is NaN and is left out. Every function returns a
float, NaN when the signal is undefined for the step. The calibration study calls the same code.
A completion's hash is a 64-bit hash of its ``normalised`` text (the monitor uses Python's ``hash``:
stable within the process, which is all one run's memory needs).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Sequence

import numpy as np

from rewardkit.metrics import zero_variance_groups

# Rollouts an ungrouped step's discordance compares at most (pairs grow with the square).
DISCORDANCE_CAP = 256
# How many recent step values a trend is fitted over.
TREND_WINDOW = 50
# Completion hashes remembered for duplicates_across (a few MiB), whatever the run's length.
SEEN_HASHES = 65_536


def padded(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """The values (one per rollout, or one row per rollout) as a ``(groups, largest group, ...)``
    float array, one row per group (in id order), each in rollout order and padded with NaN: every
    within-group signal is then one array operation, whatever the number of groups."""
    values = np.asarray(values, dtype=float)
    groups = np.asarray(groups)
    rest = values.shape[1:]
    if not groups.size:
        return np.empty((0, 0, *rest))
    ids, inverse, counts = np.unique(groups, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    if (counts == counts[0]).all() and (inverse[:-1] <= inverse[1:]).all():
        return values.reshape(
            len(ids), int(counts[0]), *rest
        )  # the usual step: consecutive groups of one size
    order = np.argsort(inverse, kind="stable")
    position = np.arange(len(values)) - np.repeat(np.cumsum(counts) - counts, counts)
    matrix = np.full((len(ids), int(counts.max()), *rest), np.nan)
    matrix[inverse[order], position] = values[order]
    return matrix


def _discordant_pairs(proxy: np.ndarray, reference: np.ndarray) -> tuple[float, int]:
    """Summed discordance and the number of pairs with ``reference[i] > reference[j]``, over the
    rows of two ``(groups, size)`` matrices (NaN: left out)."""
    present = ~np.isnan(proxy)
    # A NaN reference compares False, so it forms no pair.
    ordered = (reference[:, :, None] > reference[:, None, :]) & present[:, :, None] & present[:, None, :]
    pairs = int(ordered.sum())
    if not pairs:
        return 0.0, 0
    below = (proxy[:, :, None] < proxy[:, None, :]) & ordered
    tied = (proxy[:, :, None] == proxy[:, None, :]) & ordered
    return float(below.sum() + 0.5 * tied.sum()), pairs


def discordance(
    proxy: np.ndarray,
    reference: np.ndarray,
    groups: np.ndarray | None,
    *,
    cap: int = DISCORDANCE_CAP,
    seed: int = 0,
) -> float:
    """How often the proxy orders rollouts against the reference grader.

    Over the pairs ``(i, j)`` with ``reference_i > reference_j`` (within a group when ``groups`` is
    given, else across the step's rollouts, at most ``cap`` of them, a sample drawn with ``seed``,
    a non-negative int):
    the mean of 1 if ``proxy_i < proxy_j``, 0.5 if ``proxy_i == proxy_j``, else 0. 0 means the proxy
    agrees with every ordering the reference makes; 0.5 means it is blind to them; NaN with no pair.
    """
    proxy = np.asarray(proxy, dtype=float)
    reference = np.asarray(reference, dtype=float)
    if groups is None:
        if proxy.size > cap:
            chosen = np.sort(np.random.default_rng(seed).choice(proxy.size, cap, replace=False))
            proxy, reference = proxy[chosen], reference[chosen]
        total, pairs = _discordant_pairs(proxy[None, :], reference[None, :])
    else:
        both = padded(np.stack([proxy, reference], axis=-1), groups)
        total, pairs = _discordant_pairs(both[..., 0], both[..., 1])
    return total / pairs if pairs else math.nan


def length_coupling(reward: np.ndarray, length: np.ndarray, groups: np.ndarray | None) -> float:
    """The within-group coupling of reward and completion length.

    The mean, over groups with at least two distinct rewards and two distinct lengths, of the
    Pearson correlation of reward and length in the group. Under honest training on a task with
    short right answers it is negative and stable; a reward that pays for length turns it positive.
    NaN when no group qualifies, and always without groups.
    """
    if groups is None:
        return math.nan
    both = padded(
        np.stack([np.asarray(reward, dtype=float), np.asarray(length, dtype=float)], axis=-1), groups
    )
    present = ~np.isnan(both).any(axis=-1)[..., None]  # (groups, size, 1): both values known
    lowest = np.where(present, both, np.inf).min(axis=1)
    highest = np.where(present, both, -np.inf).max(axis=1)
    spread = (highest > lowest).all(axis=1)  # two distinct rewards and two distinct lengths
    if not spread.any():
        return math.nan
    both, present = both[spread], present[spread]
    known = np.where(present, both, 0.0)
    centred = np.where(
        present, known - known.sum(axis=1, keepdims=True) / present.sum(axis=1, keepdims=True), 0.0
    )
    squares = (centred * centred).sum(axis=1)
    correlation = (centred[..., 0] * centred[..., 1]).sum(axis=1) / np.sqrt(squares[:, 0] * squares[:, 1])
    return float(np.clip(correlation, -1.0, 1.0).mean())


def zero_variance_share(reward: np.ndarray, groups: np.ndarray | None) -> float:
    """The share of groups whose rewards are all equal (``rewardkit.metrics.zero_variance_groups``,
    the count the batch summary reports: a group with fewer than two rewards counts too). NaN without
    groups."""
    if groups is None:
        return math.nan
    rows = padded(np.asarray(reward, dtype=float), groups).tolist()
    if not rows:
        return math.nan
    return zero_variance_groups([x for x in row if x == x] for row in rows) / len(rows)  # x == x: not NaN


def at_max_share(reward: np.ndarray, best: float) -> float:
    """The share of rollouts whose reward equals ``best`` (the highest reward of the run so far,
    this step included), to a relative tolerance of 1e-9. NaN when no reward is defined."""
    reward = np.asarray(reward, dtype=float)
    reward = reward[~np.isnan(reward)]
    if not reward.size or math.isnan(best):
        return math.nan
    return float(np.mean(reward >= best - 1e-9 * max(1.0, abs(best))))


def normalised(text: str) -> str:
    """A completion with whitespace runs collapsed and trimmed, for duplicate counting."""
    return " ".join(text.split())


def duplicates_within(hashes: np.ndarray, groups: np.ndarray | None) -> float:
    """The share of rollouts whose normalised completion (by its hash) equals an earlier one of its
    group. NaN without groups."""
    hashes = np.asarray(hashes, dtype=np.int64)
    if groups is None or not hashes.size:
        return math.nan
    # One key per (group, completion): a collision of two 64-bit keys is as likely as one of the hashes.
    keys = hashes * np.int64(1_000_003) + np.asarray(groups, dtype=np.int64)
    repeats = hashes.size - np.unique(keys).size
    return repeats / hashes.size


class SeenHashes:
    """The completion hashes of earlier steps, the ``capacity`` most recently first seen:
    ``duplicates_across`` with memory bounded whatever the run's length."""

    def __init__(self, capacity: int = SEEN_HASHES) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self._set: set[int] = set()
        self._order: deque[int] = deque()

    def __len__(self) -> int:
        return len(self._set)

    def __contains__(self, value: int) -> bool:
        return value in self._set

    def share_seen(self, hashes: Sequence[int]) -> float:
        """The share of ``hashes`` seen in an earlier step; NaN for none."""
        if not len(hashes):
            return math.nan
        return sum(map(self._set.__contains__, hashes)) / len(hashes)

    def remember(self, hashes: Iterable[int]) -> None:
        fresh = set(hashes) - self._set
        self._set |= fresh
        self._order.extend(fresh)
        while len(self._order) > self.capacity:
            self._set.discard(self._order.popleft())


def trend(steps: Sequence[float], values: Sequence[float]) -> float:
    """The ordinary-least-squares slope of ``values`` against ``steps``, per 100 steps, over the
    defined values of the last ``TREND_WINDOW`` entries. NaN with fewer than three defined values."""
    x = np.asarray(steps[-TREND_WINDOW:], dtype=float)
    y = np.asarray(values[-TREND_WINDOW:], dtype=float)
    keep = ~np.isnan(y)
    x, y = x[keep], y[keep]
    if x.size < 3 or np.ptp(x) == 0:
        return math.nan
    x = x - x.mean()
    return float(100.0 * (x * (y - y.mean())).sum() / (x * x).sum())


def mean(values: np.ndarray) -> float:
    """The mean of the defined values; NaN for none."""
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    return float(values.mean()) if values.size else math.nan
