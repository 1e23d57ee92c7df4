"""The SNC operators against hand-computed values (thesis Theorems 2–5, Table 4.1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tailbound.snc.bounds import (
    STEP_S,
    Aggregate,
    ConstantService,
    Convolution,
    FixedBound,
    Leftover,
    Output,
    aggregate_all,
)

THETAS = np.array([0.1, 0.2, 2.0])


def arrival(sigma: float, rho: float, deps: set[int]) -> FixedBound:
    """A test arrival with ``rho(theta) = rho + theta`` and ``sigma(theta) = sigma + theta``."""
    return FixedBound(lambda t: rho + t, lambda t: sigma + t, deps=deps)


def service(sigma: float, rho: float) -> FixedBound:
    return FixedBound(lambda t: rho + t, lambda t: sigma + t, arrival=False)


def test_constant_service_rate_per_step() -> None:
    rho, sigma = ConstantService(3.0).bound(THETAS)
    assert rho.tolist() == pytest.approx([-3 * STEP_S] * 3)
    assert sigma.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ("deps_b", "x", "sigma", "rho"),
    [
        # independent: sigma = 1 + 3 + 2 theta, rho = 2 + 4 + 2 theta
        ({2}, None, [4.2, 4.4, 8.0], [6.2, 6.4, 10.0]),
        # dependent, Hölder x = y = 2: each operand at 2 theta
        ({1}, None, [4.4, 4.8, 12.0], [6.4, 6.8, 14.0]),
        # dependent, x = 1.5, y = 3
        ({1}, 1.5, [4.45, 4.9, 13.0], [6.45, 6.9, 15.0]),
    ],
)
def test_aggregate_by_hand(deps_b, x, sigma, rho) -> None:  # type: ignore[no-untyped-def]
    agg = Aggregate(arrival(1, 2, {1}), arrival(3, 4, deps_b))
    if x is not None:
        agg.set_x(x)
    r, s = agg.bound(THETAS)
    assert s.tolist() == pytest.approx(sigma)
    assert r.tolist() == pytest.approx(rho)


def test_leftover_by_hand() -> None:
    # S ⊖ A: rho = rho_A + rho_S, sigma = sigma_A + sigma_S (independent)
    left = Leftover(service(2, -3), arrival(1, 0.5, {1}))
    r, s = left.bound(THETAS)
    assert r.tolist() == pytest.approx((0.5 - 3 + 2 * THETAS).tolist())
    assert s.tolist() == pytest.approx((3 + 2 * THETAS).tolist())


def test_output_by_hand() -> None:
    # A ⊘ S: rho = rho_A, sigma = sigma_A + sigma_S - log(1 - exp(theta (rho_A + rho_S))) / theta
    out = Output(arrival(1, 0.5, {1}), service(2, -3))
    r, s = out.bound(THETAS)
    expect = [
        (1 + t) + (2 + t) - math.log(1 - math.exp(t * ((0.5 + t) + (-3 + t)))) / t
        for t in THETAS[:2]
    ]
    assert r.tolist() == pytest.approx((0.5 + THETAS).tolist())
    assert s[:2].tolist() == pytest.approx(expect)
    assert s[2] == np.inf  # at theta = 2 the test queue is unstable: 2.5 > 1


def test_output_of_unstable_queue_is_infinite() -> None:
    out = Output(arrival(0, 5, {1}), service(0, -3))
    _, s = out.bound(np.array([0.1]))
    assert s[0] == np.inf


def test_convolution_by_hand() -> None:
    conv = Convolution(service(2, -3), service(4, -5))
    r, s = conv.bound(THETAS)
    # rho = max(-3 + t, -5 + t); sigma = 6 + 2t - log(1 - exp(-2 t)) / t
    assert r.tolist() == pytest.approx((-3 + THETAS).tolist())
    assert s.tolist() == pytest.approx(
        [6 + 2 * t - math.log(1 - math.exp(-2 * t)) / t for t in THETAS]
    )


def test_convolution_equal_rates_takes_first_one_percent_slower() -> None:
    conv = Convolution(ConstantService(1e5), ConstantService(1e5))  # both 1 per step
    r, s = conv.bound(np.array([1.0]))
    assert r[0] == pytest.approx(-0.99)
    assert s[0] == pytest.approx(-math.log(1 - math.exp(-0.01)))


def test_dependence_is_detected_from_shared_flows() -> None:
    a1, a2 = arrival(0, 1, {1}), arrival(0, 1, {2})
    assert not Aggregate(a1, a2).dependent
    shared = Output(a1, Leftover(service(0, -5), a2))
    assert Leftover(service(0, -9), shared).dependent is False
    assert Aggregate(a2, shared).dependent  # both derive from flow 2


def test_dependent_nodes_order_self_then_operands() -> None:
    a, b, c = arrival(0, 1, {1}), arrival(0, 1, {1}), arrival(0, 1, {1})
    inner = Aggregate(a, b)
    outer = Aggregate(c, inner)
    assert outer.dependent_nodes == [outer, inner]


@pytest.mark.parametrize(
    ("groups", "holder_steps"),
    [
        ([{1}, {2}, {3}, {4}], 0),  # all independent
        ([{1, 2}, {1, 2}, {3}, {4}], 1),  # one pair
        ([{1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {4}], 2),  # clique of 3: k - 1 = 2
        ([{1, 2}, {1, 2}, {3, 4}, {3, 4}], 1),  # two pairs: still one
    ],
)
def test_aggregate_all_uses_k_minus_one_holder_steps(groups, holder_steps) -> None:  # type: ignore[no-untyped-def]
    agg = aggregate_all([arrival(0, 1, g) for g in groups])
    assert len(agg.dependent_nodes) == holder_steps


@given(st.lists(st.floats(0.0, 5.0), min_size=1, max_size=6), st.floats(0.01, 3.0))
def test_independent_aggregate_sums_rates(rates: list[float], theta: float) -> None:
    parts = [FixedBound(lambda t, r=r: r + 0 * t, deps={i}) for i, r in enumerate(rates)]
    r, s = aggregate_all(parts).bound(np.array([theta]))
    assert r[0] == pytest.approx(sum(rates))
    assert s[0] == 0.0


@given(st.floats(1.01, 10.0))
def test_holder_parameters_are_conjugate(x: float) -> None:
    node = Aggregate(arrival(0, 1, {1}), arrival(0, 1, {1}))
    node.set_x(x)
    assert 1 / node.x + 1 / node.y == pytest.approx(1.0)
    node.set_y(x)
    assert 1 / node.x + 1 / node.y == pytest.approx(1.0)
