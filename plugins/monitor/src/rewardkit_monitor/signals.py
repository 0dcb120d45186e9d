"""The monitor's signals as pure functions of one step's rollouts (numpy arrays), and the few
pieces of run state some signals need (the highest reward so far, the hashes of earlier steps, how
often each prompt was seen solved, what the reward paid for the reference's verdicts in the warm-up).

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
from dataclasses import dataclass

import numpy as np

from rewardkit.plugin import zero_variance_groups

# Rollouts an ungrouped step's discordance compares at most (pairs grow with the square).
DISCORDANCE_CAP = 256
# How many recent step values a trend is fitted over.
TREND_WINDOW = 50
# Completion hashes remembered for duplicates_across (a few MiB), whatever the run's length.
SEEN_HASHES = 65_536
# A prompt is unsolved while at most this share of its referenced rollouts so far were solved: a
# prompt the policy answers by chance (one number in ten) stays in the stratum, a learnt one leaves.
UNSOLVED_RATE = 0.25
# Prompts whose solve counts are remembered (the most recently first seen), whatever the run's length.
PROMPTS_REMEMBERED = 65_536


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


def discordance_counts(
    proxy: np.ndarray,
    reference: np.ndarray,
    groups: np.ndarray | None,
    *,
    cap: int = DISCORDANCE_CAP,
    seed: int = 0,
) -> tuple[float, int]:
    """``discordance``'s numerator and its number of pairs, so that several steps can be pooled
    (the level check at the end of the warm-up)."""
    proxy = np.asarray(proxy, dtype=float)
    reference = np.asarray(reference, dtype=float)
    if groups is None:
        if proxy.size > cap:
            chosen = np.sort(np.random.default_rng(seed).choice(proxy.size, cap, replace=False))
            proxy, reference = proxy[chosen], reference[chosen]
        return _discordant_pairs(proxy[None, :], reference[None, :])
    both = padded(np.stack([proxy, reference], axis=-1), groups)
    return _discordant_pairs(both[..., 0], both[..., 1])


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
    total, pairs = discordance_counts(proxy, reference, groups, cap=cap, seed=seed)
    return total / pairs if pairs else math.nan


@dataclass(frozen=True)
class Moments:
    """The sums a least-squares fit of reward on reference needs, over the rollouts with both."""

    count: int = 0
    reference: float = 0.0
    reward: float = 0.0
    reference_squares: float = 0.0
    products: float = 0.0

    def __add__(self, other: Moments) -> Moments:
        return Moments(
            self.count + other.count,
            self.reference + other.reference,
            self.reward + other.reward,
            self.reference_squares + other.reference_squares,
            self.products + other.products,
        )


def moments(reward: np.ndarray, reference: np.ndarray) -> Moments:
    """The ``Moments`` of the rollouts whose reward and reference are both defined."""
    reward = np.asarray(reward, dtype=float)
    reference = np.asarray(reference, dtype=float)
    both = ~(np.isnan(reward) | np.isnan(reference))
    reward, reference = reward[both], reference[both]
    return Moments(
        int(reward.size),
        float(reference.sum()),
        float(reward.sum()),
        float((reference * reference).sum()),
        float((reference * reward).sum()),
    )


@dataclass(frozen=True)
class Exchange:
    """What the reward pays for the reference's verdict: ``reward ~ intercept + rate * reference``,
    the least-squares line over the warm-up's rollouts (for a 0/1 reference: ``intercept`` is the
    mean reward of a wrong answer, ``intercept + rate`` that of a right one)."""

    intercept: float
    rate: float


def fit_exchange(sums: Moments) -> Exchange | None:
    """The least-squares ``Exchange`` of ``sums``; None when the reference has no spread (it cannot
    say what a right answer is worth) or the reward does not rise with it (``rate <= 0``: the level
    check reports such a reward, the gain has no unit)."""
    if sums.count < 2:
        return None
    spread = sums.reference_squares - sums.reference * sums.reference / sums.count
    if not spread > 1e-12 * max(1.0, sums.reference_squares):
        return None
    rate = (sums.products - sums.reference * sums.reward / sums.count) / spread
    if not rate > 0:
        return None
    return Exchange((sums.reward - rate * sums.reference) / sums.count, rate)


def reward_gain(sums: Moments, exchange: Exchange) -> float:
    """The reward's gain over the reference: the mean of ``reward - intercept - rate * reference``
    over the rollouts of ``sums``, divided by ``rate``, so in units of the reference (for a 0/1
    reference: 0.1 is a reward paying as if a tenth more of the answers were right). Near 0 while
    the reward pays what the reference's verdicts earned in the warm-up; rising when the reward
    climbs and the reference does not. NaN for no rollout."""
    if not sums.count:
        return math.nan
    unexplained = sums.reward - exchange.intercept * sums.count - exchange.rate * sums.reference
    return unexplained / (exchange.rate * sums.count)


def solved(reference: np.ndarray, lowest: float, highest: float) -> np.ndarray:
    """Which rollouts the reference calls solved: above the lowest reference of the run so far and
    at least halfway from it to the highest (a 0/1 reference: the right answers). NaN: not solved."""
    reference = np.asarray(reference, dtype=float)
    if not highest > lowest:
        return np.zeros(reference.shape, dtype=bool)
    with np.errstate(invalid="ignore"):
        return (reference > lowest) & (reference >= (lowest + highest) / 2)


class PromptRecord:
    """How often the reference has seen each prompt solved in the run, by a hash of the prompt's
    text, for the ``capacity`` prompts most recently first seen: the unsolved stratum, whatever the
    run's length."""

    def __init__(self, capacity: int = PROMPTS_REMEMBERED) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self._counts: dict[int, list[int]] = {}  # prompt -> [solved rollouts, referenced rollouts]
        self._order: deque[int] = deque()

    def __len__(self) -> int:
        return len(self._counts)

    def remember(self, prompts: Sequence[int], solved_flags: Sequence[bool]) -> None:
        """Count one referenced rollout per entry: its prompt's hash and whether it was solved."""
        for prompt, flag in zip(prompts, solved_flags):
            counts = self._counts.get(prompt)
            if counts is None:
                counts = self._counts[prompt] = [0, 0]
                self._order.append(prompt)
            counts[0] += bool(flag)
            counts[1] += 1
        while len(self._order) > self.capacity:
            self._counts.pop(self._order.popleft(), None)

    def unsolved(self, prompts: Sequence[int]) -> np.ndarray:
        """Per entry: its prompt has been seen, and solved in at most ``UNSOLVED_RATE`` of its
        referenced rollouts so far."""
        flags = np.zeros(len(prompts), dtype=bool)
        for index, prompt in enumerate(prompts):
            counts = self._counts.get(prompt)
            flags[index] = counts is not None and counts[0] <= UNSOLVED_RATE * counts[1]
        return flags


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
    """The share of groups whose rewards are all equal (``rewardkit.scoring.metrics.zero_variance_groups``,
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
