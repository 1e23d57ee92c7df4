from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings

from tailbound.dnc import Curve, RateLatency, TokenBucket, deconvolution, output_bound

from .conftest import concave_curves, convex_curves, rate_latencies, token_buckets


def brute_deconvolution(f: Curve, g: Curve, t: float) -> float:
    end = float(max(f.xs[-1], g.xs[-1])) + 50.0
    u = np.concatenate([np.linspace(0.0, end, 50001), f.xs, g.xs])
    # and just right of every point: the supremum can be a right limit (f jumps at 0), which a
    # grid of spacing ~1e-3 alone missed by slope × spacing
    u = np.concatenate([u, u + 1e-9])
    return float(np.max(f(t + u) - g(u)))


def test_deconvolution_token_bucket_through_rate_latency_example() -> None:
    # output of (r, b) through β_{R,T}: (r, b + r T) (Le Boudec & Thiran Thm 1.4.3)
    out = output_bound(TokenBucket(0.25, 1.0), RateLatency(0.5, 4.0))
    assert isinstance(out, TokenBucket) and (out.r, out.b) == (0.25, 2.0)


@settings(max_examples=60, deadline=None)
@given(token_buckets, rate_latencies)
def test_deconvolution_fast_path_matches_general(a: TokenBucket, b: RateLatency) -> None:
    assume(a.r <= b.R)
    assert deconvolution(a, b).equals(deconvolution(a, b, fast=False), atol=1e-7), (a, b)


@settings(max_examples=40, deadline=None)
@given(concave_curves(), convex_curves())
def test_deconvolution_general_matches_brute_force(f: Curve, g: Curve) -> None:
    assume(f.tail <= g.tail)
    out = deconvolution(f, g)
    for t in (0.0, 0.5, 2.0):
        assert float(out.right(t)) == pytest.approx(brute_deconvolution(f, g, t), abs=2e-3)


def test_deconvolution_infinite_when_arrivals_outpace_service() -> None:
    with pytest.raises(OverflowError):
        deconvolution(TokenBucket(2.0, 1.0), RateLatency(1.0, 1.0))
