from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from tailbound.dnc import Curve, RateLatency, TokenBucket, convex_service, token_bucket_min

from .conftest import concave_curves, convex_curves


@pytest.mark.parametrize(
    ("curve", "text"),
    [
        (TokenBucket(0.5, 2.0), "α(t) = 0.5t + 2"),
        (RateLatency(0.5, 4.0), "β(t) = 0.5(t − 4)+"),
        (RateLatency(2.0, 0.0), "β(t) = 2t"),
        (Curve([0.0, 2.0], [1.0, 3.0], 0.5), "f(t) = 1 + 1·t on (0, 2]; 3 + 0.5·(t − 2) on (2, ∞)"),
    ],
)
def test_curve_repr_prints_the_mathematics(curve: Curve, text: str) -> None:
    assert repr(curve) == text


def test_curve_values_at_zero_and_after() -> None:
    tb = TokenBucket(0.5, 2.0)
    assert tb(np.array([0.0, 1.0, 4.0])).tolist() == [0.0, 2.5, 4.0]
    assert tb.burst == 2.0
    rl = RateLatency(0.5, 4.0)
    assert rl(np.array([0.0, 4.0, 6.0])).tolist() == [0.0, 0.0, 1.0]


@pytest.mark.parametrize(
    ("xs", "ys", "tail"),
    [
        ([1.0], [0.0], 1.0),
        ([0.0, 0.0], [0.0, 1.0], 1.0),
        ([0.0, 1.0], [2.0, 1.0], 1.0),
        ([0.0], [0.0], -1.0),
        ([0.0], [np.inf], 1.0),
    ],
)
def test_curve_rejects_bad_shapes(xs: list[float], ys: list[float], tail: float) -> None:
    with pytest.raises(ValueError):
        Curve(xs, ys, tail)


def test_curve_is_immutable() -> None:
    tb = TokenBucket(0.5, 2.0)
    with pytest.raises(AttributeError):
        tb.tail = 3.0  # type: ignore[misc]
    with pytest.raises(ValueError):
        tb.ys[0] = 1.0


def test_token_bucket_min_drops_dominated_buckets() -> None:
    # (2, 1) is never the minimum: (1, 1) is below it everywhere
    alpha = token_bucket_min([1.0, 2.0, 0.25], [1.0, 1.0, 4.0])
    assert alpha.xs.tolist() == [0.0, 4.0]
    assert alpha.ys.tolist() == [1.0, 5.0]
    assert alpha.tail == 0.25


@given(concave_curves())
def test_token_bucket_min_is_concave(alpha: Curve) -> None:
    assert alpha.is_concave()


@given(convex_curves())
def test_convex_service_is_convex(beta: Curve) -> None:
    assert beta.is_convex()


def test_convex_service_example() -> None:
    beta = convex_service([0.0, 0.5, 1.0], [2.0, 2.0])
    assert beta(np.array([1.0, 3.0, 5.0])).tolist() == [0.0, 0.5, 2.0]
