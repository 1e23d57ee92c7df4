from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings

from tailbound.dnc import (
    Curve,
    RateLatency,
    TokenBucket,
    deconvolution,
    horizontal_deviation,
    vertical_deviation,
)

from .conftest import concave_curves, convex_curves, rate_latencies, token_buckets


@pytest.mark.parametrize(
    ("alpha", "beta", "delay", "backlog"),
    [
        # Le Boudec & Thiran §1.4.4: token bucket through rate-latency, T + b/R and b + r T
        (TokenBucket(0.25, 1.0), RateLatency(0.5, 4.0), 6.0, 2.0),
        (TokenBucket(1.0, 0.0), RateLatency(1.0, 0.0), 0.0, 0.0),
        (TokenBucket(2.0, 1.0), RateLatency(1.0, 0.0), math.inf, math.inf),
    ],
)
def test_deviations_worked_examples(
    alpha: Curve, beta: Curve, delay: float, backlog: float
) -> None:
    assert horizontal_deviation(alpha, beta) == delay
    assert horizontal_deviation(alpha, beta, fast=False) == pytest.approx(delay)
    assert vertical_deviation(alpha, beta) == backlog
    assert vertical_deviation(alpha, beta, fast=False) == pytest.approx(backlog)


@settings(max_examples=80, deadline=None)
@given(token_buckets, rate_latencies)
def test_deviations_fast_paths_match_general(a: TokenBucket, b: RateLatency) -> None:
    assume(a.r <= b.R)
    assert horizontal_deviation(a, b) == pytest.approx(horizontal_deviation(a, b, fast=False))
    assert vertical_deviation(a, b) == pytest.approx(vertical_deviation(a, b, fast=False))


@settings(max_examples=60, deadline=None)
@given(concave_curves(), rate_latencies)
def test_horizontal_deviation_concave_fast_path_matches_general(a: Curve, b: RateLatency) -> None:
    assume(a.tail <= b.R)
    assert horizontal_deviation(a, b) == pytest.approx(horizontal_deviation(a, b, fast=False))


@settings(max_examples=60, deadline=None)
@given(concave_curves(), convex_curves())
def test_horizontal_deviation_is_the_smallest_shift(a: Curve, b: Curve) -> None:
    # identity: h = inf{d >= 0 : α(t) <= β(t + d) for all t}
    assume(a.tail < b.tail)
    h = horizontal_deviation(a, b, fast=False)
    end = float(max(a.xs[-1], b.xs[-1])) + 10.0
    t = np.concatenate([np.linspace(1e-9, 5.0, 200001), np.linspace(5.0, end, 4001), a.xs[1:]])
    assert np.all(a(t) <= b(t + h) + 1e-7)
    if h > 1e-3:
        assert np.any(a(t) > b(t + h - 1e-3) + 1e-12)


@settings(max_examples=60, deadline=None)
@given(concave_curves(), convex_curves())
def test_vertical_deviation_is_deconvolution_at_zero(a: Curve, b: Curve) -> None:
    # identity: v(α, β) = sup_u α(u) − β(u) = (α ⊘ β)(0+) for α(0+) >= 0
    assume(a.tail <= b.tail)
    assert vertical_deviation(a, b) == pytest.approx(float(deconvolution(a, b).right(0.0)))
