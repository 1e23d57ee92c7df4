from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings

from tailbound.dnc import Curve, RateLatency, TokenBucket, constant_rate, leftover

from .conftest import concave_curves, rate_latencies, token_buckets


def test_leftover_worked_example() -> None:
    # a unit-rate queue with higher-priority (0.5, 2): β_L = 0.5 (t − 4)+ (thesis §5.2.1)
    out = leftover(constant_rate(1.0), TokenBucket(0.5, 2.0))
    assert isinstance(out, RateLatency) and (out.R, out.T) == (0.5, 4.0)


@settings(max_examples=80, deadline=None)
@given(rate_latencies, token_buckets)
def test_leftover_fast_path_matches_general(beta: RateLatency, cross: TokenBucket) -> None:
    assume(cross.r < beta.R)
    assert leftover(beta, cross).equals(leftover(beta, cross, fast=False), atol=1e-7)


@settings(max_examples=60, deadline=None)
@given(rate_latencies, concave_curves())
def test_leftover_is_the_closure_of_the_positive_difference(beta: Curve, cross: Curve) -> None:
    out = leftover(beta, cross, fast=False)
    t = np.linspace(1e-9, 30.0, 3001)
    diff = np.maximum(beta(t) - cross(t), 0.0)
    assert np.allclose(out(t), np.maximum.accumulate(diff), atol=1e-6)
