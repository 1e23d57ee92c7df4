from __future__ import annotations

import numpy as np
from hypothesis import given, settings

from tailbound.dnc import Curve, RateLatency, TokenBucket, convolution

from .conftest import concave_curves, convex_curves, rate_latencies, token_buckets


def brute_convolution(f: Curve, g: Curve, t: float, n: int = 4001) -> float:
    """inf over a fine grid of s (plus both ends), for checking."""
    s = np.linspace(0.0, t, n)
    return float(np.min(f(s) + g(t - s)))


def test_convolution_rate_latency_example() -> None:
    # Le Boudec & Thiran §3.1.9: β_{R1,T1} ⊗ β_{R2,T2} = β_{min(R1,R2), T1+T2}
    out = convolution(RateLatency(0.5, 4.0), RateLatency(1.0, 1.0))
    assert isinstance(out, RateLatency) and (out.R, out.T) == (0.5, 5.0)


@settings(max_examples=60, deadline=None)
@given(rate_latencies, rate_latencies)
def test_convolution_rate_latency_fast_path_matches_general(a: RateLatency, b: RateLatency) -> None:
    assert convolution(a, b).equals(convolution(a, b, fast=False), atol=1e-7), (a, b)


@settings(max_examples=60, deadline=None)
@given(token_buckets, token_buckets)
def test_convolution_token_buckets_is_their_minimum(a: TokenBucket, b: TokenBucket) -> None:
    assert convolution(a, b).equals(convolution(a, b, fast=False), atol=1e-7), (a, b)


@settings(max_examples=40, deadline=None)
@given(convex_curves(), convex_curves())
def test_convolution_convex_fast_path_matches_general(f: Curve, g: Curve) -> None:
    assert convolution(f, g).equals(convolution(f, g, fast=False), atol=1e-7), (f, g)


@settings(max_examples=40, deadline=None)
@given(concave_curves(), convex_curves())
def test_convolution_general_matches_brute_force(f: Curve, g: Curve) -> None:
    out = convolution(f, g, fast=False)
    for t in (0.3, 1.0, 2.5, 7.0):
        assert float(out(t)) <= brute_convolution(f, g, t) + 1e-9, (f, g, t)
        assert float(out(t)) >= brute_convolution(f, g, t, 20001) - 1e-3, (f, g, t)


@settings(max_examples=40, deadline=None)
@given(rate_latencies, rate_latencies)
def test_convolution_commutative(a: RateLatency, b: RateLatency) -> None:
    assert convolution(a, b, fast=False).equals(convolution(b, a, fast=False), atol=1e-7)


@settings(max_examples=30, deadline=None)
@given(rate_latencies, rate_latencies, rate_latencies)
def test_convolution_associative_rate_latency(a: Curve, b: Curve, c: Curve) -> None:
    left = convolution(convolution(a, b, fast=False), c, fast=False)
    right = convolution(a, convolution(b, c, fast=False), fast=False)
    assert left.equals(right, atol=1e-7), (a, b, c)


@settings(max_examples=30, deadline=None)
@given(token_buckets, token_buckets, token_buckets)
def test_convolution_associative_token_buckets(a: Curve, b: Curve, c: Curve) -> None:
    left = convolution(convolution(a, b, fast=False), c, fast=False)
    right = convolution(a, convolution(b, c, fast=False), fast=False)
    assert left.equals(right, atol=1e-7), (a, b, c)
