from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tailbound.characterize import RbCurve
from tailbound.characterize.prune import prune


@st.composite
def convex_rb_curves(draw: st.DrawFn) -> RbCurve:
    n = draw(st.integers(2, 60))
    rates = np.sort(
        np.unique(np.round(draw(st.lists(st.floats(0.01, 1.0), min_size=n, max_size=n)), 6))
    )
    if len(rates) < 2:
        rates = np.array([0.1, 1.0])
    # a convex decreasing b(r): max of lines with negative slopes
    k = draw(st.integers(1, 5))
    slopes = -np.array(draw(st.lists(st.floats(0.0, 5.0), min_size=k, max_size=k)))
    offsets = np.array(draw(st.lists(st.floats(0.0, 5.0), min_size=k, max_size=k)))
    b = np.maximum(np.max(offsets[:, None] + slopes[:, None] * rates[None, :], axis=0), 0.0)
    b = np.minimum.accumulate(b)
    return RbCurve(rates, b, float(rates[0]))


@settings(max_examples=150, deadline=None)
@given(convex_rb_curves(), st.integers(1, 12))
def test_prune_is_conservative_and_small(curve: RbCurve, k: int) -> None:
    p = prune(curve, k)
    if len(p) > k + 1:
        # only concave corners (rounding in the generated curve) may stay: dropping one would let
        # the chord cut below it
        r, b = p.rates, p.buckets
        cross = (r[2:] - r[:-2]) * (b[1:-1] - b[:-2]) - (b[2:] - b[:-2]) * (r[1:-1] - r[:-2])
        assert np.any(cross > 0), curve
    assert p.rates[0] == curve.rates[0] and p.rates[-1] == curve.rates[-1]
    assert np.all(p.bucket_at(curve.rates) >= curve.buckets - 1e-9), curve


def test_prune_keeps_short_curves() -> None:
    c = RbCurve(np.array([0.1, 0.5, 1.0]), np.array([1.0, 0.2, 0.0]), 0.1)
    assert prune(c, 12).rates.tolist() == [0.1, 0.5, 1.0]


def test_prune_never_cuts_below_a_concave_corner() -> None:
    # (0.5, 0.9) lies above the chord of its neighbours: dropping it would allow (0.5, 0.5)
    c = RbCurve(np.array([0.1, 0.5, 0.9, 1.0]), np.array([1.0, 0.9, 0.05, 0.0]), 0.1)
    p = prune(c, 1)
    assert np.all(p.bucket_at(c.rates) >= c.buckets - 1e-12)
