"""Curve catalogues and hypothesis strategies shared by the DNC tests."""

from __future__ import annotations

from hypothesis import strategies as st

from tailbound.dnc import RateLatency, TokenBucket, convex_service, token_bucket_min

rates = st.floats(0.01, 2.0)
small = st.floats(0.0, 3.0)

token_buckets = st.builds(TokenBucket, rates, small)
rate_latencies = st.builds(RateLatency, rates, small)


@st.composite
def concave_curves(draw: st.DrawFn):  # type: ignore[no-untyped-def]
    """Minimum of 1–4 token buckets."""
    n = draw(st.integers(1, 4))
    return token_bucket_min(
        draw(st.lists(rates, min_size=n, max_size=n)), draw(st.lists(small, min_size=n, max_size=n))
    )


@st.composite
def convex_curves(draw: st.DrawFn):  # type: ignore[no-untyped-def]
    """Convex service curves with 1–3 pieces after an optional latency."""
    n = draw(st.integers(1, 3))
    slopes = sorted(draw(st.lists(rates, min_size=n, max_size=n)))
    if draw(st.booleans()):
        slopes = [0.0, *slopes]
    durations = draw(
        st.lists(st.floats(0.1, 3.0), min_size=len(slopes) - 1, max_size=len(slopes) - 1)
    )
    return convex_service(slopes, durations)
