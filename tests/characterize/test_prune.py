from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tailbound.characterize import RbCurve, exact_rb_curve, prune, rb_curve
from tailbound.profiles import LinkModel
from tailbound.stages import Stage

from .conftest import bursty_trace


def assert_never_below(pruned: RbCurve, curve: RbCurve) -> None:
    fine = np.unique(
        np.concatenate([curve.rates, np.linspace(curve.rates[0], curve.rates[-1] * 2, 500)])
    )
    assert np.all(pruned.bucket_at(fine) >= curve.bucket_at(fine) * (1 - 1e-12) - 1e-15)


@pytest.mark.parametrize("k", [1, 2, 3, 12, 40])
def test_prune_exact_curve_never_below_and_keeps_ends(k: int) -> None:
    curve = exact_rb_curve(bursty_trace(5000, 3), LinkModel(Stage.NET_OUT, 125e6))
    assert len(curve) > 13
    pruned = prune(curve, k)
    assert len(pruned) <= k + 1
    assert (pruned.rates[0], pruned.rates[-1]) == (curve.rates[0], curve.rates[-1])
    assert (pruned.buckets[0], pruned.buckets[-1]) == (curve.buckets[0], curve.buckets[-1])
    assert pruned.mean_rate == curve.mean_rate and pruned.stage == curve.stage
    assert_never_below(pruned, curve)


def test_prune_grid_curve_and_more_segments_than_points() -> None:
    curve = rb_curve(bursty_trace(2000, 4), LinkModel(Stage.NET_IN, 125e6))
    pruned = prune(curve, 12)
    assert len(pruned) == 13
    assert_never_below(pruned, curve)
    assert prune(curve, len(curve) + 5).rates.tolist() == curve.rates.tolist()


def area_between(pruned: RbCurve, curve: RbCurve) -> float:
    r = curve.rates
    gap = pruned.bucket_at(r) - curve.buckets
    return float(np.sum(0.5 * (gap[1:] + gap[:-1]) * np.diff(r)))


convex_curves = st.lists(st.floats(0.01, 1.0), min_size=2, max_size=30).map(
    lambda slopes: sorted(slopes, reverse=True)
)


@settings(max_examples=60, deadline=None)
@given(convex_curves, st.integers(1, 6))
def test_prune_beats_greedy_and_stays_above(slopes: list[float], k: int) -> None:
    rates = np.linspace(0.1, 1.0, len(slopes) + 1)
    buckets = 50.0 - np.concatenate([[0.0], np.cumsum(np.array(slopes) * np.diff(rates))])
    curve = RbCurve(rates, buckets, 0.1)
    pruned = prune(curve, k)
    assert len(pruned) <= k + 1
    assert_never_below(pruned, curve)
    # an evenly spaced choice of the same size is never better than the optimum
    even = np.unique(np.round(np.linspace(0, len(curve) - 1, len(pruned))).astype(int))
    naive = RbCurve(rates[even], buckets[even], 0.1)
    assert area_between(pruned, curve) <= area_between(naive, curve) + 1e-12


def test_prune_rejects_zero_segments() -> None:
    with pytest.raises(ValueError):
        prune(RbCurve(np.array([0.1, 1.0]), np.array([2.0, 1.0]), 0.1), 0)
