"""The signals as pure functions of one step's rollouts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rewardkit_monitor import signals


def test_discordance_counts_pairs_the_proxy_orders_against_the_reference() -> None:
    reference = np.array([1.0, 0.0, 1.0, 0.0])
    groups = np.array([0, 0, 1, 1])
    # group 0: the proxy agrees; group 1: it prefers the wrong rollout
    assert signals.discordance(np.array([0.9, 0.1, 0.2, 0.8]), reference, groups) == 0.5
    assert signals.discordance(np.array([0.9, 0.1, 0.9, 0.1]), reference, groups) == 0.0
    assert signals.discordance(np.array([0.1, 0.9, 0.1, 0.9]), reference, groups) == 1.0
    # a tie counts one half
    assert signals.discordance(np.array([0.5, 0.5, 0.5, 0.5]), reference, groups) == 0.5


def test_discordance_pairs_stay_within_groups_and_pool_across_them() -> None:
    proxy = np.array([0.0, 1.0, 1.0, 0.0, 1.0, 0.0])
    reference = np.array([1.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    # group 0: one ordered pair, discordant (1); group 1: two, one concordant (0), one tied (0.5);
    # group 2: a single rollout, no pair
    groups = np.array([0, 0, 1, 1, 1, 2])
    assert signals.discordance(proxy, reference, groups) == pytest.approx(1.5 / 3)
    # ungrouped: every rollout with every other
    ordered = [(i, j) for i in range(6) for j in range(6) if reference[i] > reference[j]]
    expected = np.mean(
        [1.0 if proxy[i] < proxy[j] else 0.5 if proxy[i] == proxy[j] else 0.0 for i, j in ordered]
    )
    assert signals.discordance(proxy, reference, None) == pytest.approx(expected)


def test_discordance_is_nan_without_a_pair_and_leaves_missing_values_out() -> None:
    same = np.array([1.0, 1.0])
    assert math.isnan(signals.discordance(np.array([0.0, 1.0]), same, np.array([0, 0])))
    assert math.isnan(signals.discordance(np.array([0.0, 1.0]), np.array([1.0, 0.0]), np.array([0, 1])))
    proxy = np.array([0.0, math.nan, 1.0])
    reference = np.array([1.0, 0.0, math.nan])
    assert math.isnan(signals.discordance(proxy, reference, np.array([0, 0, 0])))


def test_ungrouped_discordance_samples_at_most_the_cap_deterministically() -> None:
    rng = np.random.default_rng(1)
    proxy, reference = rng.random(1000), rng.random(1000)
    first = signals.discordance(proxy, reference, None, cap=64, seed=3)
    assert first == signals.discordance(proxy, reference, None, cap=64, seed=3)
    assert first != signals.discordance(proxy, reference, None, cap=64, seed=4)
    assert 0.3 < first < 0.7  # unrelated scores: about one half


def test_length_coupling_is_the_mean_within_group_correlation() -> None:
    reward = np.array([1.0, 0.0, 0.5, 0.0, 1.0, 2.0, 3.0, 3.0])
    length = np.array([1.0, 3.0, 2.0, 1.0, 2.0, 3.0, 5.0, 9.0])
    groups = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    # group 0: perfectly negative; group 1: perfectly positive; group 2: one distinct reward, left out
    assert signals.length_coupling(reward, length, groups) == pytest.approx(0.0)
    assert signals.length_coupling(reward[:3], length[:3], groups[:3]) == pytest.approx(-1.0)
    expected = np.corrcoef([1.0, 0.0, 0.5, 0.2], [1.0, 3.0, 2.0, 2.5])[0, 1]
    got = signals.length_coupling(np.array([1.0, 0.0, 0.5, 0.2]), np.array([1.0, 3.0, 2.0, 2.5]), np.zeros(4))
    assert got == pytest.approx(expected)


def test_length_coupling_is_nan_ungrouped_or_without_spread() -> None:
    reward, length = np.array([1.0, 0.0]), np.array([1.0, 2.0])
    assert math.isnan(signals.length_coupling(reward, length, None))
    assert math.isnan(signals.length_coupling(reward, np.array([2.0, 2.0]), np.array([0, 0])))
    assert math.isnan(signals.length_coupling(np.array([1.0, math.nan]), length, np.array([0, 0])))


def test_groups_in_any_order_and_of_any_size_read_the_same() -> None:
    reward = np.array([1.0, 0.0, 0.5, 0.0, 1.0])
    length = np.array([1.0, 3.0, 2.0, 1.0, 2.0])
    groups = np.array([0, 0, 0, 1, 1])
    shuffled = np.array([3, 0, 4, 1, 2])
    for function in (signals.length_coupling, signals.discordance):
        assert function(reward[shuffled], length[shuffled], groups[shuffled]) == pytest.approx(
            function(reward, length, groups)
        )
    matrix = signals.padded(np.array([5.0, 6.0, 7.0]), np.array([2, 1, 2]))
    np.testing.assert_array_equal(matrix, [[6.0, np.nan], [5.0, 7.0]])


def test_saturation_and_duplicates() -> None:
    reward = np.array([1.0, 1.0, 0.0, 1.0, math.nan, 1.0])
    groups = np.array([0, 0, 1, 1, 2, 2])
    # group 0 all equal; group 2 has one reward left: both count
    # (rewardkit.scoring.metrics.zero_variance_groups)
    assert signals.zero_variance_share(reward, groups) == pytest.approx(2 / 3)
    assert math.isnan(signals.zero_variance_share(reward, None))
    assert signals.at_max_share(reward, 1.0) == pytest.approx(4 / 5)
    assert signals.at_max_share(reward, 2.0) == 0.0
    texts = ["a  b", " a b ", "a b", "c", "a b", "c"]
    hashes = np.array([hash(signals.normalised(text)) for text in texts])
    assert signals.duplicates_within(hashes, np.array([0, 0, 1, 1, 2, 2])) == pytest.approx(1 / 6)
    assert math.isnan(signals.duplicates_within(hashes, None))


def test_seen_hashes_remember_earlier_steps_within_a_bounded_memory() -> None:
    seen = signals.SeenHashes(capacity=4)
    assert math.isnan(seen.share_seen([]))
    assert seen.share_seen([1, 2]) == 0.0
    seen.remember([1, 2, 2])
    assert seen.share_seen([1, 2, 3, 4]) == 0.5
    seen.remember(range(3, 9))
    assert len(seen) == 4  # bounded: the oldest hashes went first
    assert 1 not in seen and 2 not in seen and 8 in seen
    assert seen.share_seen([1, 8]) == 0.5
    assert signals.SEEN_HASHES == 65_536 and signals.SeenHashes().capacity == signals.SEEN_HASHES


def test_trend_is_the_least_squares_slope_per_hundred_steps_over_the_last_window() -> None:
    steps = list(range(10))
    assert signals.trend(steps, [0.01 * step for step in steps]) == pytest.approx(1.0)
    assert math.isnan(signals.trend([1, 2], [0.0, 1.0]))
    # only the last TREND_WINDOW values count: a flat recent window after a ramp
    window = signals.TREND_WINDOW
    values = [float(step) for step in range(100)] + [5.0] * window
    assert signals.trend(list(range(100 + window)), values) == pytest.approx(0.0)
    with_gaps = signals.trend([0, 1, 2, 3], [0.0, math.nan, 0.02, 0.03])
    assert with_gaps == pytest.approx(1.0)


def test_the_gain_over_the_reference_is_what_the_reward_pays_beyond_the_verdicts() -> None:
    from rewardkit_monitor.signals import Moments, fit_exchange, moments, reward_gain

    reference = np.array([1.0, 1.0, 0.0, 0.0, np.nan])
    reward = np.array([1.5, 1.5, 0.5, 0.5, 9.0])  # the NaN reference leaves the last one out
    exchange = fit_exchange(moments(reward, reference))
    assert exchange is not None
    assert (exchange.intercept, exchange.rate) == pytest.approx((0.5, 1.0))
    assert reward_gain(moments(reward, reference), exchange) == pytest.approx(0.0)
    # the wrong answers paid 0.5 more: as if half the answers were right beyond the reference's
    assert reward_gain(moments(reward + np.array([0, 0, 0.5, 0.5, 0]), reference), exchange) == pytest.approx(
        0.25
    )
    assert math.isnan(reward_gain(Moments(), exchange))
    assert fit_exchange(moments(reward, np.ones(5))) is None  # no spread: no unit
    assert fit_exchange(moments(-reward, reference)) is None  # pays against the reference


def test_solved_and_the_prompt_record() -> None:
    from rewardkit_monitor.signals import UNSOLVED_RATE, PromptRecord, solved

    assert solved(np.array([0.0, 1.0, np.nan]), 0.0, 1.0).tolist() == [False, True, False]
    assert solved(np.array([0.0, 0.0]), 0.0, 0.0).tolist() == [False, False]  # no spread yet
    record = PromptRecord(capacity=2)
    record.remember([1, 1, 1, 1, 2, 2], [True, False, False, False, False, True])
    # prompt 1 solved once in 4 (the rate), prompt 2 once in 2; prompt 3 never seen
    assert UNSOLVED_RATE == 0.25
    assert record.unsolved([1, 2, 3]).tolist() == [True, False, False]
    record.remember([3], [False])  # the oldest prompt is forgotten past the capacity
    assert len(record) == 2 and record.unsolved([1, 3]).tolist() == [False, True]
