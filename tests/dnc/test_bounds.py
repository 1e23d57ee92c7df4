from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tailbound.dnc import (
    Hop,
    StageLoad,
    TokenBucket,
    multi_stage_delay,
    relaxed_multi_stage_delay,
    shaper_delay,
    static_priority_delay,
    static_priority_delay_general,
    token_bucket_min,
    two_hop_delay,
)

buckets = st.lists(st.tuples(st.floats(0.0, 0.3), st.floats(0.0, 0.05)), min_size=1, max_size=4)


@pytest.mark.parametrize(
    ("b", "r", "expected"),
    [(0.03, 0.4, 0.05), (0.01, 0.0, 0.01), (0.01, 1.0, math.inf)],
)
def test_static_priority_delay_eq_5_1(b: float, r: float, expected: float) -> None:
    assert static_priority_delay(b, r) == pytest.approx(expected)


@settings(max_examples=80, deadline=None)
@given(buckets, buckets)
def test_static_priority_fast_path_matches_general(level: list, higher: list) -> None:
    r_h = sum(r for r, _ in higher)
    if r_h + sum(r for r, _ in level) > 0.99:
        return
    fast = static_priority_delay(sum(b for _, b in level) + sum(b for _, b in higher), r_h)
    general = static_priority_delay_general(
        [TokenBucket(r, b) for r, b in level], [TokenBucket(r, b) for r, b in higher]
    )
    assert general == pytest.approx(fast, abs=1e-9)


def test_multi_stage_delay_eq_5_5_example() -> None:
    stages = [StageLoad(0.01, 0.5), StageLoad(0.02, 0.0), StageLoad(0.01, 0.5)]
    assert multi_stage_delay(stages) == pytest.approx(0.02 + 0.02 + 0.02)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 0.1), st.floats(0, 0.95)), min_size=3, max_size=3),
    st.floats(0, 0.05),
)
def test_relaxation_eq_5_6_is_conservative(stages: list, extra: float) -> None:
    loads = [StageLoad(b, r) for b, r in stages]
    bound = min(max(r for _, r in stages) + extra, 0.999)
    assert relaxed_multi_stage_delay(loads, bound) >= multi_stage_delay(loads) - 1e-12


def test_relaxation_rejects_a_too_small_rate_bound() -> None:
    with pytest.raises(ValueError):
        relaxed_multi_stage_delay([StageLoad(0.01, 0.5)], 0.4)


def test_shaper_delay_zero_on_the_curve_and_positive_below() -> None:
    alpha = token_bucket_min([1.0, 0.5, 0.1], [0.0, 0.01, 0.05])
    assert shaper_delay(alpha, 0.5, 0.01) == 0.0
    assert shaper_delay(alpha, 0.1, 0.05) == 0.0
    # b = 0 at rate 0.5: the 10 ms burst (arriving at full rate over 20 ms) drains 20 ms late
    assert shaper_delay(alpha, 0.5, 0.0) == pytest.approx(0.02)


def test_two_hop_worked_example() -> None:
    # hop 1: (0.1, 10 ms) behind (0.5, 10 ms) -> 20 ms / 0.5 = 40 ms; hop 2 idle -> 0
    one = Hop(1.0, higher=[TokenBucket(0.5, 0.01)])
    assert two_hop_delay(TokenBucket(0.1, 0.01), one, Hop(1.0)) == pytest.approx(0.04)


def test_two_hop_with_competition_at_the_second_hop() -> None:
    flow = TokenBucket(0.1, 0.01)
    second = Hop(1.0, higher=[TokenBucket(0.3, 0.02)])
    # hop 1 alone: 10 ms, and the flow leaves as (0.1, 0.01) capped by the link, min(t, 0.01 + 0.1t)
    # (kink at x = 0.01/0.9); hop 2 serves it with 0.7 (t − 0.02/0.7)+: delay T + x/0.7 − x
    x = 0.01 / 0.9
    expected = 0.01 + 0.02 / 0.7 + x / 0.7 - x
    assert two_hop_delay(flow, Hop(1.0), second) == pytest.approx(expected, rel=1e-6)


@settings(max_examples=40, deadline=None)
@given(buckets, buckets)
def test_two_hop_at_least_the_first_hop(cross1: list, cross2: list) -> None:
    if sum(r for r, _ in cross1) > 0.8 or sum(r for r, _ in cross2) > 0.8:
        return
    flow = TokenBucket(0.05, 0.01)
    first = Hop(1.0, higher=[TokenBucket(r, b) for r, b in cross1])
    second = Hop(1.0, higher=[TokenBucket(r, b) for r, b in cross2])
    single = static_priority_delay_general([flow], list(first.higher))
    assert two_hop_delay(flow, first, second) >= single - 1e-12
